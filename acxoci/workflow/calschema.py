"""The structural vocabulary of `acx.cal/1` (closed key sets and enums), read from the one copy
of it: `schemas/acx.cal-1.schema.json`. `workflow lint` applies these with its own rule ids and
JSON paths; here they are only derived, so the schema and the lint can never disagree."""

from __future__ import annotations

from typing import Any

from acxoci.jsonschemas import load_schema

SCHEMA_FILE = "acx.cal-1.schema.json"


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow local `#/$defs/…` references (bounded: the schema is ours and shallow)."""
    for _ in range(8):
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return node
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"{SCHEMA_FILE}: unsupported $ref {ref}")
        node = root["$defs"][ref.removeprefix("#/$defs/")]
    raise ValueError(f"{SCHEMA_FILE}: $ref chain too deep")


def _at(root: dict[str, Any], *path: str) -> dict[str, Any]:
    """The sub-schema at `path` (`properties` / `items` steps are implied by names; `[]` = items)."""
    node = root
    for step in path:
        node = _resolve(root, node)
        node = node["items"] if step == "[]" else node["properties"][step]
    return _resolve(root, node)


def _keys(node: dict[str, Any]) -> frozenset[str]:
    return frozenset(node["properties"])


def _enum(node: dict[str, Any]) -> tuple[str, ...]:
    return tuple(node["enum"])


def _variants(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`oneOf` variants keyed by their `type` constant."""
    return {v["properties"]["type"]["const"]: v for v in node["oneOf"]}


_S = load_schema(SCHEMA_FILE)
_NODES = _variants(_at(_S, "nodes", "[]"))
_COMPLETIONS = _variants(_S["$defs"]["completion"])

TOP_LEVEL_KEYS = _keys(_S)
PARTICIPANT_KEYS = _keys(_at(_S, "participants", "[]"))
SLOT_KEYS = _keys(_S["$defs"]["slot"])
MIN_LEVEL_KEYS = _keys(_at(_S["$defs"]["slot"], "minLevel"))
SLOT_CAP_KEYS = _keys(_at(_S["$defs"]["slot"], "capabilities", "[]"))
RAC_KEYS = _keys(_at(_S, "rac", "[]"))
RAC_CHECK_KEYS = _keys(_at(_S, "rac", "[]", "check"))
VARIABLE_KEYS = _keys(_at(_S, "variables", "[]"))
EDGE_KEYS = _keys(_at(_S, "edges", "[]"))
AUTHOR_KEYS = _keys(_at(_S, "authors", "[]"))
REQUIRES_KEYS = _keys(_at(_NODES["task"], "requires"))
NODE_KEYS = {kind: _keys(variant) for kind, variant in _NODES.items()}
COMPLETION_FIELDS = {kind: tuple(k for k in v["properties"] if k != "type")
                     for kind, v in _COMPLETIONS.items()}
LIMIT_KEYS = tuple(_at(_S, "limits")["properties"])

CAREER_TIERS = _enum(_at(_S["$defs"]["slot"], "minLevel", "careerTier"))
RAC_KINDS = frozenset(_enum(_at(_S, "rac", "[]", "kind")))
RAC_CHECK_TYPES = frozenset(_enum(_at(_S, "rac", "[]", "check", "type")))
VARIABLE_TYPES = frozenset(_enum(_at(_S, "variables", "[]", "type")))
NODE_TYPES = frozenset(_NODES)
GATEWAY_KINDS = frozenset(_enum(_at(_NODES["gateway"], "gateway")))
EVENT_KINDS = frozenset(_enum(_at(_NODES["event"], "event")))
SIDE_EFFECTS = frozenset(_enum(_at(_NODES["task"], "sideEffects")))
APPROVALS = frozenset(_enum(_at(_NODES["task"], "approval")))
COMPLETION_TYPES = frozenset(_COMPLETIONS)
