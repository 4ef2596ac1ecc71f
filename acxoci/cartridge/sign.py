"""The cartridge signature: a DSSE envelope over the in-toto Statement that names the ROM
manifest hash (brief §3), stored in `signatures` with the public key beside it. Also re-signing
an existing cartridge and re-indexing its ROM objects after library edits."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest import dsse
from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.intoto import Statement, Subject
from acxoci.attest.keys import PrivateKey
from acxoci.cartridge.constants import (
    BOUND_META_KEYS,
    CANON_JCS,
    CANON_RAW,
    KIND_CARTRIDGE,
    KIND_MEMORY,
    KIND_SQLAR,
    META_CARTRIDGE_ID,
    META_PUBLISHER,
    META_ROM_MANIFEST_HASH,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    SIGNATURE_TARGET,
    SPEC_VERSION,
    ZONE_ROM,
)
from acxoci.cartridge.manifest import RomManifest, compute_rom_manifest, oid_meta, oid_sqlar
from acxoci.cartridge.reader import Cartridge, open_cartridge
from acxoci.errors import InvalidInput, Tampered

EMBEDDING_META = "acx.embedding_engine"


@dataclass(frozen=True)
class SignResult:
    """What was signed: ROM digest, keyid, signedAt, the manifest's helper fields."""

    rom_digest: str
    keyid: str
    signed_at: str
    file_count: int
    checksum_hash: str
    cartridge_id: str

    def to_json(self) -> dict[str, Any]:
        return {
            "romDigest": self.rom_digest,
            "keyId": self.keyid,
            "signedAt": self.signed_at,
            "fileCount": self.file_count,
            "checksumHash": self.checksum_hash,
            "cartridgeId": self.cartridge_id,
        }


def cartridge_statement(
    manifest: RomManifest,
    *,
    cartridge_id: str,
    publisher_id: str,
    signed_at: str,
    embedding_engine: Any,
    provenance_instance_id: str | None,
) -> Statement:
    """The signed Statement: subject = cartridge id + bare hex of the ROM digest."""
    predicate = {
        "acxSchemaVersion": SPEC_VERSION,
        "checksumHash": manifest.checksum_hash,
        "embeddingEngine": embedding_engine,
        "fileCount": manifest.file_count,
        "manifestHash": manifest.hash,
        "provenanceInstanceId": provenance_instance_id,
        "publisherId": publisher_id,
        "romDigest": manifest.hash,
        "signedAt": signed_at,
    }
    return Statement((Subject(cartridge_id, {"sha256": manifest.hex}),), PREDICATE_TYPE, predicate)


def _row_order(row: tuple[str, str, str, str, int]) -> tuple[str, str]:
    return row[1], row[2]


def refresh_rom_objects(conn: sqlite3.Connection) -> int:
    """Rebuild every ROM `objects` row from its live source (bound meta keys, `rom/` sqlar files,
    ROM memory rows, capability rows). Refuses two ROM sources with identical bytes, because the
    `oid` primary key would leave one of them uncovered. Returns the number of rows."""
    rows: list[tuple[str, str, str, str, int]] = []
    meta = dict(conn.execute("SELECT key, value FROM cartridge").fetchall())
    for key in BOUND_META_KEYS:
        if key in meta:
            oid, sz = oid_meta(key, meta[key])
            rows.append((oid, KIND_CARTRIDGE, f"cartridge:{key}", CANON_JCS, sz))
    cart = Cartridge.from_connection(conn)
    for info in cart.sqlar_infos():
        if info.name.startswith("rom/"):
            data = cart.sqlar_read(info.name)
            assert data is not None
            oid, sz = oid_sqlar(data)
            rows.append((oid, KIND_SQLAR, info.name, CANON_RAW, sz))
    for mem in cart.memory():
        if mem.zone == ZONE_ROM:
            rows.append((mem.oid, KIND_MEMORY, f"memory:{mem.id}", CANON_JCS, len(mem.payload)))
    for cap in cart.capabilities():
        rows.append((cap.content_hash, KIND_CARTRIDGE, f"capability:{cap.id}", CANON_JCS, len(cap.json)))
    seen: dict[str, str] = {}
    for oid, _k, ref, _c, _s in rows:
        if oid in seen:
            raise InvalidInput(
                f"ROM sources {seen[oid]!r} and {ref!r} have identical bytes; the objects table "
                "keys on oid, so one would be uncovered",
                hint="make the contents differ",
            )
        seen[oid] = ref
    rows.sort(key=_row_order)
    conn.execute("DELETE FROM objects WHERE zone = 'rom'")
    conn.executemany(
        "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz) VALUES (?, ?, ?, ?, 'rom', ?)", rows
    )
    return len(rows)


