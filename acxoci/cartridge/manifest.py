"""The ROM manifest (brief §2): recompute every ROM object's oid from its live source, rebuild the
signed bare-array manifest, its hash (the ROM digest), `checksumHash` and `fileCount`, and find
ROM content that no object covers.

Works over any `Cartridge` (read-only file or a builder's connection via `Cartridge.from_connection`).
Linear: one scan of each table, sources looked up in those scans by their TEXT key (so the row
whose key is checked is the row whose content is hashed), sqlar data streamed and never loaded,
SAVE rows never read beyond their key and size.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from acxoci.attest.canonical import jcs, loads_strict, sha256_digest
from acxoci.attest.errors import AttestError
from acxoci.cartridge.constants import (
    BOUND_META_KEYS,
    CANON_JCS,
    CANON_RAW,
    KIND_CARTRIDGE,
    KIND_MEMORY,
    KIND_SQLAR,
    REF_CAPABILITY,
    REF_MEMORY,
    REF_META,
    ZONE_ROM,
)
from acxoci.cartridge.reader import BadEntry, Cartridge, MemoryRow, ObjectRow

__all__ = ["LiveSource", "RomManifest", "compute_rom_manifest", "meta_object_bytes", "oid_capability",
           "oid_memory", "oid_meta", "oid_sqlar", "ref_kind", "sort_key", "utf16_key"]


def oid_sqlar(data: bytes) -> tuple[str, int]:
    """(oid, sz) of a sqlar file: sha256 of the uncompressed bytes, and their length."""
    return sha256_digest(data), len(data)


def oid_memory(payload: bytes) -> tuple[str, int]:
    """(oid, sz) of a memory row: sha256 of the stored `payload` text (UTF-8 bytes)."""
    return sha256_digest(payload), len(payload)


def oid_capability(json_text: bytes) -> tuple[str, int]:
    """(oid, sz) of a capability row: sha256 of the stored `json` text (UTF-8 bytes)."""
    return sha256_digest(json_text), len(json_text)


def meta_object_bytes(key: str, value: str) -> bytes:
    """The JCS bytes `{"key":k,"value":v}` hashed for a bound meta key."""
    return jcs({"key": key, "value": value})


def oid_meta(key: str, value: str) -> tuple[str, int]:
    """(oid, sz) of a bound meta key; sz is the UTF-8 length of the value only."""
    return sha256_digest(meta_object_bytes(key, value)), len(value.encode("utf-8"))


def ref_kind(source_ref: str) -> tuple[str, str]:
    """(expected kind, expected canon) for a source_ref prefix; unknown prefixes are sqlar names."""
    if source_ref.startswith(REF_MEMORY):
        return KIND_MEMORY, CANON_JCS
    if source_ref.startswith((REF_CAPABILITY, REF_META)):
        return KIND_CARTRIDGE, CANON_JCS
    return KIND_SQLAR, CANON_RAW


def utf16_key(s: str) -> bytes:
    """Sort key comparing UTF-16 code units, as the reference does (differs from code points only
    outside the BMP)."""
    return s.encode("utf-16-be", "surrogatepass")


def sort_utf16(texts: Sequence[str]) -> list[str]:
    """`texts` sorted by UTF-16 code units."""
    return sorted(texts, key=utf16_key)


def sort_key(row: ObjectRow) -> tuple[bytes, bytes]:
    """Manifest order: (kind, source_ref) by UTF-16 code units."""
    return utf16_key(row.kind), utf16_key(row.source_ref)


class LiveSource(NamedTuple):
    """The recomputed oid and size of one ROM object's source, or why it could not be found."""

    oid: str | None
    sz: int | None
    problem: str | None = None


class _Sources:
    """Every ROM source, from one scan of each table, keyed by its TEXT key (never an SQL lookup)."""

    def __init__(self, cart: Cartridge) -> None:
        self.cart = cart
        self.meta = cart.meta()
        self.sqlar = {i.name: i for i in cart.sqlar_infos()}
        self.memory = {m.id: m for m in cart.memory(save_payloads=False)}
        self.caps = {c.id: c for c in cart.capabilities()}


