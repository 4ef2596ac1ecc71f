"""The release interpreter: executes a goal's effects one at a time under the goal's lease, and
appends every transition to the journal.

Rules it enforces (LoopX's control-plane discipline):
- idempotent effects: HEAD/resolve/list before any write; what is already there is not written
  again (a referrer already listed is not pushed again; a tag already right is not re-put);
- a receipt (the registry answered 201) is recorded but never closes an effect: an effect is
  `done` only when a read-back (through a separate, uncached reader) proves the domain result;
- failures are classified (`failures.py`) and each class has its own recovery;
- what to run next is decided from the journal's projection (`status.project`), never from a cache;
- the final `verify` effect runs `acx install`'s checks under the plan's acceptance policy.

Test-only hook (never set it elsewhere): `ACX_RELEASE_KILL_AFTER=<n>` makes the process SIGKILL
itself right after the n-th effect entry it journals; `ACX_RELEASE_KILL_AFTER=<n>w` kills it after
the n-th effect's remote work but BEFORE that effect is journaled (the write landed, the journal
does not know). Tests iterate over n to prove resume never duplicates or loses anything.
"""

from __future__ import annotations

import io
import json
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.errors import AcxError, AuthError, Blocked, InvalidInput, NotFound, Tampered, TransientError
from acxoci.fsutil import require_unchanged
from acxoci.oci.descriptor import OCI_MANIFEST, Descriptor, Manifest, parse_manifest
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import Target, fetch_bytes, fetch_manifest, open_target
from acxoci.release.effects import Effect, plan_effects
from acxoci.release.failures import (
    REOPEN_ON_RESUME,
    Failure,
    FailureClass,
    State,
    classify,
    decide,
    fail,
)
from acxoci.release.journal import Journal, goal_dir, iso
from acxoci.release.lease import GoalLease, default_runner_id
from acxoci.release.objects import ObjectStore, Recorder, http_receipt
from acxoci.release.plan import Release, ReleasePlan, load_plan
from acxoci.release.status import GoalStatus, goal_entry, project
from attest.canonical import jcs, loads_strict

KILL_ENV = "ACX_RELEASE_KILL_AFTER"
STATUS_CACHE = "status.json"
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Result:
    """A successful effect: did it write, what the registry answered, what the read-back proved."""

    wrote: bool
    evidence: dict[str, Any]
    receipt: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunReport:
    """What one run did (effects executed, remote writes) and the goal's projection afterwards."""

    status: GoalStatus
    executed: int
    writes: int
    http_writes: int
    took_over: str | None = None

    def exit_code(self) -> int:
        """0 done; 9 a person must act (blocked); 5 blocked on credentials only; 6 retry later."""
        blocked = [e for e in self.status.effects if e.state == "blocked"]
        if blocked:
            if all(e.failure is not None and e.failure.cls == "auth_failure" for e in blocked):
                return AuthError.exit_code
            return Blocked.exit_code
        if any(e.state in ("deferred", "open") for e in self.status.effects):
            return TransientError.exit_code
        return 0

    def to_json(self) -> dict[str, Any]:
        return {"executed": self.executed, "writes": self.writes, "httpWrites": self.http_writes,
                "exitCode": self.exit_code(), "tookOverLeaseFrom": self.took_over, **self.status.to_json()}


