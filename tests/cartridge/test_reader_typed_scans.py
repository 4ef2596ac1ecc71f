"""The reader's typed scans, in process: every column of every row method refuses a value of the
wrong SQLite storage class (naming table and column exactly), every text column read that does not
decode as UTF-8 is refused naming its table and column, and the rows returned are exactly the
file's, compared with a plain sqlite3 read of the same file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge.reader import (
    AttestationRow,
    BadEntry,
    CapabilityRow,
    Cartridge,
    MemoryRow,
    ObjectRow,
    SignatureRow,
    SkillRow,
    SqlarInfo,
    open_cartridge,
)
from acxoci.errors import InvalidInput
from tests.harness.reader_edits import (
    ATTESTATION,
    CAP,
    MEMORY_ID,
    ROM_FILE,
    SIG_ID,
    SKILL,
    class_refused,
    edited,
    refused,
    scratch,
)

# method of Cartridge that scans each table
READ: dict[str, Callable[[Cartridge], object]] = {
    "cartridge": Cartridge.meta,
    "sqlar": Cartridge.sqlar_infos,
    "memory": Cartridge.memory,
    "objects": Cartridge.objects,
    "signatures": Cartridge.signatures,
    "capabilities": Cartridge.capabilities,
    "attestations": Cartridge.attestations,
    "acx_skill": Cartridge.skills,
}
FIRST_OBJECT = "(SELECT min(oid) FROM objects)"

# (table, column, statement that stores a value of the wrong class, its class, the accepted classes)
WRONG_CLASS: list[tuple[str, str, str, str, str]] = [
    (
        "cartridge",
        "key",
        "UPDATE cartridge SET key = CAST(key AS BLOB) WHERE key = 'acx.role'",
        "blob",
        "text",
    ),
    (
        "cartridge",
        "value",
        "UPDATE cartridge SET value = X'41' WHERE key = 'acx.role'",
        "blob",
        "text",
    ),
    ("sqlar", "name", "INSERT INTO sqlar VALUES (X'726f6d2f61', 420, 0, 1, X'41')", "blob", "text"),
    ("sqlar", "name", "INSERT INTO sqlar VALUES (NULL, 420, 0, 1, X'41')", "null", "text"),
    ("sqlar", "mode", f"UPDATE sqlar SET mode = 'x' WHERE name = '{ROM_FILE}'", "text", "integer"),
    ("sqlar", "mode", f"UPDATE sqlar SET mode = 1.5 WHERE name = '{ROM_FILE}'", "real", "integer"),
    ("sqlar", "mode", f"UPDATE sqlar SET mode = NULL WHERE name = '{ROM_FILE}'", "null", "integer"),
    ("sqlar", "mtime", f"UPDATE sqlar SET mtime = 'x' WHERE name = '{ROM_FILE}'", "text", "integer or null"),
    ("sqlar", "sz", f"UPDATE sqlar SET sz = NULL WHERE name = '{ROM_FILE}'", "null", "integer"),
    ("sqlar", "sz", f"UPDATE sqlar SET sz = 'x' WHERE name = '{ROM_FILE}'", "text", "integer"),
    ("sqlar", "data", f"UPDATE sqlar SET data = 'x' WHERE name = '{ROM_FILE}'", "text", "blob or null"),
    ("sqlar", "data", f"UPDATE sqlar SET data = 7 WHERE name = '{ROM_FILE}'", "integer", "blob or null"),
    *[
        ("memory", c, f"UPDATE memory SET {c} = CAST({c} AS BLOB)", "blob", "text")
        for c in ("id", "zone", "payload", "oid", "created_at", "artifact_fingerprint")
    ],
    (
        "memory",
        "codebase_fingerprint",
        "UPDATE memory SET codebase_fingerprint = X'41'",
        "blob",
        "text or null",
    ),
    *[
        (
            "objects",
            c,
            f"UPDATE objects SET {c} = CAST({c} AS BLOB) WHERE oid = {FIRST_OBJECT}",
            "blob",
            "text",
        )
        for c in ("oid", "kind", "source_ref", "canon", "zone")
    ],
    ("objects", "sz", f"UPDATE objects SET sz = 'x' WHERE oid = {FIRST_OBJECT}", "text", "integer"),
    *[
        ("signatures", c, f"UPDATE signatures SET {c} = CAST({c} AS BLOB)", "blob", "text")
        for c in ("sig_id", "target", "manifest_hash", "envelope", "keyid", "alg", "created_at")
    ],
    ("signatures", "public_key_pem", "UPDATE signatures SET public_key_pem = X'41'", "blob", "text or null"),
    *[
        (
            "capabilities",
            c,
            f"UPDATE capabilities SET {c} = CAST({c} AS BLOB) WHERE id = '{CAP}'",
            "blob",
            "text",
        )
        for c in ("id", "json", "content_hash")
    ],
    *[
        ("attestations", c, f"UPDATE attestations SET {c} = X'41'", "blob", "text")
        for c in ("att_id", "type", "media_type", "document", "created_at")
    ],
    *[
        ("attestations", c, f"UPDATE attestations SET {c} = X'41'", "blob", "text or null")
        for c in ("subject_oid", "status_url")
    ],
    ("acx_skill", "sqlar_path", "UPDATE acx_skill SET sqlar_path = X'41'", "blob", "text"),
    ("acx_skill", "sqlar_path", "UPDATE acx_skill SET sqlar_path = NULL", "null", "text"),
    ("acx_skill", "resources", "UPDATE acx_skill SET resources = X'41'", "blob", "text"),
    ("acx_skill", "body_tokens", "UPDATE acx_skill SET body_tokens = 'x'", "text", "integer or null"),
    *[
        ("acx_skill", c, f"UPDATE acx_skill SET {c} = X'41'", "blob", "text")
        for c in ("name", "description", "content_sha256")
    ],
    *[
        ("acx_skill", c, f"UPDATE acx_skill SET {c} = X'41'", "blob", "text or null")
        for c in ("skill_version", "license")
    ],
]


@pytest.mark.parametrize(
    ("table", "column", "statement", "got", "expected"),
    WRONG_CLASS,
    ids=[f"{t}.{c}-{g}" for t, c, _, g, _ in WRONG_CLASS],
)
def test_a_value_of_the_wrong_storage_class_is_refused_naming_table_and_column(
    table: str, column: str, statement: str, got: str, expected: str, vectors_dir: Path, tmp_path: Path
) -> None:
    p = edited(vectors_dir, tmp_path, ATTESTATION, statement)
    with open_cartridge(p) as cart:
        class_refused(lambda: READ[table](cart), p, table, column, got, expected)


def test_the_first_wrong_column_of_a_row_is_the_one_named(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(vectors_dir, tmp_path, "UPDATE memory SET oid = X'41', created_at = X'42', zone = X'43'")
    with open_cartridge(p) as cart:
        class_refused(cart.memory, p, "memory", "zone", "blob", "text")


def test_a_wrong_value_in_a_later_row_is_found(vectors_dir: Path, tmp_path: Path) -> None:
    # the check column is NULL for every good row: the first non-NULL one is reported
    p = edited(
        vectors_dir, tmp_path, "UPDATE sqlar SET mtime = 'late' WHERE rowid = (SELECT max(rowid) FROM sqlar)"
    )
    with open_cartridge(p) as cart:
        class_refused(cart.sqlar_infos, p, "sqlar", "mtime", "text", "integer or null")


BLOB_TEXT = "CAST(X'41ff42' AS TEXT)"  # invalid UTF-8 at byte 1

# (table, column to break, where clause): every text column a row method reads
NOT_UTF8: list[tuple[str, str, str]] = [
    ("cartridge", "key", "key = 'acx.role'"),
    ("cartridge", "value", "key = 'acx.role'"),
    ("sqlar", "name", f"name = '{ROM_FILE}'"),
    *[
        ("memory", c, "1")
        for c in ("id", "zone", "oid", "created_at", "artifact_fingerprint", "codebase_fingerprint")
    ],
    *[("objects", c, f"source_ref = '{ROM_FILE}'") for c in ("source_ref", "oid", "kind", "canon", "zone")],
    *[
        ("signatures", c, "1")
        for c in ("sig_id", "target", "manifest_hash", "keyid", "public_key_pem", "alg", "created_at")
    ],
    ("capabilities", "id", f"id = '{CAP}'"),
    ("capabilities", "content_hash", f"id = '{CAP}'"),
    *[
        ("attestations", c, "1")
        for c in ("att_id", "type", "subject_oid", "media_type", "status_url", "created_at")
    ],
    *[
        ("acx_skill", c, "1")
        for c in ("sqlar_path", "name", "description", "skill_version", "license", "content_sha256")
    ],
    # text that does not decode in an integer column is named as well (not a decoder crash)
    *[("sqlar", c, f"name = '{ROM_FILE}'") for c in ("mode", "mtime", "sz")],
    ("objects", "sz", f"oid = {FIRST_OBJECT}"),
]


@pytest.mark.parametrize(("table", "column", "where"), NOT_UTF8, ids=[f"{t}.{c}" for t, c, _ in NOT_UTF8])
def test_text_that_is_not_utf8_is_refused_naming_table_and_column(
    table: str, column: str, where: str, vectors_dir: Path, tmp_path: Path
) -> None:
    p = edited(vectors_dir, tmp_path, ATTESTATION, f"UPDATE {table} SET {column} = {BLOB_TEXT} WHERE {where}")
    with open_cartridge(p) as cart:
        refused(
            lambda: READ[table](cart),
            BadEntry,
            f"{table}.{column} holds text that is not valid UTF-8",
            where=str(p),
            details={"table": table, "column": column},
        )


def _plain(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def test_rows_are_the_files_own(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir,
        tmp_path,
        ATTESTATION,
        "INSERT INTO attestations VALUES ('att-0', 't', 'sha256:ab', 'm', 'doc', 'https://s/1', 'c')",
        "INSERT INTO sqlar VALUES ('save/notes.md', 416, NULL, 0, NULL)",
        "INSERT INTO memory VALUES ('mem-save', 'save', 'fp', 'cbf', '{\"s\":1}', 'sha256:11', 'c2')",
        "UPDATE signatures SET public_key_pem = NULL",
    )
    with open_cartridge(p) as cart:
        assert cart.meta() == dict(_plain(p, "SELECT key, value FROM cartridge"))
        assert cart.sqlar_infos() == [
            SqlarInfo(n, m, t, s, 0 if d is None else d, r, n.split("/")[0])
            for r, n, m, t, s, d in _plain(p, "SELECT rowid, name, mode, mtime, sz, length(data) FROM sqlar")
        ]
        assert cart.sqlar_info("save/notes.md") == SqlarInfo(
            "save/notes.md", 416, None, 0, 0, cart.sqlar_infos()[-1].rowid, "save"
        )
        assert cart.memory() == [
            MemoryRow(i, z, pl, o, c, True, a, cb)
            for i, z, pl, o, c, a, cb in _plain(
                p,
                "SELECT id, zone, CAST(payload AS BLOB), oid, created_at, artifact_fingerprint,"
                " codebase_fingerprint FROM memory",
            )
        ]
        assert [r.codebase_fingerprint for r in cart.memory()] == [None, "cbf"]
        assert cart.objects() == [ObjectRow(*r) for r in _plain(p, "SELECT * FROM objects")]
        assert cart.signatures() == [
            SignatureRow(s, t, m, e, k, pem, a, c)
            for s, t, m, e, k, pem, a, c in _plain(
                p,
                "SELECT sig_id, target, manifest_hash, CAST(envelope AS BLOB), keyid, public_key_pem, alg,"
                " created_at FROM signatures",
            )
        ]
        assert cart.signatures()[0].public_key_pem is None
        assert cart.capabilities() == [
            CapabilityRow(i, j, h)
            for i, j, h in _plain(p, "SELECT id, CAST(json AS BLOB), content_hash FROM capabilities")
        ]
        assert cart.attestations() == [
            AttestationRow("att-0", "t", "sha256:ab", "m", b"doc", "https://s/1", "c"),
            AttestationRow(
                "att-1", "vc-2.0", None, "application/vc+ld+json", b'{"a":1}', None, "2026-05-01T00:00:00Z"
            ),
        ]
        [skill] = cart.skills()
        assert skill == SkillRow(
            *_plain(
                p,
                "SELECT sqlar_path, name, description, skill_version, license, content_sha256 FROM acx_skill",
            )[0]
        )
        assert (skill.sqlar_path, skill.name, skill.skill_version) == (SKILL, "expertise-designer", None)


def test_rows_read_after_a_non_utf8_value_elsewhere_are_still_exact(
    vectors_dir: Path, tmp_path: Path
) -> None:
    # memory.payload and capabilities.json are handed on as the stored bytes (parsed strictly
    # later), so a non-UTF-8 byte there is not the reader's refusal; the other columns of the
    # fallback pass decode to the same strings as the native pass
    p = edited(
        vectors_dir,
        tmp_path,
        f"UPDATE memory SET payload = {BLOB_TEXT}",
        f"UPDATE capabilities SET json = {BLOB_TEXT} WHERE id = '{CAP}'",
        f"UPDATE signatures SET envelope = {BLOB_TEXT}",
        ATTESTATION,
        f"UPDATE attestations SET document = {BLOB_TEXT}",
    )
    with open_cartridge(p) as cart:
        [mem] = cart.memory()
        assert (mem.id, mem.zone, mem.payload, mem.payload_loaded) == (MEMORY_ID, "rom", b"A\xffB", True)
        assert cart.capabilities(CAP) == [
            CapabilityRow(
                CAP, b"A\xffB", _plain(p, f"SELECT content_hash FROM capabilities WHERE id = '{CAP}'")[0][0]
            )
        ]
        assert cart.signatures()[0].envelope == b"A\xffB"
        assert cart.attestations()[0].document == b"A\xffB"


def test_filters_pick_one_row(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir,
        tmp_path,
        "INSERT INTO memory VALUES ('mem-save', 'save', 'fp', NULL, '{\"s\":1}', 'sha256:11', 'c2')",
    )
    with open_cartridge(p) as cart:
        assert [r.id for r in cart.memory(MEMORY_ID)] == [MEMORY_ID]
        assert [r.id for r in cart.memory("mem-save")] == ["mem-save"]
        assert cart.memory("absent") == []
        assert [r.id for r in cart.capabilities(CAP)] == [CAP]
        assert cart.capabilities("absent") == []
        assert len(cart.capabilities()) == 2
        rom, save = cart.memory(save_payloads=False)
        assert (rom.payload_loaded, save.payload_loaded, save.payload) == (True, False, b"")
        assert rom.payload == cart.memory(MEMORY_ID)[0].payload and len(rom.payload) == 518
        assert cart.memory("mem-save", save_payloads=True)[0].payload == b'{"s":1}'


def test_save_payloads_are_type_checked_even_when_not_loaded(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir, tmp_path, "INSERT INTO memory VALUES ('mem-save', 'save', 'fp', NULL, X'00', 'o', 'c')"
    )
    with open_cartridge(p) as cart:
        class_refused(lambda: cart.memory(save_payloads=False), p, "memory", "payload", "blob", "text")


def test_signatures_newest_first_by_created_at_bytes(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir,
        tmp_path,
        "INSERT INTO signatures SELECT 'sig-a', target, manifest_hash, envelope, keyid, public_key_pem, alg,"
        " '2027-01-01T00:00:00Z' FROM signatures"
        f" WHERE sig_id = '{SIG_ID}'",
        "INSERT INTO signatures SELECT 'sig-z', target, manifest_hash, envelope, keyid, public_key_pem, alg,"
        " '2025-01-01T00:00:00Z' FROM signatures"
        f" WHERE sig_id = '{SIG_ID}'",
        # U+00E9 sorts after every ASCII character as UTF-8 bytes (and as code points)
        "INSERT INTO signatures SELECT 'sig-m', target, manifest_hash, envelope, keyid, public_key_pem, alg,"
        " '2027-01-01T00:00:00Z\u00e9' FROM signatures"
        f" WHERE sig_id = '{SIG_ID}'",
    )
    with open_cartridge(p) as cart:
        assert [s.sig_id for s in cart.signatures()] == ["sig-m", "sig-a", SIG_ID, "sig-z"]


def test_objects_sz_must_be_a_json_safe_integer(vectors_dir: Path, tmp_path: Path) -> None:
    for size, ok in ((-1, False), (0, True), (2**53 - 1, True), (2**53, False)):
        p = edited(
            vectors_dir,
            tmp_path,
            f"UPDATE objects SET sz = {size} WHERE source_ref = '{ROM_FILE}'",
            name=f"{size}.acx",
        )
        with open_cartridge(p) as cart:
            if ok:
                [row] = [o for o in cart.objects() if o.source_ref == ROM_FILE]
                assert row.sz == size
            else:
                refused(
                    cart.objects,
                    BadEntry,
                    f"objects[{ROM_FILE}].sz {size} is outside 0..2**53-1",
                    where=str(p),
                    details={"table": "objects", "column": "sz"},
                )


def test_a_null_meta_value_is_refused_naming_table_and_column() -> None:
    conn = scratch(ddl=False)
    conn.execute("CREATE TABLE cartridge (key TEXT PRIMARY KEY NOT NULL, value TEXT) WITHOUT ROWID")
    conn.execute("INSERT INTO cartridge VALUES ('acx.a', 'x'), ('acx.role', NULL)")
    cart = Cartridge.from_connection(conn, label="mem")
    class_refused(cart.meta, Path("mem"), "cartridge", "value", "null", "text")
    conn.execute("UPDATE cartridge SET value = 'r' WHERE key = 'acx.role'")
    assert cart.meta() == {"acx.a": "x", "acx.role": "r"}  # a wrapped connection is never cached


def test_missing_tables_are_named() -> None:
    conn = scratch(ddl=False)
    conn.execute("CREATE TABLE sqlar (name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    conn.execute("CREATE TABLE memory (x)")
    cart = Cartridge.from_connection(conn, label="mem")
    refused(
        cart.check_tables,
        InvalidInput,
        "not an .acx cartridge: missing table(s) cartridge, objects, signatures, capabilities",
        where="mem",
    )
    assert cart.tables() == frozenset({"sqlar", "memory"})
    assert cart.has_table("sqlar") and not cart.has_table("objects")
    assert cart.attestations() == [] and cart.skills() == []
    for stmt in (
        "CREATE TABLE cartridge (k)",
        "CREATE TABLE objects (k)",
        "CREATE TABLE signatures (k)",
        "CREATE TABLE capabilities (k)",
    ):
        conn.execute(stmt)
    Cartridge.from_connection(conn, label="mem").check_tables()


def _skill_md(name: str) -> bytes:
    return f"---\nname: {name}\ndescription: d\n---\nbody of {name}\n".encode()


def test_only_skill_rows_that_match_a_rom_skill_file_are_kept(vectors_dir: Path, tmp_path: Path) -> None:
    import hashlib

    files = {
        "rom/skills/good/SKILL.md": _skill_md("good"),
        "rom/skills/badhash/SKILL.md": _skill_md("badhash"),
        "rom/skills/nofm/SKILL.md": b"no frontmatter here\n",
        "rom/skills/wrongname/SKILL.md": _skill_md("wrongname"),
        "rom/other/SKILL.md": _skill_md("other"),
        "rom/skills/readme/README.md": _skill_md("readme"),
        "save/skills/saved/SKILL.md": _skill_md("saved"),
    }
    rows = {  # acx_skill rows, given rowids below the sample's so each filter runs before it
        -9: ("rom/skills/absent/SKILL.md", "absent", hashlib.sha256(b"x").hexdigest()),
        -8: ("rom/skills/badhash/SKILL.md", "badhash", "0" * 64),
        -7: ("rom/skills/nofm/SKILL.md", "nofm", None),
        -6: ("rom/skills/wrongname/SKILL.md", "other-name", None),
        -5: ("rom/other/SKILL.md", "other", None),
        -4: ("rom/skills/readme/README.md", "readme", None),
        -3: ("save/skills/saved/SKILL.md", "saved", None),
        -1: ("rom/skills/good/SKILL.md", "good", None),
    }
    p = edited(vectors_dir, tmp_path)
    conn = sqlite3.connect(p)
    for name, data in files.items():
        conn.execute("INSERT INTO sqlar VALUES (?, 420, 0, ?, ?)", (name, len(data), data))
    for rowid, (path, name, sha) in rows.items():
        digest = sha or hashlib.sha256(files[str(path)]).hexdigest()
        conn.execute(
            "INSERT INTO acx_skill (rowid, sqlar_path, name, description, skill_version, license,"
            " content_sha256, resources, schema_version) VALUES (?, ?, ?, 'd', '1.0', 'MIT', ?, '[]', 'v')",
            (rowid, path, name, digest),
        )
    conn.commit()
    conn.close()
    with open_cartridge(p) as cart:
        got = cart.skills()
        assert [s.sqlar_path for s in got] == ["rom/skills/good/SKILL.md", SKILL]
        assert got[0] == SkillRow(
            "rom/skills/good/SKILL.md",
            "good",
            "d",
            "1.0",
            "MIT",
            hashlib.sha256(files["rom/skills/good/SKILL.md"]).hexdigest(),
        )
        assert cart.skills() == got


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        (0o120777, "mode 0o120777 is a symlink"),
        (0o104755, "mode 0o104755 has setuid/setgid/sticky bits"),
        (0o100666, "mode 0o100666 is group/other writable"),
        (-1, "mode -0o1 has bits outside a file mode"),
    ],
)
def test_a_bad_file_mode_is_refused_naming_the_entry(
    mode: int, problem: str, vectors_dir: Path, tmp_path: Path
) -> None:
    # the same good mode on every other row (checked once), the bad one on the last row
    p = edited(vectors_dir, tmp_path, f"INSERT INTO sqlar VALUES ('rom/zz', {mode}, 0, 1, X'41')")
    with open_cartridge(p) as cart:
        refused(
            cart.sqlar_infos,
            BadEntry,
            f"sqlar entry 'rom/zz': {problem}",
            where=str(p),
            details={"entry": "rom/zz", "table": "sqlar", "column": "mode"},
        )


def test_sqlar_names_are_portable_paths(vectors_dir: Path, tmp_path: Path) -> None:
    nul = "CAST(X'726f6d2f6100' AS TEXT)"  # 'rom/a' NUL
    p = edited(vectors_dir, tmp_path, f"INSERT INTO sqlar VALUES ({nul}, 420, 0, 1, X'41')", name="a.acx")
    with open_cartridge(p) as cart:
        refused(
            cart.sqlar_infos,
            BadEntry,
            "sqlar.name 'rom/a\\x00' holds the control or format character '\\x00'",
            where=str(p),
            details={"table": "sqlar", "column": "name"},
        )
    p = edited(vectors_dir, tmp_path, "INSERT INTO sqlar VALUES ('rom/a b', 420, 0, 1, X'41')", name="b.acx")
    with open_cartridge(p) as cart:
        refused(
            cart.sqlar_infos,
            BadEntry,
            "sqlar entry 'rom/a b' segment 'a b' is not portable ([A-Za-z0-9][A-Za-z0-9._-]{0,127})",
            where=str(p),
            details={"entry": "rom/a b"},
        )
    p = edited(vectors_dir, tmp_path, "INSERT INTO sqlar VALUES ('rom/../x', 420, 0, 1, X'41')", name="c.acx")
    with open_cartridge(p) as cart:
        refused(
            cart.sqlar_infos,
            BadEntry,
            "sqlar entry 'rom/../x' contains a '.' or '..' segment",
            where=str(p),
            details={"entry": "rom/../x"},
        )


def test_a_table_sqlite_cannot_scan_is_typed(vectors_dir: Path, tmp_path: Path) -> None:
    conn = scratch("CREATE TABLE capabilities (id TEXT, json TEXT)", ddl=False)  # no content_hash
    refused(
        Cartridge.from_connection(conn, label="mem").capabilities,
        InvalidInput,
        "cannot read cartridge table capabilities: no such column: content_hash",
        where="mem",
    )
    # a view in the table's place is read through another b-tree: refused by its plan
    conn = scratch(
        "CREATE TABLE t (x TEXT)",
        "CREATE VIEW capabilities AS SELECT x AS id, x AS json, x AS content_hash FROM t",
        ddl=False,
    )
    refused(
        Cartridge.from_connection(conn, label="mem").capabilities,
        InvalidInput,
        "SQLite would read this cartridge through ['SCAN t'], not ('SCAN capabilities',); refusing",
        where="mem",
    )
    from tests.harness.btree import corrupt_a_sqlar_leaf

    p = edited(vectors_dir, tmp_path)
    corrupt_a_sqlar_leaf(p)
    with open_cartridge(p) as cart:
        refused(
            cart.sqlar_infos,
            InvalidInput,
            "cannot read cartridge table sqlar: database disk image is malformed",
            where=str(p),
        )


def test_a_huge_envelope_is_read_only_one_byte_past_the_limit(vectors_dir: Path, tmp_path: Path) -> None:
    from acxoci.cartridge.constants import MAX_ENVELOPE_BYTES

    p = edited(
        vectors_dir, tmp_path, f"UPDATE signatures SET envelope = '[' || hex(zeroblob({MAX_ENVELOPE_BYTES}))"
    )
    with open_cartridge(p) as cart:
        env = cart.signatures()[0].envelope
    assert len(env) == MAX_ENVELOPE_BYTES + 1 and env == b"[" + b"0" * MAX_ENVELOPE_BYTES


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        # a fault found by its Python type (mode) in an earlier row than one typeof() finds (data)
        (
            "UPDATE sqlar SET mode = 1.5 WHERE rowid = (SELECT min(rowid) FROM sqlar);"
            " UPDATE sqlar SET data = 'x' WHERE rowid = (SELECT max(rowid) FROM sqlar)",
            "sqlar.mode holds a real value, expected integer",
        ),
        # ... and the other way round
        (
            "UPDATE sqlar SET data = 'x' WHERE rowid = (SELECT min(rowid) FROM sqlar);"
            " UPDATE sqlar SET mode = 1.5 WHERE rowid = (SELECT max(rowid) FROM sqlar)",
            "sqlar.data holds a text value, expected blob or null",
        ),
        # both in one row: the first column of the spec is named
        (
            "UPDATE sqlar SET mode = 'x', data = 7 WHERE rowid = (SELECT max(rowid) FROM sqlar)",
            "sqlar.mode holds a text value, expected integer",
        ),
    ],
    ids=["python-first", "sql-first", "same-row"],
)
def test_the_earliest_row_at_fault_is_named_whichever_check_finds_it(
    statement: str, named: str, vectors_dir: Path, tmp_path: Path
) -> None:
    # every column's class is checked by typeof(), the value itself read or not (sqlar.data's
    # length): the first row at fault is named, and its first column at fault
    p = edited(vectors_dir, tmp_path, *statement.split("; "))
    column = named.split(" ", 1)[0].split(".", 1)[1]
    with open_cartridge(p) as cart:
        refused(cart.sqlar_infos, BadEntry, named, where=str(p), details={"table": "sqlar", "column": column})
