"""Hostile cartridges (issue 13, classes 1-10), each built at test time from a copy of the sample
whose signer the sample's trust registry trusts: `acx cartridge verify` in a measured subprocess
is never TRUSTED or portable, never exit 0 or 70, stays under 5 s and 150 MB, and leaves the file
and its sidecars byte-identical; `install` and `workflow ready` refuse the same files."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.spec import check_spec
from acxoci.errors import InvalidInput
from acxoci.install.install import install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.workflow.ready import directory_roster, load_roster
from tests.harness import installs as install_support
from tests.harness.cartridges import (
    MAX_RSS_KIB,
    MAX_SECONDS,
    NOW,
    SAMPLE,
    assert_refused_verify,
    copy_vector,
    measured_acx,
    sample_registry,
    sql,
)
from tests.harness.installs import push_cartridge, trusting_policy

ROM_FILE = "rom/knowledge/STYLE.md"
SKILL = "rom/skills/expertise-designer/SKILL.md"
CAP = "cap-7073ad41df0a3e62"
SAMPLE_ROM = "sha256:8ba92c59b173298b2e307b78daf9d82d89813fdb237f4d0ba738ce324efbdb5b"
@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def test_control_is_trusted(sample: Path, vectors_dir: Path) -> None:
    code, doc, seconds, rss = measured_acx(
        "cartridge", "verify", str(sample), "--trust-registry", str(sample_registry(vectors_dir))
    )
    assert (code, doc["trust"]) == (0, "trusted"), doc
    assert seconds < MAX_SECONDS and rss < MAX_RSS_KIB


def _recreate(table: str, ddl: str, copy: str) -> tuple[str, ...]:
    return (
        f"CREATE TABLE t2 {ddl}",
        f"INSERT INTO t2 {copy}",
        f"DROP TABLE {table}",
        f"ALTER TABLE t2 RENAME TO {table}",
    )


# class -> statements that make the hostile file from a trusted copy
HOSTILE: dict[str, tuple[str, ...]] = {
    # 1. key columns of another SQLite type beside the signed TEXT row
    "blob-sqlar-name": (
        f"INSERT INTO sqlar VALUES (CAST('{SKILL}' AS BLOB), 420, 0, 4, CAST('evil' AS BLOB))",
    ),
    "blob-capability-id": (
        f"INSERT INTO capabilities VALUES (CAST('{CAP}' AS BLOB), '{{\"evil\":1}}', 'sha256:00')",
    ),
    "blob-memory-id": (
        "INSERT INTO memory SELECT CAST(id AS BLOB), zone, artifact_fingerprint, codebase_fingerprint,"
        " '{\"evil\":1}', oid, created_at FROM memory",
    ),
    "blob-meta-key": (
        "UPDATE cartridge SET key = CAST(key AS BLOB) WHERE key = 'acx.publisher_id'",
        "INSERT INTO cartridge VALUES ('acx.publisher_id', 'com.victim.bank')",
    ),
    "integer-sqlar-name": ("INSERT INTO sqlar VALUES (42, 420, 0, 4, CAST('evil' AS BLOB))",),
    # 2. tables recreated without their primary key, holding the signed row and an evil twin
    "capabilities-without-pk": (
        *_recreate("capabilities", "(id TEXT, json TEXT, content_hash TEXT)", "SELECT * FROM capabilities"),
        "INSERT INTO capabilities SELECT id, '{\"evil\":1}', content_hash FROM capabilities"
        f" WHERE id = '{CAP}'",
    ),
    "sqlar-without-pk": (
        *_recreate("sqlar", "(name TEXT, mode INT, mtime INT, sz INT, data BLOB)", "SELECT * FROM sqlar"),
        f"INSERT INTO sqlar VALUES ('{SKILL}', 420, 0, 4, CAST('evil' AS BLOB))",
    ),
    # 4. schema games
    "generated-data": (
        *_recreate(
            "sqlar",
            "(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, raw BLOB, data BLOB GENERATED ALWAYS AS"
            " (CASE WHEN name LIKE 'save/%' THEN zeroblob(500000000) ELSE raw END) VIRTUAL)",
            "(name, mode, mtime, sz, raw) SELECT name, mode, mtime, sz, data FROM sqlar",
        ),
    ),
    "view": ("CREATE VIEW evil AS SELECT * FROM sqlar",),
    "trigger": ("CREATE TRIGGER evil AFTER INSERT ON sqlar BEGIN DELETE FROM objects; END",),
    "extra-table": ("CREATE TABLE evil (x TEXT)",),
    "extra-column": ("ALTER TABLE capabilities ADD COLUMN evil TEXT",),
    "extra-index": ("CREATE INDEX evil ON sqlar(mode)",),
    "stat-table": ("ANALYZE",),
    # 6. file modes a plain `sqlite3 -Ax` would honour
    "symlink-mode": (f"UPDATE sqlar SET mode = {0o120777} WHERE name = '{ROM_FILE}'",),
    "setuid-mode": (f"UPDATE sqlar SET mode = {0o104755} WHERE name = '{ROM_FILE}'",),
    "world-writable-mode": (f"UPDATE sqlar SET mode = {0o100666} WHERE name = '{ROM_FILE}'",),
    # 8. quadratic before the signature check: a memory table without a primary key
    "memory-without-pk": (
        *_recreate(
            "memory",
            "(id TEXT, zone TEXT, artifact_fingerprint TEXT, codebase_fingerprint TEXT, payload TEXT,"
            " oid TEXT, created_at TEXT)",
            "SELECT * FROM memory",
        ),
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " INSERT INTO memory SELECT 'm' || i, 'rom', 'x', NULL, '{}', 'sha256:00', 't' FROM n",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " INSERT INTO objects SELECT 'sha256:' || i, 'memory', 'memory:m' || i, 'jcs-rfc8785', 'rom', 2"
        " FROM n",
    ),
    # 3b. a ROM memory row's columns are copies of its signed payload: a reader of the columns
    # must not see unsigned values (found by the fuzz campaign, issue 20)
    "memory-oid-column": (
        "UPDATE memory SET oid = 'sha256:' || replace(hex(zeroblob(32)), '0', '0') WHERE zone = 'rom'",
    ),
    "memory-fingerprint-column": (
        "UPDATE memory SET artifact_fingerprint = 'evil000000' WHERE zone = 'rom'",
    ),
    "memory-codebase-column": ("UPDATE memory SET codebase_fingerprint = 'cbf1_evil' WHERE zone = 'rom'",),
    "memory-created-column": (
        "UPDATE memory SET created_at = '1999-01-01T00:00:00.000Z' WHERE zone = 'rom'",
    ),
    # 9. an objects.sz beyond the JSON integer domain (the manifest cannot be canonicalised)
    "huge-object-sz": ("UPDATE objects SET sz = 4611686018427387904",),
    # 9. a 5,000-digit integer in the signed envelope
    "huge-int-envelope": (
        "UPDATE signatures SET envelope = substr(envelope, 1, length(envelope) - 1) || ',\"n\":'"
        " || replace(hex(zeroblob(2500)), '0', '1') || '}'",
    ),
}


def _wal_header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.seek(18)
        fh.write(b"\x02\x02")


def _utf16_header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.seek(56)
        fh.write(b"\x00\x00\x00\x02")


def _sidecar(suffix: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        # a real hot journal / WAL from another copy: pages that a plain sqlite3 open would apply
        Path(str(path) + suffix).write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\x00" * 504)

    return make


FILE_EDITS: dict[str, Callable[[Path], None]] = {
    # 5. sidecars and a WAL-mode header
    "wal-sidecar": _sidecar("-wal"),
    "shm-sidecar": _sidecar("-shm"),
    "hot-journal": _sidecar("-journal"),
    "wal-header": _wal_header,
    "utf16-header": _utf16_header,
}


def _build(name: str, path: Path) -> None:
    if name in HOSTILE:
        sql(path, *HOSTILE[name])
    else:
        FILE_EDITS[name](path)


@pytest.mark.parametrize("name", sorted(HOSTILE) + sorted(FILE_EDITS))
def test_hostile_file_is_refused(name: str, sample: Path, vectors_dir: Path) -> None:
    _build(name, sample)
    doc = assert_refused_verify(sample, vectors_dir)
    if name in ("view", "trigger", "extra-table", "generated-data", "wal-header", "utf16-header"):
        assert doc["error"]["kind"] == "invalid_input", doc
    if name == "generated-data":
        assert "sqlar.data" in doc["error"]["message"] or "sqlar" in doc["error"]["message"]


def test_schema_refusal_names_table_and_column(sample: Path) -> None:
    sql(sample, "ALTER TABLE capabilities ADD COLUMN evil TEXT")
    with pytest.raises(InvalidInput) as info:
        open_cartridge(sample)
    assert info.value.kind == "invalid_input"
    assert "capabilities.evil" in str(info.value)


def test_decompression_budget_spans_entries(sample: Path, vectors_dir: Path) -> None:
    """7. Four 256 MiB DEFLATE entries in a ~1 MB file: refused before anything is inflated."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b"\x00" * (1 << 20)
    bomb = b"".join(comp.compress(chunk) for _ in range(256)) + comp.flush()
    conn = sqlite3.connect(sample)
    for i in range(4):
        name = f"rom/knowledge/BOMB{i}.md"
        conn.execute("INSERT INTO sqlar VALUES (?, 420, 0, ?, ?)", (name, 256 << 20, bomb))
        conn.execute(
            "INSERT INTO objects VALUES (?, 'sqlar', ?, 'raw', 'rom', ?)",
            (f"sha256:{i:064x}", name, 256 << 20),
        )
    conn.commit()
    conn.close()
    doc = assert_refused_verify(sample, vectors_dir)
    assert "decompress" in json.dumps(doc)


