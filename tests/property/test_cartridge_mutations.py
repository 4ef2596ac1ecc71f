"""Property: any change to ROM content, its objects, bound meta, ROM memory, capabilities or the signature
envelope of a signed cartridge is rejected; changes confined to the SAVE zone (and unsigned side tables)
still verify."""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acxoci.cartridge.constants import BOUND_META_KEYS
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import AcxError
from tests.harness import env
from tests.harness.cartridges import NOW, SAMPLE, copy_vector

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ROM_TABLES = ("sqlar", "objects", "meta", "memory", "capabilities", "envelope")


def _vectors() -> Path:
    return env.vectors()


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple[object, ...]]:
    return list(conn.execute(sql).fetchall())


def _flip(data: bytes, pos: int, delta: int) -> bytes:
    b = bytearray(data)
    i = pos % len(b)
    b[i] = (b[i] + 1 + delta % 255) % 256
    return bytes(b)


def _flip_text(text: str, pos: int, delta: int) -> str:
    alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_{}":,[] .x'
    i = pos % len(text)
    choices = [c for c in alphabet if c != text[i]]
    return text[:i] + choices[delta % len(choices)] + text[i + 1 :]


def _mutate_rom(conn: sqlite3.Connection, table: str, row: int, pos: int, delta: int, op: int) -> str:
    """Apply one ROM mutation; returns a description for the failure message."""
    if table == "sqlar":
        rows = _rows(conn, "SELECT name, data FROM sqlar WHERE name LIKE 'rom/%' ORDER BY name")
        name, data = rows[row % len(rows)]
        assert isinstance(data, bytes)
        if op % 3 == 0:
            conn.execute("UPDATE sqlar SET data = ? WHERE name = ?", (_flip(data, pos, delta), name))
        elif op % 3 == 1:
            conn.execute("DELETE FROM sqlar WHERE name = ?", (name,))
        else:
            conn.execute("UPDATE sqlar SET sz = sz + ? WHERE name = ?", (1 + delta % 7, name))
        return f"sqlar {name} op {op % 3}"
    if table == "objects":
        rows = _rows(conn, "SELECT oid, source_ref, sz FROM objects WHERE zone = 'rom' ORDER BY source_ref")
        oid, ref, _ = rows[row % len(rows)]
        col = ("oid", "source_ref", "sz", "kind", "canon", "zone", "delete")[op % 7]
        if col == "delete":
            conn.execute("DELETE FROM objects WHERE oid = ?", (oid,))
        elif col == "sz":
            conn.execute("UPDATE objects SET sz = sz + ? WHERE oid = ?", (1 + delta % 9, oid))
        elif col == "kind":
            conn.execute(
                "UPDATE objects SET kind = CASE kind WHEN 'sqlar' THEN 'memory' ELSE 'sqlar' END "
                "WHERE oid = ?",
                (oid,),
            )
        elif col == "zone":
            conn.execute("UPDATE objects SET zone = 'save' WHERE oid = ?", (oid,))
        else:
            cur = {"oid": oid, "source_ref": ref, "canon": "raw"}[col]
            assert isinstance(cur, str)
            new = _flip_text(cur, pos, delta) if col != "canon" else ("jcs-rfc8785x", "raw ")[delta % 2]
            conn.execute(f"UPDATE OR IGNORE objects SET {col} = ? WHERE oid = ?", (new, oid))
        return f"objects {ref} {col}"
    if table == "meta":
        key = BOUND_META_KEYS[row % len(BOUND_META_KEYS)]
        if op % 2:
            conn.execute("DELETE FROM cartridge WHERE key = ?", (key,))
        else:
            (value,) = conn.execute("SELECT value FROM cartridge WHERE key = ?", (key,)).fetchone()
            conn.execute("UPDATE cartridge SET value = ? WHERE key = ?", (_flip_text(value, pos, delta), key))
        return f"meta {key}"
    if table == "memory":
        (payload,) = conn.execute("SELECT payload FROM memory WHERE zone = 'rom'").fetchone()
        if op % 2:
            conn.execute(
                "UPDATE memory SET payload = ? WHERE zone = 'rom'", (_flip_text(payload, pos, delta),)
            )
        else:
            conn.execute(
                "INSERT INTO memory VALUES ('mem-injected', 'rom', 'x', NULL, '{}', "
                "'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', 'now')"
            )
        return f"memory op {op % 2}"
    if table == "capabilities":
        rows = _rows(conn, "SELECT id, json FROM capabilities ORDER BY id")
        cid, js = rows[row % len(rows)]
        assert isinstance(js, str)
        conn.execute("UPDATE capabilities SET json = ? WHERE id = ?", (_flip_text(js, pos, delta), cid))
        return f"capability {cid}"
    (envelope,) = conn.execute("SELECT envelope FROM signatures").fetchone()
    conn.execute("UPDATE signatures SET envelope = ?", (_flip_text(envelope, pos, delta),))
    return f"envelope pos {pos % len(envelope)}"


@SETTINGS
@given(
    table=st.sampled_from(ROM_TABLES),
    row=st.integers(0, 1000),
    pos=st.integers(0, 100_000),
    delta=st.integers(0, 1000),
    op=st.integers(0, 100),
)
def test_every_rom_mutation_is_rejected(table: str, row: int, pos: int, delta: int, op: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = copy_vector(_vectors(), SAMPLE, Path(d) / "m.acx")
        with closing(sqlite3.connect(str(p))) as conn:
            what = _mutate_rom(conn, table, row, pos, delta, op)
            conn.commit()
        try:
            v = verify_cartridge(p, registry=None, now=NOW)
        except AcxError:
            return  # a typed refusal is a rejection too
        assert v.rejected, (what, v)


SAVE_MUTATIONS = (
    "INSERT INTO sqlar VALUES ('save/notes/{n}.md', 420, 0, 3, x'616263')",
    "INSERT INTO memory VALUES ('mem-save-{n}', 'save', 'fp', 'cbf1_x', '{{\"n\":{n}}}', 'sha256:00', 'now')",
    "INSERT INTO objects VALUES ('sha256:{n:064d}', 'memory', 'memory:mem-save-{n}', 'jcs-rfc8785',"
    " 'save', 7)",
    "INSERT INTO vectors VALUES ('mem-save-{n}', 'save', x'00010203', 'fp')",
    "INSERT INTO attestations VALUES ('att-{n}', 'vc-2.0', NULL, 'application/vc', '{{}}', NULL, 'now')",
    "UPDATE cartridge SET value = 'rom/x{n}.json' WHERE key = 'acx.package_spec'",
)


@SETTINGS
@given(
    picks=st.lists(st.integers(0, len(SAVE_MUTATIONS) - 1), min_size=1, max_size=6, unique=True),
    n=st.integers(0, 10**6),
)
def test_save_only_mutations_still_verify(picks: list[int], n: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = copy_vector(_vectors(), SAMPLE, Path(d) / "s.acx")
        with closing(sqlite3.connect(str(p))) as conn:
            for i in picks:
                conn.execute(SAVE_MUTATIONS[i].format(n=n))
            conn.commit()
        v = verify_cartridge(p, registry=None, now=NOW)
        assert (v.trust, v.status) == ("portable", "warning"), (picks, v)
