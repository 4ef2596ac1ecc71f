"""Cartridge reader: header words, tables, bounded sqlar decoding, portable paths, ROM digests."""

from __future__ import annotations

import hashlib
import json
import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest

from acxoci.cartridge.constants import check_portable_path, portable_path_problem
from acxoci.cartridge.inspect import inspect_cartridge
from acxoci.cartridge.manifest import compute_rom_manifest, oid_meta, sort_utf16
from acxoci.cartridge.reader import BadEntry, open_cartridge, read_header
from acxoci.cartridge.sqlar import Budget, stream_entry
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import InvalidInput, NotFound
from tests.harness.cartridges import NOW, SAMPLE, copy_vector, sql
from tests.harness.reader_edits import decoded


def _cartridges(vectors: Path) -> list[str]:
    exp = json.loads((vectors / "expected.json").read_text())
    return [k for k, v in exp.items() if v["kind"] == "cartridge" and "romDigest" in v]


def test_every_recorded_rom_digest_is_recomputed(vectors_dir: Path) -> None:
    exp = json.loads((vectors_dir / "expected.json").read_text())
    names = _cartridges(vectors_dir)
    assert len(names) >= 4
    for name in names:
        with open_cartridge(vectors_dir / name) as cart:
            m = compute_rom_manifest(cart)
        assert m.hash == exp[name]["romDigest"], name
        assert m.ok, (name, m.mismatches, m.uncovered)


def test_brief_facts_for_ada_ridge(vectors_dir: Path) -> None:
    with open_cartridge(vectors_dir / "reference/ada-ridge.acx") as cart:
        m = compute_rom_manifest(cart)
        assert cart.header is not None and cart.header.user_version == 0x01000100
    assert m.file_count == 27
    assert m.counts_by_kind == {"cartridge": 18, "sqlar": 8, "memory": 1}
    assert m.checksum_hash == "sha256:995e373ddcc48821239be230a89c9ff5d0fe6ac3a19f78959b55073d97518696"
    # the hashed document is a bare JSON array of {canon, oid, sourceRef, sz}
    assert m.canonical.startswith(b'[{"canon":')
    assert hashlib.sha256(m.canonical).hexdigest() == m.hex


def test_meta_oid_form() -> None:
    oid, sz = oid_meta("acx.role", "désigner")
    assert sz == len("désigner".encode())
    assert oid == "sha256:" + hashlib.sha256('{"key":"acx.role","value":"désigner"}'.encode()).hexdigest()


def test_read_and_verify_leave_bytes_identical(vectors_dir: Path, tmp_path: Path) -> None:
    p = copy_vector(vectors_dir, "sample/tampered/save-only-change.acx", tmp_path / "c.acx")
    before = p.read_bytes()
    mtime = p.stat().st_mtime_ns
    verify_cartridge(p, registry=None, now=NOW)
    inspect_cartridge(p)
    assert p.read_bytes() == before and p.stat().st_mtime_ns == mtime
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.acx"]  # no journal/wal left behind


def _header_variant(vectors: Path, tmp: Path, offset: int, data: bytes) -> Path:
    p = copy_vector(vectors, SAMPLE, tmp / "h.acx")
    b = bytearray(p.read_bytes())
    b[offset : offset + len(data)] = data
    p.write_bytes(bytes(b))
    return p


def test_header_errors(vectors_dir: Path, tmp_path: Path) -> None:
    h = read_header(vectors_dir / SAMPLE)
    assert (h.application_id, h.spec_major, h.vec0_format, h.flags) == (0x41435831, 1, 1, 0)
    with pytest.raises(InvalidInput, match="application_id=0x00000000"):
        open_cartridge(_header_variant(vectors_dir, tmp_path, 68, b"\0\0\0\0"))
    with pytest.raises(InvalidInput, match="user_version"):
        open_cartridge(_header_variant(vectors_dir, tmp_path, 60, struct.pack(">I", 0x02000100)))
    notsql = tmp_path / "n.acx"
    notsql.write_bytes(b"PK\x03\x04" + b"\0" * 200)
    with pytest.raises(InvalidInput, match="not a SQLite database") as ei:
        open_cartridge(notsql)
    assert ei.value.where == str(notsql)
    short = tmp_path / "s.acx"
    short.write_bytes((vectors_dir / SAMPLE).read_bytes()[:50])
    with pytest.raises(InvalidInput, match="shorter"):
        open_cartridge(short)
    trunc = tmp_path / "t.acx"
    trunc.write_bytes((vectors_dir / SAMPLE).read_bytes()[: 4096 * 3])
    with pytest.raises(InvalidInput, match="truncated"):
        open_cartridge(trunc)
    with pytest.raises(NotFound):
        open_cartridge(tmp_path / "absent.acx")
    with pytest.raises(InvalidInput):
        open_cartridge(tmp_path)


def test_missing_table_is_named(vectors_dir: Path, tmp_path: Path) -> None:
    p = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    sql(p, "DROP TABLE objects")
    with pytest.raises(InvalidInput, match=r"missing table.*objects"):
        open_cartridge(p)


