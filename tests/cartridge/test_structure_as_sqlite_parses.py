"""A cartridge's structure is judged from what SQLite itself parsed (decision 0009): a stored
statement SQLite reads differently from a plain tokenizer is refused, and so is any table whose
kind, columns, keys or indexes as SQLite reports them (PRAGMA table_list, table_xinfo, index_list,
index_xinfo) differ from the reference's. Key columns hold text without control, format, surrogate
or private-use characters. Every hostile file is built here, at test time, from the sample."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acxoci.cartridge import schema
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import InvalidInput
from tests.harness.cartridges import NOW, SAMPLE, copy_vector

REF_CARTRIDGE = next(d for d in schema.DDL if d.startswith("CREATE TABLE cartridge"))


def _cartridge_table_as_rowid(path: Path, text: str) -> None:
    """Rebuild `cartridge` as a rowid table (its rows, its automatic key index dropped from the
    schema as a WITHOUT ROWID table has none) and store `text` as its statement."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE c2 (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
    conn.execute("INSERT INTO c2 SELECT key, value FROM cartridge ORDER BY key")
    conn.execute("DROP TABLE cartridge")
    conn.execute("ALTER TABLE c2 RENAME TO cartridge")
    conn.commit()
    conn.execute("PRAGMA writable_schema = 1")
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'cartridge'", (text,))
    conn.execute("DELETE FROM sqlite_master WHERE name = 'sqlite_autoindex_cartridge_1'")
    conn.commit()
    conn.close()


@pytest.fixture
def nul_hidden(vectors_dir: Path, tmp_path: Path) -> Path:
    """The reference's statement with a NUL in a comment before WITHOUT ROWID: a plain tokenizer
    reads the reference's tokens, SQLite stops at the NUL and makes `cartridge` a rowid table.
    It verified PORTABLE before this rule; plain sqlite3 and the reference call it malformed."""
    path = copy_vector(vectors_dir, SAMPLE, tmp_path / "nul.acx")
    _cartridge_table_as_rowid(path, REF_CARTRIDGE.replace(") WITHOUT ROWID", ") -- \x00\nWITHOUT ROWID"))
    assert schema.sql_tokens(REF_CARTRIDGE) == schema.sql_tokens(
        REF_CARTRIDGE.replace(") WITHOUT ROWID", ") -- \x00\nWITHOUT ROWID")
    )
    return path


def test_a_statement_sqlite_reads_as_another_kind_of_table_is_refused(nul_hidden: Path) -> None:
    with pytest.raises(InvalidInput) as err:
        verify_cartridge(nul_hidden, registry=None, now=NOW)
    assert "statement of 'cartridge'" in err.value.message and "control or format" in err.value.message


def test_the_parsed_structure_alone_refuses_it_too(nul_hidden: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # with the text rule switched off, what SQLite parsed (a rowid table, its key index ending in
    # the rowid) is still not the reference's WITHOUT ROWID table
    monkeypatch.setattr(schema, "odd_character", lambda text: None)
    with pytest.raises(InvalidInput) as err:
        open_cartridge(nul_hidden)
    assert err.value.details == {"table": "cartridge"}
    assert "not what the reference's text makes of it (table_list)" in err.value.message


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        # in comments, where SQLite reads them as the tokenizer does: refused all the same
        ("UPDATE sqlite_master SET sql = replace(sql, '(zone,', '( /* \x0b */ zone,')"
         " WHERE name = 'memory_zone_fp'", "vertical tab"),
        ("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL,', 'NOT NULL, -- \u200b\n')"
         " WHERE name = 'objects'", "zero-width space (Cf)"),
        ("UPDATE sqlite_master SET sql = CAST(replace(sql, 'INT', X'80') AS TEXT) WHERE name = 'sqlar'",
         "not UTF-8"),
    ],
)
def test_schema_text_with_a_control_format_or_broken_character_is_refused(
    sql: str, why: str, vectors_dir: Path, tmp_path: Path
) -> None:
    path = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA writable_schema = 1")
    conn.execute(sql)
    conn.commit()
    conn.close()
    with pytest.raises(InvalidInput) as err:
        open_cartridge(path)
    assert "SQLite may read otherwise" in err.value.message, (why, err.value.message)


def test_the_reference_s_own_text_keeps_its_non_ascii_comment() -> None:
    # the reference's acx_skill statement carries a section sign in a comment: plain text
    ddl = next(d for d in schema.DDL if d.startswith("CREATE TABLE acx_skill"))
    assert "\u00a7" in ddl and schema.odd_character(ddl.translate(schema._SQL_SPACE)) is None


def test_the_structure_checked_is_the_reference_s_as_sqlite_parses_it() -> None:
    ref = schema._reference()
    assert set(ref) == {"table_list", "table_xinfo", "index_list", "index_xinfo"}
    without_rowid = {t for t in schema.TABLES if next(iter(ref["table_list"][t]))[2]}  # the wr flag
    assert without_rowid == schema.WITHOUT_ROWID
    for index, (table, columns) in schema.INDEXES.items():
        entry = sorted(r for r in ref["index_xinfo"][table] if r[0] == index)
        assert tuple("rowid" if r[2] < 0 else r[3] for r in entry) == columns, index


@pytest.mark.parametrize(
    ("key", "category"),
    [("att\u200b1", "Cf"), ("att\ue0001", "Co"), ("att\x011", "Cc"), ("att\u202e1", "Cf (bidi)")],
)
def test_a_key_with_a_control_or_format_character_is_tampered(
    key: str, category: str, vectors_dir: Path, tmp_path: Path
) -> None:
    # attestations are unsigned: before this rule such a row left the verdict PORTABLE
    path = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO attestations VALUES (?, 'vc-2.0', NULL, 'application/vc+ld+json', '{}', NULL, 'c')",
        (key,),
    )
    conn.commit()
    conn.close()
    v = verify_cartridge(path, registry=None, now=NOW)
    assert v.trust == "tampered", (category, v)
    assert v.issues == (f"attestations.att_id {key!r} holds the control or format character {key[3]!r}",)


def test_a_key_that_is_a_lone_surrogate_in_bytes_is_refused_as_not_utf8(
    vectors_dir: Path, tmp_path: Path
) -> None:
    path = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO attestations VALUES (CAST(X'617474eda080' AS TEXT), 'vc-2.0', NULL, 'm', '{}', NULL,"
        " 'c')"
    )
    conn.commit()
    conn.close()
    v = verify_cartridge(path, registry=None, now=NOW)
    assert (v.trust, v.issues) == ("tampered", ("attestations.att_id holds text that is not valid UTF-8",))


def test_every_reference_vector_has_plain_keys(vectors_dir: Path) -> None:
    for path in sorted(vectors_dir.rglob("*.acx")):
        with open_cartridge(path) as cart:
            cart.check_side_tables()
            assert cart.meta() and cart.sqlar_infos() and cart.objects() and cart.signatures()
            assert cart.memory() and cart.capabilities()
