"""Fuzzing past the signature: a document is changed structurally, RE-SIGNED with a key the trust
registry vouches for, and every command that reads that kind of document is run in this process.

The attacker here is a publisher with a valid key: every mutated document verifies, so the
commands' logic (not only the signature check) sees it. A run of one command ends in one of:
a verdict (exit 0/1/8…), a typed error (exit 2-9 with an `error` object), or a crash (exit 70,
an uncaught exception). Only the last is a finding.

`Kind` = one document kind: its seed (parsed JSON, from the shared vectors), how a changed copy
becomes a signed artifact on disk, and the commands that read it. `variants()` walks a document
(iteratively, bounded) and yields, for every value in it, the document with that value replaced by
one of every other JSON type and by `null` (the property test), and `mutations()` adds the
campaign's structural edits (empty, huge, duplicated, reordered, deleted)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from attest.keys import PrivateKey, generate_ed25519
from tests.harness import env

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW_TEXT = "2026-11-30T12:00:00Z"
PUBLISHER = "io.github.example-acx"
MAX_PATHS = 4000

Path_ = tuple[str | int, ...]


# -- running a command in-process -------------------------------------------------------------------

@dataclass(frozen=True)
class Ran:
    """One in-process `acx` run: exit code and what it printed."""

    argv: tuple[str, ...]
    code: int
    out: str

    @property
    def crashed(self) -> bool:
        return self.code == 70


def run(argv: list[str]) -> Ran:
    """`acx --json ARGV` in this process; exit 70 (InternalError) or an escaped exception is a crash."""
    from acxoci.cli.main import main
    from acxoci.cli.output import OPTS

    buf, err = io.StringIO(), io.StringIO()
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    code = 0
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            main(["--json", *argv])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:
        code, err = 70, io.StringIO(f"escaped {type(exc).__name__}: {exc}")
    finally:
        OPTS.json = OPTS.verbose = OPTS.quiet = False
    return Ran(tuple(argv), code, buf.getvalue() + err.getvalue())


# -- walking and changing documents -----------------------------------------------------------------

def paths(doc: Any, limit: int = MAX_PATHS) -> list[Path_]:
    """Every value's path in `doc`, root first (iterative, bounded)."""
    out: list[Path_] = []
    stack: list[tuple[Path_, Any]] = [((), doc)]
    while stack and len(out) < limit:
        path, node = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))
    return out


def get(doc: Any, path: Path_) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def replaced(doc: Any, path: Path_, value: Any) -> Any:
    """A deep copy of `doc` with the value at `path` replaced."""
    if not path:
        return copy.deepcopy(value)
    out = copy.deepcopy(doc)
    get(out, path[:-1])[path[-1]] = copy.deepcopy(value)
    return out


def json_type(v: Any) -> str:
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


#: One value of each JSON type (integer and non-integer numbers apart: models tell them apart).
EXAMPLES: dict[str, Any] = {
    "null": None, "boolean": True, "integer": -1, "number": 1.5, "string": "x", "array": [], "object": {},
}


def pointer(path: Path_) -> str:
    """RFC 6901 pointer of `path`."""
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in path)


def variants(doc: Any, limit: int = MAX_PATHS) -> Iterator[tuple[str, Any]]:
    """(pointer, changed document): every value replaced by one of every other JSON type and null."""
    for path in paths(doc, limit):
        have = json_type(get(doc, path))
        for name, value in EXAMPLES.items():
            if name != have:
                yield pointer(path), replaced(doc, path, value)


#: The campaign's structural edits of one value (besides retyping).
def edits(value: Any) -> list[Any]:
    out: list[Any] = [None, "", [], {}, 0, -1, 2**63, 1e308, True]
    if isinstance(value, str):
        out += [value * 200, value + "\u202e", "a" * 70_000]
    if isinstance(value, list):
        out += [value * 2, list(reversed(value)), value[:1] * 500, [value]]
    if isinstance(value, dict):
        out += [dict(reversed(list(value.items()))), {**value, "unknownField": 1}, [value], {"v": value}]
    if isinstance(value, int) and not isinstance(value, bool):
        out += [value + 1, -value, float(value), 10**30]
    return out


