"""The corpus fed to every caller of the one acceptance decision (issue 28): artifacts in OCI
layouts, each with the policy it is judged under, built at run time through the commands a
publisher, a level verifier and an attacker would use.

- `World`: made once (`make_world`): a publisher key and its trust registry, a second key of the
  same publisher in another registry, the sample agent package built and signed, a signed agent
  graph, a signed one-slot workflow (`ready` staffs its reviewer), and a level verifier (the demo
  bench, an issuer registry, a status list and a level credential for the cartridge).
- `CASES`: each builds one `Case` in its own folder. The trust cases (an untrusted signer, a
  compromised key, a missing attestation, a level too low, revoked, from the demo solver or from
  an unaccepted verifier, a withdrawn release, a rollback tag, a disallowed registry) say what
  install must refuse; the hostile layouts (traits of tests/harness/hostilelayout.py) and the
  re-signed ROM documents (tests/fuzz/resign.py's structural mutations, signed by the trusted
  publisher) leave install's verdict to be found, and every caller is held to it.

Commands run in this process (`acx`), so a world is built in about a second."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.harness.env import REPO

PUBLISHER = "dev.example.team"
ISSUER = "did:web:verifier.example"
LIST_ID = "https://status.example/lists/1"
BENCH = "bench/acx-bench-dag-de@2026.07.1.bench.json"
LEVEL_ARTIFACT_TYPE = "application/vnd.acx.level-attestation.v1"


def acx(*args: str, cwd: Path | None = None) -> tuple[int, Any]:
    """`acx --json ARGS` in this process: (exit code, parsed stdout or None)."""
    from acxoci.cli.main import main
    from acxoci.cli.output import OPTS

    out = io.StringIO()
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    code = 0
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        try:
            main(["--json", *args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            OPTS.json = OPTS.verbose = OPTS.quiet = False
    text = out.getvalue()
    return code, json.loads(text) if text.strip() else None


def ok(*args: str, cwd: Path | None = None) -> Any:
    code, out = acx(*args, cwd=cwd)
    assert code == 0, (args, json.dumps(out)[:2000])
    return out


# ---- the world ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    """Files every case starts from (never changed by a case: a case copies what it changes)."""

    root: Path
    key: Path
    trust: Path
    other_trust: Path
    cartridge: Path
    graph: Path
    graph_version: str
    workflow: Path
    issuers: Path
    verifier_key: Path
    credential: Path
    status_list: Path
    level: int


READY_WORKFLOW = {
    "schemaVersion": "acx.cal/1", "id": "review-one", "version": "0.1.0", "name": "One reviewer",
    "description": "A change is reviewed by one reviewer cartridge of the roster.", "license": "Apache-2.0",
    "tags": ["code-review"], "authors": [{"name": "acxoci tests"}],
    "participants": [{"alias": "reviewer", "bind": "slot", "slot": {"role": "reviewer"}}],
    "limits": {"maxSteps": 4, "maxDurationMs": 600000, "maxParallel": 1}, "start": "begin",
    "nodes": [{"id": "begin", "type": "event", "event": "start"},
              {"id": "review", "type": "task", "agent": "reviewer", "action": "Review the change",
               "sideEffects": "none", "approval": "never",
               "completion": {"type": "artifact", "produces": "review-notes"}},
              {"id": "done", "type": "event", "event": "end"}],
    "edges": [{"from": "begin", "to": "review"}, {"from": "review", "to": "done"}],
}


def make_world(root: Path) -> World:
    """The publisher's and the level verifier's files, made with the commands they would type."""
    root.mkdir(parents=True, exist_ok=True)
    run = {"cwd": root}
    ok("key", "generate", "-o", "publisher.pem", **run)
    ok("key", "trust", "publisher.pub.pem", "--publisher", PUBLISHER, "--trust-registry", "trust.json",
       "--not-before", "2026-01-01T00:00:00Z", **run)
    ok("key", "generate", "-o", "other.pem", **run)
    ok("key", "trust", "other.pub.pem", "--publisher", PUBLISHER, "--trust-registry", "other-trust.json",
       "--not-before", "2026-01-01T00:00:00Z", **run)
    ok("cartridge", "build", str(REPO / "examples" / "agent-package"), "-o", "agent.acx", "--publisher",
       PUBLISHER, "--key", "publisher.pem", **run)
    ok("graph", "sign", str(REPO / "examples" / "graph" / "review-team.agent-graph.json"), "--publisher",
       PUBLISHER, "--key", "publisher.pem", "-o", "team.agent-graph.json", **run)
    (root / "ready.cal.json").write_text(json.dumps(READY_WORKFLOW))
    ok("workflow", "sign", "ready.cal.json", "--publisher", PUBLISHER, "--key", "publisher.pem", "-o",
       "ready.signed.cal.json", **run)
    ok("level", "bench-init", "-o", "bench", "--demo", **run)
    ok("key", "generate", "-o", "verifier.pem", **run)
    ok("key", "trust", "verifier.pub.pem", "--publisher", "example.verifier", "--trust-registry",
       "issuers.json", **run)
    ok("status-list", "create", "--id", LIST_ID, "--issuer", ISSUER, "--issuer-key", "verifier.pem", "-o",
       "status.json", **run)
    issued = ok("level", "issue", "agent.acx", "--bench", BENCH, "--issuer", ISSUER, "--issuer-key",
                "verifier.pem", "--status-list", "status.json", "-o", "level.vc.json", "--attempt-log",
                "attempts.jsonl", **run)
    graph = json.loads((root / "team.agent-graph.json").read_text())
    return World(root, root / "publisher.pem", root / "trust.json", root / "other-trust.json",
                 root / "agent.acx", root / "team.agent-graph.json", graph["version"],
                 root / "ready.signed.cal.json", root / "issuers.json", root / "verifier.pem",
                 root / "level.vc.json", root / "status.json", int(issued["level"]))


# ---- cases ----------------------------------------------------------------------------------------


@dataclass
class Case:
    """One artifact to judge: `ref` (in a layout) under `policy`. `file` and `tag` are how a
    publisher would publish it (`push`, `release`; None when the case exists only as a registry
    copy), `credential` the level credential a release attaches. `failing`: what install must
    refuse (`frozenset()`: accept; None: install's verdict is found, not asserted)."""

    name: str
    folder: Path
    ref: str
    policy: Path
    kind: str = "cartridge"
    file: Path | None = None
    tag: str = "1.0.0"
    credential: Path | None = None
    failing: frozenset[str] | None = frozenset()
    notes: list[str] = field(default_factory=list)


def write_policy(folder: Path, w: World, *, trust: Path | None = None, level: dict[str, Any] | None = None,
                 status_list: Path | None = None, **extra: Any) -> Path:
    """A policy trusting the publisher through `trust` (default: the world's registry), with its own
    status-list cache; `level` adds a level requirement on the world's verifier, its list read
    from `status_list` (default: the world's)."""
    doc: dict[str, Any] = {"schemaVersion": "acx.verification-policy/1",
                           "publishers": [{"id": PUBLISHER, "trustRegistries": [str(trust or w.trust)]}],
                           "revocation": {"statusListCache": str(folder / "status-cache")}}
    if level is not None:
        doc["level"] = {"issuers": [ISSUER], "issuerRegistries": [str(w.issuers)], **level}
        doc["revocation"]["statusLists"] = {LIST_ID: str(status_list or w.status_list)}
    doc.update(extra)
    path = folder / "policy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _level(w: World, minimum: int | str | None = None, **more: Any) -> dict[str, Any]:
    return {"minimum": minimum if minimum is not None else w.level, "allowDemo": True, **more}


def publish(folder: Path, file: Path, tag: str, *, credential: Path | None = None,
            layout: str = "layout") -> tuple[str, str]:
    """`acx push FILE oci-layout:FOLDER/LAYOUT:TAG` (a tag that is not the signed version too), and
    the level credential attached as `acx level issue REF` attaches it; (reference, digest)."""
    ref = f"oci-layout:{folder / layout}:{tag}"
    digest = ok("push", str(file), ref, "--allow-tag-mismatch")["digest"]
    if credential is not None:
        from acxoci.level.oci import attach_credential
        from acxoci.oci.layout import LayoutStore
        from acxoci.oci.target import resolve_manifest

        target = LayoutStore(folder / layout)
        attach_credential(target, resolve_manifest(target, digest), json.loads(credential.read_text()),
                          now=datetime.now(UTC))
    return ref, digest


def _blob(folder: Path, digest: str) -> Path:
    return folder / "blobs" / "sha256" / digest.split(":", 1)[1]


def c_accepted(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0", credential=w.credential)
    return Case("accepted", d, ref, write_policy(d, w, level=_level(w)), file=w.cartridge,
                credential=w.credential)


def c_untrusted(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0")
    return Case("untrusted", d, ref, write_policy(d, w, trust=w.other_trust), file=w.cartridge,
                failing=frozenset({"trust"}))


def c_tampered_blob(w: World, d: Path) -> Case:
    ref, digest = publish(d, w.cartridge, "1.0.0")
    layer = json.loads(_blob(d / "layout", digest).read_text())["layers"][0]["digest"]
    blob = _blob(d / "layout", layer)
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1
    blob.write_bytes(bytes(data))
    return Case("tampered-blob", d, ref, write_policy(d, w), file=w.cartridge,
                failing=frozenset({"content-digest", "signature", "trust", "policy-budget"}))


def c_key_compromised(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0")
    trust = shutil.copy(w.trust, d / "trust.json")
    ok("key", "revoke", str(w.root / "publisher.pub.pem"), "--trust-registry", str(trust), "--reason",
       "key-compromise", "--revoked-at", "2026-01-02T00:00:00Z")
    return Case("key-compromised", d, ref, write_policy(d, w, trust=Path(trust)), file=w.cartridge,
                failing=frozenset({"signature", "trust"}))


def c_missing_attestation(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0")
    return Case("missing-attestation", d, ref, write_policy(d, w, attestations={"formats": ["bundle"]}),
                file=w.cartridge, failing=frozenset({"attestations"}))


def c_attested(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0")
    ok("attest", ref, "--key", str(w.key))
    return Case("attested", d, ref, write_policy(d, w, attestations={"formats": ["legacy", "bundle"]}),
                file=w.cartridge)


def c_level_too_low(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0", credential=w.credential)
    return Case("level-too-low", d, ref, write_policy(d, w, level=_level(w, "legend")), file=w.cartridge,
                credential=w.credential, failing=frozenset({"level"}))


def c_level_revoked(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0", credential=w.credential)
    status = Path(shutil.copy(w.status_list, d / "status.json"))
    ok("level", "revoke", str(w.credential), "--status-list", str(status), "--issuer-key",
       str(w.verifier_key))
    return Case("level-revoked", d, ref, write_policy(d, w, level=_level(w), status_list=status),
                file=w.cartridge, credential=w.credential, failing=frozenset({"revocation"}))


def c_demo_level(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0", credential=w.credential)
    return Case("demo-level", d, ref, write_policy(d, w, level=_level(w, allowDemo=False)), file=w.cartridge,
                credential=w.credential, failing=frozenset({"level"}))


def c_verifier(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0", credential=w.credential)
    pol = write_policy(d, w, level=_level(w, verifiers=["did:web:lab.example"]))
    return Case("verifier-not-accepted", d, ref, pol, file=w.cartridge, credential=w.credential,
                failing=frozenset({"level"}))


def c_withdrawn(w: World, d: Path) -> Case:
    from acxoci.exchange.lifecycle import push_lifecycle
    from acxoci.oci.layout import LayoutStore
    from acxoci.oci.target import resolve_manifest

    ref, digest = publish(d, w.cartridge, "1.0.0")
    target = LayoutStore(d / "layout")
    record = {"status": "withdrawn", "reason": "a bad release", "recordedAt": "2026-11-29T00:00:00.000Z"}
    push_lifecycle(target, resolve_manifest(target, digest), record, None)
    return Case("withdrawn", d, ref, write_policy(d, w), file=w.cartridge, failing=frozenset({"lifecycle"}))


def c_rollback_tag(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "2.0.0")  # the 1.0.0 cartridge under a 2.0.0 tag
    return Case("rollback-tag", d, ref, write_policy(d, w), file=w.cartridge, tag="2.0.0",
                failing=frozenset({"version"}))


def c_registry(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.cartridge, "1.0.0")
    pol = write_policy(d, w, registries={"allowed": ["registry.example/*"]})
    return Case("registry-not-allowed", d, ref, pol, file=w.cartridge, failing=frozenset({"registry"}))


def c_graph(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.graph, w.graph_version)
    return Case("graph-by-version-tag", d, ref, write_policy(d, w), kind="agent-graph", file=w.graph,
                tag=w.graph_version)


def c_graph_untrusted(w: World, d: Path) -> Case:
    ref, _ = publish(d, w.graph, w.graph_version)
    return Case("graph-untrusted", d, ref, write_policy(d, w, trust=w.other_trust), kind="agent-graph",
                file=w.graph, tag=w.graph_version, failing=frozenset({"trust"}))


# -- hostile layouts: tests/harness/hostilelayout.py's traits on a layout holding the case -----------


def _kit(w: World, d: Path, *, credential: bool = False) -> Any:
    """A hostilelayout Kit over a layout with the cartridge (S, `1.0.0`) and the graph (X, its version)."""
    from acxoci.oci.target import resolve_manifest
    from tests.harness.hostilelayout import Kit

    publish(d, w.cartridge, "1.0.0", credential=w.credential if credential else None)
    publish(d, w.graph, w.graph_version)
    kit = Kit(d / "layout", d / "outside")
    kit.outside.mkdir()
    kit.subject = resolve_manifest(kit.store, "1.0.0").plain()
    kit.other = resolve_manifest(kit.store, w.graph_version).plain()
    return kit


def c_stray_credential(w: World, d: Path) -> Case:
    from tests.harness import hostilelayout as H

    kit = _kit(w, d, credential=True)
    H.stray_in_fallback_tag(kit, LEVEL_ARTIFACT_TYPE)  # a "credential" for X listed under S
    return Case("stray-referrer", d, f"{kit.ref}:1.0.0", write_policy(d, w, level=_level(w)), failing=None)


def c_withdrawn_on_other(w: World, d: Path) -> Case:
    from tests.harness import hostilelayout as H

    kit = _kit(w, d)
    H.withdrawn_on_other(kit)
    return Case("withdrawn-on-other", d, f"{kit.ref}:1.0.0", write_policy(d, w), failing=None)


def c_gone_referrer(w: World, d: Path) -> Case:
    from tests.harness import hostilelayout as H

    kit = _kit(w, d)
    H.gone_in_fallback_tag(kit)
    return Case("gone-referrer", d, f"{kit.ref}:1.0.0", write_policy(d, w), failing=None)


def c_symlinked_manifest(w: World, d: Path) -> Case:
    from tests.harness import hostilelayout as H

    kit = _kit(w, d)
    H.symlink_out(kit, "blob")
    return Case("symlinked-manifest", d, f"{kit.ref}:1.0.0", write_policy(d, w), failing=None)


def c_directory_blob(w: World, d: Path) -> Case:
    from tests.harness import hostilelayout as H

    kit = _kit(w, d)
    H.directory_blob(kit)
    return Case("directory-blob", d, f"{kit.ref}:1.0.0", write_policy(d, w), failing=None)


def c_huge_manifest(w: World, d: Path) -> Case:
    from tests.harness import hostilelayout as H

    kit = _kit(w, d)
    H.huge_tagged(kit, "1.0.1")
    return Case("huge-manifest", d, f"{kit.ref}:1.0.1", write_policy(d, w), failing=None)


# -- re-signed ROM documents: tests/fuzz/resign.py's mutations, signed by the trusted publisher ------

#: (ROM document, path index, operation index) in resign.mutation_at's space: the loop's maxTurns
#: retyped to a string, the loop's verification deleted, the harness's required tools emptied, an
#: unknown member added to the harness document.
MUTATIONS = (
    ("rom/policy/loop-context-policy.json", 3, 3),
    ("rom/policy/loop-context-policy.json", 10, 6),
    ("rom/manifest/harness-requirements.json", 9, 9),
    ("rom/manifest/harness-requirements.json", 0, 17),
)


def resigned(w: World, d: Path, member: str, path_index: int, op_index: int) -> tuple[Path, str]:
    """The cartridge with one ROM document changed by the fuzz campaign's mutation, re-signed with
    the publisher's (trusted) key by the library signer, as a hostile publisher's own tool would."""
    from acxoci.cartridge.sign import resign_file
    from acxoci.keyfiles import load_private_key_file
    from tests.fuzz.resign import mutation_at

    path = Path(shutil.copy(w.cartridge, d / "resigned.acx"))
    with contextlib.closing(sqlite3.connect(path)) as conn:
        row = conn.execute("SELECT CAST(data AS BLOB), sz FROM sqlar WHERE name = ?", (member,)).fetchone()
        data, size = row
        label, doc = mutation_at(json.loads(data if len(data) == size else zlib.decompress(data)), path_index,
                                 op_index)
        raw = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
        conn.execute("UPDATE sqlar SET data = ?, sz = ? WHERE name = ?", (raw, len(raw), member))
        conn.commit()
    resign_file(path, load_private_key_file(w.key, None), signed_at=datetime.now(UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z"), refresh=True)
    return path, f"{member}: {label}"


def _c_mutation(i: int) -> Callable[[World, Path], Case]:
    member, path_index, op_index = MUTATIONS[i]

    def build(w: World, d: Path) -> Case:
        file, label = resigned(w, d, member, path_index, op_index)
        ref, _ = publish(d, file, "1.0.0")
        return Case(f"resigned-{i}", d, ref, write_policy(d, w), file=file, failing=None, notes=[label])

    return build


CASES: dict[str, Callable[[World, Path], Case]] = {
    "accepted": c_accepted, "untrusted": c_untrusted, "tampered-blob": c_tampered_blob,
    "key-compromised": c_key_compromised, "missing-attestation": c_missing_attestation,
    "attested": c_attested, "level-too-low": c_level_too_low, "level-revoked": c_level_revoked,
    "demo-level": c_demo_level, "verifier-not-accepted": c_verifier, "withdrawn": c_withdrawn,
    "rollback-tag": c_rollback_tag, "registry-not-allowed": c_registry, "graph-by-version-tag": c_graph,
    "graph-untrusted": c_graph_untrusted, "stray-referrer": c_stray_credential,
    "withdrawn-on-other": c_withdrawn_on_other, "gone-referrer": c_gone_referrer,
    "symlinked-manifest": c_symlinked_manifest, "directory-blob": c_directory_blob,
    "huge-manifest": c_huge_manifest,
    **{f"resigned-{i}": _c_mutation(i) for i in range(len(MUTATIONS))},
}
