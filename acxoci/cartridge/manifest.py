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
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

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
from acxoci.cartridge.order import strictly_rising
from acxoci.cartridge.reader import BadEntry, Cartridge, MemoryRow, ObjectRow, RomHashing, SqlarInfo
from acxoci.cartridge.romhash import expected
from acxoci.gcpause import paused_gc
from attest.canonical import jcs, loads_strict, sha256_digest
from attest.errors import AttestError

__all__ = [
    "LiveSource",
    "RomManifest",
    "compute_rom_manifest",
    "manifest_hash_of",
    "meta_object_bytes",
    "oid_capability",
    "oid_memory",
    "oid_meta",
    "oid_sqlar",
    "ref_kind",
    "sort_key",
    "utf16_key",
]


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


def _bmp_only(texts: Sequence[str]) -> bool:
    """True when no string has a code point above U+FFFF: then str order is UTF-16 order."""
    return "".join(texts).isascii() or all(t.isascii() or max(t) <= "\uffff" for t in texts)


def sort_utf16(texts: Sequence[str]) -> list[str]:
    """`texts` sorted by UTF-16 code units (plain str order when all are inside the BMP)."""
    return sorted(texts) if _bmp_only(texts) else sorted(texts, key=utf16_key)


def sort_key(row: ObjectRow) -> tuple[bytes, bytes]:
    """Manifest order: (kind, source_ref) by UTF-16 code units."""
    return utf16_key(row.kind), utf16_key(row.source_ref)


@dataclass(frozen=True, slots=True)
class LiveSource:
    """The recomputed oid and size of one ROM object's source, or why it could not be found."""

    oid: str | None
    sz: int | None
    problem: str | None = None


class _Sources:
    """Every ROM source, from one scan of each table, keyed by its TEXT key (never an SQL lookup)."""

    def __init__(self, cart: Cartridge, meta: dict[str, str], rom_hashes: RomHashing) -> None:
        self.cart = cart
        self.meta = meta
        self.hashing = rom_hashes
        self.sqlar = {i.name: i for i in cart.sqlar_infos()}
        self.memory = {m.id: m for m in cart.memory(save_payloads=False)}
        self.caps = {c.id: c for c in cart.capabilities()}

    def sqlar_digest(self, info: SqlarInfo) -> tuple[str, int]:
        """(oid, sz) of a scanned ROM row (from the hashing pass, or streamed for this row)."""
        return self.hashing.digest(info)


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
    oid, sz = src.sqlar_digest(info)
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


def manifest_hash_of(entries: list[dict[str, Any]]) -> tuple[str, bytes]:
    """(sha256:…, canonical bytes) of a manifest entry list (a bare JSON array, JCS)."""
    canonical = jcs(entries)
    return sha256_digest(canonical), canonical


# The manifest array in JCS form (keys in UTF-16 order: canon < oid < sourceRef < sz), for text
# that JSON writes as itself (printable ASCII without '"' or '\\'), as eight pieces per entry:
# what comes before its canon (the array or the previous entry), canon, '","oid":"', oid,
# '","sourceRef":"', sourceRef, '","sz":', sz; then the end of the last entry and the array.
_JCS_FIRST, _JCS_NEXT, _JCS_END = '[{"canon":"', '},{"canon":"', "}]"
_JCS_OID, _JCS_REF, _JCS_SZ = '","oid":"', '","sourceRef":"', '","sz":'
_PRINTABLE = bytes(range(0x20, 0x7F))  # the bytes JSON writes as themselves (with '"' and '\\')


