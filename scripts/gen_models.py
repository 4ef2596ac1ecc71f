"""Generate the typed document models (frozen `msgspec.Struct`s) from the JSON Schemas in `schemas/`.

The schemas are the one source of truth for every document's shape (DESIGN.md); the models are
derived from them so the two cannot drift. `python scripts/gen_models.py` rewrites the model
modules; `--check` exits 1 (and names the file) when a committed module differs from what the
schemas generate (tests/documents/test_models_agree.py runs it).

A model says what the schema says about *types and structure*: JSON types (an integer is no
number's fraction, a boolean is no integer, `null` only where the schema allows it), which members
are required, and whether an object is closed (`additionalProperties: false` becomes
`forbid_unknown_fields`). Value rules (patterns, enums, bounds, `oneOf` exclusivity, `if/then`)
stay in the schema and in the rule checks that report them with their own rule ids: decoding a
document into its model therefore never hides a rule finding behind a type error of a value that
has the right type. An optional member absent from the document is `UNSET` (never `None`:
`null` is a value, not absence). `oneOf`/`anyOf`/`allOf` object variants are merged into one
struct (members of all variants, required only when every variant requires them).
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

#: schema file → (module written, root model name, one-line description)
TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("acx.harness.v1.schema.json", "acxoci/documents/harness.py", "HarnessDoc",
     "harness requirements (`acx.harness.v1`)"),
    ("acx.host.v1.schema.json", "acxoci/documents/host.py", "HostDoc", "host descriptor (`acx.host.v1`)"),
    ("acx.loop-context-policy-1.1.schema.json", "acxoci/documents/loop_policy.py", "LoopPolicyDoc",
     "loop + context policy (`acx.loop-context-policy/1` and `/1.1`)"),
    ("resource-limits.schema.json", "acxoci/documents/resource_limits.py", "ResourceLimitsDoc",
     "resource limits (a policy's `budget`, a host's resource-limits.yaml)"),
    ("resource-limits.schema.json#relaxed", "acxoci/documents/host_limits.py", "HostLimitsDoc",
     "host resource limits (`resource-limits.yaml`: the budget's shape, every member optional)"),
    ("acx.policy-trace-1.schema.json", "acxoci/documents/policy_trace.py", "PolicyTraceDoc",
     "policy trace (the events `acx policy simulate` replays)"),
    ("acx.package-spec-1.schema.json", "acxoci/documents/package_spec.py", "PackageSpecDoc",
     "package spec (`acx.package-spec/1`, `rom/package-spec.json`)"),
    ("acx.cal-skillset-1.schema.json", "acxoci/documents/skillset.py", "SkillsetDoc",
     "CAL skillset (`acx.cal-skillset/1`, `rom/cal/skillset.json`)"),
    ("acx.memory-record-1.schema.json", "acxoci/documents/memory_record.py", "MemoryRecordDoc",
     "stored memory record (a `memory` row's payload)"),
    ("acx.capability-1.schema.json", "acxoci/documents/capability.py", "CapabilityDoc",
     "capability record (`acx.capability/1`, a `capabilities` row)"),
    ("acx.lance-memory-1.schema.json", "acxoci/documents/lance.py", "LanceDescriptorDoc",
     "lance memory descriptor (`rom/schema/lance-memory.json`)"),
    ("acx.agent-package-manifest-1.schema.json", "acxoci/documents/package_manifest.py",
     "PackageManifestDoc", "agent package manifest.json (the builder's input)"),
    ("acx.cal-1.schema.json", "acxoci/documents/cal.py", "CalDoc", "workflow (`acx.cal/1`)"),
    ("acx.agent-graph-1.schema.json", "acxoci/documents/agent_graph.py", "AgentGraphDoc",
     "agent graph (`acx.agent-graph/1`)"),
    ("acx.level-credential-1.schema.json", "acxoci/documents/level_credential.py", "LevelCredentialDoc",
     "level credential (a W3C VC 2.0 with an eddsa-jcs-2022 proof)"),
    ("acx.exchange-index-1.schema.json", "acxoci/documents/exchange_index.py", "ExchangeIndexDoc",
     "exchange index (`index.json` of an Exchange folder)"),
    ("acx.exchange-status-1.schema.json", "acxoci/documents/exchange_status.py", "ExchangeStatusDoc",
     "exchange status file (`status.json`)"),
    ("acx.lifecycle-record-1.schema.json", "acxoci/documents/lifecycle.py", "LifecycleRecordDoc",
     "lifecycle record (`acx.lifecycle/1`)"),
    ("acx.verification-policy-1.schema.json", "acxoci/documents/verification_policy.py",
     "VerificationPolicyDoc", "verification policy (`acx.verification-policy/1`, a host's install policy)"),
    ("acx.install-record-1.schema.json", "acxoci/documents/install_record.py", "InstallRecordDoc",
     "install record (`acx.install-record/1`, `record.json` of an installed item)"),
    ("acx.activation-1.schema.json", "acxoci/documents/activation.py", "ActivationDoc",
     "activation manifest (`acx.activation/1`, what one activation wrote into a skills folder)"),
    ("acx.trust-registry-1.schema.json", "acxoci/attest/documents/trust_registry.py", "TrustRegistryDoc",
     "trust registry (`acx.trust-registry/1`)"),
    ("acx.status-list-1.schema.json", "acxoci/attest/documents/status_list.py", "StatusListDoc",
     "status list credential (W3C Bitstring Status List)"),
)

JSON_TYPES = {"null": "None", "boolean": "bool", "integer": "int", "number": "int | float", "string": "str",
              "array": "tuple[Any, ...]", "object": "dict[str, Any]"}


def _pascal(text: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text))
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    return out if out and not out[0].isdigit() else "X" + out


def _snake(text: str) -> str:
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    s = re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower() or "field"
    if s[0].isdigit():
        s = "f_" + s
    return s + "_" if keyword.iskeyword(s) else s


def _value_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


@dataclass
class Obj:
    """An object schema merged from its parts: properties, required members, closed or not."""

    props: dict[str, list[Any]] = field(default_factory=dict)  # name -> every schema it has
    required: set[str] | None = None
    closed: bool = False
    extra: Any = None  # additionalProperties schema (an open map) when there are no properties


class Gen:
    """One schema → one module of Struct classes."""

    def __init__(self, schema: dict[str, Any], root: str) -> None:
        self.schema = schema
        self.root = root
        self.classes: list[str] = []
        self.names: set[str] = set()
        self.by_ref: dict[str, str] = {}
        self.uses_unset = False

    def resolve(self, node: Any) -> Any:
        for _ in range(16):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node
            ref = node["$ref"]
            if not ref.startswith("#/$defs/"):
                raise SystemExit(f"unsupported $ref {ref}")
            node = self.schema["$defs"][ref.removeprefix("#/$defs/")]
        raise SystemExit("$ref chain too long")

    def variants(self, node: Any) -> list[Any]:
        """The alternatives a node allows (oneOf/anyOf members, each combined with the base)."""
        node = self.resolve(node)
        if not isinstance(node, dict):
            return [node]
        alts = node.get("oneOf") or node.get("anyOf")
        if not alts:
            return [node]
        base = {k: v for k, v in node.items() if k not in ("oneOf", "anyOf")}
        out = []
        for a in alts:
            a = self.resolve(a)
            if not isinstance(a, dict):
                out.append(a)
                continue
            merged = {**base, **a}
            if "properties" in base or "properties" in a:
                merged["properties"] = {**base.get("properties", {}), **a.get("properties", {})}
            if "required" in base or "required" in a:
                merged["required"] = [*base.get("required", []), *a.get("required", [])]
            out.append(merged)
        return out

    def types_of(self, node: Any) -> set[str]:
        """The JSON types a (resolved, single) schema admits."""
        if node is True or node == {}:
            return set(JSON_TYPES)
        if node is False:
            return set()
        assert isinstance(node, dict), node
        if "allOf" in node:
            got = set(JSON_TYPES)
            for part in node["allOf"]:
                for v in self.variants(part):
                    got &= self.types_of(v)
            rest = {k: v for k, v in node.items() if k != "allOf"}
            return got & self.types_of(rest) if rest else got
        t = node.get("type")
        if isinstance(t, str):
            out = {t}
        elif isinstance(t, list):
            out = set(t)
        elif "const" in node:
            out = {_value_type(node["const"])}
        elif "enum" in node:
            out = {_value_type(v) for v in node["enum"]}
        elif "properties" in node or "required" in node or "additionalProperties" in node:
            out = {"object"}
        elif "items" in node or "prefixItems" in node:
            out = {"array"}
        else:
            out = set(JSON_TYPES)
        if "integer" in out and "number" in out:
            out.discard("integer")
        if "const" in node:
            out &= {_value_type(node["const"])} | ({"number"} if isinstance(node["const"], int) else set())
        if "enum" in node:
            out &= {_value_type(v) for v in node["enum"]} | {"number" for v in node["enum"]
                                                             if _value_type(v) == "integer"}
        return out

    def merge_objects(self, schemas: list[Any]) -> Obj:
        """Merge object schemas (variants of one value) into one member table."""
        obj = Obj()
        closed_all = True
        for s in schemas:
            s = self.resolve(s)
            parts = [s]
            if isinstance(s, dict) and "allOf" in s:
                parts = [self.resolve(p) for p in s["allOf"]] + [{k: v for k, v in s.items() if k != "allOf"}]
            req: set[str] = set()
            closed = False
            for p in parts:
                if not isinstance(p, dict):
                    continue
                for name, sub in p.get("properties", {}).items():
                    obj.props.setdefault(name, []).append(sub)
                for branch in (p.get("then"), p.get("else")):  # a value condition: members it types
                    for name, sub in (branch or {}).get("properties", {}).items():
                        obj.props.setdefault(name, []).append(sub)
                req |= set(p.get("required", []))
                ap = p.get("additionalProperties")
                if ap is False:
                    closed = True
                elif isinstance(ap, dict) and not p.get("properties"):
                    obj.extra = ap
            for name in sorted(req - set(obj.props)):  # required but untyped: present, any value
                obj.props[name] = [True]
            obj.required = req if obj.required is None else obj.required & req
            closed_all = closed_all and closed
        obj.closed = closed_all
        return obj

    def type_expr(self, schemas: list[Any], name: str) -> str:
        """A Python type for a value that any of `schemas` (already alternatives) describes."""
        refs = {s["$ref"] for s in schemas if isinstance(s, dict) and isinstance(s.get("$ref"), str)}
        if len(refs) == 1 and len(schemas) == 1:  # a named definition is named after it
            name = self.root + _pascal(refs.pop().removeprefix("#/$defs/"))
        alts: list[Any] = []
        for s in schemas:
            alts.extend(self.variants(s))
        by_type: dict[str, list[Any]] = {}
        for a in alts:
            a = self.resolve(a)
            for t in self.types_of(a):
                by_type.setdefault(t, []).append(a)
        if set(by_type) >= set(JSON_TYPES) - {"integer"} and all(
            a is True or a == {} for v in by_type.values() for a in v
        ):
            return "Any"
        parts: list[str] = []
        for t in ("object", "array", "string", "integer", "number", "boolean", "null"):
            if t not in by_type:
                continue
            if t == "number" and "integer" in by_type:
                continue
            if t == "object":
                parts.append(self.object_type([a for a in by_type[t] if isinstance(a, dict)], name))
            elif t == "array":
                parts.append(self.array_type([a for a in by_type[t] if isinstance(a, dict)], name))
            else:
                parts.append(JSON_TYPES[t])
        if not parts:
            return "Any"
        return " | ".join(parts)

    def array_type(self, schemas: list[dict[str, Any]], name: str) -> str:
        items: list[Any] = []
        for s in schemas:
            if "prefixItems" in s:
                items.extend(s["prefixItems"])
                if s.get("items") not in (None, False):
                    items.append(s["items"])
            elif "items" in s:
                items.append(s["items"])
            else:
                items.append(True)
        inner = self.type_expr(items, name + "Item") if items else "Any"
        return f"tuple[{inner}, ...]"

    def object_type(self, schemas: list[dict[str, Any]], name: str) -> str:
        obj = self.merge_objects(schemas)
        if not obj.props:
            if obj.extra is not None:
                return f"dict[str, {self.type_expr([obj.extra], name + 'Value')}]"
            return "dict[str, Any]"
        key = json.dumps(schemas, sort_keys=True)
        if key in self.by_ref:
            return self.by_ref[key]
        cls = name
        n = 2
        while cls in self.names:
            cls, n = f"{name}{n}", n + 1
        self.names.add(cls)
        self.by_ref[key] = cls
        self.emit(cls, obj, schemas)
        return cls

    def emit(self, cls: str, obj: Obj, schemas: list[dict[str, Any]]) -> None:
        lines: list[str] = []
        opts = "frozen=True, kw_only=True" + (", forbid_unknown_fields=True" if obj.closed else "")
        doc = next((s.get("title") or s.get("description") for s in schemas if s.get("title")
                    or s.get("description")), None)
        lines.append(f"class {cls}(Struct, {opts}):")
        summary = (doc or f"`{cls}`").strip().split("\n")[0]
        summary = re.split(r"(?<=[.:;])\s", summary)[0].rstrip(":;")
        if len(summary) > 100:
            summary = summary[:97].rsplit(" ", 1)[0] + " …"
        lines.append(f'    """{summary.replace(chr(92), "/")}"""')
        lines.append("")
        used: set[str] = set()
        required = obj.required or set()
        for prop, subs in obj.props.items():
            py = _snake(prop)
            if keyword.iskeyword(py) or py in ("self",):
                py += "_"
            while py in used:
                py += "_"
            used.add(py)
            t = self.type_expr(subs, cls + _pascal(prop))
            rename = prop != py
            if prop in required:
                default = f" = field(name={json.dumps(prop)})" if rename else ""
                lines.append(f"    {py}: {t}{default}")
            else:
                self.uses_unset = True
                nullable = t.endswith(" | None")
                tt = t.removesuffix(" | None") + " | UnsetType" + (" | None" if nullable else "")
                tt = "Any" if t == "Any" else tt
                d = f"field(default=UNSET, name={json.dumps(prop)})" if rename else "UNSET"
                lines.append(f"    {py}: {tt} = {d}")
        self.classes.append("\n".join(_wrap(line) for line in lines))

    def module(self, schema_file: str, what: str) -> str:
        root_t = self.type_expr([self.schema], self.root)
        if root_t != self.root:
            raise SystemExit(f"{schema_file}: the root must be an object with properties (got {root_t})")
        head = [
            f'"""Typed model of the {what}: generated from schemas/{schema_file}',
            'by scripts/gen_models.py (do not edit; change the schema and run it again)."""',
            "",
            "from __future__ import annotations",
            "",
            "from typing import Any",
            "",
            "from msgspec import "
            + ("UNSET, Struct, UnsetType, field" if self.uses_unset else "Struct, field"),
            "",
            f'__all__ = ["{self.root}"]',
        ]
        body = "\n\n\n".join(reversed(self.classes))
        text = "\n".join(head) + "\n\n\n" + body + "\n"
        if "field(" not in body:
            text = text.replace(", field\n", "\n").replace("import Struct, field", "import Struct")
        if "Any" not in body:
            text = text.replace("from typing import Any\n\n", "")
        if any(len(line) > 110 for line in text.splitlines()):
            text = "# ruff: noqa: E501\n" + text
        return text


