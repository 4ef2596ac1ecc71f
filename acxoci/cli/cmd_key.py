"""`acx key generate`: a signing key pair (PKCS#8 PEM, 0600, optional passphrase from an env var)
with the public SPKI PEM beside it; and the key loader the signing commands share."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import generate_ed25519, generate_p256, load_public_pem
from acxoci.attest.trust import (
    REVOCATION_REASONS,
    add_key_entry,
    make_key_entry,
    parse_rfc3339,
    revoke_key_entry,
)
from acxoci.cartridge.trust_file import MAX_REGISTRY_BYTES
from acxoci.cli.apps import key_app
from acxoci.cli.common import load_signing_key
from acxoci.cli.output import emit, say, show_lines
from acxoci.errors import AuthError, InvalidInput, NotFound, UsageError
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.keyfiles import load_private_key_file, readable_by_others

MAX_KEY_FILE_BYTES = 1024 * 1024  # a PEM or cosign.key is a few KiB; /dev/zero must not eat memory


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


@key_app.command("generate")
def generate(
    out: Path = typer.Option(..., "-o", "--output",
                             help="Private key file to write (PKCS#8 PEM, mode 0600)."),
    password_env: str | None = typer.Option(
        None, "--password-env", help="Encrypt with the passphrase in this env var."
    ),
    key_type: str = typer.Option("ed25519", "--algorithm", help="ed25519 (ACX default) or p256."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
) -> None:
    """Generate a signing key pair and print its keyid."""
    if key_type not in ("ed25519", "p256"):
        raise UsageError(f"--algorithm must be ed25519 or p256, not {key_type!r}")
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
    emit(data, lambda: say("keyid: {}\nprivate key: {} (0600)\npublic key:  {}", keyid, out, pub_path))


@key_app.command("trust")
def trust(
    public_key: Path = typer.Argument(..., help="Public key PEM (or a private key: its public half)."),
    publisher: str = typer.Option(..., "--publisher", help="Publisher id the key signs for (reverse DNS)."),
    registry: Path = typer.Option(..., "--trust-registry", help="Trust registry file to create or update."),
    oidc_subject: str | None = typer.Option(
        None, "--oidc-subject", help="GitHub OIDC subject you verified (io.github.* publishers)."),
    not_before: str | None = typer.Option(
        None, "--not-before", help="RFC 3339 start of the key's validity (default: now; a signature dated "
        "earlier is portable, so pass the signedAt of artifacts signed before today)."),
    valid_days: int = typer.Option(365, "--valid-days", help="notAfter = now + this many days."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var with the key passphrase."),
) -> None:
    """Add a key to an `acx.trust-registry/1` file, with the namespace proof you verified.

    The file is validated with the same strict loader verification uses, then written atomically.
    """
    from acxoci.attest.trustdecision import PUBLISHER_RE

    if not PUBLISHER_RE.match(publisher):
        raise UsageError(f"--publisher {publisher!r} is not a publisher id",
                         hint="a reverse-DNS id in lower case, such as io.github.you or com.example.team")
    if valid_days < 1:
        raise UsageError(f"--valid-days must be at least 1, not {valid_days}",
                         hint="a key that is valid for no time cannot vouch for anything")
    now = datetime.now(UTC)
    data = read_bytes(public_key, "key file", limit=MAX_KEY_FILE_BYTES) if public_key.exists() else b""
    if not data:
        raise NotFound(f"no key file at {public_key}", where=str(public_key))
    try:
        pub = (load_signing_key(public_key, password_env).public() if b"PRIVATE KEY" in data
               else load_public_pem(data))
    except MalformedError as exc:  # the key file is wrong, not the registry
        raise InvalidInput(str(exc), where=str(public_key)) from exc
    try:  # the flags first: a wrong --publisher or --not-before is the command line's fault
        start = parse_rfc3339(not_before, where="--not-before") if not_before else now
        entry = make_key_entry(pub, publisher_id=publisher, not_before=start,
                               not_after=now + timedelta(days=valid_days), verified_at=now,
                               oidc_subject=oidc_subject)
    except MalformedError as exc:
        raise UsageError(str(exc), hint="--publisher is a reverse-DNS id (io.github.you); an io.github.* "
                         "publisher also needs --oidc-subject") from exc
    try:
        doc = (loads_strict(read_bytes(registry, "trust registry", limit=MAX_REGISTRY_BYTES))
               if registry.exists() else None)
        updated = add_key_entry(doc, entry, now=now)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(registry)) from exc
    atomic_write(registry, (json.dumps(updated, indent=2) + "\n").encode(), mode=0o644)
    emit({"registry": str(registry), "keyid": entry["keyid"], "publisherId": publisher},
         lambda: say("trusted {} for {} in {}", entry['keyid'], publisher, registry))


@key_app.command("revoke")
def revoke(
    public_key: Path = typer.Argument(..., help="The key's public PEM (or its private key)."),
    trust_registry: Path = typer.Option(..., "--trust-registry", help="Trust registry file to update."),
    reason: str = typer.Option(..., "--reason", help=" | ".join(REVOCATION_REASONS) + "."),
    revoked_at: str | None = typer.Option(None, "--revoked-at", help="RFC 3339 time the key stopped being "
                                          "trustworthy (default: now). Signatures dated after it are "
                                          "never trusted; after key-compromise, none are."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var with the key passphrase."),
) -> None:
    """Mark a key revoked in an `acx.trust-registry/1` file (validated, then written atomically).

    Every later judgement sees it: `acx verify --policy`, `install`, and for what is already
    installed `installed verify`, `activate` and `installed sync`."""
    if reason not in REVOCATION_REASONS:
        raise UsageError(f"--reason must be one of {', '.join(REVOCATION_REASONS)}, not {reason!r}")
    at = None
    if revoked_at:
        try:
            at = parse_rfc3339(revoked_at, where="--revoked-at")
        except MalformedError as exc:
            raise UsageError(str(exc)) from exc
    now = datetime.now(UTC)
    data = read_bytes(public_key, "key file", limit=MAX_KEY_FILE_BYTES)
    try:
        pub = (load_signing_key(public_key, password_env).public() if b"PRIVATE KEY" in data
               else load_public_pem(data))
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(public_key)) from exc
    try:
        doc = loads_strict(read_bytes(trust_registry, "trust registry", limit=MAX_REGISTRY_BYTES))
        if not isinstance(doc, dict):
            raise MalformedError("a trust registry is a JSON object")
        updated = revoke_key_entry(doc, pub.keyid(), reason=reason, revoked_at=at or now, now=now)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(trust_registry)) from exc
    atomic_write(trust_registry, (json.dumps(updated, indent=2) + "\n").encode(), mode=0o644)
    emit({"registry": str(trust_registry), "keyid": pub.keyid(), "revocationReason": reason},
         lambda: say("revoked {} ({}) in {}", pub.keyid(), reason, trust_registry))


@key_app.command("inspect")
def inspect(
    file: Path = typer.Argument(..., help="A public key PEM, a private key PEM or a cosign.key."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var with the key passphrase."),
) -> None:
    """Show a key file's algorithm, keyId and public half (never the private material).

    An encrypted private key is unlocked with --password-env, ACX_KEY_PASSWORD / COSIGN_PASSWORD
    or, on a terminal, a prompt."""
    data = read_bytes(file, "key file", limit=MAX_KEY_FILE_BYTES)
    private = b"PRIVATE KEY" in data or b"COSIGN" in data
    if private:
        pub = load_signing_key(file, password_env).public()
        encrypted = _is_encrypted(file)
    else:
        try:
            pub = load_public_pem(data)
        except MalformedError as exc:
            raise InvalidInput(f"not a public key PEM, private key PEM or cosign.key: {exc}",
                               where=str(file)) from exc
        encrypted = False
    out = {"file": str(file), "kind": "private" if private else "public", "algorithm": pub.algorithm,
           "keyId": pub.keyid(), "encrypted": encrypted, "publicKeyPem": pub.spki_pem(),
           "groupOrOtherReadable": readable_by_others(file)}

    def human() -> None:
        state = (" (encrypted)" if encrypted else " (not encrypted)") if private else ""
        say("{} key{}: {}", out['kind'], state, pub.algorithm)
        say("keyid: {}", out['keyId'])
        if private and out["groupOrOtherReadable"]:
            say("[yellow]warning[/yellow]: {} is readable by group or others", str(file))
        show_lines(pub.spki_pem())

    emit(out, human)


def _is_encrypted(path: Path) -> bool:
    """True when the private key file cannot be read without a passphrase."""
    try:
        load_private_key_file(path, None)
    except AuthError:
        return True
    return False


def register(app: typer.Typer) -> None:
    """Commands are added to `key_app` at import time."""
