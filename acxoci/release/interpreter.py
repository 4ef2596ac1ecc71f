"""The release interpreter: executes a goal's todos one at a time under the goal's lease, and
appends every transition to the journal.

Rules it enforces (LoopX's control-plane discipline):
- idempotent effects: HEAD/resolve/list before any write; what is already there is not written
  again (a referrer already listed is not pushed again; a tag already right is not re-put);
- a receipt (the registry answered 201) is recorded but never closes an effect: an effect is
  `done` only when a read-back (through a separate, uncached reader) proves the domain result;
- failures are classified (`failures.py`) and each class has its own recovery;
- what to run next is decided from the journal's projection (`status.project`) and the quota
  decision over it (`quota.blocker`), never from a cache;
- every attempt that does remote work is journaled before it (`attempt`) and its spend booked
  after it (`spend`), so a crash in between is found and reconciled (quota_spend_failed), never
  spent twice;
- monitors observe with backoff and escalate; a run waits for a due observation at most
  `observe.waitSeconds`;
- the goal is done only when the terminal audit (`audit.py`), which includes the acceptance
  read-back of every published reference, passes; a run that makes no progress twice stops the
  goal (repair_required / replan_required) instead of retrying.

`OBSERVERS` is the run loop's one seam for watching it from outside (progress displays, and the
tests, which install an observer that kills the process at a chosen point to prove resume).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from pathlib import Path
from typing import Any, Protocol

import msgspec

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.errors import (
    AcxError,
    AuthError,
    Blocked,
    InvalidInput,
    NotFound,
    Tampered,
    TransientError,
    UsageError,
)
from acxoci.fsutil import atomic_write, read_bytes, require_real_folders, require_unchanged
from acxoci.oci.descriptor import OCI_MANIFEST, Descriptor, Manifest, parse_manifest
from acxoci.oci.reference import parse_reference
from acxoci.oci.retry import retry_after_seconds
from acxoci.oci.target import Target, fetch_bytes, fetch_manifest, open_target
from acxoci.release.audit import Audit, stale_monitors, terminal_audit
from acxoci.release.effects import Continuation, Effect, plan_effects
from acxoci.release.failures import (
    REOPEN_ON_RESUME,
    EffectFailed,
    Failure,
    FailureClass,
    State,
    classify,
    decide,
    fail,
    stop_class,
)
from acxoci.release.journal import (
    ApprovalEntry,
    AttemptEntry,
    AuthoritySource,
    CloseoutEntry,
    EffectEntry,
    Entry,
    GoalEntry,
    GoalIdentity,
    Guard,
    Journal,
    ObservationEntry,
    PauseEntry,
    Progress,
    QuotaRecord,
    RepairEntry,
    RunEntry,
    SignalEntry,
    SpendEntry,
    StopEntry,
    UnpauseEntry,
    VoidEntry,
    goal_folder,
    iso,
    parse_iso,
)
from acxoci.release.lease import GoalLease, default_runner_id
from acxoci.release.monitors import Seen, compare, fresh_within, targets_of
from acxoci.release.monitors import judge as judge_observation
from acxoci.release.objects import ObjectStore, Recorder, http_receipt, spend_by_host
from acxoci.release.plan import Release, ReleasePlan, load_plan, plain
from acxoci.release.providers import Verdict, accept, probe, read_back, status_list_facts
from acxoci.release.quota import QuotaInputs, blocker, spend_window
from acxoci.release.status import GoalStatus, goal_entry, previous_targets, project

STATUS_CACHE = "status.json"
Clock = Callable[[], datetime]
DEFAULT_RETRY_AFTER = 60.0
MAX_RETRY_AFTER = 24 * 3600.0
"""A registry's Retry-After is honoured up to a day (a larger one is a registry's mistake or a trap)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class RunObserver(Protocol):
    """Watches a run: after an attempt's remote work (before anything about it is journaled), and
    after every journal entry the run appends."""

    def after_work(self, effect_id: str) -> None: ...

    def after_entry(self, entry: Entry) -> None: ...


OBSERVERS: list[RunObserver] = []
"""Process-wide observers of every run (acxoci itself registers none)."""


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
        """0 done; 9 a person must act (blocked, gated, paused, stopped); 5 blocked on credentials
        only; 6 retry later (host failures, throttled, waiting for a monitor, closeout to redo)."""
        s = self.status
        if s.state == "done":
            return 0
        if s.stop is not None or s.paused is not None or s.quota.state == "operator_gate":
            return Blocked.exit_code
        blocked = [e for e in s.effects if e.state == "blocked"]
        if blocked:
            if all(e.failure is not None and e.failure.cls == "auth_failure" for e in blocked):
                return AuthError.exit_code
            return Blocked.exit_code
        return TransientError.exit_code

    def to_json(self) -> dict[str, Any]:
        return {"executed": self.executed, "writes": self.writes, "httpWrites": self.http_writes,
                "exitCode": self.exit_code(), "tookOverLeaseFrom": self.took_over, **self.status.to_json()}


