"""`acx harness …` commands (filled in by its capability)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands (to apps.harness_app)."""