class _Killer:
    """The test-only SIGKILL hook (see the module docstring)."""

    def __init__(self) -> None:
        raw = os.environ.get(KILL_ENV, "").strip()
        self.before_journal = raw.endswith("w")
        digits = raw.rstrip("w")
        self.n = int(digits) if digits.isascii() and digits.isdigit() else 0
        self.journaled = 0
        self.executed = 0

    def _die(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def after_work(self) -> None:
        self.executed += 1
        if self.n and self.before_journal and self.executed == self.n:
            self._die()

    def after_journal(self) -> None:
        self.journaled += 1
        if self.n and not self.before_journal and self.journaled == self.n:
            self._die()


class Context:
    """Everything effects need: the plan, the goal folder, frozen objects, targets, clock, flags."""

    def __init__(self, plan: ReleasePlan, folder: Path, created_at: datetime, clock: Clock,
                 allow_retag: bool, recorder: Recorder) -> None:
        self.plan = plan
        self.folder = folder
        self.objects = ObjectStore(folder / "objects")
        self.created_at = created_at
        self.clock = clock
        self.allow_retag = allow_retag
        self.recorder = recorder
        self.materials: dict[str, dict[str, Any]] = {}
        self._writers: dict[str, Target] = {}
        self._readers: dict[str, Target] = {}

    @property
    def created_stamp(self) -> str:
        """The `org.opencontainers.image.created` stamp of everything this goal builds."""
        return self.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _open(self, repo: str) -> Target:
        target, _ = open_target(repo, self.plan.remote_options(repo), create=True)
        self.recorder.attach(target)
        return target

    def writer(self, repo: str) -> Target:
        """The target writes go through."""
        if repo not in self._writers:
            self._writers[repo] = self._open(repo)
        return self._writers[repo]

    def reader(self, repo: str) -> Target:
        """A separate target instance for read-backs (no manifest cache shared with the writer)."""
        if repo not in self._readers:
            self._readers[repo] = self._open(repo)
        return self._readers[repo]

    def release(self, name: str) -> Release:
        for rel in self.plan.releases:
            if rel.input.name == name:
                return rel
        raise InvalidInput(f"no artifact {name!r} in the plan")

    def material(self, name: str) -> dict[str, Any]:
        m = self.materials.get(name)
        if m is None:
            raise InvalidInput(f"artifact {name} has not been prepared")
        return m

    def subject(self, name: str) -> tuple[Descriptor, bytes, Manifest]:
        """The artifact manifest's descriptor, frozen bytes and parsed form."""
        m = self.material(name)["manifest"]
        data = self.objects.get(m["digest"])
        return (Descriptor(OCI_MANIFEST, m["digest"], m["size"]), data,
                parse_manifest(data, media_type=OCI_MANIFEST, where=m["digest"]))


# ---- effects ---------------------------------------------------------------------------------


def _repo_name(repo: str) -> str:
    return parse_reference(repo).repo_string()


def _prepare(ctx: Context, e: Effect) -> Result:
    """Build (if a recipe), verify the input, check it against the acceptance policy, and freeze the
    artifact, its manifest, and the signed attestations for every destination."""
    from acxoci.artifact import build, gather
    from acxoci.attestation.content import cartridge_facts, embedded_envelope
    from acxoci.attestation.signing import bundle_bytes, envelope_bytes, sign_statement
    from acxoci.attestation.statements import (
        cartridge_statement,
        graph_facts,
        graph_statement,
        workflow_facts,
        workflow_statement,
    )
    from acxoci.install import checks as C
    from acxoci.install.judge import cartridge_signature
    from acxoci.install.vpolicy import load_policy

    assert e.artifact is not None
    rel = ctx.release(e.artifact)
    now = ctx.clock()
    policy = load_policy(ctx.plan.policy, now=now)
    path: Path
    evidence: dict[str, Any] = {}
    if rel.input.kind == "build":
        from acxoci.cartridge.build import build_cartridge

        recipe = rel.input.build
        assert recipe is not None
        out = ctx.folder / "build" / f"{rel.input.name}.acx"
        out.parent.mkdir(parents=True, exist_ok=True)
        built_file = build_cartridge(recipe.package, out, publisher=recipe.publisher, key=recipe.key.load(),
                                     created_at=recipe.created_at, now=now)
        path = built_file.path
        evidence["built"] = {"from": str(recipe.package), "createdAt": recipe.created_at}
    else:
        assert rel.input.path is not None
        path = rel.input.path
    facts = gather(path, verify=True, registry=policy.combined_registry(), now=now)
    path = facts.path  # the real path gather bound to the file's identity: no symlink to retarget
    if facts.kind != rel.input.artifact_kind:
        raise InvalidInput(f"input is a {facts.kind}, the plan says {rel.input.artifact_kind}",
                           where=str(path))
    if facts.kind == "cartridge":
        sig, _ = cartridge_signature(path, policy, now)
        refused = [r for r in (C.check_signature(sig), C.check_trust(sig, policy, now)) if r.failed]
        if refused:
            raise fail("validation_failed", "the acceptance policy would refuse this input: "
                       + "; ".join(f"{r.id}: {r.reason}" for r in refused),
                       checks=[r.to_json() for r in refused])
        evidence["precheck"] = {"signature": "pass", "trust": "pass", "publisherId": sig.publisher_id,
                                "romDigest": sig.rom_digest}
    built = build(facts)
    file_digest = ctx.objects.put_file(path)
    if facts.identity is not None:  # the copy published from is the file hashed and verified
        require_unchanged(path, facts.identity, doing="it was being copied for publishing")
    if file_digest != facts.digest:
        raise Tampered("input changed while it was being prepared", where=str(path))
    # from here on only the frozen copy is read: the input may change now, what is attested
    # (facts, embedded envelope) must be the bytes published
    path = ctx.objects.path(file_digest)
    ctx.objects.put(b"{}")
    ctx.objects.put(built.data)
    subject = built.descriptor
    layer = built.blobs[1]
    materials: dict[str, Any] = {
        "kind": facts.kind, "file": file_digest, "policyDigest": policy.digest,
        "manifest": {"digest": subject.digest, "size": subject.size},
        "content": {"digest": layer.digest, "size": layer.size, "mediaType": layer.media_type},
        "attestations": {}, "envelope": None, "credential": None, "predicateType": None,
    }
    if ctx.plan.formats:
        assert ctx.plan.attestation_key is not None
        key = ctx.plan.attestation_key.load()
        pub = key.public()
        for dest in rel.to:
            name = _repo_name(dest.repository)
            if facts.kind == "cartridge":
                stmt = cartridge_statement(subject.digest, name, cartridge_facts(path, layer.digest, now=now))
            elif facts.kind == "agent-graph":
                stmt = graph_statement(subject.digest, name, graph_facts(path.read_bytes(), layer.digest))
            else:
                wf = workflow_facts(path.read_bytes(), layer.digest)
                stmt = workflow_statement(subject.digest, name, wf)
            materials["predicateType"] = stmt.predicate_type
            signed: dict[str, str] = {}
            if "legacy" in ctx.plan.formats:
                env_doc = envelope_bytes(sign_statement(stmt, key, keyid=pub.keyid()))
                signed["legacy"] = ctx.objects.put(env_doc)
            if "bundle" in ctx.plan.formats:
                signed["bundle"] = ctx.objects.put(bundle_bytes(sign_statement(stmt, key, keyid=None), pub))
            materials["attestations"][dest.repository] = signed
        materials["attestationKeyId"] = pub.keyid()
    if facts.kind == "cartridge" and ctx.plan.envelope:
        env = embedded_envelope(path)
        materials["envelope"] = ctx.objects.put(env) if env is not None else None
    if rel.level_credential is not None:
        cred = _read_json(rel.level_credential, "level credential")
        result = (cred.get("credentialSubject") or {}).get("result") or [{}]
        bound = result[0].get("acx:cartridgeRomDigest") if isinstance(result[0], dict) else None
        if facts.rom_digest is not None and bound != facts.rom_digest:
            raise fail("validation_failed", f"level credential is bound to ROM {bound}, the cartridge is "
                       f"{facts.rom_digest}", credential=str(rel.level_credential))
        materials["credential"] = ctx.objects.put(jcs(cred))
    # read-back: every frozen object re-hashes to its digest
    frozen = [file_digest, subject.digest]
    frozen += [d for signed_map in materials["attestations"].values() for d in signed_map.values()]
    frozen += [d for d in (materials["envelope"], materials["credential"]) if d]
    for d in frozen:
        ctx.objects.verify_file(d)
    ctx.materials[e.artifact] = materials
    evidence.update(materials=materials, frozenObjects=len(frozen), romDigest=facts.rom_digest,
                    verdict=(facts.verdict or {}).get("trust") if facts.verdict else None)
    return Result(False, evidence, {"local": True})


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        doc = loads_strict(path.read_bytes())
    except FileNotFoundError as exc:
        raise NotFound(f"{what} not found", where=str(path)) from exc
    except AcxError:
        raise
    except Exception as exc:
        raise InvalidInput(f"{what} is not valid JSON: {exc}", where=str(path)) from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"{what} is not a JSON object", where=str(path))
    return doc


