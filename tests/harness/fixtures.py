"""pytest fixtures for real registries and peers (filled in below)."""
