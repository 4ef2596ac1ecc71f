"""Read-only access to a `.acx` cartridge: header words checked before SQLite sees the file,
required tables, and typed rows (text columns read as bytes and decoded strictly).

The file is opened with `mode=ro&immutable=1`, so no journal, lock or write ever touches it.
"""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from acxoci.cartridge.constants import (
    APPLICATION_ID,
    APPLICATION_ID_OFFSET,
    DEFAULT_MAX_ENTRY_BYTES,
    HEADER_SIZE,
    MAX_ENVELOPE_BYTES,
    OPTIONAL_TABLES,
    REQUIRED_TABLES,
    SPEC_MAJOR,
    SQLITE_MAGIC,
    USER_VERSION_OFFSET,
    portable_path_problem,
)
from acxoci.cartridge.sqlar import BadEntry, decode_entry
from acxoci.errors import InvalidInput, NotFound

__all__ = [
    "AttestationRow",
    "BadEntry",
    "CapabilityRow",
    "Cartridge",
    "Header",
    "MemoryRow",
    "ObjectRow",
    "SignatureRow",
    "SkillRow",
    "SqlarInfo",
    "open_cartridge",
    "read_header",
]


@dataclass(frozen=True)
class Header:
    """The SQLite header fields that identify a cartridge."""

    page_size: int
    page_count: int
    application_id: int
    user_version: int
    file_size: int

    @property
    def spec_major(self) -> int:
        return (self.user_version >> 24) & 0xFF

    @property
    def spec_minor(self) -> int:
        return (self.user_version >> 16) & 0xFF

    @property
    def vec0_format(self) -> int:
        return (self.user_version >> 8) & 0xFF

    @property
    def flags(self) -> int:
        return self.user_version & 0xFF

    def to_json(self) -> dict[str, Any]:
        return {
            "applicationId": f"0x{self.application_id:08x}",
            "userVersion": f"0x{self.user_version:08x}",
            "specMajor": self.spec_major,
            "specMinor": self.spec_minor,
            "vec0Format": self.vec0_format,
            "flags": self.flags,
            "pageSize": self.page_size,
            "pageCount": self.page_count,
            "fileSize": self.file_size,
        }


@dataclass(frozen=True)
class SqlarInfo:
    """A sqlar row without its data."""

    name: str
    mode: int | None
    mtime: int | None
    sz: int
    stored: int


@dataclass(frozen=True)
class ObjectRow:
    """One `objects` row: an integrity unit."""

    oid: str
    kind: str
    source_ref: str
    canon: str
    zone: str
    sz: int


@dataclass(frozen=True)
class MemoryRow:
    """One `memory` row; `payload` is the raw UTF-8 bytes of the stored JCS text."""

    id: str
    zone: str
    payload: bytes
    oid: str
    created_at: str


@dataclass(frozen=True)
class CapabilityRow:
    """One `capabilities` row; `json` is the raw UTF-8 bytes of the stored JCS text."""

    id: str
    json: bytes
    content_hash: str


@dataclass(frozen=True)
class SignatureRow:
    """One `signatures` row; `envelope` kept as bytes until parsed strictly."""

    sig_id: str
    target: str
    manifest_hash: str
    envelope: bytes
    keyid: str
    public_key_pem: str | None
    alg: str
    created_at: str


@dataclass(frozen=True)
class AttestationRow:
    """One `attestations` row (unsigned; may be added after signing)."""

    att_id: str
    type: str
    subject_oid: str | None
    media_type: str
    document: bytes
    status_url: str | None
    created_at: str


@dataclass(frozen=True)
class SkillRow:
    """One `acx_skill` row (a derived, unsigned cache)."""

    sqlar_path: str
    name: str
    description: str
    skill_version: str | None
    license: str | None
    content_sha256: str


