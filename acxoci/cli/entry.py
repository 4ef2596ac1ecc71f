"""The `acx` console entry point (pyproject's console script)."""

from __future__ import annotations


def main() -> None:
    """Run `acx`."""
    from acxoci.cli.main import main as cli_main

    cli_main()
