"""Helpers for the cartridge tests (no tests here): copy a vector, mutate it with SQL, re-sign it
with a key generated at run time."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.attest.b64 import b64decode_lenient
from acxoci.attest.canonical import jcs
from acxoci.attest.dsse import sign
from acxoci.attest.keys import PrivateKey, generate_ed25519

NOW = datetime(2026, 11, 30, tzinfo=UTC)
SAMPLE = "sample/sample.acx"
SAMPLE_KEYID = "ed25519:aed99efff8f08c8458bb412b28a6feba684701c9563692507eb2fe0767d56fbe"


def copy_vector(vectors: Path, rel: str, dest: Path) -> Path:
    """Copy a vector to `dest` (writable) and return the copy's path."""
    shutil.copyfile(vectors / rel, dest)
    dest.chmod(0o644)
    return dest


def sql(path: Path, *statements: str, params: tuple[Any, ...] = ()) -> None:
    """Run write statements on a copy (never on a vector)."""
    conn = sqlite3.connect(str(path))
    try:
        for st in statements:
            conn.execute(st, params) if params else conn.execute(st)
        conn.commit()
    finally:
        conn.close()


def read_statement(path: Path) -> dict[str, Any]:
    """The signed in-toto Statement of a cartridge (unverified)."""
    conn = sqlite3.connect(str(path))
    try:
        env = json.loads(conn.execute("SELECT envelope FROM signatures").fetchone()[0])
    finally:
        conn.close()
    doc: dict[str, Any] = json.loads(b64decode_lenient(env["payload"]))
    return doc


def resign(
    path: Path,
    statement: dict[str, Any],
    *,
    key: PrivateKey | None = None,
    payload_type: str = "application/vnd.in-toto+json",
    payload: bytes | None = None,
) -> PrivateKey:
    """Replace the cartridge's signature with one over `statement`, by a fresh key (stored as
    `public_key_pem`, keyid = sha256(SPKI)). Returns the key used."""
    key = key or generate_ed25519()
    pub = key.public()
    env = sign(payload_type, payload if payload is not None else jcs(statement), key, pub.keyid())
    sql(
        path,
        "UPDATE signatures SET envelope = ?, keyid = ?, public_key_pem = ?",
        params=(json.dumps(env.to_json()), pub.keyid(), pub.spki_pem()),
    )
    return key


def rom_digest_hex(path: Path) -> str:
    """The recorded manifest hash (bare hex) of a cartridge."""
    conn = sqlite3.connect(str(path))
    try:
        value: str = conn.execute("SELECT manifest_hash FROM signatures").fetchone()[0]
    finally:
        conn.close()
    return value.removeprefix("sha256:")