def mutations(doc: Any, limit: int = MAX_PATHS) -> Iterator[tuple[str, Any]]:
    """(description, changed document): retyping plus deletion and the structural edits."""
    yield from variants(doc, limit)
    for path in paths(doc, limit):
        if not path:
            continue
        cur = get(doc, path)
        parent = get(doc, path[:-1])
        out = copy.deepcopy(doc)
        p = get(out, path[:-1])
        if isinstance(parent, dict):
            del p[path[-1]]
        else:
            p.pop(path[-1])
        yield f"delete {pointer(path)}", out
        for v in edits(cur):
            yield f"edit {pointer(path)}", replaced(doc, path, v)


# -- the environment every kind shares ----------------------------------------------------------------

@dataclass
class Env:
    """Keys, a trust registry vouching for the signing key, a host descriptor and scratch space."""

    tmp: Path
    key: PrivateKey
    registry: Path
    host: Path
    policy: Path
    store: Path
    extras: dict[str, Any] = field(default_factory=dict)


def make_env(tmp: Path) -> Env:
    from tests.unit.test_install_support import (
        host_descriptor,
        registry_entry,
        trusting_policy,
        write_registry,
    )

    key = generate_ed25519()
    registry = write_registry(tmp / "trust.json", [registry_entry(key, PUBLISHER)])
    host = tmp / "host.json"
    host.write_text(json.dumps(host_descriptor()))
    policy = trusting_policy(tmp, registry)
    return Env(tmp, key, registry, host, policy, tmp / "store")


def scratch(e: Env) -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(dir=e.tmp)


# -- kinds -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """A document kind: its seed, how a changed copy becomes a signed artifact, who reads it."""

    name: str
    seed: Callable[[Env], Any]
    materialize: Callable[[Env, Any, Path], Path]
    commands: Callable[[Env, Path], list[list[str]]]
    #: JSON pointers (regex) a property test does not retype: the document's own signature block,
    #: whose every change is a tampered verdict already covered by the signature fuzz targets.
    skip: str = r"^/integrity(/|$)"


# cartridges: a ROM document is changed, the ROM re-indexed and re-signed with the test key

SAMPLE = "sample/sample.acx"
ROM_DOCS = {
    "package-spec": "rom/package-spec.json",
    "harness": "rom/manifest/harness-requirements.json",
    "policy": "rom/policy/loop-context-policy.json",
    "lance": "rom/schema/lance-memory.json",
    "skillset": "rom/cal/skillset.json",
}
META_DOCS = ("acx.embedding_engine", "acx.tags", "acx.authors")


def _sqlar_json(path: Path, name: str) -> Any:
    from acxoci.cartridge.reader import open_cartridge

    with open_cartridge(path) as cart:
        data = cart.sqlar_read(name)
    assert data is not None, name
    return json.loads(data)


def _base_cartridge(e: Env) -> Path:
    """sample.acx with a schema-valid harness and policy, signed by the test key (made once)."""
    p = e.tmp / "base.acx"
    if not p.exists():
        from tests.unit.test_install_support import make_cartridge

        make_cartridge(env.vectors(), p, e.key)
    return p


def _resign(e: Env, path: Path, edit: Callable[[sqlite3.Connection], None]) -> None:
    from acxoci.cartridge.sign import resign_file
    from acxoci.errors import AcxError

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        edit(conn)
    finally:
        conn.close()
    try:
        resign_file(path, e.key, signed_at="2026-11-29T12:00:00.000Z", refresh=True)
    except AcxError as exc:  # the signer itself refuses (e.g. two ROM sources with equal bytes)
        raise Unsignable(str(exc)) from exc


class Unsignable(Exception):
    """The mutation cannot be signed by our own signer (not an input the readers can see)."""


