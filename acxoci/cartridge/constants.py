"""Fixed facts of the `.acx` container (brief §1–§3): header words, the artifact type, bound meta
keys, statement types, regexes and the portable-path rule. Shared by reader, verifier and builder."""

from __future__ import annotations

import re

from acxoci.errors import InvalidInput

# --- header words (big-endian in the SQLite file header) ---
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
USER_VERSION_OFFSET = 60
APPLICATION_ID_OFFSET = 68
APPLICATION_ID = 0x41435831  # "ACX1" = 1094932529
USER_VERSION = 0x01000100  # [spec major 1][spec minor 0][vec0 storage format 1][flags]
SPEC_MAJOR = 1
SPEC_VERSION = "0.1"

# --- media types ---
ARTIFACT_TYPE_CARTRIDGE = "application/vnd.acx.cartridge.v1"

# --- signature / statement ---
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://acx.dev/attestation/cartridge/v1"
SIGNATURE_TARGET = "rom-manifest"

# --- zones, kinds, canon ---
ZONE_ROM = "rom"
ZONE_SAVE = "save"
KIND_SQLAR = "sqlar"
KIND_MEMORY = "memory"
KIND_CARTRIDGE = "cartridge"
CANON_RAW = "raw"
CANON_JCS = "jcs-rfc8785"
REF_MEMORY = "memory:"
REF_CAPABILITY = "capability:"
REF_META = "cartridge:"

# --- meta keys ---
BOUND_META_KEYS = (
    "acx.spec_version",
    "acx.cartridge_id",
    "acx.created_at",
    "acx.embedding_engine",
    "acx.publisher_id",
    "acx.agent_name",
    "acx.provider",
    "acx.model",
    "acx.role",
    "acx.declared_level",
    "acx.artifact_id",
    "acx.artifact_version",
    "acx.description",
    "acx.license",
    "acx.authors",
    "acx.tags",
    "acx.homepage",
)
META_PUBLISHER = "acx.publisher_id"
META_CARTRIDGE_ID = "acx.cartridge_id"
META_ROM_MANIFEST_HASH = "acx.rom_manifest_hash"

# --- limits ---
DEFAULT_MAX_ENTRY_BYTES = 256 * 1024 * 1024  # one sqlar entry, uncompressed
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024  # every inflated byte of one cartridge, in total
MAX_VALUE_BYTES = 16 * 1024 * 1024 + 65536  # SQLITE_LIMIT_LENGTH: any one value SQLite materialises
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
MAX_JSON_DOC_BYTES = 16 * 1024 * 1024

# --- regexes ---
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
KEYID_RE = re.compile(r"^ed25519:[0-9a-f]{64}$")
PUBLISHER_RE = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*(?:[./][a-z0-9][a-z0-9._-]*)*$"
)
ARTIFACT_ID_RE = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
PATH_SEGMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MAX_PATH_BYTES = 4096


PORTABLE_RE = re.compile(r"(?:rom|save)(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,127})+", re.ASCII)


def portable_path_problem(name: str) -> str | None:
    """Why `name` breaks the portable-path rule (brief §1.2), or None when it is fine."""
    if len(name) <= MAX_PATH_BYTES and PORTABLE_RE.fullmatch(name):
        return None  # fast path: every segment portable, so no '.', '..', NUL, '\\' or control
    if not name:
        return "empty name"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"name longer than {MAX_PATH_BYTES} bytes"
    if "\x00" in name:
        return "contains NUL"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "contains a control character"
    if "\\" in name:
        return "contains a backslash"
    if name.startswith("/"):
        return "is absolute"
    segments = name.split("/")
    if any(s in (".", "..") for s in segments):
        return "contains a '.' or '..' segment"
    if len(segments) < 2:
        return "needs at least two segments (zone/name)"
    if segments[0] not in (ZONE_ROM, ZONE_SAVE):
        return f"first segment {segments[0]!r} is not 'rom' or 'save'"
    for s in segments:
        if not PATH_SEGMENT_RE.fullmatch(s):
            return f"segment {s!r} is not portable ([A-Za-z0-9][A-Za-z0-9._-]{{0,127}})"
    return None


def check_portable_path(name: str, *, where: str = "sqlar") -> str:
    """Return `name` if it satisfies the portable-path rule, else raise InvalidInput naming it."""
    problem = portable_path_problem(name)
    if problem is not None:
        raise InvalidInput(f"sqlar entry {name!r} {problem}", where=where, details={"entry": name})
    return name
