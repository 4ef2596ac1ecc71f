"""Shared CLI state and rendering: global flags, JSON vs human output, error printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console


@dataclass
class GlobalOptions:
    json: bool = False
    verbose: bool = False
    quiet: bool = False


OPTS = GlobalOptions()

#: Width when the stream is not a terminal: wide enough that no digest, reference or table cell
#: is ever cut or wrapped for a pipe, a file or CI (rich would otherwise assume 80 columns).
PIPE_WIDTH = 10_000


def _width(stream: TextIO) -> int | None:
    """None (rich measures the terminal) for a TTY, PIPE_WIDTH otherwise."""
    try:
        return None if stream.isatty() else PIPE_WIDTH
    except (AttributeError, ValueError):
        return PIPE_WIDTH


console = Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err_console = Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))


def emit(data: Any, human: Callable[[], None] | None = None, *, quiet_line: str | None = None) -> None:
    """Print `data` as JSON under --json, else call `human` (or pretty-print data). Under -q only
    `quiet_line` is printed: the one result a script needs (push prints its digest, as docker -q)."""
    if OPTS.json:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n")
        return
    if OPTS.quiet:
        if quiet_line is not None:
            sys.stdout.write(quiet_line + "\n")
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
