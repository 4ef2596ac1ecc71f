"""acxoci.install."""