def test_many_rom_rows_are_linear(sample: Path, vectors_dir: Path) -> None:
    """8. 20,000 ROM memory rows and sqlar rows, each with an objects row: one pass per table."""
    sql(
        sample,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " INSERT INTO memory SELECT 'm' || i, 'rom', 'x', NULL, '{}', 'sha256:00', 't' FROM n",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " INSERT INTO objects SELECT 'sha256:m' || i, 'memory', 'memory:m' || i, 'jcs-rfc8785', 'rom', 2"
        " FROM n",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " INSERT INTO sqlar SELECT 'rom/x/f' || i, 420, 0, 1, X'41' FROM n",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " INSERT INTO objects SELECT 'sha256:s' || i, 'sqlar', 'rom/x/f' || i, 'raw', 'rom', 1 FROM n",
    )
    doc = assert_refused_verify(sample, vectors_dir)
    assert doc["trust"] == "tampered"


def test_huge_int_trust_registry_is_typed(sample: Path, tmp_path: Path, vectors_dir: Path) -> None:
    """9. A 5,000-digit integer in the trust registry is invalid_input, not internal."""
    reg = json.loads(sample_registry(vectors_dir).read_text())
    text = json.dumps(reg)[:-1] + ', "n": ' + "1" * 5000 + "}"
    bad = tmp_path / "reg.json"
    bad.write_text(text)
    code, doc, _, _ = measured_acx("cartridge", "verify", str(sample), "--trust-registry", str(bad))
    assert code not in (0, 70), doc
    assert doc["error"]["kind"] == "invalid_input", doc


