"""Private key files for signing, one way for every command: a cosign.key (scrypt + secretbox)
or a PKCS#8/SEC1 PEM, with the passphrase from an environment variable, and typed errors
naming the file. Light on imports, so any command can load a key cheaply."""

from __future__ import annotations

import getpass
import os
import stat
import sys
from pathlib import Path

from acxoci.errors import AuthError, InvalidInput, UsageError
from acxoci.fsutil import read_bytes
from attest.cosignkey import WrongPassword, load_signing_key
from attest.errors import MalformedError
from attest.keys import PrivateKey

#: Consulted in order when no `--password-env VAR` is given (the first one set wins).
DEFAULT_PASSWORD_ENVS = ("ACX_KEY_PASSWORD", "COSIGN_PASSWORD")


def password_from_env(var: str | None) -> bytes | None:
    """The key passphrase: from `var` when named (it must be set), else from the first of
    DEFAULT_PASSWORD_ENVS that is set; None when none is."""
    if var is not None:
        if var not in os.environ:
            raise UsageError(f"--password-env names {var}, which is not set")
        return os.environ[var].encode("utf-8")
    for name in DEFAULT_PASSWORD_ENVS:
        if name in os.environ:
            return os.environ[name].encode("utf-8")
    return None


def load_private_key_file(path: Path, password: bytes | None) -> PrivateKey:
    """A signing key from a cosign.key or PEM file (typed errors naming the file)."""
    data = read_bytes(path, "private key")
    try:
        return load_signing_key(data, password)
    except WrongPassword as exc:
        raise AuthError(
            str(exc),
            where=str(path),
            hint="pass --password-env VAR, or set ACX_KEY_PASSWORD / COSIGN_PASSWORD",
        ) from exc
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc


def interactive() -> bool:
    """True when a person is at a terminal: stdin and stderr are both TTYs. Prompts happen only
    then; a pipe, a file or CI never waits for input that will not come."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def prompt_secret(prompt: str) -> str:
    """Read a secret from the terminal without echo (only call when `interactive()`)."""
    return getpass.getpass(prompt)


def load_key(path: Path, password_env: str | None = None) -> PrivateKey:
    """`--key K [--password-env VAR]` as every signing command reads it; an encrypted key with no
    passphrase in the environment is unlocked by a prompt when a person is at a terminal."""
    password = password_from_env(password_env)
    try:
        return load_private_key_file(path, password)
    except AuthError:
        if password is not None or not interactive():
            raise
    typed = prompt_secret(f"Passphrase for {path}: ")
    if not typed:
        raise AuthError("no passphrase was typed", where=str(path))
    return load_private_key_file(path, typed.encode("utf-8"))


def readable_by_others(path: Path) -> bool:
    """True when group or others may read the key file (worth a warning: it should be 0600)."""
    try:
        return bool(stat.S_IMODE(path.stat().st_mode) & 0o077)
    except OSError:
        return False
