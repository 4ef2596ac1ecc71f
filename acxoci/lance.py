"""`acx lance`: a cartridge's memory as a LanceDB database (`acx.lance-memory/1`): table `memories`
with the fourteen fixed columns of `rom/schema/lance-memory.json`. The JSON baseline (the `memory`
rows) is authoritative; every vector is computed here with the local engine `local-hash-128`
(acx.embed/local-hash-128/1); vectors stored in the cartridge are foreign and never read.

Only the ROM zone is covered by the cartridge's signature, so only ROM rows are written: the
SAVE zone (field-learned state anyone holding the file can add to) is left out and counted.

`lancedb` (and `pyarrow`) are an optional extra imported only inside `write_dataset`, so no other
command pays for them or needs them installed."""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.documents.memory_record import MemoryRecordDoc
from acxoci.errors import InvalidInput, NotFound, UsageError

ENGINE_ID = "local-hash-128"
DIM = 128
TABLE = "memories"
SCHEMA_VERSION = "acx.lance-memory/1"
_TOKEN = re.compile(r"[a-z0-9]+")
#: (column, arrow type name) in the order `acx.lance-memory/1` fixes.
COLUMNS = (
    ("id", "utf8"),
    ("zone", "utf8"),
    ("portable", "bool"),
    ("artifact_fingerprint", "utf8"),
    ("codebase_fingerprint", "utf8?"),
    ("title", "utf8"),
    ("summary", "utf8"),
    ("source_type", "utf8"),
    ("tags", "list<utf8>"),
    ("impact", "utf8"),
    ("xp_awarded", "int32"),
    ("timestamp", "utf8"),
    ("text", "utf8"),
    ("vector", f"fixed_size_list<float32, {DIM}>"),
)


def embed(text: str) -> list[float]:
    """local-hash-128: a signed bag of lowercase `[a-z0-9]+` tokens, each token's SHA-1 choosing a
    dimension (first four bytes, big-endian, mod 128) and a sign (bit 0 of byte 4), L2-normalised."""
    vec = [0.0] * DIM
    for tok in _TOKEN.findall(text.lower()):
        h = hashlib.sha1(tok.encode("utf-8"), usedforsecurity=False).digest()
        vec[int.from_bytes(h[:4], "big") % DIM] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm > 0 else vec


def memory_text(record: MemoryRecordDoc) -> str:
    """The embedded document: title + "\\n\\n" + summary."""
    return f"{record.title}\n\n{record.summary}"


def row_for(rec: MemoryRecordDoc, *, zone: str, artifact_fp: str, codebase_fp: str | None) -> dict[str, Any]:
    """One `memories` row from a decoded memory record of the JSON baseline (the authoritative source)."""
    text = memory_text(rec)
    return {
        "id": rec.id,
        "zone": zone,
        "portable": rec.portable,
        "artifact_fingerprint": artifact_fp,
        "codebase_fingerprint": codebase_fp,
        "title": rec.title,
        "summary": rec.summary,
        "source_type": rec.source_type,
        "tags": list(rec.tags),
        "impact": rec.impact,
        "xp_awarded": rec.xp_awarded,
        "timestamp": rec.timestamp,
        "text": text,
        "vector": embed(text),
    }


@dataclass(frozen=True)
class LanceResult:
    """What was written: where, how many rows per zone, the engine, the foreign vectors ignored
    and the unsigned (SAVE-zone) rows left out."""

    path: str
    rows: int
    zones: dict[str, int]
    foreign_vectors_ignored: int
    lancedb_version: str
    unsigned_rows_left_out: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "table": TABLE,
            "schemaVersion": SCHEMA_VERSION,
            "rows": self.rows,
            "zones": self.zones,
            "embeddingEngine": {"id": ENGINE_ID, "dim": DIM},
            "foreignVectorsIgnored": self.foreign_vectors_ignored,
            "unsignedRowsLeftOut": self.unsigned_rows_left_out,
            "lancedb": self.lancedb_version,
        }