def _read_back_blob(ctx: Context, repo: str, desc: Descriptor) -> dict[str, Any]:
    """Fetch the blob through the reader and hash it completely (not just HEAD)."""
    try:
        with ctx.reader(repo).fetch(desc.plain()) as reader:
            n = 0
            for chunk in reader.chunks():
                n += len(chunk)
            if not reader.verified:
                raise fail("readback_mismatch", "blob read-back ended without verification",
                           digest=desc.digest)
    except NotFound as exc:
        raise fail("writeback_failed", f"blob {desc.digest} is not in {repo} after the write") from exc
    except Tampered as exc:
        raise fail("readback_mismatch", f"registry serves other bytes for {desc.digest}: {exc.one_line()}",
                   digest=desc.digest) from exc
    return {"digest": desc.digest, "size": n, "proof": "fetched and re-hashed"}


def _push_blob(ctx: Context, e: Effect) -> Result:
    assert e.artifact is not None and e.repository is not None
    _, _, manifest = ctx.subject(e.artifact)
    if e.params.get("role") == "config":
        assert manifest.config is not None
        desc = manifest.config.plain()
    else:
        c = ctx.material(e.artifact)["content"]
        desc = Descriptor(c["mediaType"], c["digest"], c["size"])
    target = ctx.writer(e.repository)
    wrote = False
    if not target.exists(desc):
        with ctx.objects.path(desc.digest).open("rb") as fh:
            target.push(desc, fh)
        wrote = True
    evidence = _read_back_blob(ctx, e.repository, desc)
    return Result(wrote, evidence, {"action": "pushed" if wrote else "present"})


