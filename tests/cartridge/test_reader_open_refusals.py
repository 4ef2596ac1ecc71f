"""Opening a cartridge, in process: each refusal of `read_header`/`open_cartridge` (absent file,
directory, FIFO, unreadable name, sidecar beside the file or beside the symlink's target, a file
written while it is copied) compared whole; a file replaced or removed during the open is read
from its one descriptor; what an opened Cartridge carries (header, identity,
limits, cached scans, read-only limits of its connection); and the wrapped-connection API
(`from_connection`, `query`, `count`, `tables`) that builders and `acx spec` use."""

from __future__ import annotations

import os
import sqlite3
import threading
import zlib
from pathlib import Path

import pytest

import acxoci.cartridge.reader as reader
from acxoci.cartridge.constants import MAX_VALUE_BYTES
from acxoci.cartridge.reader import BadEntry, Cartridge, check_no_sidecars, open_cartridge, read_header
from acxoci.errors import InvalidInput, NotFound
from acxoci.fsutil import identity_of
from tests.harness.cartridges import SAMPLE, copy_vector
from tests.harness.reader_edits import ROM_FILE, edited, refused

SIDE = "apply it, so the file is refused (remove it, or copy the .acx alone)"


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def test_header_of_the_sample(sample: Path) -> None:
    h = read_header(sample)
    assert (h.application_id, h.user_version, h.page_size, h.file_size) == (
        0x41435831,
        0x01000100,
        4096,
        sample.stat().st_size,
    )
    with open_cartridge(sample) as cart:
        assert cart.header == h
        assert cart.label == str(sample)
        assert cart.identity == identity_of(os.stat(sample))


def test_file_refusals_name_the_path(tmp_path: Path) -> None:
    absent = tmp_path / "absent.acx"
    refused(lambda: open_cartridge(absent), NotFound, f"no such file: {absent}", where=str(absent))
    refused(lambda: read_header(absent), NotFound, f"no such file: {absent}", where=str(absent))
    refused(
        lambda: open_cartridge(tmp_path), InvalidInput, "is a directory, not a cartridge", where=str(tmp_path)
    )
    long = tmp_path / ("x" * 300)
    refused(lambda: open_cartridge(long), InvalidInput, "cannot read: File name too long", where=str(long))
    loop = tmp_path / "loop.acx"
    loop.symlink_to(loop)
    refused(
        lambda: open_cartridge(loop),
        InvalidInput,
        "cannot read: Too many levels of symbolic links",
        where=str(loop),
    )
    dev = tmp_path / "dev.acx"
    dev.symlink_to("/dev/null")
    refused(
        lambda: read_header(dev),
        InvalidInput,
        "not a regular file (a FIFO, socket or device), not a cartridge",
        where=str(dev),
    )


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "f.acx"
    os.mkfifo(fifo)
    done = threading.Event()
    rescued: list[bool] = []

    def rescue() -> None:
        # only if the open blocked (waiting for a writer): be that writer, so the test ends
        if not done.wait(20):
            rescued.append(True)
            fd = os.open(fifo, os.O_WRONLY)
            os.close(fd)

    t = threading.Thread(target=rescue, daemon=True)
    t.start()
    try:
        refused(
            lambda: open_cartridge(fifo),
            InvalidInput,
            "not a regular file (a FIFO, socket or device), not a cartridge",
            where=str(fifo),
        )
    finally:
        done.set()
        t.join()
    assert rescued == [], "opening the FIFO waited for a writer"


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_sidecar_is_refused_by_name(suffix: str, sample: Path, tmp_path: Path) -> None:
    Path(f"{sample}{suffix}").write_bytes(b"")
    refused(
        lambda: open_cartridge(sample),
        InvalidInput,
        f"a SQLite sidecar c.acx{suffix} lies beside the cartridge; other readers would {SIDE}",
        where=str(sample),
        details={"sidecar": suffix},
    )


