"""Read a policy or harness document from a JSON file or from inside a cartridge (read-only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict, sha256_digest
from acxoci.attest.errors import MalformedError
from acxoci.cartridge.constants import SQLITE_MAGIC
from acxoci.cartridge.reader import open_cartridge
from acxoci.errors import InvalidInput
from acxoci.fsutil import open_regular, read_bytes, require_file


@dataclass(frozen=True)
class LoadedDocument:
    """A parsed JSON document, its exact bytes and where it came from."""

    doc: Any
    data: bytes
    source: str
    from_cartridge: bool
    harness: Any = None

    @property
    def digest(self) -> str:
        return sha256_digest(self.data)


def is_cartridge(path: Path) -> bool:
    """True when the file starts with the SQLite magic (the caller then opens it as a cartridge)."""
    with open_regular(path, "file") as fh:
        return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def load_document(path: Path, rom_path: str, *, with_harness: str | None = None) -> LoadedDocument:
    """The JSON document at `path`, or the ROM file `rom_path` inside the cartridge at `path`.
    `with_harness` also reads that ROM path (the harness) when `path` is a cartridge."""
    require_file(path)
    harness: Any = None
    if is_cartridge(path):
        with open_cartridge(path) as cart:
            data = cart.sqlar_read(rom_path)
            if data is None:
                raise InvalidInput(f"cartridge has no {rom_path}", where=str(path))
            if with_harness:
                h = cart.sqlar_read(with_harness)
                if h is not None:
                    try:
                        harness = loads_strict(h)
                    except MalformedError:
                        harness = None
        source, from_cart = f"{path}:{rom_path}", True
    else:
        data, source, from_cart = read_bytes(path, "file"), str(path), False
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=source) from exc
    return LoadedDocument(doc, data, source, from_cart, harness)