def _read_back_manifest(ctx: Context, repo: str, desc: Descriptor, data: bytes) -> dict[str, Any]:
    try:
        got = fetch_bytes(ctx.reader(repo), desc)
    except NotFound as exc:
        raise fail("writeback_failed", f"manifest {desc.digest} is not in {repo} after the write") from exc
    except Tampered as exc:
        raise fail("readback_mismatch", f"registry serves other bytes for {desc.digest}: {exc.one_line()}",
                   digest=desc.digest) from exc
    if got != data:
        raise fail("readback_mismatch", "manifest read back differs from what was written",
                   digest=desc.digest)
    return {"digest": desc.digest, "size": len(got), "proof": "manifest fetched by digest, bytes identical"}


def _push_manifest(ctx: Context, e: Effect) -> Result:
    assert e.artifact is not None and e.repository is not None
    desc, data, _ = ctx.subject(e.artifact)
    target = ctx.writer(e.repository)
    wrote = False
    if not target.exists(desc):
        target.push(desc, io.BytesIO(data))
        wrote = True
    ev = _read_back_manifest(ctx, e.repository, desc, data)
    return Result(wrote, ev, {"action": "pushed" if wrote else "present"})


def _resolve_or_none(target: Target, ref: str) -> Descriptor | None:
    try:
        return target.resolve(ref)
    except NotFound:
        return None


def _tag(ctx: Context, e: Effect) -> Result:
    assert e.artifact is not None and e.repository is not None
    tag = e.params["tag"]
    desc, _, _ = ctx.subject(e.artifact)
    target = ctx.writer(e.repository)
    cur = _resolve_or_none(ctx.reader(e.repository), tag)
    receipt: dict[str, Any] = {"previous": cur.digest if cur else None}
    wrote = False
    if cur is None or cur.digest != desc.digest:
        if cur is not None and not ctx.allow_retag:
            raise fail("gate", f":{tag} already points at {cur.digest}; moving it to {desc.digest} needs "
                       "--allow-retag", tag=tag, current=cur.digest, wanted=desc.digest)
        target.tag(desc, tag)
        wrote = True
    receipt["action"] = "tagged" if wrote else "already-tagged"
    now = _resolve_or_none(ctx.reader(e.repository), tag)
    if now is None:
        raise fail("writeback_failed", f":{tag} does not resolve after tagging", tag=tag)
    if now.digest != desc.digest:
        raise fail("readback_mismatch", f":{tag} resolves to {now.digest}, expected {desc.digest}", tag=tag,
                   current=now.digest, wanted=desc.digest)
    return Result(wrote, {"tag": tag, "resolves": now.digest, "proof": "tag resolved by HEAD"}, receipt)


def _push_built(target: Target, blobs: list[tuple[Descriptor, bytes]], manifest: Descriptor,
                data: bytes) -> None:
    for desc, body in blobs:
        if not target.exists(desc):
            target.push(desc, io.BytesIO(body))
    target.push(manifest, io.BytesIO(data))


def _referrer_count(ctx: Context, repo: str, subject: Descriptor, digest: str) -> int:
    return sum(1 for r in ctx.reader(repo).referrers(subject.plain()) if r.digest == digest)