@pytest.mark.parametrize("beside", ["link", "target"])
def test_a_sidecar_beside_a_symlink_or_its_target_is_refused(
    beside: str, sample: Path, tmp_path: Path
) -> None:
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "l.acx"
    link.symlink_to(sample)
    check_no_sidecars(link)
    side = Path(f"{link}-journal") if beside == "link" else Path(f"{sample}-journal")
    side.symlink_to(tmp_path / "nowhere")  # a dangling link is a sidecar too (lexists)
    refused(
        lambda: open_cartridge(link),
        InvalidInput,
        f"a SQLite sidecar {side.name} lies beside the cartridge; other readers would {SIDE}",
        where=str(link),
        details={"sidecar": "-journal"},
    )


@pytest.mark.parametrize("step", ["check_no_sidecars", "_copy"])
def test_a_file_replaced_or_removed_while_it_is_read_is_refused(
    step: str, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the name is opened once, and the copy is read from that descriptor; a file whose name goes
    # (its links change, so does its ctime) while it is read is refused, whatever is at the name
    other = tmp_path / "other.acx"
    other.write_bytes(sample.read_bytes() + b"\0" * 4096)
    real = getattr(reader, step)

    def replacing(*args: object, **kwargs: object) -> object:
        os.replace(other, sample) if step == "_copy" else os.unlink(sample)
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, step, replacing)
    refused(
        lambda: open_cartridge(sample),
        InvalidInput,
        "the file changed while it was being read; refusing it",
        where=str(sample),
    )