class Ref(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    digest: str
    size: int


class ContentRef(Ref, rename="camel", frozen=True, kw_only=True):
    media_type: str


class Materials(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """What `prepare` froze for one artifact (its evidence, decoded again by later runs)."""

    kind: str
    file: str
    policy_digest: str
    manifest: Ref
    content: ContentRef
    attestations: dict[str, dict[str, str]] = {}
    envelope: str | None = None
    credential: str | None = None
    predicate_type: str | None = None
    attestation_key_id: str | None = None


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
        self.materials: dict[str, Materials] = {}
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

    def observed(self, repo: str) -> Target:
        """A target the release only observes (a mirror): opened read-only, never created."""
        key = f"observe:{repo}"
        if key not in self._readers:
            target, _ = open_target(repo, self.plan.remote_options(repo), create=False)
            self.recorder.attach(target)
            self._readers[key] = target
        return self._readers[key]

    def release(self, name: str) -> Release:
        for rel in self.plan.releases:
            if rel.input.name == name:
                return rel
        raise InvalidInput(f"no artifact {name!r} in the plan")

    def material(self, name: str) -> Materials:
        m = self.materials.get(name)
        if m is None:
            raise InvalidInput(f"artifact {name} has not been prepared")
        return m

    def subject(self, name: str) -> tuple[Descriptor, bytes, Manifest]:
        """The artifact manifest's descriptor, frozen bytes and parsed form."""
        m = self.material(name).manifest
        data = self.objects.get(m.digest)
        return (Descriptor(OCI_MANIFEST, m.digest, m.size), data,
                parse_manifest(data, media_type=OCI_MANIFEST, where=m.digest))


# ---- effects ---------------------------------------------------------------------------------


def _repo_name(repo: str) -> str:
    return parse_reference(repo).repo_string()


def _prepare(ctx: Context, e: Effect) -> Result:
    """Build (if a recipe), verify the input, check it against the acceptance policy, and freeze the
    artifact, its manifest, and the signed attestations for every destination."""
    from acxoci.artifact import build, gather
    from acxoci.attestation.content import cartridge_facts, embedded_envelope
    from acxoci.attestation.statements import (
        cartridge_statement,
        graph_facts,
        graph_statement,
        workflow_facts,
        workflow_statement,
    )
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
        require_real_folders(ctx.folder, f"build/{out.name}", "goal folder")
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
    evidence["precheck"] = precheck(path, facts.kind, rel, policy, now)
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
    attestations: dict[str, dict[str, str]] = {}
    predicate_type: str | None = None
    key_id: str | None = None
    envelope: str | None = None
    credential: str | None = None
    if ctx.plan.formats:
        from acxoci.attestation.attach import sign_for_formats
        from acxoci.release.plan import attestation_signer

        assert ctx.plan.attestation_key is not None
        signer = attestation_signer(ctx.plan.attestation_key)
        provenance = _wants_provenance(ctx, signer)
        for dest in rel.to:
            name = _repo_name(dest.repository)
            if facts.kind == "cartridge":
                stmt = cartridge_statement(subject.digest, name, cartridge_facts(path, layer.digest, now=now))
            elif facts.kind == "agent-graph":
                stmt = graph_statement(subject.digest, name, graph_facts(ctx.objects.get(file_digest),
                                                                        layer.digest))
            else:
                wf = workflow_facts(ctx.objects.get(file_digest), layer.digest)
                stmt = workflow_statement(subject.digest, name, wf)
            predicate_type = stmt.predicate_type
            fmts = "both" if len(ctx.plan.formats) == 2 else ctx.plan.formats[0]
            done = sign_for_formats(stmt, signer, fmts)  # type: ignore[arg-type]
            signed: dict[str, str] = {}
            if done.legacy is not None:
                signed["legacy"] = ctx.objects.put(done.legacy)
            if done.bundle is not None:
                signed["bundle"] = ctx.objects.put(done.bundle)
            if provenance:  # SLSA provenance of what this CI run publishes (decision 0036)
                from acxoci.attestation.provenance import github_provenance

                prov = sign_for_formats(github_provenance(subject.digest, name, os.environ), signer, "bundle")
                assert prov.bundle is not None
                signed["provenance"] = ctx.objects.put(prov.bundle)
            attestations[dest.repository] = signed
            key_id = done.signer
        precheck_attestations(ctx.objects, attestations, subject.digest, policy, now,
                              evidence["precheck"].get("publisherId"))
    if facts.kind == "cartridge" and ctx.plan.envelope:
        env = embedded_envelope(path)
        envelope = ctx.objects.put(env) if env is not None else None
    if rel.level_credential is not None:
        cred = _read_json(rel.level_credential, "level credential")
        result = (cred.get("credentialSubject") or {}).get("result") or [{}]
        bound = result[0].get("acx:cartridgeRomDigest") if isinstance(result[0], dict) else None
        if facts.rom_digest is not None and bound != facts.rom_digest:
            raise fail("validation_failed", f"level credential is bound to ROM {bound}, the cartridge is "
                       f"{facts.rom_digest}", credential=str(rel.level_credential))
        credential = ctx.objects.put(jcs(cred))
    # read-back: every frozen object re-hashes to its digest
    materials = Materials(kind=facts.kind, file=file_digest, policy_digest=policy.digest,
                          manifest=Ref(digest=subject.digest, size=subject.size),
                          content=ContentRef(digest=layer.digest, size=layer.size,
                                             media_type=layer.media_type),
                          attestations=attestations, envelope=envelope, credential=credential,
                          predicate_type=predicate_type, attestation_key_id=key_id)
    frozen = [file_digest, subject.digest]
    frozen += [d for signed_map in attestations.values() for d in signed_map.values()]
    frozen += [d for d in (envelope, credential) if d]
    for d in frozen:
        ctx.objects.verify_file(d)
    ctx.materials[e.artifact] = materials
    evidence.update(materials=plain(materials), frozenObjects=len(frozen), romDigest=facts.rom_digest,
                    verdict=(facts.verdict or {}).get("trust") if facts.verdict else None)
    return Result(False, evidence, {"local": True})


def precheck(path: Path, kind: str, rel: Release, policy: Any, now: datetime) -> dict[str, Any]:
    """Every check of the acceptance decision that can be decided before a byte is written, run by
    the same functions `acx install` (and `acx push`) use: the signature and its trust under the
    policy, a cartridge's package as `cartridge spec` reads it (policy-budget), each destination's
    repository against the policy's registries, and each tag against the signed version (a version
    tag of another version is a rollback to every consumer).
    validation_failed naming every refusal: a doomed release writes nothing (decision 0006)."""
    from acxoci.install import checks as C
    from acxoci.install.judge import (
        HostInputs,
        cartridge_signature,
        gather_budget,
        graph_signature,
        tag_decision,
        workflow_signature,
    )

    if kind == "cartridge":
        sig, _ = cartridge_signature(path, policy, now)
    elif kind == "agent-graph":
        sig, _ = graph_signature(path, policy, now)
    else:
        sig = workflow_signature(path, policy, now)[0]
    results = [C.check_signature(sig), C.check_trust(sig, policy, now)]
    if kind == "cartridge" and not results[0].failed:  # the package as `cartridge spec` reads it
        results.append(C.check_budget(gather_budget(path, HostInputs()), policy))
    for dest in rel.to:
        results.append(C.check_registry(_repo_name(dest.repository), policy))
        results += [tag_decision(path, kind, tag) for tag in dest.tags]
    refused = [r for r in results if r.failed]
    if refused:
        raise fail("validation_failed", "the acceptance policy would refuse this release, so nothing is "
                   "written: " + "; ".join(f"{r.id}: {r.reason}" for r in refused),
                   checks=[r.to_json() for r in refused])
    return {"checks": {r.id: str(r.status) for r in results}, "publisherId": sig.publisher_id,
            "romDigest": sig.rom_digest}


def precheck_attestations(objects: ObjectStore, signed: dict[str, dict[str, str]], subject: str, policy: Any,
                          now: datetime, publisher: str | None) -> None:
    """The acceptance decision's attestation checks over what this release will attach, before it
    is attached: the signed documents judged by `install.judge.rejudge_attestations` (what install
    runs on the attestations it keeps) under the policy. validation_failed when the policy would
    refuse them (a key or identity it does not trust, a format or predicate type it requires)."""
    from acxoci.install import checks as C
    from acxoci.install.judge import rejudge_attestations

    for repo, docs in signed.items():
        with _scratch_layout() as tmp:
            for i, (fmt, digest) in enumerate(sorted(docs.items())):
                kind = "legacy" if fmt == "legacy" else "bundle"  # provenance rides in a bundle
                (Path(tmp) / f"{i:02d}-{kind}.json").write_bytes(objects.get(digest))
            found = rejudge_attestations(Path(tmp), subject, policy, now, publisher)
        checked = (C.check_attestations(found, policy), C.check_provenance_requirement(found, policy))
        refused = [r for r in checked if r.failed]
        if refused:
            raise fail("validation_failed", "the acceptance policy would refuse the attestations this "
                       f"release attaches at {repo}, so nothing is written: "
                       + "; ".join(f"{r.id}: {r.reason}" for r in refused),
                       checks=[r.to_json() for r in refused])


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        doc = loads_strict(read_bytes(path, what))
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
        c = ctx.material(e.artifact).content
        desc = Descriptor(c.media_type, c.digest, c.size)
    target = ctx.writer(e.repository)
    wrote = False
    if not target.exists(desc):
        ctx.objects.verify_file(desc.digest)  # what is uploaded re-hashes to its digest here first
        with ctx.objects.open(desc.digest) as fh:
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
    held = _read_back_ref(ctx, e.repository, tag)
    if held is None:
        raise fail("writeback_failed", f":{tag} does not resolve after tagging", tag=tag)
    if held != desc.digest:
        raise fail("readback_mismatch", f":{tag} resolves to {held}, expected {desc.digest}", tag=tag,
                   current=held, wanted=desc.digest)
    return Result(wrote, {"tag": tag, "resolves": held, "proof": "tag's manifest fetched and re-hashed"},
                  receipt)


def _read_back_ref(ctx: Context, repo: str, ref: str) -> str | None:
    """What `ref` (tag or digest) holds in `repo`, by the one read-back (`providers.read_back`);
    bytes that do not hash to the digest the registry names are readback_mismatch."""
    try:
        return read_back(ctx.reader(repo), ref)
    except Tampered as exc:
        raise fail("readback_mismatch", f"{repo}: {ref} is served as bytes that do not hash to its digest: "
                   f"{exc.one_line()}", ref=ref) from exc


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


def _wants_provenance(ctx: Context, signer: Any) -> bool:
    """Attach SLSA provenance? As the plan says; by default when signing keylessly in GitHub
    Actions. Asked for outside such a run, it is an error (there is no run to describe)."""
    from acxoci.attestation.keyless import KeylessSigner

    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    if ctx.plan.provenance is None:
        return in_actions and isinstance(signer, KeylessSigner)
    if ctx.plan.provenance and not in_actions:
        raise fail("validation_failed", "goal.attestations.provenance is true, but this is not a GitHub "
                   "Actions run (GITHUB_ACTIONS=true): there is no build to describe")
    return bool(ctx.plan.provenance) and "bundle" in ctx.plan.formats


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
    signed = mat.attestations.get(e.repository, {})
    if fmt not in signed or mat.predicate_type is None:
        raise InvalidInput(f"no {fmt} attestation was prepared for {e.repository}", where=e.id)
    doc = ctx.objects.get(signed[fmt])
    ptype = mat.predicate_type
    if fmt == "bundle":
        built = build_bundle_referrer(doc, subject.plain(), ptype, created=ctx.created_stamp)
        blobs = [(b.desc.plain(), b.data) for b in built.blobs]
        result = _attach_referrer(ctx, e, subject, blobs, built.manifest.desc.plain(), built.manifest.data,
                                  "bundle attestation")
        prov_digest = signed.get("provenance")
        if prov_digest is None:
            return result
        from acxoci.attestation.provenance import SLSA_PROVENANCE_V1

        pbuilt = build_bundle_referrer(ctx.objects.get(prov_digest), subject.plain(), SLSA_PROVENANCE_V1,
                                       created=ctx.created_stamp)
        pres = _attach_referrer(ctx, e, subject, [(b.desc.plain(), b.data) for b in pbuilt.blobs],
                                pbuilt.manifest.desc.plain(), pbuilt.manifest.data, "provenance attestation")
        return Result(result.wrote or pres.wrote, {**result.evidence, "provenance": pres.evidence},
                      {**result.receipt, "provenance": pres.receipt})
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
        # attestations are additive, as cosign's: every layer already there stays (other signers'
        # attestations of the same type included)
        built = build_legacy_manifest([*layers, layer])
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
    digest = ctx.material(e.artifact).envelope
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
    frozen_cred = ctx.material(e.artifact).credential
    if frozen_cred is None:
        raise InvalidInput("no level credential was prepared", where=e.id)
    cred = loads_strict(ctx.objects.get(frozen_cred))
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
    held = _read_back_ref(ctx, e.repository, tag)
    if held is None:
        raise fail("writeback_failed", f":{tag} does not resolve after publishing")
    if held != expected.digest:
        raise fail("readback_mismatch", f":{tag} resolves to {held}, expected {expected.digest}")
    back = fetch_status_list(ref, options=opts)
    if jcs(back) != jcs(doc):
        raise fail("readback_mismatch", "status list read back differs from the published one")
    return Result(wrote, {"tag": tag, "resolves": held, "listId": doc.get("id"),
                          "proof": "tag resolved, list fetched and equal (JCS)"}, receipt)


def published(e: Effect, digest: str) -> list[tuple[str, str]]:
    """What a consumer will ask for at a destination, as (reference, tag or digest): each tag, or
    the digest when it has none."""
    assert e.repository is not None
    tags = [t for t in e.params.get("tags", "").split(",") if t]
    return [(f"{e.repository}:{t}", t) for t in tags] or [(f"{e.repository}@{digest}", digest)]


def published_references(e: Effect, digest: str) -> list[str]:
    """What a consumer will ask for at a destination: each tag, or the digest when it has none."""
    return [ref for ref, _ in published(e, digest)]


def judge(ctx: Context, e: Effect) -> list[Verdict]:
    """The acceptance read-back of one destination: every published reference judged by the one
    acceptance decision under the plan's consumer policy (`providers.accept`)."""
    from acxoci.install.vpolicy import load_policy

    assert e.artifact is not None and e.repository is not None
    subject, _, _ = ctx.subject(e.artifact)
    now = ctx.clock()
    policy = load_policy(ctx.plan.policy, now=now)
    # the plan names its policy by path: the read-back must judge under the policy prepare checked
    prepared = ctx.material(e.artifact).policy_digest
    if prepared != policy.digest:
        raise fail("validation_failed", f"the acceptance policy changed since prepare (prepared under "
                   f"{prepared}, now {policy.digest}): start a new goal to release under the new policy",
                   policy=policy.digest)
    remote = ctx.plan.remote_options(e.repository)
    ctx.reader(e.repository)  # the consumer's requests go through the pooled, recorded session
    roster = team_references(ctx.plan) if ctx.release(e.artifact).input.artifact_kind == "workflow" else ()
    return [accept(ref, subject.digest, policy, remote=remote, now=now, roster=roster)
            for ref in published_references(e, subject.digest)]


def team_references(plan: ReleasePlan) -> tuple[str, ...]:
    """A workflow's read-back staffs it from the cartridges this release publishes: a consumer who
    installs the release can staff the team (a team released elsewhere is not this goal's proof)."""
    return tuple(f"{d.repository}:{d.tags[0]}" if d.tags else d.repository
                 for rel in plan.releases if rel.input.artifact_kind == "cartridge" for d in rel.to)


def _verify(ctx: Context, e: Effect) -> Result:
    """The acceptance read-back: a consumer under the plan's policy accepts every published
    reference, and each one holds the released digest."""
    assert e.artifact is not None
    subject, _, _ = ctx.subject(e.artifact)
    verdicts = judge(ctx, e)
    for v in verdicts:
        if not v.accepted:
            cls: FailureClass = "readback_mismatch" if v.mismatch else "validation_failed"
            raise fail(cls, f"acceptance read-back refused {v.reference}: {v.reasons()}",
                       checks=list(v.failed), policy=v.policy_digest)
    first = verdicts[0]
    return Result(False, {"acceptance": "installable", "policy": {"source": str(ctx.plan.policy),
                                                                  "digest": first.policy_digest},
                          "checks": first.checks, "attestations": first.found,
                          "tags": [t for t in e.params.get("tags", "").split(",") if t],
                          "digest": subject.digest,
                          "judgedAt": iso(ctx.clock()),
                          "verdicts": [{"reference": v.reference, "accepted": v.accepted} for v in verdicts],
                          "proof": "every published reference accepted by the acceptance decision (acx "
                                   "install's checks against the registry copy)"})


EXECUTORS: dict[str, Callable[[Context, Effect], Result]] = {
    "prepare": _prepare, "push_blob": _push_blob, "push_manifest": _push_manifest, "tag": _tag,
    "attach_attestation": _attach_attestation, "attach_envelope": _attach_envelope,
    "attach_credential": _attach_credential, "publish_status_list": _publish_status_list, "verify": _verify,
}


# ---- opening a goal ----------------------------------------------------------------------------


MAX_AUTHORITY_BYTES = 16 * 1024 * 1024


def _file_digest(path: Path) -> tuple[str | None, str | None]:
    """The digest of an authority document (bounded), or why it could not be read."""
    try:
        data = read_bytes(path, "authority source", limit=MAX_AUTHORITY_BYTES)
    except AcxError as exc:
        return None, exc.message
    return "sha256:" + sha256(data).hexdigest(), None


def authority_sources(plan: ReleasePlan, now: datetime) -> tuple[AuthoritySource, ...]:
    """What is authoritative for the goal, with the digests of the bytes read now: the plan, the
    acceptance policy, the trust registries the policy names, and the plan's own `goal.authority`."""
    from acxoci.install.vpolicy import load_policy

    out = [AuthoritySource(role="plan", source=str(plan.path), digest=plan.digest)]
    try:
        policy = load_policy(plan.policy, now=now)
    except AcxError as exc:
        out.append(AuthoritySource(role="policy", source=str(plan.policy), problem=exc.one_line()))
    else:
        out.append(AuthoritySource(role="policy", source=str(plan.policy), digest=policy.digest))
        out += [AuthoritySource(role="trust-registry", source=f.path, digest=f.digest)
                for p in policy.publishers for f in p.sources]
        out += [AuthoritySource(role="issuer-registry", source=f.path, digest=f.digest)
                for f in policy.issuer_sources]
    for role, path in plan.identity.authority:
        digest, problem = _file_digest(path)
        out.append(AuthoritySource(role=role, source=str(path), digest=digest, problem=problem))
    return tuple(out)


def open_goal(plan: ReleasePlan, journal: Journal, now: datetime,
              observers: Sequence[RunObserver] = (), guard: Guard | None = None) -> GoalEntry:
    """The goal entry: written on the first run; later runs check the plan is still the same one
    (a changed plan stops the goal with replan_required: its route is no longer the plan's; the
    stop is journaled unless the goal already stands stopped for that reason)."""
    entries = journal.entries()
    if not entries:
        ident = plan.identity
        entry = GoalEntry(goal=plan.goal_id, instance=f"{plan.goal_id}/{uuid.uuid4().hex[:16]}",
                          plan_path=str(plan.path), plan_digest=plan.digest, created_at=iso(now),
                          identity=GoalIdentity(vision=ident.vision, criteria=ident.criteria,
                                                non_goals=ident.non_goals,
                                                authority=authority_sources(plan, now)),
                          quota=tuple(QuotaRecord(host=q.host, window_seconds=q.window_seconds,
                                                  requests=q.requests, bytes=q.bytes, publishes=q.publishes)
                                      for q in plan.quotas),
                          wait_seconds=plan.observe.wait_seconds,
                          freshness_seconds=plan.observe.freshness_seconds, effects=tuple(plan_effects(plan)))
        out = journal.append(entry, now=now, guard=guard)
        assert isinstance(out, GoalEntry)
        for o in observers:
            o.after_entry(out)
        return out
    g = goal_entry(entries, str(journal.path))
    if g.goal != plan.goal_id or g.plan_digest != plan.digest:
        reason = (f"the plan changed since goal {plan.goal_id} was opened (digest {g.plan_digest}, now "
                  f"{plan.digest}); release the changed plan under a new goal id")
        standing = project(entries, str(journal.path), now=now).stop
        if standing is None or standing.cls != "replan_required":
            journal.append(StopEntry(cls="replan_required", reason=reason,
                                     details={"openedWith": g.plan_digest, "planNow": plan.digest}), now=now,
                           guard=guard)
        raise Blocked(f"replan_required: {reason}", where=str(plan.path))
    return g


def write_status_cache(folder: Path, status: GoalStatus) -> None:
    """Rewrite the cached projection `status.json` (atomic: a fresh temporary file renamed over it,
    so a symlink planted there is replaced, never followed); nothing ever reads it back as truth."""
    data = json.dumps(status.to_json(), indent=2, ensure_ascii=False) + "\n"
    atomic_write(folder / STATUS_CACHE, data.encode("utf-8"))


def materials_of(status: GoalStatus) -> dict[str, Materials]:
    """What each done `prepare` froze, decoded from its evidence."""
    out: dict[str, Materials] = {}
    for es in status.effects:
        if es.effect.kind == "prepare" and es.state == "done" and es.evidence and es.effect.artifact:
            try:
                out[es.effect.artifact] = decode_as(es.evidence.get("materials"), Materials,
                                                    document=f"evidence of {es.effect.id}")
            except DocumentTypeError as exc:
                raise InvalidInput(str(exc), where=es.effect.id) from exc
    return out


# ---- one run -----------------------------------------------------------------------------------


class _Run:
    """One run of a goal: appends to the journal (telling the observers), books spend, counts
    progress, and executes or observes one todo at a time."""

    def __init__(self, plan: ReleasePlan, journal: Journal, ctx: Context, g: GoalEntry, lease: GoalLease,
                 sleep: Callable[[float], None], observers: Sequence[RunObserver]) -> None:
        self.plan = plan
        self.lease = lease
        self.journal = journal
        self.ctx = ctx
        self.goal = g
        self.instance = g.instance or f"{g.goal}@{g.created_at}"
        self.runner = lease.runner
        self.sleep = sleep
        self.observers = observers
        self.executed = self.attempted = self.writes = self.http_writes = 0
        self.read_back = self.gates = self.monitors = self.successors = 0
        self.closed = False
        self.closeouts = 0
        self.failures: list[Failure] = []
        self.tried: set[str] = set()
        self.waits = 0
        self.observed: dict[str, int] = {}

    def now(self) -> datetime:
        return self.ctx.clock()

    def guard(self) -> contextlib.AbstractContextManager[None]:
        """Around each append: this run still holds the goal's lease (LeaseLost otherwise)."""
        return self.lease.holding(self.now())

    def append(self, entry: Entry) -> Entry:
        out = self.journal.append(entry, now=self.now(), guard=self.guard)
        for o in self.observers:
            o.after_entry(out)
        return out

    def status(self) -> GoalStatus:
        return project(self.journal.entries(), str(self.journal.path), now=self.now())

    # -- the ledger --------------------------------------------------------------------------
    def book(self, attempt_key: str, effect: str, seen: list[dict[str, Any]], *,
             delivered_at: str | None) -> None:
        """Book what one attempt/observation/probe asked of each registry (publishes: one at
        `delivered_at`, the registry a read-back proved the effect stored something at)."""
        now = self.now()
        for host, amount in spend_by_host(seen).items():
            pub = 1 if host == delivered_at else 0
            self.append(SpendEntry(key=f"{attempt_key}@{host}", attempt_key=attempt_key,
                                   instance=self.instance, window=spend_window(self.goal.quota, host, now),
                                   registry=host, effect=effect, requests=amount["requests"],
                                   bytes=amount["bytes"], publishes=pub))

    def void_delivery(self, spends: Iterable[SpendEntry], reason: str) -> None:
        for s in spends:
            if s.publishes:
                self.append(VoidEntry(key=f"void:{s.key}", voids=s.key, instance=self.instance, reason=reason,
                                      publishes=s.publishes))

    # -- registry signals ----------------------------------------------------------------------
    def signal(self, registry: str, seen: list[dict[str, Any]], failure: Failure) -> bool:
        """Record what a host failure says about the registry; True when it is a 429 (throttled)."""
        mine = [r for r in seen if r.get("host") == registry]
        last = mine[-1] if mine else None
        if last is not None and last.get("status") == 429:
            wait = retry_after_seconds(last.get("Retry-After"))
            wait = DEFAULT_RETRY_AFTER if wait is None else min(wait, MAX_RETRY_AFTER)
            until = self.now() + timedelta(seconds=wait)
            self.append(SignalEntry(registry=registry, signal="throttled", until=iso(until), status=429,
                                    detail=f"429 Retry-After {last.get('Retry-After')}"))
            return True
        status = int(last["status"]) if last is not None and isinstance(last.get("status"), int) else None
        detail = (f"HTTP {status}" if status is not None and status >= 500
                  else "no answer: " + failure.message[:200])
        self.append(SignalEntry(registry=registry, signal="unhealthy", status=status, detail=detail))
        return False

    def probe_unhealthy(self, st: GoalStatus) -> None:
        """Ask each unhealthy registry with pending work whether it answers again."""
        pending = {e.effect.registry: e.effect for e in st.effects if e.state != "done" and e.effect.registry}
        for reg, sig in st.signals.items():
            if not sig.unhealthy or reg not in pending:
                continue
            eff = pending[reg]
            repo = eff.repository or (eff.monitor.target if eff.monitor else None)
            if repo is None:
                continue
            self.ctx.recorder.begin()
            try:
                probe(self.ctx.reader(repo))
                ok, why = True, "GET /v2/ answered"
            except AcxError as exc:
                ok, why = False, exc.one_line()
            seen = self.ctx.recorder.end()
            key = f"{self.instance}:probe:{reg}:{len(self.journal.entries())}"
            self.book(key, "probe", seen, delivered_at=None)
            if ok:
                self.append(SignalEntry(registry=reg, signal="healthy", detail=why))
            else:
                self.append(SignalEntry(registry=reg, signal="unhealthy", detail=f"probe: {why}"[:300]))

    # -- reconciliation ----------------------------------------------------------------------
    def reconcile(self, st: GoalStatus) -> None:
        """quota_spend_failed: an attempt whose remote work happened and whose spend was never
        booked gets an estimated spend now (never "nothing spent"); the effect is re-observed
        idempotently by this run, which voids the estimate's delivery if the write had not landed."""
        for o in st.orphans:
            es = st.effect(o.effect)
            reg = es.effect.registry
            if o.booked or reg is None:
                continue
            size = self._planned_bytes(es.effect)
            self.append(SpendEntry(key=f"{o.key}@{reg}", attempt_key=o.key, instance=self.instance,
                                   window=spend_window(self.goal.quota, reg, self.now()), registry=reg,
                                   effect=o.effect, requests=1, bytes=size,
                                   publishes=1 if es.effect.writes else 0, estimated=True))
            failure = Failure("quota_spend_failed", f"attempt {o.attempt} of {o.effect} did its remote work "
                              "and died before booking it: an estimate is booked and the effect is "
                              "re-observed", {"attempt": o.attempt, "key": o.key})
            to: State = "open" if es.state != "done" else "done"
            self.append(EffectEntry(effect=o.effect, from_=es.state, to=to, failure=failure,
                                    reason="reconcile the ledger"))

    def _planned_bytes(self, e: Effect) -> int:
        if e.kind == "push_blob" and e.artifact in self.ctx.materials and e.params.get("role") == "content":
            return self.ctx.materials[e.artifact].content.size
        return 0

    def reopen(self, st: GoalStatus) -> None:
        for es in st.effects:
            if es.state in ("blocked", "deferred") and es.failure and es.failure.cls in REOPEN_ON_RESUME:
                self.append(EffectEntry(effect=es.effect.id, from_=es.state, to="open",
                                        reason=f"reopened by run of {self.runner}"))

    # -- picking and doing ---------------------------------------------------------------------
    def pick(self, st: GoalStatus) -> Effect | None:
        """The first todo, in plan order, the quota decision lets run now."""
        q = QuotaInputs(st.todos, st.signals, st.quotas, st.ledger, self.now(),
                        paused=None if st.paused is None else "paused",
                        stopped=None if st.stop is None else "stopped")
        done = {t.id for t in st.todos if t.state == "done"}
        for t in st.todos:
            if t.id in self.tried and (not t.monitor or self.observed.get(t.id) == self.waits):
                continue  # an effect once per run; a monitor again only after the run has waited
            if blocker(t, done, q) is None:
                return st.effect(t.id).effect
        return None

    def progress_after_done(self, st: GoalStatus, e: Effect) -> None:
        after = self.status()
        done = {x.effect.id for x in after.effects if x.state == "done"}
        opened = [s for s in e.continuation.successors if all(d in done for d in after.effect(s).effect.deps)]
        self.successors += len(opened)
        prev = st.effect(e.id).failure
        if prev is not None and prev.cls == "gate":
            self.gates += 1

    def execute(self, st: GoalStatus, e: Effect) -> None:
        """Run one effect with the recovery its failure class allows; journal and book every try."""
        self.tried.add(e.id)
        self.executed += 1
        self.attempted += 1
        n = st.effect(e.id).last_attempt + 1
        estimates = st.ledger.open_estimates(e.id)
        while True:
            key = f"{self.instance}:{e.id}#{n}"
            if e.registry is not None:
                self.append(AttemptEntry(effect=e.id, attempt=n, key=key))
            self.ctx.recorder.begin()
            failure: Failure | None = None
            result: Result | None = None
            try:
                result = EXECUTORS[e.kind](self.ctx, e)
            except Exception as exc:
                failure = classify(exc)
            seen = self.ctx.recorder.end()
            for o in self.observers:
                o.after_work(e.id)
            receipt = http_receipt(seen)
            self.http_writes += int(receipt["httpWrites"])
            # a delivery is booked only when the read-back proved it (a 201 is a receipt, not proof)
            delivered = e.registry if result is not None and result.wrote else None
            self.book(key, e.id, seen, delivered_at=delivered)
            if result is not None:
                if result.wrote and estimates:
                    self.void_delivery(estimates, "the orphaned attempt's write had not landed: this attempt "
                                       "had to write it")
                self.append(EffectEntry(effect=e.id, from_="open", to="done", attempt=n, wrote=result.wrote,
                                        receipt={**result.receipt, **receipt}, evidence=result.evidence,
                                        continuation=e.continuation))
                self.writes += int(result.wrote)
                self.read_back += 1
                self.progress_after_done(st, e)
                return
            assert failure is not None
            throttled = False
            if failure.cls == "host_failure" and e.registry is not None:
                throttled = self._is_429(seen, e.registry)
            d = decide(failure, n, self.plan.budget, throttled=throttled)
            if not d.retry and failure.cls == "host_failure" and e.registry is not None:
                self.signal(e.registry, seen, failure)
            self.append(EffectEntry(effect=e.id, from_="open", to=d.state, attempt=n,
                                    wrote=bool(receipt["httpWrites"]), receipt=receipt, failure=failure,
                                    retry_in=d.delay if d.retry else None))
            if not d.retry:
                self.failures.append(failure)
                return
            self.sleep(d.delay)
            n += 1

    @staticmethod
    def _is_429(seen: list[dict[str, Any]], registry: str) -> bool:
        mine = [r for r in seen if r.get("host") == registry]
        return bool(mine) and mine[-1].get("status") == 429

    # -- monitors ----------------------------------------------------------------------------
    def observe(self, st: GoalStatus, e: Effect) -> None:
        """One observation of a monitor todo: per target, what is there; then satisfied, escalated,
        or scheduled again with backoff."""
        spec = e.monitor
        assert spec is not None
        self.tried.add(e.id)
        self.observed[e.id] = self.waits
        now = self.now()
        if spec.kind == "approval":
            a = st.approvals.get(spec.target)
            assert a is not None  # pick() selects an approval only once it is recorded
            self.append(EffectEntry(effect=e.id, from_=st.effect(e.id).state, to="done",
                                    evidence={"approval": spec.target, "approvedBy": a.by, "approvedAt": a.at,
                                              "proof": "approval recorded in the journal"},
                                    continuation=e.continuation))
            self.gates += 1
            self.progress_after_done(st, e)
            return
        self.ctx.recorder.begin()
        seen = self._seen(e)
        requests = self.ctx.recorder.end()
        k = st.monitor(e.id).observations + 1
        self.book(f"{self.instance}:{e.id}~obs{k}", e.id, requests, delivered_at=None)
        targets = compare(previous_targets(st, e.id), seen)
        j = judge_observation(spec, targets, now)
        still = None if j.satisfied or j.escalate else Continuation("active_goal")
        self.append(ObservationEntry(effect=e.id, targets=targets, satisfied=j.satisfied,
                                     next_at=iso(j.next_at) if j.next_at else None,
                                     escalated=j.escalate, continuation=still))  # type: ignore[arg-type]
        if j.satisfied:
            self.append(EffectEntry(effect=e.id, from_=st.effect(e.id).state, to="done",
                                    evidence={"targets": [plain(t) for t in targets],
                                              "observedAt": iso(now), "proof": f"observed: {j.why}"},
                                    continuation=e.continuation))
            self.monitors += 1
            self.progress_after_done(st, e)
        elif j.escalate == "gate":
            self.append(EffectEntry(effect=e.id, from_=st.effect(e.id).state, to="blocked", failure=Failure(
                "gate", f"{spec.target}: {j.why}; a person must look, then "
                f"`acx release resume {self.goal.goal}`",
                {"escalated": "gate"})))
        elif j.escalate == "replan":
            failure = Failure("replan_required", f"{spec.target}: {j.why}: the plan's route no longer holds")
            self.append(EffectEntry(effect=e.id, from_=st.effect(e.id).state, to="blocked", failure=failure))
            self.append(StopEntry(cls="replan_required", reason=failure.message, details={"monitor": e.id}))
            self.failures.append(failure)

    def _seen(self, e: Effect) -> list[Seen]:
        spec = e.monitor
        assert spec is not None
        if spec.kind == "mirror":
            assert e.artifact is not None
            digest = self.ctx.material(e.artifact).manifest.digest
            out: list[Seen] = []
            for target in targets_of(spec, digest):
                ref = target[len(spec.target) + 1:]
                try:  # the same read-back as the primary's: the manifest fetched and re-hashed
                    got = read_back(self.ctx.observed(spec.target), ref)
                    out.append(Seen(target, got, got == digest))
                except AcxError as exc:
                    out.append(Seen(target, None, False, exc.one_line()[:300]))
            return out
        try:
            valid_from, digest = status_list_facts(spec.target, self.now())
        except AcxError as exc:
            return [Seen(spec.target, None, False, exc.one_line()[:300])]
        want = spec.valid_from or self._published_valid_from()
        ok = (spec.digest is not None and digest == spec.digest) or (
            want is not None and valid_from is not None and _at_or_after(valid_from, want))
        return [Seen(spec.target, f"validFrom={valid_from} digest={digest}", ok)]

    def _published_valid_from(self) -> str | None:
        sl = self.plan.status_list
        if sl is None:
            return None
        v = _read_json(sl.path, "status list").get("validFrom")
        return v if isinstance(v, str) else None

    # -- the terminal audit ----------------------------------------------------------------------
    def closeout(self, st: GoalStatus) -> None:
        """The terminal audit: stale observations are made again, stale acceptance verdicts judged
        again, then every check of `audit.terminal_audit`; DONE only if it passes."""
        self.append(CloseoutEntry(event="begin"))
        self.attempted += 1
        now = self.now()
        try:
            reopened = [mid for mid in stale_monitors(st, now) if not self.reobserve(mid)]
            if reopened:
                self.append(CloseoutEntry(event="failed", audit={"reopened": reopened}))
                return
            fresh = self.status()
            verdicts = self._verdicts(fresh, now)
            audit: Audit = terminal_audit(fresh, verdicts, now)
        except AcxError as exc:
            f = classify(exc)
            self.append(CloseoutEntry(event="failed", failure=Failure(
                "terminal_closeout_failed", f"the terminal audit could not finish ({f.cls}): {f.message}",
                {"cause": f.cls})))
            self.failures.append(Failure("terminal_closeout_failed", f.message))
            return
        if audit.ok:
            self.append(CloseoutEntry(event="done", audit=audit.to_json()))
            self.closed = True
            return
        self.append(CloseoutEntry(event="failed", audit=audit.to_json()))
        blocked: list[Failure] = []
        for eid, judged in verdicts.items():
            refused = [v for v in judged if not v.accepted]
            if refused:
                cls: FailureClass = ("readback_mismatch" if any(v.mismatch for v in refused)
                                     else "validation_failed")
                failure = Failure(cls, "the terminal audit's acceptance read-back refused "
                                  + "; ".join(f"{v.reference}: {v.reasons()}" for v in refused))
                self.append(EffectEntry(effect=eid, from_="done", to="blocked", failure=failure))
                blocked.append(failure)
        # a failed audit is a failure of this run: the same failure every run is no progress, and
        # after the documented number of such runs the goal stops instead of asking to retry forever
        self.failures += blocked or [Failure("terminal_closeout_failed", "the terminal audit failed: "
                                             + "; ".join(f"{f.check}: {f.detail}" for f in audit.failed()))]

    def reobserve(self, monitor_id: str) -> bool:
        """Observe a stale monitor again for the audit; reopen it when it no longer holds."""
        st = self.status()
        self.observe(st, st.effect(monitor_id).effect)
        after = self.status().monitor(monitor_id)
        if after.targets and all(t.ok for t in after.targets):
            return True
        if after.state == "done":
            self.append(EffectEntry(effect=monitor_id, from_="done", to="open",
                                    reason="stale at the terminal audit and no longer satisfied"))
        return False

    def _verdicts(self, st: GoalStatus, now: datetime) -> dict[str, list[Verdict]]:
        """Each verify effect's verdicts, as of now: every published reference is read back (its
        manifest fetched and re-hashed) and must hold the released digest; then the verify effect's
        own verdicts count only while fresh under the plan's `observe.freshnessSeconds` (a verdict
        from the future is stale), else the one acceptance decision judges again."""
        out: dict[str, list[Verdict]] = {}
        freshness = self.plan.observe.freshness_seconds
        for es in st.effects:
            if es.effect.kind != "verify" or es.state != "done":
                continue
            e = es.effect
            assert e.artifact is not None and e.repository is not None
            released = self.ctx.material(e.artifact).manifest.digest
            refs = published(e, released)
            ev = _acceptance(es.evidence, e.id)
            self.ctx.recorder.begin()
            try:
                moved = self._moved(e.repository, refs, released)
                if moved:
                    out[e.id] = moved
                elif (ev is not None and ev.digest == released
                      and fresh_within(_judged_at(ev, e.id), freshness, now)
                      and sorted(v.reference for v in ev.verdicts) == sorted(ref for ref, _ in refs)):
                    out[e.id] = [Verdict(v.reference, ev.digest, v.accepted, ev.policy.digest)
                                 for v in ev.verdicts]
                else:
                    out[e.id] = judge(self.ctx, e)
            except EffectFailed as exc:  # judged, and refused before any reference was asked
                f = exc.failure
                out[e.id] = [Verdict(e.repository, released, False, "",
                                     failed=({"id": f.cls, "reason": f.message},),
                                     mismatch=f.cls == "readback_mismatch")]
            finally:
                seen = self.ctx.recorder.end()
                key = f"{self.instance}:{e.id}~audit{len(self.journal.entries())}"
                self.book(key, e.id, seen, delivered_at=None)
        return out

    def _moved(self, repo: str, refs: Sequence[tuple[str, str]], released: str) -> list[Verdict]:
        """The published references that no longer hold the released digest (read back now)."""
        out: list[Verdict] = []
        for reference, ref in refs:
            held = _read_back_ref(self.ctx, repo, ref)
            if held != released:
                out.append(Verdict(reference, released, False, "", failed=({
                    "id": "content-digest",
                    "reason": f"{reference} resolves to {held or 'nothing'}, not the released {released}"},),
                    mismatch=True))
        return out

    # -- the loop ------------------------------------------------------------------------------
    def loop(self) -> None:
        deadline = self.now() + timedelta(seconds=max(0.0, self.goal.wait_seconds))
        bound = 4 * (len(self.goal.effects) + 1) + 1000
        for _ in range(bound):
            st = self.status()
            if st.paused is not None or st.stop is not None:
                return
            e = self.pick(st)
            if e is not None:
                if e.kind == "monitor":
                    self.observe(st, e)
                else:
                    self.execute(st, e)
                self.lease.renew(self.now())
                continue
            if all(x.state == "done" for x in st.effects):
                if st.closeout.state != "done" and not self.closed and self.closeouts < 3:
                    self.closeouts += 1
                    self.closeout(st)
                    continue
                return
            nxt = [m for m in st.monitors if m.state == "open" and m.next_at]
            if not nxt:
                return
            at = min(parse_iso(m.next_at or "", m.effect_id) for m in nxt)
            if at > deadline:
                return  # waiting: the next observation is for a later run
            # never sleep past half the lease: renewed after each wait, so no one takes a live goal over
            self.sleep(max(0.0, min((at - self.now()).total_seconds(), self.plan.lease_seconds / 2)))
            self.lease.renew(self.now())
            self.waits += 1
        return  # bounded: a run observing for that long ends; the next run goes on

    def progress(self) -> Progress:
        return Progress(read_back=self.read_back, gates_resolved=self.gates, monitors_resolved=self.monitors,
                        successors_opened=self.successors, closeout=self.closed)


class AcceptanceRef(msgspec.Struct, frozen=True, kw_only=True):
    reference: str
    accepted: bool


class PolicyRef(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    digest: str


class AcceptanceEvidence(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """The part of a verify effect's evidence the terminal audit reads back."""

    digest: str
    judged_at: str
    policy: PolicyRef
    verdicts: tuple[AcceptanceRef, ...]


def _judged_at(ev: AcceptanceEvidence, where: str) -> datetime | None:
    try:
        return parse_iso(ev.judged_at, f"evidence of {where}: judgedAt")
    except InvalidInput:
        return None  # an unreadable time is no time: judged again


def _acceptance(evidence: dict[str, Any] | None, where: str) -> AcceptanceEvidence | None:
    try:
        return decode_as(evidence or {}, AcceptanceEvidence, document=f"evidence of {where}")
    except DocumentTypeError:
        return None  # an older or foreign record: judged again


def _at_or_after(value: str, threshold: str) -> bool:
    try:
        return parse_iso(value, "validFrom") >= parse_iso(threshold, "threshold")
    except InvalidInput:
        return False


def run_goal(plan: ReleasePlan, *, root: Path | None = None, runner: str | None = None,
             allow_retag: bool = False, clock: Clock = utc_now, sleep: Callable[[float], None] = time.sleep,
             repaired: str | None = None) -> RunReport:
    """Execute every runnable todo of the plan's goal (resuming from its journal), then its terminal
    audit, and return the projection. Writes only while holding the goal's lease."""
    folder = goal_folder(plan.goal_id, root, create=True)
    observers = list(OBSERVERS)
    lease = GoalLease(folder, runner or default_runner_id(), plan.lease_seconds)
    previous = lease.acquire(clock())
    try:
        journal = Journal.for_goal(folder)
        g = open_goal(plan, journal, clock(), observers, guard=lambda: lease.holding(clock()))
        created = parse_iso(g.created_at, "createdAt")
        recorder = Recorder()
        ctx = Context(plan, folder, created, clock, allow_retag, recorder)
        run = _Run(plan, journal, ctx, g, lease, sleep, observers)
        run.append(RunEntry(event="start", runner=lease.runner, allow_retag=allow_retag,
                            took_over_from=previous.runner if previous else None))
        try:
            st = run.status()
            if repaired is not None:
                run.append(RepairEntry(note=repaired[:MAX_OPERATOR_TEXT], by=lease.runner))
                st = run.status()
            if st.stop is None and st.paused is None:
                ctx.materials = materials_of(st)
                run.reconcile(st)
                run.reopen(run.status())
                run.probe_unhealthy(run.status())
                run.loop()
        finally:
            recorder.detach()
        final = run.status()
        run.append(RunEntry(event="end", runner=lease.runner, executed=run.executed, attempted=run.attempted,
                            writes=run.writes, http_writes=run.http_writes, outcome=final.state,
                            progress=run.progress(), failures=tuple(run.failures)))
        final = run.status()
        if final.stop is None and final.no_progress_runs >= 2:
            cls = stop_class(run.failures)
            summary = "; ".join(f"{f.cls}: {f.message}" for f in run.failures[:3])
            run.append(StopEntry(cls=cls, reason=f"two runs in a row made no progress ({summary})",
                                 details={"failures": [f.to_json() for f in run.failures[:10]]}))
            final = run.status()
        write_status_cache(folder, final)
        return RunReport(final, run.executed, run.writes, run.http_writes,
                         previous.runner if previous else None)
    finally:
        lease.release()


def resume_goal(goal_id: str, *, root: Path | None = None, runner: str | None = None,
                allow_retag: bool = False, clock: Clock = utc_now,
                sleep: Callable[[float], None] = time.sleep, repaired: str | None = None) -> RunReport:
    """Resume a goal from its journal: reload the plan it was opened with and run it again."""
    folder = goal_folder(goal_id, root)
    journal = Journal.for_goal(folder)
    if not journal.exists:
        raise NotFound(f"no release goal {goal_id!r}", where=str(folder))
    g = goal_entry(journal.entries(), str(journal.path))
    plan = load_plan(Path(g.plan_path))
    return run_goal(plan, root=root, runner=runner, allow_retag=allow_retag, clock=clock, sleep=sleep,
                    repaired=repaired)


def goal_status(goal_id: str, *, root: Path | None = None, refresh_cache: bool = True,
                clock: Clock = utc_now) -> GoalStatus:
    """The projection of a goal from its journal alone (optionally rewriting the cached copy)."""
    folder = goal_folder(goal_id, root)
    journal = Journal.for_goal(folder)
    if not journal.exists:
        raise NotFound(f"no release goal {goal_id!r}", where=str(folder))
    status = project(journal.entries(), str(journal.path), now=clock())
    if refresh_cache:
        write_status_cache(folder, status)
    return status


MAX_OPERATOR_TEXT = 2000


def _operator_words(entry: Entry) -> list[str]:
    if isinstance(entry, ApprovalEntry):
        return [entry.approval, entry.by, entry.note or ""]
    if isinstance(entry, PauseEntry | UnpauseEntry):
        return [entry.by or "", entry.reason or ""]
    return []


def operator_entry(goal_id: str, entry: Entry, *, root: Path | None = None,
                   clock: Clock = utc_now) -> GoalStatus:
    """Append an operator's word (approve, pause, unpause) to a goal's journal — under the journal's
    lock, without the lease, so it reaches a goal while a runner holds it — and return the projection."""
    folder = goal_folder(goal_id, root)
    journal = Journal.for_goal(folder)
    if not journal.exists:
        raise NotFound(f"no release goal {goal_id!r}", where=str(folder))
    for text in _operator_words(entry):
        if len(text) > MAX_OPERATOR_TEXT:
            raise UsageError(f"at most {MAX_OPERATOR_TEXT} characters, please (a journal line stays small)")
    st = project(journal.entries(), str(journal.path), now=clock())
    if isinstance(entry, ApprovalEntry):
        known = [m.spec.target for m in st.monitors if m.spec.kind == "approval"]
        if entry.approval not in known:
            raise InvalidInput(f"goal {goal_id} has no approval {entry.approval!r} (it has: "
                               f"{', '.join(known) or 'none'})", where=str(journal.path))
        if entry.approval in st.approvals:
            return st
    if isinstance(entry, PauseEntry) and st.paused is not None:
        return st
    if isinstance(entry, UnpauseEntry) and st.paused is None:
        return st
    journal.append(entry, now=clock())
    return goal_status(goal_id, root=root, clock=clock)