def live_source(src: _Sources, row: ObjectRow) -> LiveSource:
    """Recompute the live oid of one object from its source, chosen by the source_ref prefix."""
    ref = row.source_ref
    if ref.startswith(REF_MEMORY):
        mem = src.memory.get(ref[len(REF_MEMORY) :])
        if mem is None:
            return LiveSource(None, None, "missing source")
        if mem.zone != ZONE_ROM or not mem.payload_loaded:
            return LiveSource(None, None, f"source is in the {mem.zone!r} zone")
        oid, sz = oid_memory(mem.payload)
        return LiveSource(oid, sz, _memory_columns_problem(mem, oid))
    if ref.startswith(REF_CAPABILITY):
        cap = src.caps.get(ref[len(REF_CAPABILITY) :])
        if cap is None:
            return LiveSource(None, None, "missing source")
        oid, sz = oid_capability(cap.json)
        if cap.content_hash != oid:
            return LiveSource(oid, sz, "content_hash differs from the json column")
        return LiveSource(oid, sz)
    if ref.startswith(REF_META):
        key = ref[len(REF_META) :]
        if key not in src.meta:
            return LiveSource(None, None, "missing source")
        oid, sz = oid_meta(key, src.meta[key])
        return LiveSource(oid, sz)
    info = src.sqlar.get(ref)
    if info is None:
        return LiveSource(None, None, "missing source")
    if info.zone != ZONE_ROM:
        return LiveSource(None, None, f"source is in the {info.zone!r} zone")
    oid, sz = src.cart.sqlar_sha256(info)
    return LiveSource(oid, sz)


def _memory_columns_problem(mem: MemoryRow, oid: str) -> str | None:
    """A ROM memory row's other columns are copies of its signed payload (brief §1: `oid` is
    sha256 of the payload, the fingerprints and `created_at` are its fields). The manifest covers
    only the payload, so a reader of the columns would see unsigned values: each must equal what
    the payload says, else the row is tampered."""
    if mem.oid != oid:
        return "oid column differs from the payload's digest"
    try:
        record = loads_strict(mem.payload)
    except AttestError:
        return "payload is not a JSON record"
    if not isinstance(record, dict):
        return "payload is not a JSON object"
    expect = {
        "zone": (mem.zone, record.get("zone", mem.zone)),
        "artifact_fingerprint": (mem.artifact_fingerprint, record.get("artifactFingerprint")),
        "codebase_fingerprint": (mem.codebase_fingerprint, record.get("codebaseFingerprint")),
        "created_at": (mem.created_at, record.get("timestamp", mem.created_at)),
    }
    for column, (stored, signed) in expect.items():
        if stored != signed:
            return f"{column} column differs from the signed payload"
    return None


@dataclass(frozen=True)
class RomManifest:
    """The rebuilt ROM manifest and everything found while rebuilding it.

    `hash` is the ROM digest (over stored rows, as the reference computes it); `mismatches`
    (live oid differs, source missing, kind/canon/sz wrong, duplicates) and `uncovered` (ROM content
    with no object) mean the ROM cannot match what was signed.
    """

    hash: str
    canonical: bytes
    objects: tuple[ObjectRow, ...]  # the ROM objects in manifest order
    checksum_hash: str
    file_count: int
    mismatches: tuple[str, ...]
    uncovered: tuple[str, ...]
    counts_by_kind: dict[str, int]

    @property
    def entries(self) -> tuple[dict[str, Any], ...]:
        """The signed manifest's entries, as objects."""
        return tuple(
            {"sourceRef": r.source_ref, "oid": r.oid, "canon": r.canon, "sz": r.sz} for r in self.objects
        )

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.uncovered

    @property
    def hex(self) -> str:
        return self.hash.removeprefix("sha256:")