@pytest.mark.parametrize("value", ["1" * 5000, "1e400", "9007199254740993", '"x\\ud800"'])
@pytest.mark.parametrize("command", ["verify", "digest", "inspect"])
def test_hostile_numbers_in_workflows_are_typed(
    value: str, command: str, vectors_dir: Path, tmp_path: Path
) -> None:
    """9. Numbers and strings a JCS signer cannot represent: invalid_input, never internal."""
    doc = json.loads((vectors_dir / "reference" / "ship-a-feature.cal.json").read_text())
    doc["x-extra"] = "@@"
    path = tmp_path / "w.cal.json"
    path.write_text(json.dumps(doc).replace('"@@"', value))
    code, out, _, _ = measured_acx("workflow", command, str(path))
    assert code not in (0, 70), out
    assert out["error"]["kind"] == "invalid_input", out


def test_save_zone_does_not_cost_memory(sample: Path, vectors_dir: Path) -> None:
    """10. A 256 MiB SAVE row (unsigned by design) still verifies, in flat memory."""
    sql(sample, f"INSERT INTO sqlar VALUES ('save/big.bin', 420, 0, {256 << 20}, zeroblob({256 << 20}))")
    code, doc, seconds, rss = measured_acx(
        "cartridge", "verify", str(sample), "--trust-registry", str(sample_registry(vectors_dir))
    )
    assert (code, doc["trust"]) == (0, "trusted"), doc
    assert rss < 100 * 1024, rss
    assert seconds < MAX_SECONDS


