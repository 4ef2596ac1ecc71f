"""The typed models and the JSON Schemas say the same thing (decision 0029).

The models are generated from the schemas (scripts/gen_models.py), and the committed modules must
be what the schemas generate. Beyond that, the claim is checked on documents: every seed document
of every kind, every variant of it with one value replaced by a value of each other JSON type or
deleted, and fuzzed documents. For each:

- a document the schema accepts decodes into its model (the model never refuses what the format
  allows), and
- the model decodes exactly the documents that the schema's *type projection* accepts: the schema
  with its value rules (patterns, bounds, enums and constants as values, `oneOf` exclusivity,
  `if/then`, `not`) dropped, which is what the models carry. The projection is computed here,
  independently of the generator.

`make test` checks a fixed-seed sample of the variants of each seed; `make fuzz` (FUZZ_EXHAUSTIVE=1)
checks every one."""

from __future__ import annotations

import copy
import json
import os
import random
from typing import Any

import jsonschema
import pytest

from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.jsonschemas import load_schema
from tests.fuzz import resign
from tests.harness.env import REPO
from tests.harness.seeddocs import MODELS, model_for, seed_documents

#: Variants checked per seed document (all of them with FUZZ_EXHAUSTIVE=1).
PER_SEED = None if os.environ.get("FUZZ_EXHAUSTIVE") else 120

VALUE_KEYWORDS = {
    "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "format", "not", "if", "then",
    "else", "contains", "propertyNames", "multipleOf", "default", "description", "title", "examples",
    "x-rule", "$id", "$schema",
}


def _json_type(v: Any) -> str:
    return resign.json_type(v).replace("integer", "integer")