def sign_connection(
    conn: sqlite3.Connection, key: PrivateKey, *, signed_at: str, provenance_instance_id: str | None = None
) -> SignResult:
    """Sign the ROM of an open, writable cartridge: replace its rom-manifest signature and the
    unbound `acx.rom_manifest_hash` copy. Raises Tampered if the objects do not match their sources."""
    if key.public().algorithm != "ed25519":
        raise InvalidInput(
            f"cartridge signatures are Ed25519 (brief §3); this key is {key.public().algorithm}",
            where="--key",
            hint="acx key generate --type ed25519",
        )
    cart = Cartridge.from_connection(conn)
    manifest = compute_rom_manifest(cart)
    if not manifest.ok:
        raise Tampered(
            "ROM objects do not match their sources; refusing to sign",
            details={"issues": [*manifest.mismatches, *manifest.uncovered]},
            hint="re-index with refresh (acx cartridge sign --refresh) after library edits",
        )
    meta = cart.meta()
    cid, pub = meta.get(META_CARTRIDGE_ID), meta.get(META_PUBLISHER)
    if not cid or not pub:
        raise InvalidInput("cartridge meta lacks acx.cartridge_id or acx.publisher_id")
    try:
        engine = loads_strict(meta.get(EMBEDDING_META, "null"))
    except MalformedError as exc:
        raise InvalidInput(f"meta {EMBEDDING_META} is not JSON: {exc}") from exc
    statement = cartridge_statement(
        manifest,
        cartridge_id=cid,
        publisher_id=pub,
        signed_at=signed_at,
        embedding_engine=engine,
        provenance_instance_id=provenance_instance_id,
    )
    pub_key = key.public()
    keyid = pub_key.keyid()
    env = dsse.sign(PAYLOAD_TYPE, statement.canonical_bytes(), key, keyid)
    envelope = json.dumps(env.to_json(), separators=(",", ":"), ensure_ascii=False)
    alg = pub_key.algorithm
    conn.execute("DELETE FROM signatures WHERE target = ?", (SIGNATURE_TARGET,))
    conn.execute(
        "INSERT INTO signatures (sig_id, target, manifest_hash, envelope, keyid, public_key_pem, alg,"
        " created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            f"sig-rom-{manifest.hex[:12]}",
            SIGNATURE_TARGET,
            manifest.hash,
            envelope,
            keyid,
            pub_key.spki_pem(),
            alg,
            signed_at,
        ),
    )
    conn.execute(
        "INSERT OR REPLACE INTO cartridge (key, value) VALUES (?, ?)", (META_ROM_MANIFEST_HASH, manifest.hash)
    )
    return SignResult(manifest.hash, keyid, signed_at, manifest.file_count, manifest.checksum_hash, cid)


def _old_provenance(path: Path) -> str | None:
    with open_cartridge(path) as cart:
        for row in cart.signatures():
            with contextlib.suppress(MalformedError, ValueError, TypeError):
                stmt = Statement.from_bytes(dsse.Envelope.from_json(loads_strict(row.envelope)).payload)
                prov = stmt.predicate.get("provenanceInstanceId")
                return prov if isinstance(prov, str) else None
    return None


def resign_file(path: Path, key: PrivateKey, *, signed_at: str, refresh: bool = False) -> SignResult:
    """Re-sign a cartridge file atomically (copy, sign the copy, replace). With `refresh`, the ROM
    objects are first re-indexed from their sources (after edits made through the library)."""
    provenance = _old_provenance(path)
    tmp = path.with_name(f".{path.name}.sign-{os.getpid()}.tmp")
    shutil.copyfile(path, tmp)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("BEGIN")
            if refresh:
                refresh_rom_objects(conn)
            result = sign_connection(conn, key, signed_at=signed_at, provenance_instance_id=provenance)
            conn.execute("COMMIT")
            conn.execute("VACUUM")
        finally:
            conn.close()
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return result
