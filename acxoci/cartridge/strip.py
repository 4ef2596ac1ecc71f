"""Strip-to-ROM (brief §5): copy, delete the SAVE zone, VACUUM, then prove the ROM digest is unchanged
and the DSSE still verifies before the copy is atomically moved into place."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.trust import TrustRegistry
from acxoci.cartridge.constants import META_ROM_MANIFEST_HASH
from acxoci.cartridge.manifest import compute_rom_manifest
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import CartridgeVerdict, verify_open
from acxoci.errors import InvalidInput, UsageError, WriteBackFailed


@dataclass(frozen=True)
class StripResult:
    """What strip did and what it proved."""

    source: str
    output: str | None
    rom_before: str
    rom_after: str
    recorded_hash: str | None
    equal: bool
    verdict_after: CartridgeVerdict
    removed: dict[str, int]
    size_before: int
    size_after: int

    @property
    def ok(self) -> bool:
        """ROM digest unchanged and the signature still verifies (not rejected)."""
        return self.equal and not self.verdict_after.rejected and self.output is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "source": self.source,
            "output": self.output,
            "romBefore": self.rom_before,
            "romAfter": self.rom_after,
            "recordedRomManifestHash": self.recorded_hash,
            "hashEquality": "EQUAL" if self.equal else "MISMATCH",
            "removed": self.removed,
            "sizeBefore": self.size_before,
            "sizeAfter": self.size_after,
            "verifyAfter": self.verdict_after.to_json(),
        }


_DELETES = (
    ("memory", "DELETE FROM memory WHERE zone = 'save'"),
    ("vectors", "DELETE FROM vectors WHERE zone = 'save'"),
    ("objects", "DELETE FROM objects WHERE zone = 'save'"),
    ("sqlar", "DELETE FROM sqlar WHERE name GLOB 'save/*'"),
    ("cartridge", "DELETE FROM cartridge WHERE key = 'acx.save_codebase_fingerprint'"),
)


def _strip_in_place(path: Path) -> dict[str, int]:
    removed: dict[str, int] = {}
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        conn.execute("BEGIN IMMEDIATE")
        for table, sql in _DELETES:
            if table in tables:
                removed[table] = conn.execute(sql).rowcount
        conn.execute("COMMIT")
        conn.execute("VACUUM")
    except sqlite3.Error as exc:
        raise InvalidInput(f"cannot strip: {exc}", where=str(path)) from exc
    finally:
        conn.close()
    return removed


def strip_cartridge(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    now: datetime,
    registry: TrustRegistry | None = None,
    minimum: str | None = None,
) -> StripResult:
    """Write a SAVE-free copy of `src` to `out` only if the ROM digest is equal and the DSSE re-verifies
    (with `minimum`, portable or trusted: by a signer of at least that trust).

    On a mismatch nothing is written (the result has output=None). Raises for unreadable input.
    """
    src_p, out_p = Path(src), Path(out)
    if src_p.resolve() == out_p.resolve():
        raise UsageError("output must differ from the input", where=str(out_p))
    with open_cartridge(src_p) as cart:
        before = compute_rom_manifest(cart, strict=False).hash
        recorded = cart.meta().get(META_ROM_MANIFEST_HASH)
    size_before = src_p.stat().st_size
    out_dir = out_p.resolve().parent
    if not out_dir.is_dir():
        raise UsageError(f"output directory {out_dir} does not exist", where=str(out_p))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out_p.name}.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        shutil.copyfile(src_p, tmp)
        os.chmod(tmp, 0o644)
        removed = _strip_in_place(tmp)
        with open_cartridge(tmp) as stripped:
            after = compute_rom_manifest(stripped, strict=False).hash
            verdict = verify_open(stripped, registry=registry, now=now)
        verdict = CartridgeVerdict(**{**verdict.__dict__, "file": str(out_p)})
        equal = before == after and (recorded is None or recorded == after)
        size_after = tmp.stat().st_size
        ok = equal and not verdict.rejected and verdict.meets(minimum)
        if ok:
            try:
                os.replace(tmp, out_p)
            except OSError as exc:
                raise WriteBackFailed(
                    f"cannot move the stripped copy into place: {exc}", where=str(out_p)
                ) from exc
        return StripResult(
            str(src_p),
            str(out_p) if ok else None,
            before,
            after,
            recorded,
            equal,
            verdict,
            removed,
            size_before,
            size_after,
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        for suffix in ("-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(tmp) + suffix).unlink()
