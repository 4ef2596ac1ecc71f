"""Signing keys, one way for every command: a key file (cosign.key, scrypt + secretbox, or a
PKCS#8/SEC1 PEM) with the passphrase from an environment variable, or a key that never touches
disk, named as cosign names them: `env://VAR` (the key file's bytes in an environment variable)
or an RFC 7512 PKCS#11 URI (`pkcs11:token=…;object=…?module-path=…&pin-value=…`; the key stays
in the token, which signs). Any other `scheme://` reference is refused, naming what acx supports.
Typed errors name the file or reference. Light on imports, so any command can load a key cheaply."""

from __future__ import annotations

import getpass
import os
import re
import stat
import sys
from pathlib import Path

from acxoci.attest.cosignkey import WrongPassword, load_signing_key
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import PrivateKey
from acxoci.errors import AuthError, InvalidInput, UsageError
from acxoci.fsutil import read_bytes

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
        raise AuthError(  # no passphrase at all is not a wrong one (a cosign.key is always encrypted)
            str(exc) if password else "private key is encrypted and no password was given",
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


SUPPORTED_KEY_REFERENCES = "a key file, env://VAR or a pkcs11: URI"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def key_reference_kind(ref: str) -> str:
    """`env`, `pkcs11` or `file` for a `--key` value; a usage error for any other `scheme://`
    (awskms://, gcpkms://, hashivault://, azurekms://, k8s://, …)."""
    if ref.startswith("env://"):
        return "env"
    if ref.startswith("pkcs11:"):
        return "pkcs11"
    m = _SCHEME.match(ref)
    if m is not None:
        raise UsageError(f"unsupported key reference {m.group(1)}://: acx signs with "
                         f"{SUPPORTED_KEY_REFERENCES}", where="--key")
    return "file"


def load_key_reference(ref: str, password_env: str | None = None) -> PrivateKey:
    """A `--key` value of any supported kind (see the module docstring)."""
    kind = key_reference_kind(ref)
    if kind == "file":
        return load_key(Path(ref), password_env)
    if kind == "env":
        return load_env_key(ref.removeprefix("env://"), password_env)
    from acxoci.pkcs11key import load_pkcs11_key

    return load_pkcs11_key(ref)


def load_env_key(var: str, password_env: str | None = None) -> PrivateKey:
    """`env://VAR`: the bytes of a key file held in the environment variable VAR (cosign's form)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        raise UsageError(f"env://{var} does not name an environment variable", where="--key")
    value = os.environ.get(var)
    if not value:
        raise AuthError(f"environment variable {var} (the signing key) is not set or empty", where=f"env://{var}")
    password = password_from_env(password_env)
    try:
        return load_signing_key(value.encode("utf-8"), password)
    except WrongPassword as exc:
        raise AuthError(str(exc), where=f"env://{var}",
                        hint="pass --password-env VAR, or set ACX_KEY_PASSWORD / COSIGN_PASSWORD") from exc
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=f"env://{var}") from exc


def readable_by_others(path: Path) -> bool:
    """True when group or others may read the key file (worth a warning: it should be 0600)."""
    try:
        return bool(stat.S_IMODE(path.stat().st_mode) & 0o077)
    except OSError:
        return False
