"""`acx` commands for workflow (filled in by its capability)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this group's commands to the root app."""