def _rom_kind(short: str, name: str) -> Kind:
    def seed(e: Env) -> Any:
        return _sqlar_json(_base_cartridge(e), name)

    def materialize(e: Env, doc: Any, d: Path) -> Path:
        p = d / "roster" / "c.acx"
        p.parent.mkdir()
        shutil.copyfile(_base_cartridge(e), p)
        data = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
        _resign(e, p, lambda c: c.execute("UPDATE sqlar SET data = ?, sz = ? WHERE name = ?",
                                          (data, len(data), name)))
        return p

    return Kind(f"cartridge.{short}", seed, materialize, cartridge_commands, skip=r"^$(?!x)")


def _meta_kind(key: str) -> Kind:
    def seed(e: Env) -> Any:
        from acxoci.cartridge.reader import open_cartridge

        with open_cartridge(_base_cartridge(e)) as cart:
            return json.loads(cart.meta()[key])

    def materialize(e: Env, doc: Any, d: Path) -> Path:
        p = d / "roster" / "c.acx"
        p.parent.mkdir()
        shutil.copyfile(_base_cartridge(e), p)
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        _resign(e, p, lambda c: c.execute("UPDATE cartridge SET value = ? WHERE key = ?", (text, key)))
        return p

    return Kind(f"cartridge.meta.{key.removeprefix('acx.')}", seed, materialize, cartridge_commands,
                skip=r"^$(?!x)")


def _row_kind(short: str, table: str) -> Kind:
    """The first ROM memory record or capability record (payload and its hash column re-derived)."""
    from attest.canonical import sha256_digest

    col, key_col, hash_col = ("payload", "id", "oid") if table == "memory" else ("json", "id", "content_hash")
    where = "zone = 'rom'" if table == "memory" else "1"

    def first(c: sqlite3.Connection) -> tuple[str, str]:
        sql = f"SELECT {key_col}, {col} FROM {table} WHERE {where} ORDER BY {key_col} LIMIT 1"
        row = c.execute(sql).fetchone()
        return row[0], row[1]

    def seed(e: Env) -> Any:
        with contextlib.closing(sqlite3.connect(_base_cartridge(e))) as c:
            return json.loads(first(c)[1])

    def materialize(e: Env, doc: Any, d: Path) -> Path:
        p = d / "roster" / "c.acx"
        p.parent.mkdir()
        shutil.copyfile(_base_cartridge(e), p)
        text = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

        def edit(c: sqlite3.Connection) -> None:
            rid, _ = first(c)
            data = text.encode("utf-8", "surrogatepass")
            c.execute(f"UPDATE {table} SET {col} = ?, {hash_col} = ? WHERE {key_col} = ?",
                      (text if table == "capabilities" else data, sha256_digest(data), rid))

        _resign(e, p, edit)
        return p

    return Kind(f"cartridge.{short}", seed, materialize, cartridge_commands, skip=r"^$(?!x)")


READY_WORKFLOW = {
    "schemaVersion": "acx.cal/1", "id": "staff-one", "start": "s",
    "participants": [{"alias": "a", "bind": "slot", "slot": {"role": "designer"}}],
    "nodes": [{"id": "s", "type": "event", "event": "start"},
              {"id": "t", "type": "task", "agent": "a", "action": "x",
               "completion": {"type": "guardrail", "description": "done"}},
              {"id": "e", "type": "event", "event": "end"}],
    "edges": [{"from": "s", "to": "t"}, {"from": "t", "to": "e"}],
}


def cartridge_commands(e: Env, p: Path) -> list[list[str]]:
    folder = p.parent
    wf = e.tmp / "ready.cal.json"
    if not wf.exists():
        wf.write_text(json.dumps(READY_WORKFLOW))
    reg = ["--trust-registry", str(e.registry)]
    return [
        ["cartridge", "verify", str(p), *reg],
        ["cartridge", "inspect", str(p)],
        ["cartridge", "spec", str(p)],
        ["cartridge", "skillset", str(p)],
        ["harness", "check", str(p)],
        ["harness", "negotiate", str(p), "--host", str(e.host), *reg],
        ["policy", "check", str(p)],
        ["ls", str(folder), *reg, "--now", NOW_TEXT],
        ["workflow", "ready", str(wf), "--cartridges", str(folder), *reg, "--now", NOW_TEXT],
        ["cal", str(wf), "--cartridges", str(folder), "--now", NOW_TEXT],
        *install_commands(e, p),
    ]