def test_sqlar_decoding_forms() -> None:
    raw = b"hello world " * 100
    assert decoded("rom/a", len(raw), raw) == raw
    assert decoded("rom/a", len(raw), zlib.compress(raw)) == raw
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = c.compress(raw) + c.flush()
    assert decoded("rom/a", len(raw), deflated) == raw
    assert decoded("rom/a", 0, None) == b""


@pytest.mark.parametrize(
    ("sz", "data", "match"),
    [
        (100_000, zlib.compress(b"\0" * 50_000_000), "neither raw"),  # DEFLATE bomb: stops at sz+1 bytes
        (10**12, b"x", "exceeds"),  # huge declared size
        (5, b"123456", "exceed declared"),
        (100, zlib.compress(b"a" * 100)[:-6], "neither raw"),  # truncated stream
        (-1, b"", "non-negative"),
        (4, None, "no data"),
        (20, zlib.compress(b"a" * 20) + b"trailing", "neither raw"),
    ],
)
def test_sqlar_bad_entries(sz: int, data: bytes | None, match: str) -> None:
    with pytest.raises(BadEntry, match=match) as ei:
        decoded("rom/x.md", sz, data)
    assert ei.value.where == "test" and ei.value.details["entry"] == "rom/x.md"


def test_sqlar_ceiling_is_configurable() -> None:
    with pytest.raises(BadEntry, match="limit"):
        decoded("rom/a", 2048, zlib.compress(b"\0" * 2048), max_bytes=1024)


@pytest.mark.parametrize(
    "name",
    [
        "/rom/a",
        "rom/../x",
        "rom/./x",
        "rom\\a",
        "rom/a\x00b",
        "rom/a\nb",
        "rom/a\x1fb",
        "rom",
        "etc/passwd",
        "rom//a",
        "rom/-a",
        "rom/a b",
        "rom/" + "a" * 200,
        "",
    ],
)
def test_portable_path_rejects(name: str) -> None:
    assert portable_path_problem(name) is not None
    with pytest.raises(InvalidInput):
        check_portable_path(name)


@pytest.mark.parametrize("name", ["rom/knowledge/IDENTITY.md", "save/x_1.json", "rom/skills/a-b/SKILL.md"])
def test_portable_path_accepts(name: str) -> None:
    assert portable_path_problem(name) is None


def test_bad_sqlar_name_in_file_is_typed(vectors_dir: Path, tmp_path: Path) -> None:
    p = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    sql(p, "INSERT INTO sqlar VALUES ('rom/../../etc/passwd', 420, 0, 1, x'41')")
    with open_cartridge(p) as cart, pytest.raises(BadEntry, match=r"rom/\.\./\.\./etc/passwd") as ei:
        cart.sqlar_infos()
    assert ei.value.where == str(p)
    v = verify_cartridge(p, registry=None, now=NOW)
    assert v.trust == "tampered" and "etc/passwd" in v.issues[0]


def test_non_utf8_and_duplicate_key_json(vectors_dir: Path, tmp_path: Path) -> None:
    p = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    sql(p, "UPDATE cartridge SET value = CAST(x'ff41' AS TEXT) WHERE key = 'acx.role'")
    with open_cartridge(p) as cart, pytest.raises(BadEntry, match=r"cartridge\.value .* not valid UTF-8"):
        cart.meta()
    p2 = copy_vector(vectors_dir, SAMPLE, tmp_path / "d.acx")
    sql(p2, 'UPDATE capabilities SET json = \'{"id":1,"id":2}\'')
    with pytest.raises(BadEntry, match="duplicate"):
        inspect_cartridge(p2)
    p3 = copy_vector(vectors_dir, SAMPLE, tmp_path / "e.acx")
    sql(p3, 'UPDATE signatures SET envelope = \'{"payloadType":"a","payloadType":"b"}\'')
    v = verify_cartridge(p3, registry=None, now=NOW)
    assert (v.trust, v.summary) == ("tampered", "Malformed DSSE envelope.")


def test_enormous_envelope_is_bounded(vectors_dir: Path, tmp_path: Path) -> None:
    p = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    sql(p, "UPDATE signatures SET envelope = '[' || replace(hex(zeroblob(3000000)), '00', '1,') || '1]'")
    v = verify_cartridge(p, registry=None, now=NOW)
    assert v.summary == "Malformed DSSE envelope." and "limit" in v.issues[0]


def test_inspect_summary(vectors_dir: Path) -> None:
    d = inspect_cartridge(vectors_dir / "reference/ada-ridge.acx")
    assert d["romObjects"] == {"count": 27, "byKind": {"cartridge": 18, "memory": 1, "sqlar": 8}}
    assert d["romDigest"] == d["recordedRomManifestHash"]
    assert len(d["attestations"]) == 1 and d["attestations"][0]["type"] == "vc-2.0"
    assert d["signatures"][0]["keyid"].startswith("ed25519:1db97198")
    assert d["memory"] == {"rom": 1}