def _wrap(line: str, width: int = 110) -> str:
    if len(line) <= width:
        return line
    m = re.match(r"^(\s+)(\w+): (.*?)( = .*)?$", line)
    if not m:
        return line
    indent, name, t, default = m.group(1), m.group(2), m.group(3), m.group(4) or ""
    parts = t.split(" | ")
    inner = indent + "    "
    rows = [f"{indent}{name}: ("]
    cur = inner
    for i, p in enumerate(parts):
        piece = p if i == 0 else " | " + p
        if len(cur) + len(piece) > width and cur.strip():
            rows.append(cur.rstrip())
            cur = inner + piece.lstrip()
        else:
            cur += piece
    rows.append(cur)
    rows.append(f"{indent}){default}")
    return "\n".join(rows)


def relaxed(schema: Any) -> Any:
    """`#relaxed`: the schema with no member required (closed objects stay closed)."""
    if isinstance(schema, dict):
        return {k: relaxed(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [relaxed(v) for v in schema]
    return schema


def generate(schema_ref: str, root: str, what: str) -> str:
    schema_file, _, variant = schema_ref.partition("#")
    schema = json.loads((REPO / "schemas" / schema_file).read_text(encoding="utf-8"))
    if variant == "relaxed":
        schema = relaxed(schema)
    return Gen(schema, root).module(schema_file, what)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a committed module is out of date")
    args = ap.parse_args(argv)
    stale: list[str] = []
    for schema_file, module, root, what in TABLE:
        if not (REPO / "schemas" / schema_file.partition("#")[0]).exists():
            continue
        text = generate(schema_file, root, what)
        path = REPO / module
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(module)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {module}")
    if stale:
        print("out of date (run python scripts/gen_models.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