def install_commands(e: Env, p: Path) -> list[list[str]]:
    """Push the cartridge into a layout; install it under a policy trusting the key, then activate."""
    from tests.unit.test_install_support import push_cartridge

    layout = p.parent.parent / "layout"
    store = p.parent.parent / "store"
    try:
        push_cartridge(layout, p, "v1")
    except Exception:
        return []
    skills = p.parent.parent / "skills"
    return [
        ["install", f"oci-layout:{layout}:v1", "--policy", str(e.policy), "--store", str(store),
         "--host", str(e.host), "--name", "c"],
        ["activate", "c", "--store", str(store), "--skills-dir", str(skills)],
    ]


# workflows and agent graphs: the body is changed, then signed by the test key (no lint refusals:
# a hostile publisher signs with a tool of their own)

def _sign_body(kind_mod: str, doc: Any, e: Env) -> Any:
    from acxoci.workflow import signed

    if kind_mod == "graph":
        from acxoci.workflow.graph import KIND
    else:
        from acxoci.workflow.sign import KIND
    if not isinstance(doc, dict):
        return doc
    try:
        return signed.sign_document(KIND, doc, publisher_id=PUBLISHER, key=e.key, now=NOW - timedelta(days=1),
                                    refusals=lambda body: [])
    except Exception as exc:
        raise Unsignable(str(exc)) from exc


def _signed_json_kind(
    name: str, vector: str, mod: str, commands: Callable[[Env, Path], list[list[str]]]
) -> Kind:
    from acxoci.workflow.signed import unsigned_view

    def seed(e: Env) -> Any:
        return unsigned_view(json.loads((env.vectors() / vector).read_text(encoding="utf-8")))

    def materialize(e: Env, doc: Any, d: Path) -> Path:
        suffix = ".agent-graph.json" if mod == "graph" else ".cal.json"
        p = d / f"doc{suffix}"
        p.write_text(json.dumps(_sign_body(mod, doc, e), ensure_ascii=False), encoding="utf-8",
                     errors="surrogatepass")
        return p

    return Kind(name, seed, materialize, commands)


def workflow_commands(e: Env, p: Path) -> list[list[str]]:
    roster = _roster(e)
    reg = ["--trust-registry", str(e.registry)]
    return [
        ["workflow", "lint", str(p)],
        ["workflow", "lint", str(p), "--publish"],
        ["workflow", "digest", str(p)],
        ["workflow", "verify", str(p), *reg, "--now", NOW_TEXT],
        ["workflow", "inspect", str(p), *reg, "--now", NOW_TEXT],
        ["workflow", "ready", str(p), "--cartridges", str(roster), *reg, "--now", NOW_TEXT],
        ["cal", str(p), "--cartridges", str(roster), "--now", NOW_TEXT],
    ]


def graph_commands(e: Env, p: Path) -> list[list[str]]:
    reg = ["--trust-registry", str(e.registry)]
    return [
        ["graph", "lint", str(p)],
        ["graph", "lint", str(p), "--publish"],
        ["graph", "digest", str(p)],
        ["graph", "verify", str(p), *reg, "--now", NOW_TEXT],
        ["graph", "inspect", str(p), *reg, "--now", NOW_TEXT],
    ]


def _roster(e: Env) -> Path:
    d = e.tmp / "roster"
    if not d.exists():
        d.mkdir()
        shutil.copyfile(_base_cartridge(e), d / "base.acx")
    return d


# trust registries and host descriptors: unsigned inputs, read by every --trust-registry / --host

