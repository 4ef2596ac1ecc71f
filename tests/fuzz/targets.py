"""The fuzz targets: one per parser or decision entry point. Each target has a strategy that makes
hostile inputs from a valid seed, a `run` that feeds one input to the public entry point, and a
judge inside `run`: it returns "accepted" (the input verified), "refused" (a verdict that rejects it)
or "parsed" (a parser took it), and any other string when a verdict is bent (a mutated signed
document trusted although its signed bytes changed). Errors in `typed` are the documented refusals;
any other exception is an untyped error (a crash, exit 70 at the CLI).

Entry points are the top-level functions the CLI calls, so the campaign survives refactors
underneath; when one is renamed, only its three-line adapter here changes."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from acxoci.attest.canonical import jcs
from acxoci.attest.errors import AttestError
from acxoci.errors import AcxError
from tests.fuzz import mutators as mu
from tests.fuzz.seeds import NOW, Seeds, rom_view, scratch, seeds

ACX_ONLY: tuple[type[BaseException], ...] = (AcxError,)
ACX_OR_ATTEST: tuple[type[BaseException], ...] = (AcxError, AttestError)


@dataclass(frozen=True)
class Target:
    """One entry point: `strategy(seeds)` makes inputs, `run(seeds, x)` returns an outcome."""

    name: str
    strategy: Callable[[Seeds], st.SearchStrategy[Any]]
    run: Callable[[Seeds, Any], str]
    typed: tuple[type[BaseException], ...] = ACX_ONLY
    weight: float = 1.0  # share of the campaign's time (slow targets get more)
    baseline: Callable[[Seeds], Any] | None = None  # the unmutated input: must be "accepted" (judge is live)
    slice_inputs: int = 40  # inputs in the fixed-seed slice `make test` runs


# -- cartridge ------------------------------------------------------------------------------------

def _verify_cartridge_bytes(s: Seeds, data: bytes, d: Path) -> str:
    from acxoci.cartridge.trust_file import load_trust_registry
    from acxoci.cartridge.verify import verify_cartridge

    p = d / "f.acx"
    p.write_bytes(data)
    verdict = verify_cartridge(p, registry=load_trust_registry(s.cartridge_registry), now=NOW)
    if p.read_bytes() != data:
        return "the verifier wrote to the file it verified"
    if verdict.rejected or verdict.trust not in ("trusted", "portable"):
        return "refused"  # rejected, or not signed at all (unsigned / legacy): nothing is trusted
    view = rom_view(p)
    if view != s.cartridge_rom:
        return f"accepted ({verdict.trust}) although the signed ROM differs from the seed's"
    return "accepted" if verdict.trust == "trusted" else "refused"


@st.composite
def _cartridge_bytes(draw: st.DrawFn, s: Seeds) -> bytes:
    data = s.cartridge
    kind = draw(st.sampled_from(("body", "header", "cut", "tail")))
    if kind == "body":  # keep the 100-byte header so SQLite itself parses the garbage
        return data[:100] + draw(mu.mutate_bytes(data[100:], max_edits=6))
    if kind == "header":
        return draw(mu.mutate_bytes(data[:100], max_edits=3)) + data[100:]
    if kind == "cut":
        return data[: draw(st.integers(0, len(data)))]
    return data + draw(st.binary(max_size=8192))


def run_cartridge_bytes(s: Seeds, data: bytes) -> str:
    with scratch(s.tmp) as d:
        return _verify_cartridge_bytes(s, data, d)


HOSTILE_NAMES = ("rom/../escape.md", "/etc/passwd", "rom//x.md", "rom/./x.md", "ROM/x.md", "rom/a\x00b",
                 "rom/" + "a" * 5000, "rom\\x.md", "rom/\u202emd.exe", "save/../rom/x", "rom/", "", "rom/..")

SQL_MUTATIONS: tuple[str, ...] = (
    "INSERT INTO sqlar VALUES (:name, 420, 0, 3, x'616263')",
    "UPDATE sqlar SET name = :name WHERE rowid = (SELECT min(rowid) FROM sqlar WHERE name LIKE 'rom/%')",
    "UPDATE sqlar SET sz = :num WHERE rowid = (SELECT min(rowid) FROM sqlar)",
    "UPDATE sqlar SET data = zeroblob(:small) WHERE rowid = (SELECT max(rowid) FROM sqlar)",
    "UPDATE sqlar SET sz = 1000000000, data = x'789c030000000001' "
    "WHERE rowid = (SELECT min(rowid) FROM sqlar)",
    "UPDATE sqlar SET data = CAST(data AS TEXT) WHERE rowid = (SELECT min(rowid) FROM sqlar)",
    "UPDATE sqlar SET mode = :num",
    "DELETE FROM sqlar WHERE rowid = (SELECT max(rowid) FROM sqlar WHERE name LIKE 'rom/%')",
    "UPDATE objects SET sz = :num WHERE oid = (SELECT min(oid) FROM objects)",
    "UPDATE objects SET source_ref = :name WHERE oid = (SELECT max(oid) FROM objects)",
    "DELETE FROM objects WHERE oid = (SELECT min(oid) FROM objects WHERE zone = 'rom')",
    "INSERT INTO objects VALUES (:digest, 'sqlar', 'sqlar:rom/new.md', 'raw', 'rom', 3)",
    "UPDATE cartridge SET value = :name WHERE key = 'acx.publisher_id'",
    "INSERT OR REPLACE INTO cartridge VALUES ('acx.agent_name', :name)",
    "DELETE FROM cartridge WHERE key = 'acx.spec_version'",
    "UPDATE memory SET payload = :name WHERE zone = 'rom'",
    "UPDATE signatures SET keyid = :name",
    "UPDATE signatures SET manifest_hash = :digest",
    "INSERT INTO signatures SELECT 'sig-2', target, manifest_hash, envelope, keyid, public_key_pem, "
    "publisher_id, created_at FROM signatures",
    "DELETE FROM signatures",
    "UPDATE capabilities SET json = :name",
    "CREATE TABLE extra (x)",
    "CREATE VIEW v AS SELECT * FROM sqlar",
    "CREATE TRIGGER t AFTER INSERT ON memory BEGIN DELETE FROM sqlar; END",
    "DROP TABLE capabilities",
    "ALTER TABLE sqlar RENAME TO sqlar_old",
    "ALTER TABLE sqlar ADD COLUMN extra TEXT",
    "DROP TABLE sqlar; CREATE VIEW sqlar AS SELECT * FROM (SELECT 'rom/x' AS name, 0 AS mode, 0 AS mtime, "
    "1 AS sz, x'41' AS data)",
    "PRAGMA user_version = :num",
    "PRAGMA application_id = :num",
    "INSERT INTO sqlar VALUES ('save/notes/x.md', 420, 0, 3, x'616263')",
    "UPDATE cartridge SET value = :name WHERE key = 'acx.package_spec'",
)


@st.composite
def _cartridge_sql(draw: st.DrawFn, s: Seeds) -> list[tuple[str, dict[str, Any]]]:
    ops = draw(st.lists(st.sampled_from(SQL_MUTATIONS), min_size=1, max_size=3))
    out = []
    for sql in ops:
        params = {
            "name": draw(st.one_of(st.sampled_from(HOSTILE_NAMES), st.text(max_size=30))),
            "num": draw(st.sampled_from((-1, 0, 1, 2**31, 2**62, 10**9))),
            "small": draw(st.integers(0, 4096)),
            "digest": "sha256:" + draw(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)),
        }
        out.append((sql, params))
    return out


def run_cartridge_sql(s: Seeds, ops: list[tuple[str, dict[str, Any]]]) -> str:
    with scratch(s.tmp) as d:
        p = d / "m.acx"
        p.write_bytes(s.cartridge)
        with closing(sqlite3.connect(str(p))) as c:
            for sql, params in ops:
                try:
                    if ";" in sql:
                        c.executescript(sql)
                    else:
                        c.execute(sql, {k: v for k, v in params.items() if f":{k}" in sql})
                except sqlite3.Error:
                    continue  # a mutation SQLite itself refuses is no input
            c.commit()
        return _verify_cartridge_bytes(s, p.read_bytes(), d)


# -- signed JSON documents ---------------------------------------------------------------------------

def run_workflow(s: Seeds, data: bytes) -> str:
    from acxoci.workflow.model import load_document
    from acxoci.workflow.sign import unsigned_view
    from acxoci.workflow.verify import verify_workflow

    with scratch(s.tmp) as d:
        p = d / "w.cal.json"
        p.write_bytes(data)
        doc = load_document(p)
        v = verify_workflow(doc, registry=s.workflow_registry, now=NOW)
    if v.trust in ("trusted", "portable"):
        if jcs(unsigned_view(doc)) != jcs(unsigned_view(s.workflow)):
            return f"{v.trust} although the signed body changed"
        if v.trust == "trusted" and v.publisher_id != s.workflow["integrity"]["publisherId"]:
            return f"trusted for another publisher {v.publisher_id!r}"
    return "accepted" if v.trust == "trusted" else "refused"


def run_dsse(s: Seeds, data: bytes) -> str:
    from acxoci.attest.canonical import loads_strict
    from acxoci.attest.dsse import Envelope

    env = Envelope.from_json(loads_strict(data))
    env.verify(s.key.public())
    seed = Envelope.from_json(s.envelope)
    if (env.payload_type, env.payload) != (seed.payload_type, seed.payload):
        return "a DSSE envelope with another payload verified"
    return "accepted"


def run_bundle(s: Seeds, data: bytes) -> str:
    from acxoci.attest.bundle import parse_bundle, verify_dsse_bundle
    from acxoci.attest.dsse import Envelope

    b = parse_bundle(data)
    verify_dsse_bundle(b, s.key.public())
    seed = Envelope.from_json(s.envelope)
    env = b.envelope
    if env is None or (env.payload_type, env.payload) != (seed.payload_type, seed.payload):
        return "a bundle with another DSSE payload verified"
    return "accepted"


def run_credential(s: Seeds, data: bytes) -> str:
    from acxoci.attest.canonical import loads_strict
    from acxoci.level.credential import verify_credential

    try:
        doc = loads_strict(data)
    except AttestError:
        return "refused"  # not JSON: the CLI's file reader refuses it (typed) before the decision
    v = verify_credential(doc, issuers=s.issuers, expected_rom_digest=s.rom_digest, now=NOW,
                          status_check=s.status_check)
    if v.ok and jcs(doc) != jcs(s.credential):
        return "a changed level credential verified"
    return "accepted" if v.ok else "refused"


def run_status_list(s: Seeds, data: bytes) -> str:
    from acxoci.attest.canonical import loads_strict
    from acxoci.level.status import verify_status_list

    try:
        doc = loads_strict(data)
    except AttestError:
        return "refused"
    listed = verify_status_list(doc, issuers=s.issuers, now=NOW)
    seed = verify_status_list(s.status_list, issuers=s.issuers, now=NOW)
    if (listed.bits, listed.list_id, listed.issuer) != (seed.bits, seed.list_id, seed.issuer):
        return "a changed status list verified"
    return "accepted"


def _file_target(fn: Callable[[Path], Any], name: str) -> Callable[[Seeds, bytes], str]:
    def run(s: Seeds, data: bytes) -> str:
        with scratch(s.tmp) as d:
            (d / "pub.pem").write_text(s.key.public().spki_pem())
            (d / "sample.acx").write_bytes(b"x")
            p = d / name
            p.write_bytes(data)
            fn(p)
        return "parsed"

    return run


def _trust_registry(p: Path) -> Any:
    from acxoci.cartridge.trust_file import load_trust_registry

    return load_trust_registry(p)


def _policy(p: Path) -> Any:
    from acxoci.install.vpolicy import load_policy

    return load_policy(p, now=NOW)


def _plan(p: Path) -> Any:
    from acxoci.release.plan import load_plan

    return load_plan(p)


def run_manifest(s: Seeds, data: bytes) -> str:
    from acxoci.oci.descriptor import parse_manifest

    parse_manifest(data)
    return "parsed"


def run_install_record(s: Seeds, data: bytes) -> str:
    from acxoci.install.store import RECORD, Store

    with scratch(s.tmp) as d:
        folder = d / "store" / "items" / f"sample@{s.record['digest'].removeprefix('sha256:')}"
        folder.mkdir(parents=True)
        (folder / RECORD).write_bytes(data)
        store = Store(d / "store")
        for item in store.list():
            item.summary()
        store.get("sample")
    return "parsed"


def run_reference(s: Seeds, text: str) -> str:
    from acxoci.oci.reference import parse_reference

    ref = parse_reference(text)
    again = parse_reference(str(ref))
    if again != ref:
        return f"reference does not round-trip: {text!r} -> {ref!s}"
    return "parsed"


def run_challenge(s: Seeds, text: str) -> str:
    from acxoci.oci.auth import parse_challenge

    parse_challenge(text)
    return "parsed"


def run_docker_config(s: Seeds, data: bytes) -> str:
    from acxoci.oci.auth import load_credential

    with scratch(s.tmp) as d:
        (d / "config.json").write_bytes(data)
        old = os.environ.get("PATH", "")
        os.environ["PATH"] = str(d)  # no credential helper may run from a hostile config
        try:
            for host in ("127.0.0.1:5000", "index.docker.io", "docker.io"):
                load_credential(host, str(d))
        finally:
            os.environ["PATH"] = old
    return "parsed"


def run_strict_json(s: Seeds, data: bytes) -> str:
    from acxoci.attest.canonical import loads_strict

    value = loads_strict(data)
    try:
        canon = jcs(value)
    except AttestError:
        return "refused"
    if jcs(loads_strict(canon)) != canon:
        return "JCS output does not re-parse to the same canonical bytes"
    return "parsed"


REF_SEEDS = ("127.0.0.1:5000/acx/sample:v1", "localhost/a/b@sha256:" + "a" * 64, "[::1]:5000/x/y:t",
             "ghcr.io/o/r:v1@sha256:" + "b" * 64, "oci-layout:/tmp/x:v1")


def _near(text: str) -> st.SearchStrategy[str]:
    """`text` itself or one small edit of it."""
    return st.just(text) | st.builds(mu.edit_string, st.just(text), st.integers(0, 999), st.integers(0, 999))


reference_text = st.one_of(
    st.sampled_from(REF_SEEDS).flatmap(_near),
    st.text(max_size=80),
    st.text(alphabet=st.sampled_from(list("abc019:/@.-_[]%sha256")), max_size=120),
)
CHALLENGES = ('Bearer realm="https://127.0.0.1:1/token",service="registry",scope="repository:a/b:pull"',
              'Basic realm="x"', 'Bearer realm="x", error="insufficient_scope"')
challenge_text = st.one_of(
    st.sampled_from(CHALLENGES).flatmap(_near),
    mu.header_text,
)


def _json(attr: str) -> Callable[[Seeds], st.SearchStrategy[bytes]]:
    return lambda s: mu.json_documents(getattr(s, attr))


def _blob(attr: str) -> Callable[[Seeds], Any]:
    return lambda s: json.dumps(getattr(s, attr)).encode()


# -- past the signature: a document changed, re-signed with a trusted key, read by one command ----------

class Crash(Exception):
    """A command ended in exit 70 (or let an exception escape): an untyped error."""


@functools.cache
def _resign_seeds(kind_name: str) -> list[tuple[str, Any]]:
    """The kind's seeds; every reader is run once on the first, so the campaign times the inputs
    and not the imports."""
    from tests.fuzz import resign

    e = resign.make_env()
    kind = resign.BY_KIND[kind_name]
    seeds = kind.seeds(e)
    resign.run_readers(e, kind, seeds[0][0], seeds[0][1])
    return seeds


def _resign_strategy(kind_name: str) -> Callable[[Seeds], st.SearchStrategy[Any]]:
    """(seed, changed document, reader): one structural change picked by index (retype, null,
    empty, huge, duplicated, reordered, deleted, unknown member), or hypothesis's tree edits."""
    def strategy(s: Seeds) -> st.SearchStrategy[Any]:
        from tests.fuzz import resign

        seeds = _resign_seeds(kind_name)
        readers = len(resign.BY_KIND[kind_name].readers)

        def for_seed(i: int) -> st.SearchStrategy[Any]:
            picked = st.builds(lambda p, o: resign.mutation_at(seeds[i][1], p, o)[1],
                               st.integers(0, 10**6), st.integers(0, 10**6))
            doc = st.one_of(picked, mu.mutate_tree(seeds[i][1]))
            return st.tuples(st.just(i), doc, st.integers(0, readers - 1))

        return st.integers(0, len(seeds) - 1).flatmap(for_seed)

    return strategy


