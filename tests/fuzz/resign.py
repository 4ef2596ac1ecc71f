"""Fuzzing past the signature: a document is changed structurally, RE-SIGNED with a key the trust
registry vouches for, and every command that reads that kind of document is run in this process.

The attacker here is a publisher with a valid key: every changed document verifies, so the
commands' logic (not only the signature check) sees it. One run of one command ends in a verdict
(exit 0, 1 or 8), a typed error (exit 2-9 with an `error` object) or a crash (exit 70, or an
exception escaping `main`). Only a crash is a finding.

A `Kind` is one document kind with its seeds (every vector that carries one, deduplicated), how
a changed copy becomes a signed artifact on disk, and the `Reader`s (CLI commands) that read it.
`variants()` yields, for every value of a document, the document with that value replaced by a
value of each other JSON type and by `null` (the property test); `mutations()` adds deletion and
the campaign's edits (empty, huge, duplicated, reordered, unknown members)."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey, generate_ed25519
from tests.harness import env

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW_TEXT = "2026-11-30T12:00:00Z"
SIGNED_AT = "2026-11-29T12:00:00.000Z"
PUBLISHER = "io.github.example-acx"
ISSUER = "did:web:verifier.example"
MAX_PATHS = 4000

JsonPath = tuple[str | int, ...]


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

    def typed_error(self) -> bool:
        """The command answered with one typed error object (`{"error": {"kind": …}}`)."""
        try:
            doc = json.loads(self.out)
        except ValueError:
            return False
        return isinstance(doc, dict) and set(doc) == {"error"} and isinstance(doc["error"], dict)

    def signature(self) -> str:
        """What makes two crashes the same: the command and the error message without paths."""
        m = re.search(r'"message": "([^"]*)"', self.out)
        text = m.group(1) if m else self.out
        return f"{' '.join(self.argv[:2])}: " + re.sub(r"/tmp/[^\s'\"]*", "<tmp>", text)[:160]


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

def paths(doc: Any, limit: int = MAX_PATHS) -> list[JsonPath]:
    """Every value's path in `doc`, root first (iterative, bounded)."""
    out: list[JsonPath] = []
    stack: list[tuple[JsonPath, Any]] = [((), doc)]
    while stack and len(out) < limit:
        path, node = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))
    return out


def get(doc: Any, path: JsonPath) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def replaced(doc: Any, path: JsonPath, value: Any) -> Any:
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


#: One value of each JSON type (integer and fractional numbers apart: models tell them apart).
EXAMPLES: dict[str, Any] = {
    "null": None, "boolean": True, "integer": -1, "number": 1.5, "string": "x", "array": [], "object": {},
}


def pointer(path: JsonPath) -> str:
    """RFC 6901 pointer of `path`."""
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in path)


def dollar_path(path: JsonPath) -> str:
    """The `$.a[0].b` form the rule checks print."""
    out = "$"
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if k.isidentifier() else f"[{json.dumps(k)}]")
    return out


def variants(doc: Any, limit: int = MAX_PATHS) -> Iterator[tuple[str, Any]]:
    """(pointer, changed document): every value replaced by one of every other JSON type and null."""
    for path in paths(doc, limit):
        have = json_type(get(doc, path))
        for name, value in EXAMPLES.items():
            if name != have:
                yield pointer(path), replaced(doc, path, value)


def edits(value: Any) -> list[Any]:
    """The campaign's structural edits of one value (besides retyping)."""
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


def operations(value: Any) -> list[tuple[str, Any]]:
    """The changes the campaign makes to one value: (name, replacement), `delete` without one."""
    have = json_type(value)
    ops: list[tuple[str, Any]] = [(f"retype {n}", v) for n, v in EXAMPLES.items() if n != have]
    ops.append(("delete", None))
    ops += [("edit", v) for v in edits(value)]
    return ops