def _plain_kind(name: str, seed: Callable[[Env], Any], file: str,
                commands: Callable[[Env, Path], list[list[str]]]) -> Kind:
    def materialize(e: Env, doc: Any, d: Path) -> Path:
        p = d / file
        p.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8", errors="surrogatepass")
        return p

    return Kind(name, seed, materialize, commands, skip=r"^$(?!x)")


def trust_commands(e: Env, p: Path) -> list[list[str]]:
    cart = _base_cartridge(e)
    wf = e.tmp / "signed.cal.json"
    if not wf.exists():
        doc = json.loads((env.vectors() / "workflow" / "team.cal.json").read_text())
        wf.write_text(json.dumps(_sign_body("workflow", doc, e)))
    reg = ["--trust-registry", str(p)]
    return [
        ["cartridge", "verify", str(cart), *reg],
        ["workflow", "verify", str(wf), *reg, "--now", NOW_TEXT],
        ["ls", str(_roster(e)), *reg, "--now", NOW_TEXT],
        ["harness", "negotiate", str(cart), "--host", str(e.host), *reg],
    ]


def host_commands(e: Env, p: Path) -> list[list[str]]:
    return [["harness", "negotiate", str(_base_cartridge(e)), "--host", str(p),
             "--trust-registry", str(e.registry)]]


def _host_seed(e: Env) -> Any:
    return json.loads(e.host.read_text())


def _trust_seed(e: Env) -> Any:
    return json.loads(e.registry.read_text())


def kinds() -> list[Kind]:
    out = [_rom_kind(k, v) for k, v in ROM_DOCS.items()]
    out += [_meta_kind(k) for k in META_DOCS]
    out += [_row_kind("memory-record", "memory"), _row_kind("capability", "capabilities")]
    out += [
        _signed_json_kind("workflow.team", "workflow/team.cal.json", "workflow", workflow_commands),
        _signed_json_kind("workflow.research-council", "reference/research-council.cal.json", "workflow",
                          workflow_commands),
        _signed_json_kind("workflow.ship-a-feature", "reference/ship-a-feature.cal.json", "workflow",
                          workflow_commands),
        _signed_json_kind("graph.product-delivery", "graph/product-delivery.agent-graph.json", "graph",
                          graph_commands),
        _plain_kind("trust-registry", _trust_seed, "trust.json", trust_commands),
        _plain_kind("host-descriptor", _host_seed, "host.json", host_commands),
    ]
    return out


def check_one(e: Env, kind: Kind, doc: Any) -> list[Ran]:
    """Materialize `doc` as `kind` and run every reader; returns the crashing runs."""
    with scratch(e) as d:
        try:
            p = kind.materialize(e, doc, Path(d))
        except Unsignable:
            return []
        return [r for r in (run(argv) for argv in kind.commands(e, p)) if r.crashed]


def selected(kind: Kind, items: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    skip = re.compile(kind.skip)
    for where, doc in items:
        ptr = where.split(" ", 1)[-1]
        if not skip.search(ptr):
            yield where, doc


if __name__ == "__main__":  # exploration: python -m tests.fuzz.resign [kind-substring]
    import sys
    import time

    os.environ.setdefault("ACX_SHARED_DIR", "/work/shared")
    want = sys.argv[1] if len(sys.argv) > 1 else ""
    with tempfile.TemporaryDirectory() as t:
        e = make_env(Path(t))
        for k in kinds():
            if want not in k.name:
                continue
            t0 = time.monotonic()
            n = 0
            sigs: dict[str, int] = {}
            for where, doc in selected(k, variants(k.seed(e))):
                n += 1
                for r in check_one(e, k, doc):
                    m = re.search(r'"message": "([^"]*)"', r.out)
                    sig = f"{r.argv[0]} {r.argv[1]}: {(m.group(1) if m else r.out)[:120]}"
                    if sig not in sigs:
                        print(f"[{k.name}] {where}: {sig}", flush=True)
                    sigs[sig] = sigs.get(sig, 0) + 1
            print(f"== {k.name}: {n} variants, {sum(sigs.values())} crashes, {time.monotonic() - t0:.0f}s",
                  flush=True)
