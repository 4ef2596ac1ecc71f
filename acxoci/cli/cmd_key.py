"""`acx key generate`: a signing key pair (PKCS#8 PEM, 0600, optional passphrase from an env var)
with the public SPKI PEM beside it; and the key loader the signing commands share."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import typer

from acxoci.cli.apps import key_app
from acxoci.cli.output import console, emit, info
from acxoci.errors import InvalidInput, NotFound, UsageError
from attest.errors import MalformedError
from attest.keys import PrivateKey, generate_ed25519, generate_p256, load_private_pem


def public_path_for(key_path: Path) -> Path:
    """Where the public PEM goes: `x.key.pem` -> `x.pub.pem`, `x.pem` -> `x.pub.pem`, else `x.pub.pem`."""
    name = key_path.name
    for suffix in (".key.pem", ".pem"):
        if name.endswith(suffix):
            return key_path.with_name(name[: -len(suffix)] + ".pub.pem")
    return key_path.with_name(name + ".pub.pem")


def _password(env: str | None) -> bytes | None:
    if env is None:
        return None
    value = os.environ.get(env)
    if not value:
        raise UsageError(
            f"environment variable {env} is not set or empty", hint="--password-env names a variable"
        )
    return value.encode("utf-8")


def _write_new(path: Path, data: bytes, mode: int, force: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError as exc:
        raise UsageError(f"{path} already exists", hint="pass --force to overwrite") from exc
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def load_private_key(path: Path, password_env: str | None = None) -> PrivateKey:
    """Read a PEM private key for signing; the passphrase (if any) comes from the named env var."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFound(f"key file not found: {path}") from exc
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        info(f"[yellow]warning[/yellow]: {path} is readable by group or others (chmod 600 it)")
    try:
        return load_private_pem(data, _password(password_env))
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc


@key_app.command("generate")
def generate(
    out: Path = typer.Option(..., "-o", "--out", help="Private key file to write (PKCS#8 PEM, mode 0600)."),
    password_env: str | None = typer.Option(
        None, "--password-env", help="Encrypt with the passphrase in this env var."
    ),
    key_type: str = typer.Option("ed25519", "--type", help="ed25519 (ACX default) or p256."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
) -> None:
    """Generate a signing key pair and print its keyid."""
    if key_type not in ("ed25519", "p256"):
        raise UsageError(f"--type must be ed25519 or p256, not {key_type!r}")
    key = generate_ed25519() if key_type == "ed25519" else generate_p256()
    pub_path = public_path_for(out)
    _write_new(out, key.pkcs8_pem(_password(password_env)), 0o600, force)
    _write_new(pub_path, key.public().spki_pem().encode("ascii"), 0o644, force)
    keyid = key.public().keyid()
    data = {
        "keyId": keyid,
        "privateKey": str(out),
        "publicKey": str(pub_path),
        "type": key_type,
        "encrypted": password_env is not None,
    }
    emit(data, lambda: console.print(f"keyid: {keyid}\nprivate key: {out} (0600)\npublic key:  {pub_path}"))


def register(app: typer.Typer) -> None:
    """Commands are added to `key_app` at import time."""