def test_entry_ceiling_applies_before_reading_data(vectors_dir: Path) -> None:
    with open_cartridge(vectors_dir / SAMPLE, max_entry_bytes=200) as cart:
        with pytest.raises(BadEntry, match=r"policy/loop-context-policy\.json.*limit") as ei:
            cart.sqlar_read("rom/policy/loop-context-policy.json")
        assert ei.value.details["entry"] == "rom/policy/loop-context-policy.json"
        assert cart.sqlar_read("rom/knowledge/SKILLS.md") is not None  # 56 bytes: under the ceiling
        assert cart.sqlar_read("rom/absent.md") is None


def test_manifest_order_is_utf16_code_units() -> None:
    # U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FFFD (code point order says after);
    # a lone surrogate (as SQLite text can hold) still gets a key
    assert sort_utf16(["\ufffd", "\U0001f600", "a"]) == ["a", "\U0001f600", "\ufffd"]
    assert sort_utf16(["\udbff", "\U0001f600"]) == ["\U0001f600", "\udbff"]
    assert sort_utf16(["b", "\ufffd", "a"]) == ["a", "b", "\ufffd"]


def _stream(sz: object, stored_bytes: bytes, chunks: list[bytes], *, budget: Budget | None = None,
            max_bytes: int = 1 << 20) -> bytes:
    out = bytearray()
    stream_entry("rom/a", sz, len(stored_bytes), lambda: iter(chunks), lambda: out.extend, where="c.acx",
                 max_bytes=max_bytes, budget=budget)
    return bytes(out)


def test_budget_is_shared_and_inclusive() -> None:
    b = Budget(10)
    b.charge(4, name="a", where="c")
    b.charge(6, name="b", where="c")  # exactly at the limit: allowed
    assert b.used == 10
    with pytest.raises(BadEntry, match=r"sqlar entry 'c': more than 10 bytes decompressed in total") as info:
        b.charge(1, name="c", where="f.acx")
    assert info.value.details == {"entry": "c", "limit": 10}


def test_stream_entry_inflates_in_chunks_and_charges_the_budget() -> None:
    data = bytes(range(256)) * 40  # 10,240 bytes
    z = zlib.compress(data)
    budget = Budget(len(data) + 5)
    assert _stream(len(data), z, [z[:7], z[7:100], z[100:]], budget=budget) == data
    assert budget.used == len(data)
    raw = zlib.compressobj(wbits=-15)
    deflated = raw.compress(data) + raw.flush()
    assert _stream(len(data), deflated, [deflated[:3], deflated[3:]]) == data
    with pytest.raises(BadEntry, match="more than 10 bytes decompressed"):
        _stream(len(data), z, [z], budget=Budget(10))
    assert _stream(3, b"abc", [b"a", b"bc"]) == b"abc"  # raw: stored == sz


@pytest.mark.parametrize(
    ("sz", "chunks", "match"),
    [
        (1001, [zlib.compress(b"x" * 1000)], "neither raw, zlib nor raw DEFLATE of exactly 1001 bytes"),
        (999, [zlib.compress(b"x" * 1000)], "neither raw, zlib nor raw DEFLATE of exactly 999 bytes"),
        (1000, [zlib.compress(b"x" * 1000), b"tail"], "neither raw"),
        (1000, [zlib.compress(b"x" * 1000)[:-3]], "neither raw"),
        (1000, [zlib.compress(b"x" * 1000) + b"!"], "neither raw"),
    ],
)
def test_stream_entry_refuses_what_is_not_exactly_sz(sz: int, chunks: list[bytes], match: str) -> None:
    stored = b"".join(chunks)
    with pytest.raises(BadEntry, match=match):
        _stream(sz, stored, chunks)


def test_stream_entry_sizes() -> None:
    with pytest.raises(BadEntry, match=r"no data but sz=4"):
        _stream(4, b"", [])
    assert _stream(0, b"", []) == b""
    for bad in (-1, True, "4", 1.0):
        with pytest.raises(BadEntry, match="is not a non-negative integer"):
            _stream(bad, b"abcd", [b"abcd"])
    z = zlib.compress(b"x" * 1001)
    with pytest.raises(BadEntry, match="declared size 1001 exceeds the 1000-byte limit"):
        _stream(1001, z, [z], max_bytes=1000)
    z = zlib.compress(b"x" * 1000)
    assert _stream(1000, z, [z], max_bytes=1000) == b"x" * 1000
    big = b"y" * 12  # raw bytes are in the file already: no cap applies
    assert _stream(12, big, [big], max_bytes=10) == big
    with pytest.raises(BadEntry, match="5 stored bytes exceed declared size 4"):
        _stream(4, b"abcde", [b"abcde"])


def test_a_bomb_stops_at_sz() -> None:
    bomb = zlib.compress(bytes(50 * 1024 * 1024))
    tracemalloc.start()
    try:
        with pytest.raises(BadEntry, match="neither raw"):
            decoded("rom/b", 100_000, bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
    small = zlib.compress(b"z" * 100)
    assert decoded("rom/z", 100, small) == b"z" * 100
    assert decoded("rom/empty", 0, None) == b""