def canonical_entries(refs: list[str], oids: list[str], canons: list[str], sizes: list[int]) -> bytes:
    """The JCS bytes of the manifest array whose entries are `{sourceRef, oid, canon, sz}`, given
    as columns.

    Equal to `jcs` of the entry objects (tests/unit/test_manifest_canonical.py). When every size
    is a safe integer, the values are first written as themselves, whole columns at a time; that
    is the answer when the result is printable ASCII with no backslash and only the 14 quotes per
    entry that the keys and the three string values bring (then no string needed escaping).
    Anything else goes through `jcs`."""
    n = len(refs)
    if not len(oids) == len(canons) == len(sizes) == n:
        raise ValueError("canonical_entries: columns of different lengths")
    if not n:
        return b"[]"
    if set(map(type, sizes)) <= {int} and min(sizes) >= 0 and max(sizes) < 2**53:
        # whole columns into their places: no per-entry formatting, each string read once
        parts = [_JCS_OID] * (8 * n)
        parts[0::8] = [_JCS_NEXT] * n
        parts[0] = _JCS_FIRST
        parts[1::8] = canons
        parts[3::8] = oids
        parts[4::8] = [_JCS_REF] * n
        parts[5::8] = refs
        parts[6::8] = [_JCS_SZ] * n
        parts[7::8] = map(str, sizes)
        parts.append(_JCS_END)
        try:
            text: str | None = "".join(parts)
        except TypeError:  # a value that is no string: jcs says what it makes of it
            text = None
        if text is not None and text.isascii():
            out = text.encode("ascii")
            if not out.translate(None, _PRINTABLE) and b"\\" not in out and out.count(b'"') == 14 * n:
                return out
    return jcs(
        [
            {"sourceRef": r, "oid": o, "canon": c, "sz": z}
            for r, o, c, z in zip(refs, oids, canons, sizes, strict=True)
        ]
    )


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


def _check_inflate_budget(src: _Sources, refs: list[str]) -> None:
    """Refuse before inflating anything when the declared sizes of the compressed ROM entries
    that ROM objects name already exceed the cartridge's decompression budget (a bomb spread over
    many entries)."""
    compressed = [i for i in src.sqlar.values() if i.stored != i.sz and i.zone == ZONE_ROM]
    if not compressed:
        return
    named = Counter(refs)  # an entry named by two objects would be inflated twice
    total = sum(max(info.sz, 0) * named[info.name] for info in compressed)
    budget = src.cart.budget
    if total > budget.limit:
        raise BadEntry(
            f"compressed ROM entries declare {total} bytes, more than the {budget.limit}-byte "
            "decompression cap (raise it with --max-decompressed)",
            where=src.cart.label,
            details={"limit": budget.limit},
        )


def compute_rom_manifest(cart: Cartridge, *, strict: bool = True) -> RomManifest:
    """Rebuild the ROM manifest (see `_compute_rom_manifest`), with the cyclic collector paused."""
    with paused_gc():
        return _compute_rom_manifest(cart, strict=strict)


def _checksum_hash(oids: Sequence[str], refs: Sequence[str]) -> str:
    """sha256 of the ROM objects' checksum lines (`oid  sourceRef`, UTF-16 order), joined by
    newlines. The columns come in the objects b-tree's order, oids strictly rising: when every
    oid is ASCII and of one length, the oids alone order the lines, which are then already in
    UTF-16 order and are written a column at a time."""
    if not oids:
        return "sha256:" + hashlib.sha256(b"").hexdigest()
    if len(set(map(len, oids))) == 1 and "".join(oids).isascii() and strictly_rising(oids):
        parts = ["  "] * (4 * len(oids))
        parts[0::4] = oids
        parts[2::4] = refs
        parts[3::4] = ["\n"] * len(oids)
        text = "".join(parts[:-1])
    else:
        text = "\n".join(sort_utf16(["  ".join(pair) for pair in zip(oids, refs, strict=True)]))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rom_sources(src: _Sources, refs: list[str]) -> list[SqlarInfo | None]:
    """Each object's ROM sqlar source (None: another kind of source, or none), whole columns: a
    sqlar name is portable, never a memory:/capability:/meta: ref."""
    rom = {info.name: info for info in src.sqlar.values() if info.zone == ZONE_ROM}
    return list(map(rom.get, refs))


