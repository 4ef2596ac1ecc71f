"""Run `acx` in this process (much faster than a subprocess) and capture its output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acxoci.cli.main import main
from acxoci.cli.output import OPTS


class CliResult:
    """Outcome of one in-process `acx` run."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_acx(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """`acx ARGS` with global options reset before and after; never raises SystemExit."""
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        OPTS.json = OPTS.verbose = OPTS.quiet = False
    out = capsys.readouterr()
    return CliResult(code, out.out, out.err)


def acx_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    """`acx --json ARGS`: (exit code, parsed stdout or None)."""
    r = run_acx(capsys, "--json", *args)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None