def _attach_referrer(ctx: Context, e: Effect, subject: Descriptor, blobs: list[tuple[Descriptor, bytes]],
                     manifest: Descriptor, data: bytes, what: str) -> Result:
    """Idempotently attach one referrer manifest and prove it is listed exactly once."""
    assert e.repository is not None
    wrote = False
    if _referrer_count(ctx, e.repository, subject, manifest.digest) == 0:
        _push_built(ctx.writer(e.repository), blobs, manifest, data)
        wrote = True
    _read_back_manifest(ctx, e.repository, manifest, data)
    n = _referrer_count(ctx, e.repository, subject, manifest.digest)
    if n == 0:
        raise fail("writeback_failed",
                   f"{what} {manifest.digest} is not listed as a referrer of {subject.digest}")
    if n > 1:
        raise fail("readback_mismatch", f"{what} {manifest.digest} is listed {n} times",
                   digest=manifest.digest)
    return Result(wrote, {"referrer": manifest.digest, "subject": subject.digest, "listed": n,
                          "proof": "listed once in the referrers of the subject; manifest re-fetched"},
                  {"action": "attached" if wrote else "present"})


def _blob(data: bytes, media_type: str) -> tuple[Descriptor, bytes]:
    from acxoci.oci.descriptor import descriptor_for

    return descriptor_for(data, media_type).plain(), data


def _attach_attestation(ctx: Context, e: Effect) -> Result:
    from acxoci.attestation.formats import (
        build_bundle_referrer,
        build_legacy_manifest,
        legacy_layer,
        legacy_layers,
        legacy_tag,
    )

    assert e.artifact is not None and e.repository is not None
    subject, _, _ = ctx.subject(e.artifact)
    mat = ctx.material(e.artifact)
    fmt = e.params["format"]
    doc = ctx.objects.get(mat["attestations"][e.repository][fmt])
    ptype = str(mat["predicateType"])
    if fmt == "bundle":
        built = build_bundle_referrer(doc, subject.plain(), ptype, created=ctx.created_stamp)
        blobs = [(b.desc.plain(), b.data) for b in built.blobs]
        return _attach_referrer(ctx, e, subject, blobs, built.manifest.desc.plain(), built.manifest.data,
                                "bundle attestation")
    layer, data = legacy_layer(doc, ptype)
    tag = legacy_tag(subject.digest)
    reader = ctx.reader(e.repository)

    def current() -> tuple[Descriptor | None, list[Any]]:
        d = _resolve_or_none(reader, tag)
        return d, (legacy_layers(fetch_manifest(reader, d)) if d is not None else [])

    old_desc, layers = current()
    wrote = False
    replaced = 0
    if not any(la.desc.digest == layer.desc.digest for la in layers):
        keep = [la for la in layers if la.predicate_type != ptype]
        replaced = len(layers) - len(keep)
        built = build_legacy_manifest([*keep, layer])
        target = ctx.writer(e.repository)
        blobs = [(layer.desc.plain(), data), *((b.desc.plain(), b.data) for b in built.blobs)]
        mdesc = built.manifest.desc.plain()
        _push_built(target, blobs, mdesc, built.manifest.data)
        target.tag(mdesc, tag)
        wrote = True
    new_desc, layers = current()
    hits = [la for la in layers if la.desc.digest == layer.desc.digest]
    if new_desc is None or not hits:
        raise fail("writeback_failed", f"{tag} does not carry the attestation after the write", tag=tag)
    if len(hits) > 1:
        raise fail("readback_mismatch", f"{tag} carries the attestation {len(hits)} times", tag=tag)
    _read_back_blob(ctx, e.repository, layer.desc.plain())
    evidence = {"tag": tag, "manifest": new_desc.digest, "layer": layer.desc.digest, "layers": len(layers),
                "proof": ".att tag resolved, layer listed once and re-hashed"}
    receipt = {"action": "attached" if wrote else "present",
               "previous": old_desc.digest if old_desc else None, "replacedLayers": replaced}
    return Result(wrote, evidence, receipt)


def _attach_envelope(ctx: Context, e: Effect) -> Result:
    from acxoci.attestation.formats import build_envelope_referrer

    assert e.artifact is not None
    subject, _, _ = ctx.subject(e.artifact)
    digest = ctx.material(e.artifact).get("envelope")
    if not digest:
        return Result(False, {"skipped": "the cartridge carries no embedded DSSE envelope"},
                      {"action": "none"})
    built = build_envelope_referrer(ctx.objects.get(digest), subject.plain(), created=ctx.created_stamp)
    blobs = [(b.desc.plain(), b.data) for b in built.blobs]
    return _attach_referrer(ctx, e, subject, blobs, built.manifest.desc.plain(), built.manifest.data,
                            "envelope referrer")


def _scratch_layout() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="acx-release-scratch-")


