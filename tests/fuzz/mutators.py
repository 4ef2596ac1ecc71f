"""Hypothesis strategies that turn one valid seed into hostile variants: JSON tree edits (replace,
delete, insert, retype, string edits), raw-text edits (byte flips, truncation, duplicate keys,
splices) and hostile strings for headers, references and paths."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

# Values an attacker likes: wrong types, boundary numbers, huge and odd strings, deep nests.
HOSTILE_SCALARS: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**53, 2**63, -(2**63), 10**400, 1.5, 1e308, -0.0,
    "", " ", "\x00", "\ud800", "../../etc/passwd", "/abs/path", "rom/../../x", "C:\\x", "a" * 5000,
    "sha256:" + "0" * 64, "sha256:" + "f" * 63, "sha512:" + "0" * 128, "ed25519:" + "a" * 64,
    "2026-02-30T00:00:00Z", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", "did:web:evil.example",
    "https://127.0.0.1:1/x", "file:///etc/passwd", "-----BEGIN " + "PRIVATE KEY-----", "é\u202e", "{}", "[]",
)

json_leaf = st.one_of(
    st.sampled_from(HOSTILE_SCALARS),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


JSON_JUNK = (b'"', b"{", b"}", b"[", b",", b":", b"\\u", b"\\ud800", b"\xff", b"\x00")


def _paths(doc: Any, limit: int = 4000) -> list[tuple[Any, ...]]:
    """Every container path in `doc` (iterative, bounded)."""
    out: list[tuple[Any, ...]] = [()]
    stack: list[tuple[tuple[Any, ...], Any]] = [((), doc)]
    while stack and len(out) < limit:
        path, node = stack.pop()
        children: list[tuple[Any, Any]] = []
        if isinstance(node, dict):
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        for k, v in children:
            p = (*path, k)
            out.append(p)
            stack.append((p, v))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def edit_string(s: str, pos: int, choice: int) -> str:
    if not s:
        return "x"
    i = pos % len(s)
    op = choice % 5
    if op == 0:  # change one character
        return s[:i] + chr((ord(s[i]) + 1 + choice // 5) % 0x10FFFF or 1) + s[i + 1 :]
    if op == 1:  # drop one character
        return s[:i] + s[i + 1 :]
    if op == 2:  # duplicate a slice
        return s[:i] + s[i:] + s[i:]
    if op == 3:  # truncate
        return s[:i]
    return s.upper() if s != s.upper() else s.lower()


@st.composite
def mutate_tree(draw: st.DrawFn, seed: Any, *, max_edits: int = 3) -> Any:
    """Apply 1..max_edits structural edits to a deep copy of `seed`."""
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(doc)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        op = draw(st.sampled_from(("replace", "delete", "insert", "edit", "retype", "dup")))
        if not path:
            if op in ("replace", "retype"):
                doc = draw(json_value)
            continue
        parent = _get(doc, path[:-1])
        key = path[-1]
        cur = parent[key]
        if op == "replace":
            parent[key] = draw(json_value)
        elif op == "delete":
            del parent[key]
        elif op == "insert":
            if isinstance(cur, dict):
                cur[draw(st.text(max_size=12))] = draw(json_value)
            elif isinstance(cur, list):
                cur.insert(draw(st.integers(0, len(cur))), draw(json_value))
            else:
                parent[key] = [cur, draw(json_value)]
        elif op == "edit" and isinstance(cur, str):
            parent[key] = edit_string(cur, draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)))
        elif op == "edit" and isinstance(cur, int) and not isinstance(cur, bool):
            parent[key] = cur + draw(st.sampled_from((-1, 1, 2**31, -(2**31), 2**64)))
        elif op == "retype":
            parent[key] = {"v": cur} if not isinstance(cur, dict) else [cur]
        elif op == "dup" and isinstance(cur, list | dict):
            parent[key] = copy.deepcopy(cur) if not cur else (cur * 2 if isinstance(cur, list) else cur)
    return doc


def _dumps(doc: Any) -> bytes:
    try:
        return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError):
        return b"{}"


@st.composite
def mutate_bytes(draw: st.DrawFn, data: bytes, *, max_edits: int = 8) -> bytes:
    """Byte-level edits of `data`: flips, deletions, insertions, truncation, splices."""
    b = bytearray(data)
    for _ in range(draw(st.integers(1, max_edits))):
        if not b:
            b.extend(draw(st.binary(min_size=1, max_size=16)))
            continue
        i = draw(st.integers(0, len(b) - 1))
        op = draw(st.integers(0, 5))
        if op == 0:
            b[i] ^= draw(st.integers(1, 255))
        elif op == 1:
            del b[i : i + draw(st.integers(1, 64))]
        elif op == 2:
            b[i:i] = draw(st.binary(min_size=1, max_size=32))
        elif op == 3:
            del b[i:]
        elif op == 4:
            j = draw(st.integers(0, len(b) - 1))
            b[i:i] = b[j : j + draw(st.integers(1, 128))]
        else:
            b[i:i] = draw(st.sampled_from(JSON_JUNK))
    return bytes(b)


def duplicate_key(data: bytes) -> bytes:
    """`{"a":1,...}` → `{"a":1,"a":1,...}`: a parser that keeps the last key sees another document."""
    text = data.decode("utf-8", "replace")
    start = text.find('"')
    colon = text.find(":", start)
    comma = text.find(",", colon)
    if start < 0 or colon < 0 or comma < 0:
        return data
    pair = text[start:comma]
    return (text[:start] + pair + "," + text[start:]).encode("utf-8")


def json_documents(seed: Any) -> st.SearchStrategy[bytes]:
    """Bytes of hostile variants of the JSON document `seed` (tree edits, text edits, dup keys, junk)."""
    raw = _dumps(seed)
    return st.one_of(
        mutate_tree(seed).map(_dumps),
        mutate_tree(seed, max_edits=1).map(_dumps),
        mutate_bytes(raw),
        st.just(raw).map(duplicate_key),
        json_value.map(_dumps),
        st.binary(max_size=256),
    )


header_text = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(list('Bearer Basic realm=service=scope="\\,  =x:/.')), max_size=200),
)