def _uncovered(src: _Sources, covered: set[str]) -> list[str]:
    """ROM content that no ROM object covers (the reference's blind spot, brief §2)."""
    out: list[str] = []
    for info in src.sqlar.values():
        if info.zone == ZONE_ROM and info.name not in covered:
            out.append(f"{info.name}: rom/ sqlar row not covered by any ROM object")
    for mem in src.memory.values():
        if mem.zone == ZONE_ROM and f"{REF_MEMORY}{mem.id}" not in covered:
            out.append(f"{REF_MEMORY}{mem.id}: ROM memory row not covered by any ROM object")
        elif mem.zone not in (ZONE_ROM, "save"):
            out.append(f"{REF_MEMORY}{mem.id}: unknown zone {mem.zone!r}")
    for cap in src.caps.values():
        if f"{REF_CAPABILITY}{cap.id}" not in covered:
            out.append(f"{REF_CAPABILITY}{cap.id}: capability row not covered by any ROM object")
    for key in BOUND_META_KEYS:
        if key in src.meta and f"{REF_META}{key}" not in covered:
            out.append(f"{REF_META}{key}: bound meta key not covered by any ROM object")
    return out


def _check_inflate_budget(src: _Sources, refs: Counter[str]) -> None:
    """Refuse before inflating anything when the declared sizes of the compressed ROM entries
    that ROM objects name already exceed the cartridge's decompression budget (a bomb spread over
    many entries; an entry named by two objects would be inflated twice)."""
    total = sum(
        max(info.sz, 0) * refs[info.name]
        for info in src.sqlar.values()
        if info.stored != info.sz and info.zone == ZONE_ROM
    )
    budget = src.cart.budget
    if total > budget.limit:
        raise BadEntry(
            f"compressed ROM entries declare {total} bytes, more than the {budget.limit}-byte "
            "decompression cap (raise it with --max-decompressed)",
            where=src.cart.label,
            details={"limit": budget.limit},
        )


def _checksum_hash(rows: Sequence[ObjectRow]) -> str:
    """sha256 of the ROM objects' checksum lines (`oid  sourceRef`, UTF-16 order), joined by newlines."""
    lines = sort_utf16([f"{r.oid}  {r.source_ref}" for r in rows])
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def compute_rom_manifest(cart: Cartridge, *, strict: bool = True) -> RomManifest:
    """Rebuild the ROM manifest from the `objects` rows, recomputing each live oid.

    With strict=True, also check kind/canon/sz against the source and report uncovered ROM content.
    Raises BadEntry/InvalidInput for content that cannot be read at all (bad names, bombs, bad UTF-8).
    """
    src = _Sources(cart)
    rows = sorted((r for r in cart.objects() if r.zone == ZONE_ROM), key=sort_key)
    refs = Counter(r.source_ref for r in rows)
    _check_inflate_budget(src, refs)
    problems = [f"{ref}: {n} ROM objects share this source" for ref, n in sorted(refs.items()) if n > 1]
    for row in rows:
        problems.extend(_object_problems(row, live_source(src, row), strict))
    canonical = jcs([{"sourceRef": r.source_ref, "oid": r.oid, "canon": r.canon, "sz": r.sz} for r in rows])
    return RomManifest(
        hash=sha256_digest(canonical),
        canonical=canonical,
        objects=tuple(rows),
        checksum_hash=_checksum_hash(rows),
        file_count=len(rows),
        mismatches=tuple(problems),
        uncovered=tuple(_uncovered(src, set(refs)) if strict else ()),
        counts_by_kind=dict(Counter(r.kind for r in rows)),
    )


def _object_problems(row: ObjectRow, live: LiveSource, strict: bool) -> list[str]:
    """What is wrong with one ROM object against its live source (empty when it matches)."""
    if live.oid is None:
        return [f"{row.source_ref}: {live.problem}"]
    if live.oid != row.oid:
        return [f"{row.source_ref}: oid mismatch"]
    out: list[str] = []
    if strict:
        if live.problem:
            out.append(f"{row.source_ref}: {live.problem}")
        kind, canon = ref_kind(row.source_ref)
        if row.kind != kind or row.canon != canon:
            out.append(f"{row.source_ref}: kind/canon {row.kind}/{row.canon} should be {kind}/{canon}")
        if live.sz != row.sz:
            out.append(f"{row.source_ref}: sz {row.sz} differs from source size {live.sz}")
    return out