def read_header(path: Path) -> Header:
    """Read and check the first 100 bytes: SQLite magic, page size, size, application_id, user_version.

    Raises InvalidInput naming the file; NotFound if it does not exist.
    """
    where = str(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEADER_SIZE)
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError as exc:
        raise NotFound(f"no such file: {path}", where=where) from exc
    except IsADirectoryError as exc:
        raise InvalidInput("is a directory, not a cartridge", where=where) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=where) from exc
    if len(head) < HEADER_SIZE:
        raise InvalidInput(
            f"not an .acx cartridge: {len(head)} bytes is shorter than a SQLite header", where=where
        )
    if not head.startswith(SQLITE_MAGIC):
        raise InvalidInput("not an .acx cartridge: not a SQLite database", where=where)
    (raw_page,) = struct.unpack(">H", head[16:18])
    page_size = 65536 if raw_page == 1 else raw_page
    if page_size < 512 or page_size & (page_size - 1):
        raise InvalidInput(f"corrupt SQLite header: page size {raw_page}", where=where)
    (change_counter,) = struct.unpack(">I", head[24:28])
    (page_count,) = struct.unpack(">I", head[28:32])
    (valid_for,) = struct.unpack(">I", head[92:96])
    (user_version,) = struct.unpack(">I", head[USER_VERSION_OFFSET : USER_VERSION_OFFSET + 4])
    (app_id,) = struct.unpack(">I", head[APPLICATION_ID_OFFSET : APPLICATION_ID_OFFSET + 4])
    if app_id != APPLICATION_ID:
        raise InvalidInput(
            f"not an .acx cartridge: application_id=0x{app_id:08x} (expected 0x{APPLICATION_ID:08x})",
            where=where,
        )
    if (user_version >> 24) & 0xFF != SPEC_MAJOR:
        raise InvalidInput(
            f"unsupported container version: user_version=0x{user_version:08x} "
            f"(spec major must be {SPEC_MAJOR})",
            where=where,
        )
    if size % page_size:
        raise InvalidInput(
            f"truncated or corrupt: size {size} is not a multiple of page size {page_size}", where=where
        )
    if valid_for == change_counter and page_count and page_count * page_size > size:
        raise InvalidInput(
            f"truncated: header says {page_count} pages of {page_size} bytes but the file has {size} bytes",
            where=where,
        )
    return Header(page_size, page_count or size // page_size, app_id, user_version, size)


def _text(value: object, where: str, what: str) -> str:
    """Decode a column read as bytes (CAST AS BLOB) as strict UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadEntry(
                f"{what} is not valid UTF-8 (byte {exc.start})", where=where, details={"entry": what}
            ) from exc
    raise BadEntry(f"{what} is {type(value).__name__}, expected text", where=where, details={"entry": what})


def _opt_text(value: object, where: str, what: str) -> str | None:
    return None if value is None else _text(value, where, what)


def _blob(value: object, where: str, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    raise BadEntry(f"{what} is {type(value).__name__}, expected text", where=where, details={"entry": what})


def _int(value: object, where: str, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise BadEntry(f"{what} is {value!r}, expected an integer", where=where, details={"entry": what})


def _opt_int(value: object, where: str, what: str) -> int | None:
    return None if value is None else _int(value, where, what)


class Cartridge:
    """A read-only view of one cartridge. Use `open_cartridge(path)` or `Cartridge.from_connection`."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        label: str,
        header: Header | None = None,
        owns: bool = False,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        self.conn = conn
        self.label = label
        self.header = header
        self.max_entry_bytes = max_entry_bytes
        self._owns = owns
        self._tables: frozenset[str] | None = None

    @classmethod
    def from_connection(
        cls,
        conn: sqlite3.Connection,
        *,
        label: str = "<connection>",
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> Cartridge:
        """Wrap an open connection (e.g. a builder's writable one); the caller keeps ownership."""
        return cls(conn, label=label, owns=False, max_entry_bytes=max_entry_bytes)

    # -- lifecycle --
    def close(self) -> None:
        if self._owns:
            self.conn.close()

    def __enter__(self) -> Cartridge:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- low level --
    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run a read query; SQLite errors (corruption, missing columns) become InvalidInput."""
        try:
            return list(self.conn.execute(sql, params).fetchall())
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read cartridge: {exc}", where=self.label) from exc

    def tables(self) -> frozenset[str]:
        """Names of the tables present."""
        if self._tables is None:
            rows = self.query("SELECT CAST(name AS BLOB) FROM sqlite_master WHERE type='table'")
            self._tables = frozenset(_text(r[0], self.label, "sqlite_master.name") for r in rows)
        return self._tables

    def has_table(self, name: str) -> bool:
        return name in self.tables()

    def check_tables(self) -> None:
        """Raise InvalidInput naming the missing tables."""
        missing = [t for t in REQUIRED_TABLES if t not in self.tables()]
        if missing:
            raise InvalidInput(
                f"not an .acx cartridge: missing table(s) {', '.join(missing)}", where=self.label
            )

    # -- rows --
    def meta(self) -> dict[str, str]:
        """The `cartridge` key/value table; non-text or non-UTF-8 values raise BadEntry naming the key."""
        out: dict[str, str] = {}
        for k, v in self.query("SELECT CAST(key AS BLOB), CAST(value AS BLOB) FROM cartridge"):
            key = _text(k, self.label, "cartridge.key")
            if v is None:
                raise BadEntry(
                    f"meta {key!r} is NULL", where=self.label, details={"entry": f"cartridge:{key}"}
                )
            out[key] = _text(v, self.label, f"cartridge:{key}")
        return out

    def sqlar_infos(self) -> list[SqlarInfo]:
        """Every sqlar row (without data); names are checked against the portable-path rule."""
        out: list[SqlarInfo] = []
        for n, mode, mtime, sz, stored in self.query(
            "SELECT CAST(name AS BLOB), mode, mtime, sz, length(CAST(data AS BLOB)) FROM sqlar"
        ):
            name = self._sqlar_name(n)
            out.append(
                SqlarInfo(
                    name,
                    _opt_int(mode, self.label, f"{name}.mode"),
                    _opt_int(mtime, self.label, f"{name}.mtime"),
                    _int(sz, self.label, f"{name}.sz"),
                    int(stored or 0),
                )
            )
        return out

    def _sqlar_name(self, raw: object) -> str:
        if isinstance(raw, bytes) and b"\x00" in raw:
            raise BadEntry(
                f"sqlar entry {raw!r} contains NUL", where=self.label, details={"entry": repr(raw)}
            )
        name = _text(raw, self.label, "sqlar.name")
        problem = portable_path_problem(name)
        if problem is not None:
            raise BadEntry(f"sqlar entry {name!r} {problem}", where=self.label, details={"entry": name})
        return name

    def sqlar_read(self, name: str) -> bytes | None:
        """The uncompressed bytes of sqlar entry `name`, or None if absent. Bounded (see sqlar.py)."""
        rows = self.query(
            "SELECT sz, CASE WHEN length(CAST(data AS BLOB)) > ? THEN NULL ELSE CAST(data AS BLOB) END,"
            " length(CAST(data AS BLOB)) FROM sqlar WHERE name = ?",
            (self.max_entry_bytes, name),
        )
        if not rows:
            return None
        problem = portable_path_problem(name)
        if problem is not None:
            raise BadEntry(f"sqlar entry {name!r} {problem}", where=self.label, details={"entry": name})
        sz, data, stored = rows[0]
        if isinstance(stored, int) and stored > self.max_entry_bytes:
            raise BadEntry(
                f"sqlar entry {name!r}: {stored} stored bytes exceed the {self.max_entry_bytes}-byte limit",
                where=self.label,
                details={"entry": name},
            )
        return decode_entry(name, sz, data, where=self.label, max_bytes=self.max_entry_bytes)

    def objects(self) -> list[ObjectRow]:
        """Every `objects` row."""
        out: list[ObjectRow] = []
        for oid, kind, ref, canon, zone, sz in self.query(
            "SELECT CAST(oid AS BLOB), CAST(kind AS BLOB), CAST(source_ref AS BLOB), CAST(canon AS BLOB),"
            " CAST(zone AS BLOB), sz FROM objects"
        ):
            source_ref = _text(ref, self.label, "objects.source_ref")
            w = f"objects[{source_ref}]"
            out.append(
                ObjectRow(
                    _text(oid, self.label, f"{w}.oid"),
                    _text(kind, self.label, f"{w}.kind"),
                    source_ref,
                    _text(canon, self.label, f"{w}.canon"),
                    _text(zone, self.label, f"{w}.zone"),
                    _int(sz, self.label, f"{w}.sz"),
                )
            )
        return out

    def memory(self, memory_id: str | None = None) -> list[MemoryRow]:
        """Every `memory` row, or the one with `memory_id`."""
        sql = (
            "SELECT CAST(id AS BLOB), CAST(zone AS BLOB), CAST(payload AS BLOB), CAST(oid AS BLOB),"
            " CAST(created_at AS BLOB) FROM memory"
        )
        rows = self.query(sql + " WHERE id = ?", (memory_id,)) if memory_id is not None else self.query(sql)
        out: list[MemoryRow] = []
        for mid, zone, payload, oid, created in rows:
            i = _text(mid, self.label, "memory.id")
            w = f"memory:{i}"
            out.append(
                MemoryRow(
                    i,
                    _text(zone, self.label, f"{w}.zone"),
                    _blob(payload, self.label, w),
                    _text(oid, self.label, f"{w}.oid"),
                    _text(created, self.label, f"{w}.created_at"),
                )
            )
        return out

    def capabilities(self, cap_id: str | None = None) -> list[CapabilityRow]:
        """Every `capabilities` row, or the one with `cap_id`."""
        sql = "SELECT CAST(id AS BLOB), CAST(json AS BLOB), CAST(content_hash AS BLOB) FROM capabilities"
        rows = self.query(sql + " WHERE id = ?", (cap_id,)) if cap_id is not None else self.query(sql)
        out: list[CapabilityRow] = []
        for cid, js, ch in rows:
            i = _text(cid, self.label, "capabilities.id")
            w = f"capability:{i}"
            out.append(CapabilityRow(i, _blob(js, self.label, w), _text(ch, self.label, f"{w}.content_hash")))
        return out

    def signatures(self) -> list[SignatureRow]:
        """Every `signatures` row, newest `created_at` first (the reference's pick order)."""
        out: list[SignatureRow] = []
        for sid, target, mh, env, keyid, pem, alg, created in self.query(
            "SELECT CAST(sig_id AS BLOB), CAST(target AS BLOB), CAST(manifest_hash AS BLOB),"
            f" substr(CAST(envelope AS BLOB), 1, {MAX_ENVELOPE_BYTES + 1}), CAST(keyid AS BLOB),"
            " CAST(public_key_pem AS BLOB),"
            " CAST(alg AS BLOB), CAST(created_at AS BLOB) FROM signatures ORDER BY created_at DESC"
        ):
            i = _text(sid, self.label, "signatures.sig_id")
            w = f"signatures[{i}]"
            out.append(
                SignatureRow(
                    i,
                    _text(target, self.label, f"{w}.target"),
                    _text(mh, self.label, f"{w}.manifest_hash"),
                    _blob(env, self.label, w),
                    _text(keyid, self.label, f"{w}.keyid"),
                    _opt_text(pem, self.label, f"{w}.public_key_pem"),
                    _text(alg, self.label, f"{w}.alg"),
                    _text(created, self.label, f"{w}.created_at"),
                )
            )
        return out

    def attestations(self) -> list[AttestationRow]:
        """Every `attestations` row (empty if the table is absent)."""
        if not self.has_table("attestations"):
            return []
        out: list[AttestationRow] = []
        for aid, typ, subj, mt, doc, url, created in self.query(
            "SELECT CAST(att_id AS BLOB), CAST(type AS BLOB), CAST(subject_oid AS BLOB),"
            " CAST(media_type AS BLOB), CAST(document AS BLOB), CAST(status_url AS BLOB),"
            " CAST(created_at AS BLOB) FROM attestations"
        ):
            i = _text(aid, self.label, "attestations.att_id")
            w = f"attestations[{i}]"
            out.append(
                AttestationRow(
                    i,
                    _text(typ, self.label, f"{w}.type"),
                    _opt_text(subj, self.label, f"{w}.subject_oid"),
                    _text(mt, self.label, f"{w}.media_type"),
                    _blob(doc, self.label, w),
                    _opt_text(url, self.label, f"{w}.status_url"),
                    _text(created, self.label, f"{w}.created_at"),
                )
            )
        return out

    def skills(self) -> list[SkillRow]:
        """Every `acx_skill` row (empty if the table is absent)."""
        if not self.has_table("acx_skill"):
            return []
        out: list[SkillRow] = []
        for path, name, desc, ver, lic, sha in self.query(
            "SELECT CAST(sqlar_path AS BLOB), CAST(name AS BLOB), CAST(description AS BLOB),"
            " CAST(skill_version AS BLOB), CAST(license AS BLOB), CAST(content_sha256 AS BLOB)"
            " FROM acx_skill"
        ):
            p = _text(path, self.label, "acx_skill.sqlar_path")
            w = f"acx_skill[{p}]"
            out.append(
                SkillRow(
                    p,
                    _text(name, self.label, f"{w}.name"),
                    _text(desc, self.label, f"{w}.description"),
                    _opt_text(ver, self.label, f"{w}.skill_version"),
                    _opt_text(lic, self.label, f"{w}.license"),
                    _text(sha, self.label, f"{w}.content_sha256"),
                )
            )
        return out

    def count(self, table: str, where: str = "", params: tuple[Any, ...] = ()) -> int:
        """Row count of one of the known tables (0 if the table is absent)."""
        if table not in REQUIRED_TABLES + OPTIONAL_TABLES:
            raise ValueError(f"unknown table {table}")
        if not self.has_table(table):
            return 0
        rows = self.query(f"SELECT count(*) FROM {table} {where}", params)
        return int(rows[0][0])

    def iter_rom_sqlar_names(self) -> Iterator[str]:
        """Names of the `rom/` sqlar rows."""
        for info in self.sqlar_infos():
            if info.name.startswith("rom/"):
                yield info.name


def open_cartridge(
    path: str | os.PathLike[str], *, max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
) -> Cartridge:
    """Check the header, open the file read-only and immutable, and check the required tables.

    Raises NotFound or InvalidInput naming the file when it is not a readable cartridge.
    """
    p = Path(path)
    header = read_header(p)
    uri = p.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise InvalidInput(f"cannot open as SQLite: {exc}", where=str(p)) from exc
    cart = Cartridge(conn, label=str(p), header=header, owns=True, max_entry_bytes=max_entry_bytes)
    try:
        conn.execute("PRAGMA query_only = 1")
        cart.check_tables()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        cart.close()
        raise InvalidInput(f"not a readable SQLite database: {exc}", where=str(p)) from exc
    except BaseException:
        cart.close()
        raise
    return cart