def mutation_at(doc: Any, path_index: int, op_index: int, limit: int = MAX_PATHS) -> tuple[str, Any]:
    """One change of `doc`, picked by index (both taken modulo what exists): made on demand, so a
    campaign never holds every variant of a large document in memory."""
    all_paths = paths(doc, limit)
    path = all_paths[path_index % len(all_paths)]
    value = get(doc, path)
    ops = operations(value)
    name, new = ops[op_index % len(ops)]
    if name == "delete":
        if not path:
            return f"retype null {pointer(path)}", None
        out = copy.deepcopy(doc)
        parent = get(out, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        return f"delete {pointer(path)}", out
    return f"{name} {pointer(path)}", replaced(doc, path, new)


def mutations(doc: Any, limit: int = MAX_PATHS) -> Iterator[tuple[str, Any]]:
    """(description, changed document): retyping, deletion and the structural edits."""
    yield from variants(doc, limit)
    for path in paths(doc, limit):
        if not path:
            continue
        out = copy.deepcopy(doc)
        parent = get(out, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        yield f"delete {pointer(path)}", out
        for v in edits(get(doc, path)):
            yield f"edit {pointer(path)}", replaced(doc, path, v)


# -- the environment every kind shares ----------------------------------------------------------------

#: The vectors' cartridges and their publishers (each gets its own key in the trust registry).
CARTRIDGES = {
    "sample.acx": ("sample/sample.acx", PUBLISHER),
    "ada-ridge.acx": ("reference/ada-ridge.acx", "io.github.ridgeworks"),
    "rex-calder.acx": ("reference/rex-calder.acx", "io.github.calder-sec"),
}


@dataclass
class Env:
    """Keys, a trust registry vouching for them, a host, a policy, the vectors' cartridges re-signed
    by those keys, a level verifier and scratch space (made once per process, at run time)."""

    tmp: Path
    keys: dict[str, PrivateKey]
    registry: Path
    host: Path
    policy: Path
    cartridges: dict[str, Path]
    level: Any = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> PrivateKey:
        return self.keys[PUBLISHER]


def _resign_file(
    path: Path, key: PrivateKey, edit: Callable[[sqlite3.Connection], object] | None = None
) -> None:
    """Apply `edit`, re-index the ROM objects from their sources and sign it with `key` (as a
    publisher's own tool would: no lint, no refusal of what it signs)."""
    from acxoci.cartridge.sign import refresh_rom_objects, sign_connection
    from acxoci.errors import AcxError

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        if edit is not None:
            try:
                edit(conn)
            except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 text, so no document
                raise Unsignable(str(exc)) from exc
        refresh_rom_objects(conn)
        sign_connection(conn, key, signed_at=SIGNED_AT)
        conn.execute("COMMIT")
    except AcxError as exc:  # our signer refuses (two ROM sources with equal bytes, no cartridge id)
        raise Unsignable(str(exc)) from exc
    finally:
        conn.close()


class Unsignable(Exception):
    """The change cannot be signed by our own signer (so no reader ever sees it signed)."""


@functools.lru_cache(maxsize=1)
def make_env() -> Env:
    """The shared environment (its folder lives as long as the process)."""
    import atexit

    import yaml

    from tests.harness.installs import host_descriptor, issue_level, registry_entry, write_registry

    tmp = Path(tempfile.mkdtemp(prefix="acx-resign-"))
    atexit.register(shutil.rmtree, tmp, True)
    keys = {pub: generate_ed25519() for _, pub in CARTRIDGES.values()}
    registry = write_registry(tmp / "trust.json", [registry_entry(k, p) for p, k in keys.items()])
    host = tmp / "host.json"
    host.write_text(json.dumps({**host_descriptor(), "binaries": ["git", "node", "python3"]}))
    policy = tmp / "policy.yaml"
    policy.write_text(yaml.safe_dump({
        "schemaVersion": "acx.verification-policy/1",
        "publishers": [{"id": p, "trustRegistries": [str(registry)]} for p in keys],
    }))
    cartridges: dict[str, Path] = {}
    for name, (vector, pub) in CARTRIDGES.items():
        dest = tmp / "cartridges" / name
        dest.parent.mkdir(exist_ok=True)
        shutil.copyfile(env.vectors() / vector, dest)
        _resign_file(dest, keys[pub])
        cartridges[name] = dest
    e = Env(tmp, keys, registry, host, policy, cartridges)
    (tmp / "level").mkdir()
    e.level = issue_level(tmp / "level", cartridges["sample.acx"], now=NOW)
    return e


# -- readers -----------------------------------------------------------------------------------------

Argv = Callable[[Env, Path], list[str]]


@dataclass(frozen=True)
class Reader:
    """A command that reads the kind; `validates` when it reports the document's own findings
    (then a change the schema refuses must be named by its path in what it prints)."""

    name: str
    argv: Argv
    validates: bool = False


def _reg(e: Env) -> list[str]:
    return ["--trust-registry", str(e.registry)]


READY_WORKFLOW = {
    "schemaVersion": "acx.cal/1", "id": "staff-one", "start": "s",
    "participants": [{"alias": "a", "bind": "slot", "slot": {"role": "designer"}}],
    "nodes": [{"id": "s", "type": "event", "event": "start"},
              {"id": "t", "type": "task", "agent": "a", "action": "x",
               "completion": {"type": "guardrail", "kind": "done"}},
              {"id": "e", "type": "event", "event": "end"}],
    "edges": [{"from": "s", "to": "t"}, {"from": "t", "to": "e"}],
}


def _ready_workflow(e: Env) -> Path:
    wf = e.tmp / "ready.cal.json"
    if not wf.exists():
        wf.write_text(json.dumps(READY_WORKFLOW))
    return wf


def _install(e: Env, p: Path, activate: bool) -> list[str]:
    """Push the cartridge into a layout next to it and install it (then, with `activate`, activate
    its skills: the two commands share one store, so `activate` runs the install first)."""
    from tests.harness.installs import push_cartridge

    layout, store = p.parent.parent / "layout", p.parent.parent / "store"
    if not layout.exists():
        try:
            push_cartridge(layout, p, "v1")
        except Exception:
            return ["cartridge", "verify", str(p)]
    install = ["install", f"oci-layout:{layout}:v1", "--policy", str(e.policy), "--store", str(store),
               "--host", str(e.host), "--name", "c"]
    if not activate:
        return install
    run(install)
    return ["activate", "c", "--store", str(store), "--skills-dir", str(p.parent.parent / "skills")]


VERIFY = Reader("cartridge verify", lambda e, p: ["cartridge", "verify", str(p), *_reg(e)])
INSPECT = Reader("cartridge inspect", lambda e, p: ["cartridge", "inspect", str(p)])
SPEC = Reader("cartridge spec", lambda e, p: ["cartridge", "spec", str(p)], validates=True)
SKILLSET = Reader("cartridge skillset", lambda e, p: ["cartridge", "skillset", str(p)])
HARNESS_CHECK = Reader("harness lint", lambda e, p: ["harness", "lint", str(p)], validates=True)
PREFLIGHT = Reader("check", lambda e, p: ["check", str(p), "--host", str(e.host), *_reg(e)])
PREFLIGHT_ALL = Reader("check --all-tools", lambda e, p: ["check", str(p), "--all-tools", *_reg(e)])
NEGOTIATE = Reader("harness negotiate",
                   lambda e, p: ["harness", "negotiate", str(p), "--host", str(e.host), *_reg(e)])
POLICY_CHECK = Reader("policy check", lambda e, p: ["policy", "check", str(p)], validates=True)
LS = Reader("ls", lambda e, p: ["ls", str(p.parent), *_reg(e), "--now", NOW_TEXT])
READY = Reader("workflow ready", lambda e, p: ["workflow", "ready", str(_ready_workflow(e)), "--cartridges",
                                               str(p.parent), *_reg(e), "--now", NOW_TEXT])
CAL = Reader("cal", lambda e, p: ["cal", str(_ready_workflow(e)), "--cartridges", str(p.parent),
                                  "--now", NOW_TEXT])
INSTALL = Reader("install", lambda e, p: _install(e, p, activate=False))
ACTIVATE = Reader("activate", lambda e, p: _install(e, p, activate=True))


# -- kinds -----------------------------------------------------------------------------------------

Seeds = Callable[[Env], list[tuple[str, Any]]]
Materialize = Callable[[Env, str, Any, Path], Path]


@dataclass(frozen=True)
class Kind:
    """A document kind: its seeds (label, document), how a changed copy becomes a signed artifact
    on disk, and the commands that read it."""

    name: str
    seeds: Seeds
    materialize: Materialize
    readers: tuple[Reader, ...]
    #: A pointer (regex) not retyped by the property test: a signature block, whose every change
    #: is a tampered verdict (the signature fuzz targets cover those bytes).
    skip: str = r"(?!)"


def _dedup(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """One seed per distinct document (the vectors repeat some)."""
    seen: set[str] = set()
    out = []
    for label, doc in items:
        key = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
        if key not in seen:
            seen.add(key)
            out.append((label, doc))
    return out


def _cartridge_copy(e: Env, label: str, d: Path) -> Path:
    p = d / "roster" / "c.acx"
    p.parent.mkdir(parents=True)
    shutil.copyfile(e.cartridges[label], p)
    return p


def _key_for(e: Env, label: str) -> PrivateKey:
    return e.keys[CARTRIDGES[label][1]]


def _dumps(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False)


def _rom_kind(short: str, name: str, readers: tuple[Reader, ...]) -> Kind:
    def seeds(e: Env) -> list[tuple[str, Any]]:
        from acxoci.cartridge.reader import open_cartridge

        out = []
        for label, path in e.cartridges.items():
            with open_cartridge(path) as cart:
                data = cart.sqlar_read(name)
            if data is not None:
                out.append((label, json.loads(data)))
        return _dedup(out)

    def materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
        p = _cartridge_copy(e, label, d)
        data = _dumps(doc).encode("utf-8", "surrogatepass")
        _resign_file(p, _key_for(e, label), lambda c: c.execute(
            "UPDATE sqlar SET data = ?, sz = ? WHERE name = ?", (data, len(data), name)))
        return p

    return Kind(f"cartridge.{short}", seeds, materialize, readers)


def _meta_kind(key: str, readers: tuple[Reader, ...]) -> Kind:
    def seeds(e: Env) -> list[tuple[str, Any]]:
        out = []
        for label, path in e.cartridges.items():
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as c:
                row = c.execute("SELECT value FROM cartridge WHERE key = ?", (key,)).fetchone()
            if row is not None:
                out.append((label, json.loads(row[0])))
        return _dedup(out)

    def materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
        p = _cartridge_copy(e, label, d)
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        _resign_file(p, _key_for(e, label), lambda c: c.execute(
            "UPDATE cartridge SET value = ? WHERE key = ?", (text, key)))
        return p

    return Kind(f"cartridge.meta.{key.removeprefix('acx.')}", seeds, materialize, readers)


def _row_kind(short: str, table: str, readers: tuple[Reader, ...]) -> Kind:
    """The first (ROM) memory record or capability record; its hash column is re-derived."""
    from acxoci.attest.canonical import sha256_digest

    col, hash_col = ("payload", "oid") if table == "memory" else ("json", "content_hash")
    where = "zone = 'rom'" if table == "memory" else "1"

    def first(c: sqlite3.Connection) -> tuple[str, str] | None:
        row = c.execute(f"SELECT id, {col} FROM {table} WHERE {where} ORDER BY id LIMIT 1").fetchone()
        return None if row is None else (row[0], row[1])

    def seeds(e: Env) -> list[tuple[str, Any]]:
        out = []
        for label, path in e.cartridges.items():
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as c:
                row = first(c)
            if row is not None:
                out.append((label, json.loads(row[1])))
        return _dedup(out)

    def materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
        p = _cartridge_copy(e, label, d)
        text = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        data = text.encode("utf-8", "surrogatepass")

        def edit(c: sqlite3.Connection) -> None:
            row = first(c)
            assert row is not None
            c.execute(f"UPDATE {table} SET {col} = ?, {hash_col} = ? WHERE id = ?",
                      (text, sha256_digest(data), row[0]))

        _resign_file(p, _key_for(e, label), edit)
        return p

    return Kind(f"cartridge.{short}", seeds, materialize, readers)


# workflows and agent graphs: the body is changed, then signed by the test key (no lint refusals:
# a hostile publisher signs with a tool of their own)

def _sign_body(kind: str, doc: Any, e: Env) -> Any:
    from acxoci.workflow import signed

    if kind == "graph":
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


def _signed_json_kind(name: str, vectors: list[str], kind: str, readers: tuple[Reader, ...]) -> Kind:
    def seeds(e: Env) -> list[tuple[str, Any]]:
        from acxoci.workflow.signed import unsigned_view

        return _dedup([(v, unsigned_view(json.loads((env.vectors() / v).read_text(encoding="utf-8"))))
                       for v in vectors])

    def materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
        p = d / ("doc.agent-graph.json" if kind == "graph" else "doc.cal.json")
        p.write_text(_dumps(_sign_body(kind, doc, e)), encoding="utf-8", errors="surrogatepass")
        return p

    return Kind(name, seeds, materialize, readers)


def _roster(e: Env) -> Path:
    d = e.tmp / "roster"
    if not d.exists():
        d.mkdir()
        shutil.copyfile(e.cartridges["sample.acx"], d / "sample.acx")
    return d


WORKFLOW_READERS = (
    Reader("workflow lint", lambda e, p: ["workflow", "lint", str(p)], validates=True),
    Reader("workflow lint --publish", lambda e, p: ["workflow", "lint", str(p), "--publish"], validates=True),
    Reader("workflow digest", lambda e, p: ["workflow", "digest", str(p)]),
    Reader("workflow verify", lambda e, p: ["workflow", "verify", str(p), *_reg(e), "--now", NOW_TEXT]),
    Reader("workflow inspect", lambda e, p: ["workflow", "inspect", str(p), *_reg(e)]),
    Reader("workflow ready", lambda e, p: ["workflow", "ready", str(p), "--cartridges", str(_roster(e)),
                                           *_reg(e), "--now", NOW_TEXT]),
    Reader("cal", lambda e, p: ["cal", str(p), "--cartridges", str(_roster(e)), "--now", NOW_TEXT]),
)
GRAPH_READERS = (
    Reader("graph lint", lambda e, p: ["graph", "lint", str(p)], validates=True),
    Reader("graph lint --publish", lambda e, p: ["graph", "lint", str(p), "--publish"], validates=True),
    Reader("graph digest", lambda e, p: ["graph", "digest", str(p)]),
    Reader("graph verify", lambda e, p: ["graph", "verify", str(p), *_reg(e), "--now", NOW_TEXT]),
    Reader("graph inspect", lambda e, p: ["graph", "inspect", str(p), *_reg(e), "--now", NOW_TEXT]),
)


# unsigned inputs: trust registries and host descriptors (read by every --trust-registry / --host)

def _plain_kind(name: str, seeds: Seeds, file: str, readers: tuple[Reader, ...]) -> Kind:
    def materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
        p = d / file
        p.write_text(_dumps(doc), encoding="utf-8", errors="surrogatepass")
        return p

    return Kind(name, seeds, materialize, readers)


def _signed_workflow(e: Env) -> Path:
    wf = e.tmp / "signed.cal.json"
    if not wf.exists():
        doc = json.loads((env.vectors() / "workflow" / "team.cal.json").read_text())
        wf.write_text(json.dumps(_sign_body("workflow", doc, e)))
    return wf


TRUST_READERS = (
    Reader("cartridge verify", lambda e, p: ["cartridge", "verify", str(e.cartridges["sample.acx"]),
                                             "--trust-registry", str(p)], validates=True),
    Reader("workflow verify", lambda e, p: ["workflow", "verify", str(_signed_workflow(e)),
                                            "--trust-registry", str(p), "--now", NOW_TEXT]),
    Reader("ls", lambda e, p: ["ls", str(_roster(e)), "--trust-registry", str(p), "--now", NOW_TEXT]),
    Reader("harness negotiate", lambda e, p: ["harness", "negotiate", str(e.cartridges["sample.acx"]),
                                              "--host", str(e.host), "--trust-registry", str(p)]),
    Reader("level verify --issuers", lambda e, p: _level_verify(e, e.level.list_path, issuers=p)),
)
HOST_READERS = (
    Reader("harness negotiate", lambda e, p: ["harness", "negotiate", str(e.cartridges["sample.acx"]),
                                              "--host", str(p), *_reg(e)], validates=True),
    Reader("check", lambda e, p: ["check", str(e.cartridges["sample.acx"]), "--host", str(p), *_reg(e)],
           validates=True),
)


# level credentials and status lists: re-signed by the test issuer key

def _level_verify(e: Env, status_list: Path, *, cred: Path | None = None, issuers: Path | None = None
                  ) -> list[str]:
    if cred is None:
        cred = e.tmp / "level" / "cred.json"
        if not cred.exists():
            cred.write_text(json.dumps(e.level.credential))
    return ["level", "verify", str(cred), "--cartridge", str(e.cartridges["sample.acx"]),
            "--issuers", str(issuers or e.level.registry), "--status-list", str(status_list),
            *_reg(e), "--now", NOW_TEXT]


def _vc_resign(e: Env, doc: Any) -> Any:
    from acxoci.attest import vc

    if not isinstance(doc, dict):
        return doc
    body = {k: v for k, v in doc.items() if k != "proof"}
    try:
        return vc.sign(body, e.level.key, verification_method=f"{ISSUER}#key-1",
                       created=(NOW - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    except Exception as exc:
        raise Unsignable(str(exc)) from exc


def _credential_seeds(e: Env) -> list[tuple[str, Any]]:
    vec = env.vectors() / "level"
    return _dedup([("issued", e.level.credential),
                   *((n, json.loads((vec / n).read_text())) for n in ("vc-min.json",
                                                                     "level-credential.example.json"))])


def _credential_materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
    p = d / "cred.json"
    p.write_text(_dumps(_vc_resign(e, doc)), encoding="utf-8", errors="surrogatepass")
    return p


def _status_materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
    p = d / "status-list.json"
    p.write_text(_dumps(_vc_resign(e, doc)), encoding="utf-8", errors="surrogatepass")
    return p


CREDENTIAL_READERS = (
    Reader("level verify", lambda e, p: _level_verify(e, e.level.list_path, cred=p), validates=True),
)
STATUS_READERS = (
    Reader("level verify --status-list", lambda e, p: _level_verify(e, p)),
    Reader("status-list show", lambda e, p: ["status-list", "show", str(p), "--index", "3", "--issuers",
                                             str(e.level.registry), "--now", NOW_TEXT]),
)


# exchange folders: the ledger and the committed index

def _exchange(e: Env) -> Path:
    root = e.tmp / "exchange" / "registry"
    if not root.exists():
        from acxoci.exchange.index import derive, index_bytes
        from tests.harness.exchanges import make_exchange

        ex = make_exchange(e.tmp / "exchange", e.key, env.vectors(), reference_cartridges=False)
        (ex.root / "index.json").write_bytes(index_bytes(derive(ex.root, now=NOW).index))
    return root


def _exchange_kind(name: str, file: str) -> Kind:
    def seeds(e: Env) -> list[tuple[str, Any]]:
        return [(file, json.loads((_exchange(e) / file).read_text()))]

    def materialize(e: Env, label: str, doc: Any, d: Path) -> Path:
        root = d / "registry"
        shutil.copytree(_exchange(e), root, symlinks=True)
        from acxoci.exchange.index import index_bytes

        try:  # the index as the reference writes it; a lone surrogate (not UTF-8) goes in escaped
            text = index_bytes(doc) if file == "index.json" else _dumps(doc).encode("utf-8", "surrogatepass")
        except UnicodeEncodeError:
            text = _dumps(doc).encode("utf-8", "surrogatepass")
        (root / file).write_bytes(text)
        return root

    readers = (
        Reader("exchange verify", lambda e, p: ["exchange", "verify", str(p), "--now", NOW_TEXT],
               validates=True),
        Reader("exchange index", lambda e, p: ["exchange", "index", str(p), "-o", str(p.parent / "out.json"),
                                               "--now", NOW_TEXT]),
    )
    return Kind(name, seeds, materialize, readers)


ROM_READERS = (VERIFY, SPEC, INSPECT)
#: A credential's proof is made again when it is re-signed: changing it changes nothing signed.
PROOF = r"^/proof(/|$)"


@functools.lru_cache(maxsize=1)
def kinds() -> tuple[Kind, ...]:
    """Every document kind the vectors carry (and those acxoci makes), with its readers."""
    return (
        _rom_kind("package-spec", "rom/package-spec.json", ROM_READERS),
        _rom_kind("harness", "rom/manifest/harness-requirements.json",
                  (*ROM_READERS, HARNESS_CHECK, NEGOTIATE, PREFLIGHT, PREFLIGHT_ALL, POLICY_CHECK, INSTALL,
                   ACTIVATE)),
        _rom_kind("policy", "rom/policy/loop-context-policy.json", (*ROM_READERS, POLICY_CHECK, INSTALL)),
        _rom_kind("lance", "rom/schema/lance-memory.json", ROM_READERS),
        _rom_kind("skillset", "rom/cal/skillset.json", (*ROM_READERS, SKILLSET)),
        _row_kind("memory-record", "memory", ROM_READERS),
        _row_kind("capability", "capabilities", (*ROM_READERS, SKILLSET, LS, READY, CAL)),
        _meta_kind("acx.embedding_engine", ROM_READERS),
        _meta_kind("acx.tags", (*ROM_READERS, LS)),
        _meta_kind("acx.authors", ROM_READERS),
        _signed_json_kind("workflow", ["workflow/team.cal.json", "reference/research-council.cal.json",
                                       "reference/ship-a-feature.cal.json",
                                       *(f"workflow/lint/{n}.cal.json" for n in
                                         ("cycle-without-maxsteps", "rac-with-content", "unknown-agent",
                                          "unreachable-node"))],
                          "workflow", WORKFLOW_READERS),
        _signed_json_kind("agent-graph", ["graph/product-delivery.agent-graph.json"], "graph", GRAPH_READERS),
        _plain_kind("trust-registry", lambda e: _dedup([(f"sample/{n}", json.loads(
            (env.vectors() / "sample" / n).read_text())) for n in ("trust-active.json", "trust-expired.json",
                                                                   "trust-compromised.json")]
            + [("test registry", json.loads(e.registry.read_text()))]), "trust.json", TRUST_READERS),
        _plain_kind("host-descriptor", lambda e: [("test host", json.loads(e.host.read_text()))], "host.json",
                    HOST_READERS),
        Kind("level-credential", _credential_seeds, _credential_materialize, CREDENTIAL_READERS,
             skip=PROOF),
        Kind("status-list", lambda e: [("status list", e.level.status_list)], _status_materialize,
             STATUS_READERS, skip=PROOF),
        _exchange_kind("exchange-status", "status.json"),
        _exchange_kind("exchange-index", "index.json"),
    )


BY_KIND = {k.name: k for k in kinds()}


def run_readers(e: Env, kind: Kind, label: str, doc: Any,
                readers: tuple[Reader, ...] | None = None) -> list[tuple[Reader, Ran]] | None:
    """Materialize `doc` as `kind` (from the seed `label`) and run the readers; None when our own
    signer cannot sign the change."""
    with tempfile.TemporaryDirectory(dir=e.tmp) as t:
        try:
            p = kind.materialize(e, label, doc, Path(t))
        except Unsignable:
            return None
        return [(r, run(r.argv(e, p))) for r in (readers or kind.readers)]


def selected(kind: Kind, items: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    skip = re.compile(kind.skip)
    for where, doc in items:
        if not skip.search(where.split(" ", 1)[-1]):
            yield where, doc