def _attach_credential(ctx: Context, e: Effect) -> Result:
    """Attach the level credential with the level package's own writer; its exact manifest is first
    computed by running that writer against a scratch layout (same inputs, same bytes)."""
    from acxoci.level.oci import attach_credential
    from acxoci.oci.layout import LayoutStore

    assert e.artifact is not None and e.repository is not None
    subject, _, _ = ctx.subject(e.artifact)
    cred = loads_strict(ctx.objects.get(ctx.material(e.artifact)["credential"]))
    with _scratch_layout() as tmp:
        expected = attach_credential(LayoutStore(Path(tmp), create=True), subject.plain(), cred,
                                     now=ctx.created_at)
    wrote = False
    if _referrer_count(ctx, e.repository, subject, expected.digest) == 0:
        got = attach_credential(ctx.writer(e.repository), subject.plain(), cred, now=ctx.created_at)
        wrote = True
        if got.digest != expected.digest:
            raise fail("readback_mismatch", f"credential referrer came out as {got.digest}, expected "
                       f"{expected.digest}")
    n = _referrer_count(ctx, e.repository, subject, expected.digest)
    if n == 0:
        raise fail("writeback_failed", f"credential referrer {expected.digest} is not listed")
    if n > 1:
        raise fail("readback_mismatch", f"credential referrer listed {n} times")
    fetch_manifest(ctx.reader(e.repository), expected)
    return Result(wrote, {"referrer": expected.digest, "subject": subject.digest, "listed": n,
                          "proof": "listed once in the referrers of the subject; manifest re-fetched"},
                  {"action": "attached" if wrote else "present"})


def _valid_from(doc: dict[str, Any]) -> datetime | None:
    v = doc.get("validFrom")
    try:
        return datetime.fromisoformat(str(v).replace("Z", "+00:00")) if v else None
    except ValueError:
        return None


def _publish_status_list(ctx: Context, e: Effect) -> Result:
    """Publish the status list under its moving tag; moving it over a list that is as new or newer
    (which could un-revoke credentials) is a gate."""
    from acxoci.level.oci import fetch_status_list, publish_status_list

    assert e.repository is not None and ctx.plan.status_list is not None
    tag = e.params["tag"]
    doc = _read_json(ctx.plan.status_list.path, "status list")
    with _scratch_layout() as tmp:
        expected, _ = publish_status_list(f"oci-layout:{tmp}:{tag}", doc, now=ctx.created_at)
    ref = f"{e.repository}:{tag}"
    opts = ctx.plan.remote_options(e.repository)
    cur = _resolve_or_none(ctx.reader(e.repository), tag)
    receipt: dict[str, Any] = {"previous": cur.digest if cur else None}
    wrote = False
    if cur is None or cur.digest != expected.digest:
        if cur is not None and not ctx.allow_retag:
            theirs = _valid_from(fetch_status_list(ref, options=opts))
            ours = _valid_from(doc)
            if theirs is None or ours is None or theirs >= ours:
                raise fail("gate", f":{tag} holds a status list valid from {theirs}, not older than this one "
                           f"({ours}); replacing it could undo a revocation; needs --allow-retag",
                           tag=tag, current=cur.digest, wanted=expected.digest)
        publish_status_list(ref, doc, now=ctx.created_at, options=opts)
        wrote = True
    receipt["action"] = "published" if wrote else "present"
    now = _resolve_or_none(ctx.reader(e.repository), tag)
    if now is None:
        raise fail("writeback_failed", f":{tag} does not resolve after publishing")
    if now.digest != expected.digest:
        raise fail("readback_mismatch", f":{tag} resolves to {now.digest}, expected {expected.digest}")
    back = fetch_status_list(ref, options=opts)
    if jcs(back) != jcs(doc):
        raise fail("readback_mismatch", "status list read back differs from the published one")
    return Result(wrote, {"tag": tag, "resolves": now.digest, "listId": doc.get("id"),
                          "proof": "tag resolved, list fetched and equal (JCS)"}, receipt)


