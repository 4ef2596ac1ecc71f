"""Property: any change to the schema of a trusted cartridge (drop/add a column, drop a primary key,
add a view/trigger/table/index, retype a key, duplicate a row under another storage class) never
verifies TRUSTED and never escapes as an untyped error (exit 70)."""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acxoci.cartridge.schema import KEY_COLUMNS, TABLES
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import AcxError, InternalError
from tests.harness import env
from tests.harness.cartridges import NOW, SAMPLE, copy_vector

SETTINGS = settings(
    max_examples=24,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
OPS = ("drop-column", "add-column", "drop-pk", "view", "trigger", "table", "index", "retype-key", "dup-row")


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return [(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info({table})")]


def _recreate(conn: sqlite3.Connection, table: str, cols: list[tuple[str, str]], keep: list[str]) -> None:
    ddl = ", ".join(f"{n} {t}" for n, t in cols)
    conn.execute(f"CREATE TABLE t2 ({ddl})")
    names = ", ".join(keep)
    conn.execute(f"INSERT INTO t2 ({names}) SELECT {names} FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE t2 RENAME TO {table}")


def mutate(conn: sqlite3.Connection, op: str, table: str, pick: int) -> None:
    cols = _columns(conn, table)
    key = KEY_COLUMNS[table]
    if op == "drop-column":
        rest = [c for c in cols if c[0] != cols[pick % len(cols)][0]] or cols[:1]
        _recreate(conn, table, rest, [c[0] for c in rest])
    elif op == "add-column":
        conn.execute(f"ALTER TABLE {table} ADD COLUMN extra{pick % 5} TEXT")
    elif op == "drop-pk":
        _recreate(conn, table, cols, [c[0] for c in cols])
        conn.execute(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
    elif op == "view":
        conn.execute(f"CREATE VIEW v{pick % 5} AS SELECT * FROM {table}")
    elif op == "trigger":
        conn.execute(f"CREATE TRIGGER g{pick % 5} AFTER DELETE ON {table} BEGIN SELECT 1; END")
    elif op == "table":
        conn.execute(f"CREATE TABLE {table}_{pick % 5} (x)")
    elif op == "index":
        conn.execute(f"CREATE INDEX i{pick % 5} ON {table}({cols[pick % len(cols)][0]})")
    elif op == "retype-key":
        retyped = [(n, "BLOB PRIMARY KEY" if n == key else t) for n, t in cols]
        _recreate(conn, table, retyped, [c[0] for c in cols])
    else:  # dup-row: the same key again as a BLOB beside the TEXT row
        names = ", ".join(c[0] for c in cols)
        exprs = ", ".join(f"CAST({n} AS BLOB)" if n == key else n for n, _ in cols)
        conn.execute(f"INSERT INTO {table} ({names}) SELECT {exprs} FROM {table}")
        if conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0:
            conn.execute(f"INSERT INTO {table} ({key}) VALUES (CAST('k' AS BLOB))")


@SETTINGS
@given(op=st.sampled_from(OPS), table=st.sampled_from(TABLES), pick=st.integers(0, 20))
def test_schema_mutation_never_trusted(op: str, table: str, pick: int) -> None:
    vectors = env.vectors()
    registry = load_trust_registry(vectors / "sample" / "trust-active.json")
    with tempfile.TemporaryDirectory() as d:
        path = copy_vector(vectors, SAMPLE, Path(d) / "c.acx")
        assert verify_cartridge(path, registry=registry, now=NOW).trust == "trusted"
        with closing(sqlite3.connect(path)) as conn:
            try:
                mutate(conn, op, table, pick)
            except sqlite3.Error:
                return  # SQLite itself refused this mutation: nothing to verify
            conn.commit()
        try:
            v = verify_cartridge(path, registry=registry, now=NOW)
        except AcxError as exc:
            assert not isinstance(exc, InternalError)
            assert exc.exit_code not in (0, 70)
            return
        assert v.trust != "trusted", (op, table, v)
        assert v.rejected, (op, table, v)