def _resign_run(kind_name: str) -> Callable[[Seeds, Any], str]:
    def run(s: Seeds, x: Any) -> str:
        from tests.fuzz import resign

        i, doc, r = x
        seeds = _resign_seeds(kind_name)
        kind = resign.BY_KIND[kind_name]
        results = resign.run_readers(resign.make_env(), kind, seeds[i][0], doc, readers=(kind.readers[r],))
        if results is None:
            return "refused"  # our own signer refuses to sign it: no reader can see it signed
        _, ran = results[0]
        if ran.crashed:
            raise Crash(ran.signature())
        if ran.typed_error():  # an `{"error": {...}}` answer: counted as a typed error
            raise AcxError(ran.signature())
        return "accepted" if ran.code == 0 else "refused"

    return run


def _resign_baseline(kind_name: str) -> Callable[[Seeds], Any]:
    return lambda s: (0, _resign_seeds(kind_name)[0][1], 0)


RESIGN_KINDS = (
    "cartridge.package-spec", "cartridge.harness", "cartridge.policy", "cartridge.lance",
    "cartridge.skillset", "cartridge.memory-record", "cartridge.capability",
    "cartridge.meta.embedding_engine", "cartridge.meta.tags", "cartridge.meta.authors", "workflow",
    "agent-graph", "trust-registry", "host-descriptor", "level-credential", "status-list",
    "exchange-status", "exchange-index",
)

