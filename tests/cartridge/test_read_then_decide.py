"""Reading is split from deciding (issue 31): `read_cartridge`/`read_open` gather the facts (all the
I/O and the structural checks) and the pure `decide(facts, registry, now)` gives the verdict. The
facts carry what could not be read, and `decide` meets it where the reference's order would:
a malformed entry is a verdict, a file that is not readable at all is raised there."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.trust import TrustRegistry
from acxoci.cartridge import verify
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import decide, read_cartridge, verify_cartridge, verify_open
from acxoci.errors import InvalidInput
from tests.harness.btree import corrupt_a_sqlar_leaf
from tests.harness.cartridges import NOW, SAMPLE, copy_vector


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _registry(vectors: Path) -> TrustRegistry:
    from acxoci.cartridge.trust_file import load_trust_registry

    return load_trust_registry(vectors / "sample" / "trust-active.json")


def test_decide_is_pure_over_the_facts(sample: Path, vectors_dir: Path) -> None:
    facts = read_cartridge(sample)
    sample.unlink()  # nothing is read again
    registry = _registry(vectors_dir)
    first = decide(facts, registry=registry, now=NOW)
    assert first == decide(facts, registry=registry, now=NOW)
    assert (first.trust, first.file) == ("trusted", str(sample))
    assert decide(facts, registry=None, now=NOW).trust == "portable"


def test_verify_open_decides_with_the_registry_it_is_given(sample: Path, vectors_dir: Path) -> None:
    with open_cartridge(sample) as cart:
        assert verify_open(cart, registry=_registry(vectors_dir), now=NOW).trust == "trusted"


def test_a_signed_file_whose_rom_cannot_be_read_is_refused_there(sample: Path) -> None:
    corrupt_a_sqlar_leaf(sample)
    facts = read_cartridge(sample)
    assert facts.manifest is None and facts.signature is not None
    depths = []
    for _ in range(3):  # the same facts decided again: the same refusal, no traceback piling up
        with pytest.raises(InvalidInput) as err:
            decide(facts, registry=None, now=NOW)
        assert err.value.message == "cannot read cartridge table sqlar: database disk image is malformed"
        assert err.value.where == str(sample)
        tb, depth = err.value.__traceback__, 0
        while tb is not None:
            tb, depth = tb.tb_next, depth + 1
        depths.append(depth)
    assert depths[0] == depths[1] == depths[2]


def test_an_unsigned_file_whose_rom_cannot_be_read_is_refused_too(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    conn.execute("DELETE FROM signatures")
    conn.commit()
    conn.close()
    assert verify_cartridge(sample, registry=None, now=NOW).trust == "legacy"
    corrupt_a_sqlar_leaf(sample)
    with pytest.raises(InvalidInput) as err:
        verify_cartridge(sample, registry=None, now=NOW)
    assert err.value.message == "cannot read cartridge table sqlar: database disk image is malformed"


def test_a_malformed_signature_row_is_decided_alone_and_names_the_file(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    conn.execute("UPDATE signatures SET keyid = X'41'")
    conn.commit()
    conn.close()
    facts = read_cartridge(sample)
    assert facts.manifest is None and facts.content_problem is None  # the content was not read
    v = decide(facts, registry=None, now=NOW)
    assert (v.trust, v.file, v.issues) == (
        "tampered", str(sample), ("signatures.keyid holds a blob value, expected text",)
    )


def _touched_after_reading(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    real = verify.compute_rom_manifest

    def touched(cart: Any, **kw: Any) -> Any:
        try:
            return real(cart, **kw)
        finally:
            os.utime(path, ns=(1, 1))

    monkeypatch.setattr(verify, "compute_rom_manifest", touched)


def test_a_tampered_verdict_stands_when_the_file_also_changed(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = sqlite3.connect(sample)
    conn.execute(
        "UPDATE sqlar SET data = zeroblob(length(data)) WHERE rowid = (SELECT min(rowid) FROM sqlar)"
    )
    conn.commit()
    conn.close()
    _touched_after_reading(monkeypatch, sample)
    v = verify_cartridge(sample, registry=None, now=NOW)
    assert (v.trust, v.file) == ("tampered", str(sample))


def test_a_file_changed_while_a_malformed_entry_was_read_gets_no_verdict(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # unsigned (legacy is a verdict that does not reject) with a malformed entry: the facts say
    # the file changed, so it gets no verdict at all
    conn = sqlite3.connect(sample)
    conn.execute("DELETE FROM signatures")
    conn.execute("UPDATE objects SET sz = -1 WHERE oid = (SELECT min(oid) FROM objects)")
    conn.commit()
    conn.close()
    assert verify_cartridge(sample, registry=None, now=NOW).trust == "legacy"
    _touched_after_reading(monkeypatch, sample)
    with pytest.raises(InvalidInput) as err:
        verify_cartridge(sample, registry=None, now=NOW)
    assert err.value.message == "the file changed while it was being verified; refusing it"
    assert err.value.where == str(sample)
