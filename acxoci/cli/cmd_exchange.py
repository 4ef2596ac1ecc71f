"""`acx exchange verify|index|mirror`: the git-based Cartridge Exchange (docs/exchange.md)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the exchange commands to the `exchange` group."""
