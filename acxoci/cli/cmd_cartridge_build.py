"""`acx cartridge build|sign|spec` (the producer side; filled in by its capability)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands (to apps.cartridge_app)."""