def test_a_file_removed_once_it_was_read_gets_no_accepting_verdict(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = identity_of(os.stat(sample))
    real = reader._connect

    def removing(*args: object, **kwargs: object) -> object:
        os.unlink(sample)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(reader, "_connect", removing)
    with open_cartridge(sample) as cart:
        assert cart.identity == first and cart.meta()
        refused(
            cart.require_unchanged,
            InvalidInput,
            "the file changed while it was being verified; refusing it",
            where=str(sample),
        )


@pytest.mark.parametrize("change", ["grow", "shrink", "rewrite-header"])
def test_a_file_written_while_it_is_copied_is_refused(
    change: str, sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_copy = reader._copy
    size = sample.stat().st_size

    def write_then_copy(src: int, dst: int, n: int) -> int:
        with open(sample, "r+b") as fh:
            if change == "grow":
                fh.seek(0, 2)
                fh.write(b"\0" * 4096)
            elif change == "shrink":
                fh.truncate(size - 4096)
            else:
                fh.seek(68)
                fh.write(b"ACX2")
        os.utime(sample, ns=(1, 1))  # even a write that left the times as they were
        return real_copy(src, dst, n)

    monkeypatch.setattr(reader, "_copy", write_then_copy)
    refused(
        lambda: open_cartridge(sample),
        InvalidInput,
        "the file changed while it was being read; refusing it",
        where=str(sample),
    )


def test_an_opened_cartridge_reads_through_its_limits(sample: Path) -> None:
    with open_cartridge(sample) as cart:
        # any one value SQLite materialises is bounded (a hostile row cannot cost more)
        assert cart.query("SELECT length(zeroblob(?))", (MAX_VALUE_BYTES,)) == [(MAX_VALUE_BYTES,)]
        refused(
            lambda: cart.query("SELECT zeroblob(?)", (MAX_VALUE_BYTES + 1,)),
            InvalidInput,
            "cannot read cartridge: string or blob too big",
            where=str(sample),
        )
        sql = "SELECT 1"
        assert cart.query(sql + " " * ((1 << 20) - len(sql))) == [(1,)]
        refused(
            lambda: cart.query(sql + " " * ((1 << 20) - len(sql) + 1)),
            InvalidInput,
            "cannot read cartridge: query string is too large",
            where=str(sample),
        )
        refused(
            lambda: cart.query("CREATE TABLE evil (x)"),
            InvalidInput,
            "cannot read cartridge: attempt to write a readonly database",
            where=str(sample),
        )


def test_query_errors_are_typed(sample: Path) -> None:
    with open_cartridge(sample) as cart:
        assert cart.query("SELECT count(*) FROM sqlar WHERE sz > ?", (1000,)) == [(5,)]
        refused(
            lambda: cart.query("SELECT nope FROM sqlar"),
            InvalidInput,
            "cannot read cartridge: no such column: nope",
            where=str(sample),
        )
        refused(
            lambda: cart.query("SELECT CAST(X'ff' AS TEXT) AS v"),
            InvalidInput,
            "cannot read cartridge: Could not decode to UTF-8 column 'v' with text '\ufffd'",
            where=str(sample),
        )


def test_count(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir, tmp_path, "INSERT INTO sqlar VALUES ('save/a', 420, 0, 1, X'41')", "DROP TABLE vectors"
    )
    with open_cartridge(p) as cart:
        assert cart.count("sqlar") == 15
        assert cart.count("sqlar", "WHERE name GLOB 'save/*'") == 1
        assert cart.count("sqlar", "WHERE sz > ?", (1000,)) == 5
        assert cart.count("attestations") == 0
        assert cart.count("vectors") == 0  # absent
        with pytest.raises(ValueError, match=r"^unknown table sqlite_master$"):
            cart.count("sqlite_master")
        assert [n for n in cart.iter_rom_sqlar_names()] == [
            i.name for i in cart.sqlar_infos() if i.name.startswith("rom/")
        ]
        assert "save/a" not in list(cart.iter_rom_sqlar_names())


def test_scans_of_an_opened_file_run_once(sample: Path) -> None:
    with open_cartridge(sample) as cart:
        statements: list[str] = []
        cart.conn.set_trace_callback(statements.append)
        assert cart.has_table("sqlar") and "objects" in cart.tables()  # known from the schema check
        assert statements == []
        first = (
            cart.meta(),
            cart.sqlar_infos(),
            cart.objects(),
            cart.memory(),
            cart.capabilities(),
            cart.skills(),
        )
        ran = len(statements)
        assert ran > 0
        again = (
            cart.meta(),
            cart.sqlar_infos(),
            cart.objects(),
            cart.memory(),
            cart.capabilities(),
            cart.skills(),
        )
        assert cart.sqlar_info(ROM_FILE) is not None and cart.sqlar_info("rom/absent") is None
        assert again == first and len(statements) == ran
        # each call hands out its own list: a caller's edit does not reach the next caller
        cart.sqlar_infos().clear()
        cart.meta().clear()
        assert cart.sqlar_infos() == first[1] and cart.meta() == first[0]


def test_a_wrapped_connection_is_the_callers(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(vectors_dir, tmp_path)
    conn = sqlite3.connect(p)
    cart = Cartridge.from_connection(conn)
    assert (cart.label, cart.header, cart.identity) == ("<connection>", None, None)
    before = cart.sqlar_infos()
    conn.execute("INSERT INTO sqlar VALUES ('save/new', 420, 0, 1, X'41')")
    assert [i.name for i in cart.sqlar_infos()] == [*(i.name for i in before), "save/new"]  # not cached
    assert cart.sqlar_read("save/new") == b"A"
    conn.execute("UPDATE sqlar SET data = X'42' WHERE name = 'save/new'")
    assert cart.sqlar_read("save/new") == b"B"
    refused(
        lambda: cart.query("SELECT nope FROM sqlar"),
        InvalidInput,
        "cannot read cartridge: no such column: nope",
        where="<connection>",
    )
    with cart:
        pass
    assert conn.execute("SELECT count(*) FROM sqlar").fetchone() == (15,)  # close() left it open
    small = Cartridge.from_connection(conn, label="b", max_entry_bytes=100)
    refused(
        lambda: small.sqlar_read(ROM_FILE),
        BadEntry,
        f"sqlar entry {ROM_FILE!r}: 394 bytes exceed the 100-byte limit",
        where="b",
        details={"entry": ROM_FILE},
    )
    conn.close()


def test_an_opened_connection_is_closed_with_the_cartridge(sample: Path) -> None:
    with open_cartridge(sample) as cart:
        conn = cart.conn
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_limits_given_at_open_are_applied(sample: Path) -> None:
    with open_cartridge(sample, max_entry_bytes=300, max_decompressed=1000) as cart:
        assert (cart.max_entry_bytes, cart.budget.limit, cart.budget.used) == (300, 1000, 0)
        assert cart.sqlar_read("rom/knowledge/CAREER.md") is not None  # 105 bytes inflated
        assert cart.budget.used == 105
        refused(
            lambda: cart.sqlar_read(ROM_FILE),
            BadEntry,
            f"sqlar entry {ROM_FILE!r}: 394 bytes exceed the 300-byte limit",
            where=str(sample),
            details={"entry": ROM_FILE},
        )
    with open_cartridge(sample, max_decompressed=300) as cart:  # one budget over every entry read
        assert cart.sqlar_read("rom/knowledge/CAREER.md") is not None
        assert cart.sqlar_read("rom/knowledge/IDENTITY.md") is not None
        assert cart.budget.used == 105 + 163
        refused(
            lambda: cart.sqlar_read("rom/knowledge/EQUIPMENT.md"),
            BadEntry,
            "sqlar entry 'rom/knowledge/EQUIPMENT.md': more than 300 bytes decompressed in total (raise the"
            " cap with --max-decompressed)",
            where=str(sample),
            details={"entry": "rom/knowledge/EQUIPMENT.md", "limit": 300},
        )
    with open_cartridge(sample, max_decompressed=200) as cart:
        refused(
            lambda: cart.sqlar_sha256(cart.sqlar_info(ROM_FILE)),  # type: ignore[arg-type]
            BadEntry,
            f"sqlar entry {ROM_FILE!r}: more than 200 bytes decompressed in total (raise the cap with"
            " --max-decompressed)",
            where=str(sample),
            details={"entry": ROM_FILE, "limit": 200},
        )


def test_a_schema_sqlite_cannot_report_in_utf8_is_typed(tmp_path: Path) -> None:
    # a table name that is not UTF-8: SQLite calls the schema malformed, naming it, and the
    # message itself does not decode
    p = tmp_path / "n.db"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET name = CAST(X'74ff' AS TEXT) WHERE name = 't'")
    conn.commit()
    conn.close()
    conn = sqlite3.connect(p)
    refused(
        Cartridge.from_connection(conn, label="n").tables,
        InvalidInput,
        "cannot read cartridge: 'utf-8' codec can't decode byte 0xff in position 28: invalid start byte",
        where="n",
    )
    conn.close()


def test_sqlar_read_of_every_stored_form(vectors_dir: Path, tmp_path: Path) -> None:
    text = b"hello " * 50
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw_deflate = deflate.compress(text) + deflate.flush()
    p = edited(
        vectors_dir,
        tmp_path,
        "INSERT INTO sqlar VALUES ('rom/raw', 420, 0, 300, ?1), ('rom/z', 420, 0, 300, ?2),"
        " ('rom/d', 420, 0, 300, ?3), ('rom/empty', 420, 0, 0, NULL), ('rom/empty2', 420, 0, 0, X'')",
        params=(text, zlib.compress(text), raw_deflate),
    )
    with open_cartridge(p) as cart:
        for name in ("rom/raw", "rom/z", "rom/d"):
            assert cart.sqlar_read(name) == text, name
        assert cart.sqlar_read("rom/empty") == b"" and cart.sqlar_read("rom/empty2") == b""
        assert cart.sqlar_read("rom/none") is None


def test_a_lock_held_by_a_writer_does_not_stop_the_reader(sample: Path) -> None:
    # the file is opened immutable: no lock is taken, so a writer holding the file's exclusive
    # lock (no journal yet, no sidecar) neither blocks the reader nor changes what it reads
    with open_cartridge(sample) as cart:
        writer = sqlite3.connect(sample, timeout=0)
        try:
            writer.execute("BEGIN EXCLUSIVE")
            assert not Path(f"{sample}-journal").exists()
            assert cart.meta()["acx.role"] == "designer"
            assert len(cart.sqlar_infos()) == 14
        finally:
            writer.rollback()
            writer.close()


def test_a_schema_refusal_names_the_file(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(vectors_dir, tmp_path, "CREATE TABLE evil (x TEXT)")
    refused(
        lambda: open_cartridge(p),
        InvalidInput,
        "not an acceptable cartridge: unexpected table 'evil'",
        where=str(p),
        details={"table": "evil"},
    )


def test_a_cartridge_made_directly_does_not_own_its_connection(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    with Cartridge(conn, label="direct") as cart:
        assert cart.meta()["acx.role"] == "designer"
    assert conn.execute("SELECT count(*) FROM cartridge").fetchone() == (22,)  # still open
    conn.close()
