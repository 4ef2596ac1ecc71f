"""Shared CLI state and rendering: global flags, JSON vs human output, error printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console


@dataclass
class GlobalOptions:
    json: bool = False
    verbose: bool = False
    quiet: bool = False


OPTS = GlobalOptions()
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def emit(data: Any, human: Callable[[], None] | None = None) -> None:
    """Print `data` as JSON under --json, else call `human` (or pretty-print data)."""
    if OPTS.json:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n")
        return
    if OPTS.quiet:
        return
    if human is not None:
        human()
    else:
        console.print_json(data=data)


def info(message: str) -> None:
    """A human progress/status line on stderr (silent under --json or -q)."""
    if not OPTS.json and not OPTS.quiet:
        err_console.print(message)


def debug(message: str) -> None:
    if OPTS.verbose and not OPTS.json:
        err_console.print(f"[dim]{message}[/dim]")
