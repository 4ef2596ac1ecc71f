"""`acx cartridge verify FILE` opens FILE before the CLI loads (acxoci/cli/entry.py, reader
`open_early`): the command's own open takes that cartridge only when it is the same file, with
the same limits, still without a sidecar; any other case gets a fresh open with every check, so
a file changed in between is judged as it is now."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acxoci.cartridge import reader
from acxoci.cartridge.reader import open_cartridge, open_early
from acxoci.cartridge.verify import verify_cartridge
from acxoci.cli.entry import early_cartridge
from acxoci.errors import InvalidInput
from tests.unit.test_cartridge_verify_support import NOW, SAMPLE, copy_vector


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    yield
    reader._close_early()


@pytest.mark.parametrize(
    ("argv", "guess"),
    [
        (["cartridge", "verify", "a.acx"], ("a.acx", {})),
        (["--json", "cartridge", "verify", "--require", "trusted", "a.acx"], ("a.acx", {})),
        (
            ["cartridge", "verify", "a.acx", "--trust-registry", "r.json", "--now=2026-01-01T00:00:00Z"],
            ("a.acx", {}),
        ),
        (["cartridge", "verify", "--max-decompressed", "7", "a.acx"], ("a.acx", {"max_decompressed": 7})),
        (["cartridge", "verify", "--max-decompressed=7", "a.acx"], ("a.acx", {"max_decompressed": 7})),
        (["cartridge", "verify", "--max-decompressed", "x", "a.acx"], None),
        (["cartridge", "verify"], None),
        (["cartridge", "verify", "a.acx", "b.acx"], None),
        (["cartridge", "verify", "--", "a.acx"], None),
        (["cartridge", "inspect", "a.acx"], None),
        (["verify", "cartridge", "a.acx"], None),
        (["install", "a.acx"], None),
        ([], None),
    ],
)
def test_the_guess_reads_only_the_verify_command(argv: list[str], guess: object) -> None:
    assert early_cartridge(argv) == guess


def test_the_command_s_open_takes_the_early_cartridge(sample: Path) -> None:
    open_early(sample)
    assert len(reader._EARLY) == 1
    ((_, early),) = reader._EARLY.values()
    assert early._early is not None, "the ROM hashing pass did not start early"
    with open_cartridge(sample) as cart:
        assert cart is early and not reader._EARLY


def test_a_file_written_after_the_early_open_is_opened_again_and_judged_as_it_is(sample: Path) -> None:
    open_early(sample)
    ((_, early),) = reader._EARLY.values()
    conn = sqlite3.connect(sample)
    (rowid, data) = conn.execute("SELECT rowid, data FROM sqlar WHERE name LIKE 'rom/%' LIMIT 1").fetchone()
    conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (bytes([data[0] ^ 1]) + data[1:], rowid))
    conn.commit()
    conn.close()
    with open_cartridge(sample) as cart:
        assert cart is not early, "the early cartridge of the file before the write was handed out"
    assert not reader._EARLY and early._early is None, "the stale early cartridge was not closed"
    open_early(sample)  # and once more, through the command's own verify
    v = verify_cartridge(sample, registry=None, now=NOW)
    assert v.trust == "tampered", v
    assert not reader._EARLY


def test_a_file_replaced_after_the_early_open_is_opened_again(sample: Path, tmp_path: Path) -> None:
    open_early(sample)
    ((_, early),) = reader._EARLY.values()
    other = tmp_path / "other.acx"
    shutil.copyfile(sample, other)
    os.replace(other, sample)  # the same bytes, another inode
    with open_cartridge(sample) as cart:
        assert cart is not early
    assert not reader._EARLY and early._early is None


def test_other_limits_get_a_fresh_open(sample: Path) -> None:
    open_early(sample, max_decompressed=5)
    ((_, early),) = reader._EARLY.values()
    with open_cartridge(sample) as cart:
        assert cart is not early and cart.budget.limit != 5


def test_a_sidecar_that_appears_after_the_early_open_is_refused(sample: Path) -> None:
    open_early(sample)
    Path(f"{sample}-wal").write_bytes(b"")
    with pytest.raises(InvalidInput) as info:
        open_cartridge(sample)
    assert info.value.details == {"sidecar": "-wal"}


def test_a_path_that_is_no_cartridge_is_left_to_the_command(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.acx", tmp_path):
        open_early(path)
    (tmp_path / "junk.acx").write_bytes(b"not sqlite")
    open_early(tmp_path / "junk.acx")
    assert not reader._EARLY


def test_an_early_cartridge_nobody_takes_is_closed_at_exit(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acxoci.cartridge import romhash

    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 0)
    monkeypatch.setattr(romhash, "_HELPER", "import time; time.sleep(60)")
    open_early(sample)
    ((_, early),) = reader._EARLY.values()
    assert early._early is not None and early._early._pass is not None
    helper = early._early._pass._helper
    assert helper is not None
    reader._close_early()
    assert helper.proc.wait(timeout=10) < 0


def test_the_acx_command_verifies_through_the_early_open(sample: Path) -> None:
    # the console script's entry point: same verdict and exit code as ever
    code = "import sys; from acxoci.cli.entry import main; sys.argv = ['acx', *sys.argv[1:]]; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "--json", "cartridge", "verify", str(sample)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    assert '"trust":"portable"' in done.stdout.replace(" ", ""), done.stdout


def test_the_guess_knows_every_option_of_the_verify_command_that_takes_a_value() -> None:
    # entry.py reads argv before the CLI loads; its list must stay the command's own
    import inspect

    import typer.models

    from acxoci.cli import entry
    from acxoci.cli.cmd_cartridge import verify_cmd

    taking: set[str] = set()
    for param in inspect.signature(verify_cmd).parameters.values():
        info = param.default
        if isinstance(info, typer.models.OptionInfo) and "bool" not in str(param.annotation):
            taking.update(d for d in info.param_decls if d.startswith("--"))
    assert taking == entry._VALUE_OPTIONS
