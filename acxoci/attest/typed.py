"""One strict decoder from parsed JSON to typed, immutable models (decision 0029).

Every document kind is a `msgspec.Struct` (frozen; `forbid_unknown_fields` where the format
forbids unknown fields) decoded once, at the boundary, by `decode_as`: types are never coerced
(`"1"` is no integer, `true` is no number, `null` is no object), and a mismatch is a
`DocumentTypeError` naming the document and the JSON pointer of the value at fault. The JSON
text itself is parsed by `attest.canonical.loads_strict` first (duplicate keys, depth, size)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from msgspec import UnsetType

from acxoci.attest.errors import MalformedError

T = TypeVar("T")

Struct = msgspec.Struct
"""The base of every document model (re-exported so models import one module)."""

_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_MEMBER = re.compile(r"^Object (?:contains unknown|missing required) field `(?P<name>[^`]*)`")
_STEP = re.compile(r"\.(?P<key>[A-Za-z_$][\w$-]*)|\[(?P<index>\d+|\.\.\.)\]")


class DocumentTypeError(MalformedError):
    """A document's value does not have the type its format requires; `pointer` names it."""

    def __init__(self, message: str, *, document: str, pointer: str) -> None:
        self.document = document
        self.pointer = pointer
        super().__init__(f"{document}: {pointer or '/'}: {message}")


def json_pointer(path: str) -> str:
    """msgspec's `$.a[0].b` path as an RFC 6901 pointer (`/a/0/b`); a map key msgspec does not
    name (`[...]`) stays `…`."""
    out: list[str] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:  # not a path msgspec writes: keep the rest verbatim
            out.append(path[pos:])
            break
        key = m.group("key") if m.group("key") is not None else m.group("index")
        out.append("…" if key == "..." else key.replace("~", "~0").replace("/", "~1"))
        pos = m.end()
    return "".join("/" + step for step in out)


def decode_as(value: Any, model: type[T], *, document: str) -> T:
    """`value` (parsed JSON) as `model`, strictly; a wrong type, a missing required field, an
    unknown field where forbidden, or `null` where a value belongs raises DocumentTypeError."""
    try:
        return msgspec.convert(value, model, strict=True)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _AT.search(text)
        pointer = json_pointer(m.group("path")) if m else ""
        message = text[: m.start()] if m else text
        member = _MEMBER.match(message)
        if member:  # name the member itself, not only the object that has (or lacks) it
            pointer += "/" + member.group("name").replace("~", "~0").replace("/", "~1")
        raise DocumentTypeError(message, document=document, pointer=pointer) from None


def opt(value: T | UnsetType) -> T | None:
    """An optional member's value, None when the document leaves it out."""
    return None if isinstance(value, UnsetType) else value


def seq(value: tuple[T, ...] | UnsetType) -> tuple[T, ...]:
    """An optional list member's items, () when the document leaves it out."""
    return () if isinstance(value, UnsetType) else value


def given(value: T | UnsetType, default: T) -> T:
    """An optional member's value, `default` when the document leaves it out."""
    return default if isinstance(value, UnsetType) else value