def cartridge_rows(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """The `memories` rows of a cartridge's signed (ROM) memory baseline, how many unsigned rows
    (any other zone) were left out, and how many stored vectors it holds (counted, never read)."""
    from acxoci.attest.canonical import loads_strict
    from acxoci.attest.errors import MalformedError
    from acxoci.attest.typed import decode_as
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.documents.package_spec import PackageSpecDocEmbeddingEngine

    rows = []
    unsigned = 0
    with open_cartridge(path) as cart:
        engine = cart.meta().get("acx.embedding_engine", "")
        try:
            engine_id = decode_as(loads_strict(engine), PackageSpecDocEmbeddingEngine,
                                  document="acx.embedding_engine").id if engine else None
        except MalformedError:
            engine_id = None
        if engine_id != ENGINE_ID:
            raise InvalidInput(
                f"the cartridge's embedding engine is {engine_id!r}, not {ENGINE_ID}", where=str(path)
            )
        for m in cart.memory():
            if m.zone != "rom":  # not covered by the signature: never written as verified memory
                unsigned += 1
                continue
            where = f"{path}:memory[{m.id}]"
            try:
                rec = decode_as(loads_strict(m.payload), MemoryRecordDoc, document="memory record")
            except MalformedError as exc:
                raise InvalidInput(f"memory payload: {exc}", where=where) from exc
            rows.append(row_for(rec, zone=m.zone, artifact_fp=m.artifact_fingerprint,
                                codebase_fp=m.codebase_fingerprint))
        foreign = cart.count("vectors") if cart.has_table("vectors") else 0
    return sorted(rows, key=lambda r: (r["zone"], r["id"])), unsigned, foreign


def _arrow_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    import pyarrow as pa

    schema = pa.schema(
        [
            ("id", pa.string(), False),
            ("zone", pa.string(), False),
            ("portable", pa.bool_(), False),
            ("artifact_fingerprint", pa.string(), False),
            ("codebase_fingerprint", pa.string(), True),
            ("title", pa.string(), False),
            ("summary", pa.string(), False),
            ("source_type", pa.string(), False),
            ("tags", pa.list_(pa.string()), False),
            ("impact", pa.string(), False),
            ("xp_awarded", pa.int32(), False),
            ("timestamp", pa.string(), False),
            ("text", pa.string(), False),
            ("vector", pa.list_(pa.float32(), DIM), False),
        ],
        metadata={
            b"acx.schema_version": SCHEMA_VERSION.encode(),
            b"acx.embedding_engine": ENGINE_ID.encode(),
            b"acx.distance_metric": b"cosine",
            b"acx.partition_by": b"zone",
        },
    )
    return pa.Table.from_pylist([dict(r) for r in rows], schema=schema)


def write_dataset(rows: Sequence[Mapping[str, Any]], out: Path, *, force: bool) -> str:
    """Write the `memories` table as a LanceDB database at `out` (built in a sibling folder, then
    renamed into place); returns the lancedb version. UsageError when lancedb is not installed."""
    try:
        import lancedb
    except ImportError as exc:
        raise UsageError(
            "acx lance needs the optional lancedb package",
            hint="pip install 'acxoci[lance]' (make venv does)",
        ) from exc
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InvalidInput("the output path exists and is not a folder", where=str(out))
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(f"{out} is not empty", hint="name a new folder, or --force to replace it")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise NotFound(f"output parent folder does not exist: {parent}")
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        db = lancedb.connect(str(staging))
        db.create_table(TABLE, data=_arrow_table(rows))
        if out.exists():
            shutil.rmtree(out)
        os.replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(getattr(lancedb, "__version__", "unknown"))


def materialize(path: Path, out: Path, *, force: bool = False) -> LanceResult:
    """The cartridge's memory (already verified by the caller) as a LanceDB database at `out`."""
    rows, unsigned, foreign = cartridge_rows(path)
    version = write_dataset(rows, out, force=force)
    zones: dict[str, int] = {}
    for r in rows:
        zones[r["zone"]] = zones.get(r["zone"], 0) + 1
    return LanceResult(str(out), len(rows), zones, foreign, version, unsigned)