def _verify(ctx: Context, e: Effect) -> Result:
    """The acceptance read-back: every tag resolves to the artifact, and `acx install`'s checks pass
    under the plan's verification policy (installing into a throwaway store)."""
    from acxoci.install.install import install
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy

    assert e.artifact is not None and e.repository is not None
    subject, _, _ = ctx.subject(e.artifact)
    tags = [t for t in e.params.get("tags", "").split(",") if t]
    reader = ctx.reader(e.repository)
    for tag in tags:
        got = _resolve_or_none(reader, tag)
        if got is None or got.digest != subject.digest:
            where_to = got.digest if got else "nothing"
            raise fail("readback_mismatch", f":{tag} resolves to {where_to}, expected {subject.digest}",
                       tag=tag)
    now = ctx.clock()
    policy = load_policy(ctx.plan.policy, now=now)
    # the plan names its policy by path: the read-back must judge under the policy prepare checked
    prepared = (ctx.materials.get(e.artifact) or {}).get("policyDigest")
    if prepared != policy.digest:
        raise fail("validation_failed", f"the acceptance policy changed since prepare (prepared under "
                   f"{prepared}, now {policy.digest}): start a new goal to release under the new policy",
                   policy=policy.digest)
    with tempfile.TemporaryDirectory(prefix="acx-release-accept-") as tmp:
        outcome = install(f"{e.repository}@{subject.digest}", policy=policy, store=Store(Path(tmp) / "store"),
                          now=now, remote=ctx.plan.remote_options(e.repository))
    checks = {c.id: c.status for c in outcome.checks}
    if outcome.status != "installed":
        failed = outcome.failed
        cls: FailureClass = ("readback_mismatch" if any(c.id == "content-digest" for c in failed)
                             else "validation_failed")
        raise fail(cls, "acceptance read-back refused: " + "; ".join(f"{c.id}: {c.reason}" for c in failed),
                   checks=[c.to_json() for c in failed], policy=policy.digest)
    found = next((c.details.get("found") for c in outcome.checks if c.id == "attestations"), None)
    return Result(False, {"acceptance": "installable",
                          "policy": {"source": policy.source, "digest": policy.digest},
                          "checks": checks, "attestations": found, "tags": tags, "digest": subject.digest,
                          "proof": "acx install checks passed against the registry copy"})


EXECUTORS: dict[str, Callable[[Context, Effect], Result]] = {
    "prepare": _prepare, "push_blob": _push_blob, "push_manifest": _push_manifest, "tag": _tag,
    "attach_attestation": _attach_attestation, "attach_envelope": _attach_envelope,
    "attach_credential": _attach_credential, "publish_status_list": _publish_status_list, "verify": _verify,
}


# ---- the run loop ------------------------------------------------------------------------------


def open_goal(plan: ReleasePlan, journal: Journal, now: datetime) -> dict[str, Any]:
    """The goal entry: written on the first run; later runs check the plan is still the same one."""
    entries = journal.entries()
    if not entries:
        return journal.append({"type": "goal", "goal": plan.goal_id, "planPath": str(plan.path),
                               "planDigest": plan.digest, "createdAt": iso(now),
                               "effects": [e.to_json() for e in plan_effects(plan)]}, now=now)
    g = goal_entry(entries, str(journal.path))
    if g.get("goal") != plan.goal_id or g.get("planDigest") != plan.digest:
        raise Blocked(f"the plan changed since goal {plan.goal_id} was opened "
                      f"(digest {g.get('planDigest')}); release the changed plan under a new goal id",
                      where=str(plan.path))
    return g