def project(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema's type projection (see the module docstring)."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            node = defs[node["$ref"].removeprefix("#/$defs/")]
        return node

    def value_types(values: list[Any]) -> list[str]:
        out = {_json_type(v) for v in values}
        return sorted(out | ({"number"} if "integer" in out else set()))

    def proj(node: Any) -> Any:
        if isinstance(node, bool):
            return node
        node = _branches_as_members(node)
        node = {k: v for k, v in node.items() if k not in VALUE_KEYWORDS}
        if "$ref" in node:
            return {"$ref": node["$ref"]}
        if "const" in node:
            node.setdefault("type", value_types([node.pop("const")]))
        if "enum" in node:
            node.setdefault("type", value_types(node.pop("enum")))
        for key in ("oneOf", "anyOf"):
            if key in node:
                alts = [resolve(a) for a in node.pop(key)]
                base = dict(node)
                merged = [_with_base(base, a) for a in alts]
                objects = [m for m in merged if isinstance(m, dict) and _is_object(m)]
                if len(objects) == len(merged) and len(objects) > 1:
                    node = _merge(objects)
                else:
                    node = {"anyOf": [proj(m) for m in merged]}
                    return node
        if "allOf" in node:
            parts = [proj(resolve(p)) for p in node.pop("allOf")]
            node = _merge_all([node, *parts])
        if "properties" in node:
            node["properties"] = {k: proj(v) for k, v in node["properties"].items()}
        for k in ("items", "additionalProperties"):
            if isinstance(node.get(k), dict):
                node[k] = proj(node[k])
        if "prefixItems" in node:
            node["items"] = {"anyOf": [proj(p) for p in node.pop("prefixItems")]
                             + ([proj(node["items"])] if isinstance(node.get("items"), dict) else [])}
        return node

    out = proj(schema)
    out["$defs"] = {k: proj(v) for k, v in defs.items()}
    return out


def _branches_as_members(node: dict[str, Any]) -> dict[str, Any]:
    """`if/then/else` (a value condition) with the members its branches type: each becomes an
    optional member of the object, typed as any of the branches types it."""
    branches = [node[k] for k in ("then", "else") if isinstance(node.get(k), dict)]
    if not branches:
        return node
    props: dict[str, list[Any]] = {}
    for b in branches:
        for k, v in b.get("properties", {}).items():
            props.setdefault(k, []).append(v)
    out = dict(node)
    mine = dict(out.get("properties", {}))
    for k, alts in props.items():
        mine[k] = {"anyOf": ([mine[k]] if k in mine else []) + alts}
    out["properties"] = mine
    return out


def _with_base(base: dict[str, Any], alt: Any) -> Any:
    """A `oneOf`/`anyOf` alternative with the members its parent schema declares next to it."""
    if not isinstance(alt, dict):
        return alt
    out = {**base, **alt}
    for key, empty in (("properties", {}), ("required", [])):
        if key in base or key in alt:
            out[key] = {**base.get(key, empty), **alt.get(key, empty)} if key == "properties" else [
                *base.get(key, empty), *alt.get(key, empty)]
    return out


def _is_object(s: dict[str, Any]) -> bool:
    t = s.get("type")
    return t == "object" or (t is None and ("properties" in s or "required" in s))


def _merge(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """Variants of one object value as one: every member, required when every variant requires it."""
    props: dict[str, list[Any]] = {}
    for o in objects:
        for k, v in o.get("properties", {}).items():
            props.setdefault(k, []).append(v)
    required = set.intersection(*(set(o.get("required", [])) for o in objects))
    out: dict[str, Any] = {"type": "object", "properties": {k: v[0] if len(v) == 1 else {"anyOf": v}
                                                           for k, v in props.items()},
                           "required": sorted(required)}
    if all(o.get("additionalProperties") is False for o in objects):
        out["additionalProperties"] = False
    return out


def _merge_all(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        for k, v in p.items():
            if k == "properties":
                out.setdefault("properties", {}).update(v)
            elif k == "required":
                out["required"] = sorted(set(out.get("required", [])) | set(v))
            else:
                out[k] = v
    return out


def schema_of(ref: str) -> dict[str, Any]:
    """The schema a model row names: a file, or `file#relaxed` (no member required)."""
    name, _, variant = ref.partition("#")
    schema = load_schema(name)
    if variant == "relaxed":
        def relax(node: Any) -> Any:
            if isinstance(node, dict):
                return {k: relax(v) for k, v in node.items() if k != "required"}
            return [relax(v) for v in node] if isinstance(node, list) else node
        schema = relax(schema)
    return schema


def _validator(schema: dict[str, Any]) -> Any:
    def strict_integer(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    cls = jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", strict_integer),
    )
    return cls(schema)


def _decodes(doc: Any, model: type[Any]) -> bool:
    try:
        decode_as(doc, model, document="d")
    except DocumentTypeError:
        return False
    return True


def _changed(doc: Any, rng: random.Random) -> list[tuple[str, Any]]:
    """Each value retyped (every other JSON type, null) or deleted: all of them, or PER_SEED picked
    with `rng` (made only once picked)."""
    picks: list[tuple[resign.JsonPath, str]] = []
    for path in resign.paths(doc):
        have = resign.json_type(resign.get(doc, path))
        picks += [(path, name) for name in resign.EXAMPLES if name != have]
        if path:
            picks.append((path, "delete"))
    if PER_SEED is not None:
        picks = rng.sample(picks, min(PER_SEED, len(picks)))
    out = []
    for path, name in picks:
        if name != "delete":
            out.append((resign.pointer(path), resign.replaced(doc, path, resign.EXAMPLES[name])))
            continue
        d = copy.deepcopy(doc)
        del resign.get(d, path[:-1])[path[-1]]
        out.append((f"delete {resign.pointer(path)}", d))
    return out


def test_the_committed_models_are_what_the_schemas_generate() -> None:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("gen_models", REPO / "scripts" / "gen_models.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_models"] = gen
    try:
        spec.loader.exec_module(gen)
    finally:
        del sys.modules["gen_models"]
    assert gen.main(["--check"]) == 0
    generated = {row[0] for row in gen.TABLE}
    assert generated <= set(MODELS), "a generated model without a seed document kind"


@pytest.mark.parametrize("schema_file", sorted(MODELS))
def test_model_and_schema_agree_on_every_seed_and_every_retyped_value(schema_file: str) -> None:
    schema = schema_of(schema_file)
    full, typed = _validator(schema), _validator(project(schema))
    model = model_for(schema_file)
    seeds = seed_documents()[schema_file]
    assert seeds, f"no seed document for {schema_file}"
    checked = 0
    disagreements: list[str] = []
    valid_seeds = [(label, d) for label, d in seeds if full.is_valid(d)]
    assert valid_seeds, f"no seed of {schema_file} is valid against it: {[lbl for lbl, _ in seeds]}"
    rng = random.Random(29)
    for label, seed in seeds:
        variants = [("seed", seed)]
        if full.is_valid(seed):
            variants += _changed(seed, rng)
        for where, doc in variants:
            checked += 1
            dec = _decodes(doc, model)
            if full.is_valid(doc) and not dec:
                disagreements.append(f"{label} {where}: the schema accepts it, the model refuses")
            elif typed.is_valid(doc) != dec:
                disagreements.append(f"{label} {where}: types say {typed.is_valid(doc)}, model {dec}")
    assert not disagreements, f"{len(disagreements)} of {checked}:\n" + "\n".join(disagreements[:20])


@pytest.mark.parametrize("schema_file", sorted(MODELS))
def test_model_and_schema_agree_on_fuzzed_documents(schema_file: str) -> None:
    """Fixed-seed structural edits (several at once, nested values, every type) of each seed."""
    schema = schema_of(schema_file)
    full, typed = _validator(schema), _validator(project(schema))
    model = model_for(schema_file)
    rng = random.Random(29)
    bad: list[str] = []
    for label, seed in seed_documents()[schema_file]:
        n = len(resign.paths(seed))
        picks = [(rng.randrange(n), rng.randrange(64)) for _ in range(PER_SEED or 40 * n)]
        for where, doc in (resign.mutation_at(seed, p, o) for p, o in picks):
            dec = _decodes(doc, model)
            if (full.is_valid(doc) and not dec) or typed.is_valid(doc) != dec:
                bad.append(f"{label} {where}: schema {full.is_valid(doc)}, types {typed.is_valid(doc)}, "
                           f"model {dec}: {json.dumps(doc)[:200]}")
    assert not bad, "\n".join(bad[:20])
