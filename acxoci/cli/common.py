"""Small helpers shared by the command modules: `--now` parsing, trust-registry loading,
signing-key loading and ending a verdict-style command with its exit code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.output import info
from acxoci.errors import UsageError
from acxoci.keyfiles import load_key, readable_by_others
from attest.errors import MalformedError
from attest.keys import PrivateKey
from attest.trust import TrustRegistry, parse_rfc3339


def parse_now(value: str | None) -> datetime:
    """The `--now` option: an RFC 3339 time, or the clock when absent."""
    if value is None:
        return datetime.now(UTC)
    try:
        return parse_rfc3339(value, where="--now")
    except MalformedError as exc:
        raise UsageError(str(exc)) from exc


def load_registry(path: Path | None, now: datetime) -> TrustRegistry | None:
    """A trust registry from `--trust-registry`, or None when the option is absent."""
    return None if path is None else load_trust_registry(path, now=now)


def exit_with(code: int) -> NoReturn:
    """End a verdict-style command with `code` (after its output was emitted)."""
    raise SystemExit(code)


def load_signing_key(path: Path, password_env: str | None = None) -> PrivateKey:
    """`--key K [--password-env VAR]` for every signing command (cosign.key or PEM), warning
    when the file is readable by group or others."""
    if readable_by_others(path):
        info(f"[yellow]warning[/yellow]: {path} is readable by group or others (chmod 600 it)")
    return load_key(path, password_env)