def write_status_cache(folder: Path, status: GoalStatus) -> None:
    """Rewrite the cached projection `status.json` (atomic); nothing ever reads it back as truth."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{STATUS_CACHE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(status.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, folder / STATUS_CACHE)


def _materials_from(status: GoalStatus) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for es in status.effects:
        if es.effect.kind == "prepare" and es.state == "done" and es.evidence and es.effect.artifact:
            out[es.effect.artifact] = dict(es.evidence["materials"])
    return out


def run_goal(plan: ReleasePlan, *, root: Path | None = None, runner: str | None = None,
             allow_retag: bool = False, clock: Clock = utc_now,
             sleep: Callable[[float], None] = time.sleep) -> RunReport:
    """Execute every runnable effect of the plan's goal (resuming from its journal) and return the
    projection. Writes only while holding the goal's lease."""
    folder = goal_dir(plan.goal_id, root)
    folder.mkdir(parents=True, exist_ok=True)
    lease = GoalLease(folder, runner or default_runner_id(), plan.lease_seconds)
    previous = lease.acquire(clock())
    try:
        journal = Journal.for_goal(folder)
        g = open_goal(plan, journal, clock())
        created = datetime.fromisoformat(str(g["createdAt"]).replace("Z", "+00:00"))
        killer = _Killer()
        journal.append({"type": "run", "event": "start", "runner": lease.runner, "allowRetag": allow_retag,
                        **({"tookOverFrom": previous.runner} if previous else {})}, now=clock())
        status = project(journal.entries(), str(journal.path))
        for es in status.effects:
            if es.state in ("blocked", "deferred") and es.failure and es.failure.cls in REOPEN_ON_RESUME:
                journal.append({"type": "effect", "effect": es.effect.id, "from": es.state, "to": "open",
                                "reason": f"reopened by run of {lease.runner}"}, now=clock())
        status = project(journal.entries(), str(journal.path))
        states: dict[str, State] = {es.effect.id: es.state for es in status.effects}
        recorder = Recorder()
        ctx = Context(plan, folder, created, clock, allow_retag, recorder)
        ctx.materials = _materials_from(status)
        executed = writes = http_writes = 0
        try:
            for es in status.effects:
                eff = es.effect
                if states[eff.id] != "open" or any(states.get(d) != "done" for d in eff.deps):
                    continue
                executed += 1
                state, wrote, hw = _execute(ctx, journal, eff, killer, sleep)
                states[eff.id] = state
                writes += int(wrote)
                http_writes += hw
                lease.renew(clock())
        finally:
            recorder.detach()
        final = project(journal.entries(), str(journal.path))
        report = RunReport(final, executed, writes, http_writes, previous.runner if previous else None)
        journal.append({"type": "run", "event": "end", "runner": lease.runner, "executed": executed,
                        "writes": writes, "httpWrites": http_writes, "outcome": final.state}, now=clock())
        final = project(journal.entries(), str(journal.path))
        write_status_cache(folder, final)
        return RunReport(final, report.executed, report.writes, report.http_writes, report.took_over)
    finally:
        lease.release()


def _execute(ctx: Context, journal: Journal, eff: Effect, killer: _Killer,
             sleep: Callable[[float], None]) -> tuple[State, bool, int]:
    """Run one effect with the recovery its failure class allows; journal every transition."""
    attempt = 0
    http_writes = 0
    wrote_any = False
    while True:
        attempt += 1
        ctx.recorder.begin()
        failure: Failure | None = None
        result: Result | None = None
        try:
            result = EXECUTORS[eff.kind](ctx, eff)
        except Exception as exc:
            failure = classify(exc)
        seen = ctx.recorder.end()
        receipt = http_receipt(seen)
        http_writes += int(receipt["httpWrites"])
        killer.after_work()
        entry: dict[str, Any] = {"type": "effect", "effect": eff.id, "from": "open", "attempt": attempt}
        if result is not None:
            wrote_any = wrote_any or result.wrote
            journal.append({**entry, "to": "done", "wrote": result.wrote,
                            "receipt": {**result.receipt, **receipt}, "evidence": result.evidence},
                           now=ctx.clock())
            killer.after_journal()
            return "done", wrote_any, http_writes
        assert failure is not None
        d = decide(failure, attempt, ctx.plan.budget)
        journal.append({**entry, "to": d.state, "wrote": bool(receipt["httpWrites"]), "receipt": receipt,
                        "failure": failure.to_json(), **({"retryIn": d.delay} if d.retry else {})},
                       now=ctx.clock())
        killer.after_journal()
        if not d.retry:
            return d.state, wrote_any, http_writes
        sleep(d.delay)


def resume_goal(goal_id: str, *, root: Path | None = None, runner: str | None = None,
                allow_retag: bool = False, clock: Clock = utc_now) -> RunReport:
    """Resume a goal from its journal: reload the plan it was opened with and run it again."""
    folder = goal_dir(goal_id, root)
    journal = Journal.for_goal(folder)
    if not journal.exists:
        raise NotFound(f"no release goal {goal_id!r}", where=str(folder))
    g = goal_entry(journal.entries(), str(journal.path))
    plan = load_plan(Path(str(g["planPath"])))
    return run_goal(plan, root=root, runner=runner, allow_retag=allow_retag, clock=clock)


def goal_status(goal_id: str, *, root: Path | None = None, refresh_cache: bool = True) -> GoalStatus:
    """The projection of a goal from its journal alone (optionally rewriting the cached copy)."""
    folder = goal_dir(goal_id, root)
    journal = Journal.for_goal(folder)
    if not journal.exists:
        raise NotFound(f"no release goal {goal_id!r}", where=str(folder))
    status = project(journal.entries(), str(journal.path))
    if refresh_cache:
        write_status_cache(folder, status)
    return status
