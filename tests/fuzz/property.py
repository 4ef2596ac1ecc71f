"""The property of issue 29's "Done when": every document kind in every vector, each value replaced
in turn by a value of every other JSON type and by `null`, re-signed, and every command that reads
the kind run in-process. Never exit 70; where the schema refuses the change, a command that reports
the document's findings names the changed value (its JSON pointer or `$` path, or its parent's);
where the schema allows it, acceptance is fine.

`check()` runs one variant; `cases()` lists them all (the exhaustive run in `make fuzz`);
tests/fuzz/test_resign_property.py runs a fixed-seed slice in `make test`."""

from __future__ import annotations

import functools
import json
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.fuzz import resign

#: The schema each kind is checked against (None: a JSON value inside another document).
SCHEMAS: dict[str, str | None] = {
    "cartridge.package-spec": "acx.package-spec-1.schema.json",
    "cartridge.harness": "acx.harness.v1.schema.json",
    "cartridge.policy": "acx.loop-context-policy-1.1.schema.json",
    "cartridge.lance": "acx.lance-memory-1.schema.json",
    "cartridge.skillset": "acx.cal-skillset-1.schema.json",
    "cartridge.memory-record": "acx.memory-record-1.schema.json",
    "cartridge.capability": "acx.capability-1.schema.json",
    "cartridge.meta.embedding_engine": None,
    "cartridge.meta.tags": None,
    "cartridge.meta.authors": None,
    "workflow": "acx.cal-1.schema.json",
    "agent-graph": "acx.agent-graph-1.schema.json",
    "trust-registry": "acx.trust-registry-1.schema.json",
    "host-descriptor": "acx.host.v1.schema.json",
    "level-credential": "acx.level-credential-1.schema.json",
    "status-list": "acx.status-list-1.schema.json",
    "exchange-status": "acx.exchange-status-1.schema.json",
    "exchange-index": "acx.exchange-index-1.schema.json",
}


@dataclass(frozen=True)
class Case:
    """One variant: the kind, the seed it came from, the pointer changed and the document."""

    kind: str
    label: str
    where: str
    doc: Any
    seed_valid: bool


@functools.cache
def _validator(schema: str) -> Any:
    from acxoci.jsonschemas import load_schema, strict_validator

    return strict_validator(load_schema(schema))


def valid(kind: str, doc: Any) -> bool | None:
    """Whether the kind's schema accepts `doc` (None: the kind has no schema of its own)."""
    schema = SCHEMAS[kind]
    if schema is None:
        return None
    if kind == "cartridge.policy" and isinstance(doc, dict) and doc.get("schemaVersion") == \
            "acx.loop-context-policy/1":
        schema = "acx.loop-context-policy-1.schema.json"
    return bool(_validator(schema).is_valid(doc))


def cases(e: resign.Env, kinds: tuple[str, ...] = ()) -> Iterator[Case]:
    """Every variant of every seed of every kind (or of `kinds`), in a deterministic order."""
    for kind in resign.kinds():
        if kinds and kind.name not in kinds:
            continue
        for label, seed in kind.seeds(e):
            ok = bool(valid(kind.name, seed))
            for where, doc in resign.selected(kind, resign.variants(seed)):
                yield Case(kind.name, label, where, doc, ok)


def sample(e: resign.Env, seed: int, per_kind: int, kinds: tuple[str, ...] = ()) -> list[Case]:
    """A fixed-seed slice: `per_kind` variants of each kind (or of `kinds`), picked by index and
    made on demand (the variants of a large document are never all held in memory)."""
    rng = random.Random(seed)
    out: list[Case] = []
    for kind in resign.kinds():
        if kinds and kind.name not in kinds:
            continue
        seeds = kind.seeds(e)
        skip = re.compile(kind.skip)
        for _ in range(per_kind):
            label, doc = seeds[rng.randrange(len(seeds))]
            all_paths = [p for p in resign.paths(doc) if not skip.search(resign.pointer(p))]
            path = all_paths[rng.randrange(len(all_paths))]
            have = resign.json_type(resign.get(doc, path))
            name = rng.choice([n for n in resign.EXAMPLES if n != have])
            out.append(Case(kind.name, label, resign.pointer(path),
                            resign.replaced(doc, path, resign.EXAMPLES[name]), bool(valid(kind.name, doc))))
    return out


def _names(out: str, where: str) -> bool:
    """`out` names the value at pointer `where` (or its parent): as a pointer or a `$` path."""
    text = out.replace('\\"', '"')
    parts: list[str | int] = []
    for raw in where.split("/")[1:]:
        seg = raw.replace("~1", "/").replace("~0", "~")
        parts.append(int(seg) if seg.isdigit() else seg)
    path = tuple(parts)
    def forms(p: resign.JsonPath) -> set[str]:
        plain = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in p)
        out = {resign.dollar_path(p), plain} | ({resign.pointer(p)} if p else set())
        if len(p) >= 2:  # `keys[0].status`, as messages that name a member inside the document say
            out.add(plain.removeprefix("$."))
        return out

    candidates = forms(path) | (forms(path[:-1]) if len(path) > 1 else set())
    if not path:  # the whole document: `$`, or the root pointer as a DocumentTypeError prints it
        candidates.add(": /: ")
    return any(c in text for c in candidates if c)


@dataclass
class Outcome:
    """What one variant did: crashes (findings), a missing pointer (finding), runs and time."""

    crashes: list[str]
    unnamed: list[str]
    runs: int
    seconds: float


def check(e: resign.Env, c: Case, *, kind: resign.Kind | None = None) -> Outcome:
    """Run every reader on one variant; the findings it produced."""
    kind = kind or resign.BY_KIND[c.kind]
    t0 = time.monotonic()
    results = resign.run_readers(e, kind, c.label, c.doc)
    out = Outcome([], [], 0, 0.0)
    if results is None:  # our own signer refuses to sign it: no reader can ever see it signed
        out.seconds = time.monotonic() - t0
        return out
    out.runs = len(results)
    for reader, ran in results:
        if ran.crashed:
            out.crashes.append(f"{c.kind} [{c.label}] {c.where}: {reader.name}: {ran.signature()}")
    if c.seed_valid and valid(c.kind, c.doc) is False:
        validating = [(r, ran) for r, ran in results if r.validates]
        if validating and not any(_names(ran.out, c.where) for _, ran in validating):
            shown = "; ".join(f"{r.name} exit {ran.code}" for r, ran in validating)
            out.unnamed.append(f"{c.kind} [{c.label}] {c.where} = {json.dumps(_at(c))[:60]}: "
                               f"the schema refuses it but no reader names it ({shown})")
    out.seconds = time.monotonic() - t0
    return out


def _at(c: Case) -> Any:
    node = c.doc
    for raw in c.where.split("/")[1:]:
        seg = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(seg)] if isinstance(node, list) else node[seg]
    return node