TARGETS: tuple[Target, ...] = (
    Target("cartridge.bytes", _cartridge_bytes, run_cartridge_bytes, weight=2.0,
           baseline=lambda s: s.cartridge),
    Target("cartridge.sql", _cartridge_sql, run_cartridge_sql, weight=2.0, baseline=lambda s: []),
    Target("workflow", _json("workflow"), run_workflow, weight=1.5, baseline=_blob("workflow")),
    Target("dsse.envelope", _json("envelope"), run_dsse, ACX_OR_ATTEST, baseline=_blob("envelope")),
    Target("sigstore.bundle", _json("bundle"), run_bundle, ACX_OR_ATTEST, baseline=_blob("bundle")),
    Target("level.credential", _json("credential"), run_credential, weight=1.5, baseline=_blob("credential")),
    Target("status.list", _json("status_list"), run_status_list, baseline=_blob("status_list")),
    Target("trust.registry", _json("trust_registry"), _file_target(_trust_registry, "trust.json")),
    Target("policy.json", _json("policy"), _file_target(_policy, "policy.json")),
    Target("policy.yaml", lambda s: mu.mutate_bytes(s.policy_yaml), _file_target(_policy, "policy.yaml")),
    Target("release.plan", lambda s: mu.mutate_bytes(s.plan_yaml) | mu.json_documents({"schemaVersion": 1}),
           _file_target(_plan, "acx-release.yaml")),
    Target("oci.manifest", _json("manifest"), run_manifest),
    Target("oci.index", _json("index"), run_manifest),
    Target("install.record", _json("record"), run_install_record),
    Target("image.reference", lambda s: reference_text, run_reference, weight=0.5),
    Target("www-authenticate", lambda s: challenge_text, run_challenge, weight=0.5),
    Target("docker.config", _json("docker_config"), run_docker_config),
    Target("json.strict", lambda s: mu.json_documents(s.trust_registry) | st.binary(max_size=64),
           run_strict_json, ACX_OR_ATTEST, weight=0.5),
    # each re-signs and runs a command (tens of ms an input); the exhaustive property run of
    # `make fuzz` covers every value of their kinds anyway, so they share half a target's time
    *(Target(f"resign.{k}", _resign_strategy(k), _resign_run(k), weight=0.5, baseline=_resign_baseline(k),
             slice_inputs=4) for k in RESIGN_KINDS),
)
BY_NAME = {t.name: t for t in TARGETS}


def get_seeds() -> Seeds:
    """The process's seeds (built on first use)."""
    return seeds()