def _compute_rom_manifest(cart: Cartridge, *, strict: bool) -> RomManifest:
    """Rebuild the ROM manifest from the `objects` rows, recomputing each live oid.

    With strict=True, also check kind/canon/sz against the source and report uncovered ROM content.
    Raises BadEntry/InvalidInput for content that cannot be read at all (bad names, bombs, bad UTF-8).

    Every check that needs no sqlar digest runs first, and the ROM rows' digests are joined last:
    for a large ROM the hashing pass's helper process hashes meanwhile (romhash.py).
    """
    # the hashing pass's digests are used only for rowids that the typed sqlar scan accepted
    rom_hashes = cart.start_rom_hashing()
    try:
        meta = cart.meta()
        rows = [r for r in cart.objects() if r.zone == ZONE_ROM]
        # the columns in the objects b-tree's (oid) order, for the checksum and the sort's choice
        by_oid = list(zip(*rows, strict=True)) if rows else [()] * 6
        checksum = _checksum_hash(by_oid[0], by_oid[2])
        if _bmp_only(by_oid[1]) and _bmp_only(by_oid[2]):
            # by (kind, source_ref): two stable sorts on one string each cost a third of one on pairs
            rows.sort(key=attrgetter("source_ref"))
            rows.sort(key=attrgetter("kind"))
        else:
            rows.sort(key=sort_key)
        del by_oid
        src = _Sources(cart, meta, rom_hashes)
        oids, kinds, refs, canons, _, sizes = map(list, zip(*rows, strict=True)) if rows else ([],) * 6
        _check_inflate_budget(src, refs)
        # (row position, problem): a problem found at the join keeps its row's place in the list
        problems: list[tuple[int, str]] = []
        covered = set(refs)
        if len(covered) != len(refs):
            for ref, n in sorted(Counter(refs).items()):
                if n > 1:
                    problems.append((-1, f"{ref}: {n} ROM objects share this source"))
        infos = _rom_sources(src, refs)
        if None in infos:
            for i, info in enumerate(infos):
                if info is None:
                    problems.extend(
                        (i, p) for p in _object_problems(rows[i], live_source(src, rows[i]), strict)
                    )
        canonical = canonical_entries(refs, oids, canons, sizes)
        uncovered = _uncovered(src, covered) if strict else []
        del src, covered  # freed now, while the helper still hashes, not after the join
        digest, counts = sha256_digest(canonical), dict(Counter(kinds))
        columns = _Columns(oids, kinds, canons, sizes)
        problems.extend(_join_problems(rows, infos, columns, rom_hashes, strict))  # the digests, last
    finally:
        rom_hashes.close()
    problems.sort(key=itemgetter(0))  # stable: a row's own problems keep their order
    return RomManifest(
        hash=digest,
        canonical=canonical,
        objects=tuple(rows),
        checksum_hash=checksum,
        file_count=len(rows),
        mismatches=tuple(p for _, p in problems),
        uncovered=tuple(uncovered),
        counts_by_kind=counts,
    )


class _Columns(NamedTuple):
    """The ROM objects' columns, in manifest order."""

    oids: list[str]
    kinds: list[str]
    canons: list[str]
    sizes: list[int]


def _join_problems(
    rows: list[ObjectRow],
    infos: list[SqlarInfo | None],
    columns: _Columns,
    hashing: RomHashing,
    strict: bool,
) -> list[tuple[int, str]]:
    """(row position, problem) for each object whose ROM sqlar source does not match it, joining
    the hashing pass's digests (taken for a row only when it is stored raw: length = sz = stored).

    Whole columns first: when every source was hashed raw, with the object's oid and size, and
    every object is a raw sqlar kind, nothing is wrong; otherwise row by row (streaming the rows
    the pass did not hash) to find what is. What needs no digest is built before the pass is
    waited for: for a large ROM it then overlaps the helper's hashing."""
    joined = [info is not None for info in infos]  # the objects whose source is a ROM sqlar row
    if any(joined):
        srcs = [info for info in infos if info is not None]
        oids, sizes = list(compress(columns.oids, joined)), list(compress(columns.sizes, joined))
        raw_kinds = (
            set(compress(columns.kinds, joined)) == {KIND_SQLAR}
            and set(compress(columns.canons, joined)) == {CANON_RAW}
            and list(map(attrgetter("sz"), srcs)) == sizes
            and list(map(attrgetter("stored"), srcs)) == sizes
        )
        if raw_kinds:
            rowids = list(map(attrgetter("rowid"), srcs))
            # the common case: the pass's records are exactly those of every ROM row as stated
            # (what they should be is built before the pass is waited for)
            expect = expected(rowids, oids, sizes)
            if hashing.all_match(expect):
                return []
            hashed = hashing.digests()  # e.g. ROM rows no object covers (reported elsewhere)
            if list(map(hashed.get, rowids)) == list(zip(oids, sizes, sizes, strict=True)):
                return []
    else:
        hashing.digests()  # the pass's own checks still run (a bad file raises)
    out: list[tuple[int, str]] = []
    for i, (row, info) in enumerate(zip(rows, infos, strict=True)):
        if info is None:
            continue
        oid, sz = hashing.digest(info)
        if oid != row.oid or (strict and (sz != row.sz or row.kind != KIND_SQLAR or row.canon != CANON_RAW)):
            out.extend((i, p) for p in _object_problems(row, LiveSource(oid, sz), strict))
    return out


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