def test_acx_skill_rows_alone_grant_no_skill(sample: Path) -> None:
    """3. An unsigned `acx_skill` row with no ROM SKILL.md behind it is ignored by every reader."""
    sql(
        sample,
        "INSERT INTO acx_skill VALUES ('rom/skills/writing/SKILL.md', 'writing', 'd', NULL, NULL, NULL, 1,"
        " ?, '[]', NULL, 'acx.skill/1')",
        params=("0" * 64,),
    )
    sql(sample, "UPDATE acx_skill SET name = 'deploy' WHERE sqlar_path = ?", params=(SKILL,))
    with open_cartridge(sample) as cart:
        assert [s.name for s in cart.skills()] == []
    [entry] = load_roster(directory_roster(sample.parent), registry=None, now=NOW)
    assert entry.skills == ()
    report = check_spec(sample)
    assert not report.clean and any(i.rule == "skill.rom" for i in report.issues), report


def test_acx_skill_rows_matching_rom_are_kept(sample: Path) -> None:
    with open_cartridge(sample) as cart:
        assert [s.name for s in cart.skills()] == ["expertise-designer"]


REFUSED_ELSEWHERE = (
    "blob-sqlar-name",
    "blob-meta-key",
    "capabilities-without-pk",
    "generated-data",
    "symlink-mode",
)


@pytest.mark.parametrize("name", [*REFUSED_ELSEWHERE, "wal-sidecar"])
def test_workflow_ready_refuses_the_same_files(name: str, sample: Path) -> None:
    _build(name, sample)
    [entry] = load_roster(directory_roster(sample.parent), registry=None, now=NOW)
    assert entry.verdict is None or entry.verdict.rejected, entry
    assert entry.error is not None or (entry.verdict is not None and entry.verdict.trust == "tampered")


@pytest.mark.parametrize("name", REFUSED_ELSEWHERE)
def test_install_refuses_the_same_files(
    name: str, sample: Path, tmp_path: Path, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(name, sample)
    layout = tmp_path / "layout"
    # the publisher's annotation, as it was before the file was made hostile
    monkeypatch.setattr(install_support, "rom_digest", lambda _p: SAMPLE_ROM)
    push_cartridge(layout, sample, "v1")
    policy = load_policy(trusting_policy(tmp_path, sample_registry(vectors_dir)), now=NOW)
    store = Store(tmp_path / "store")
    try:
        out = install(f"oci-layout:{layout}:v1", policy=policy, store=store, now=NOW, name="x/y")
    except Exception as exc:  # a typed refusal is fine; an untyped one is the bug this guards
        from acxoci.errors import AcxError

        assert isinstance(exc, AcxError) and exc.exit_code not in (0, 70), exc
        return
    assert out.status == "refused", out.to_json()
