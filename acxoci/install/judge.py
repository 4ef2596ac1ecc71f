"""The one acceptance decision (DESIGN.md, "One judge"): may this artifact be trusted under this
policy, now? Every stage asks it the same way: `install`, `acx verify REF --policy`, `push
--policy`, the release read-back, `activate`, `installed verify|sync` and the staffing of a
workflow's team. Only where the inputs come from differs:

- `judge_descriptor`: an artifact in a registry or an OCI layout (pulled into a work folder);
- `judge_file`: a local cartridge, workflow or graph file (no registry: no referrers, no lifecycle);
- `judge_installed`: an installed item, whose record is a cache of a past decision and never proof:
  its files are re-hashed against the record, then judged like a pulled artifact under today's
  policy, trust registries, status lists and lifecycle records.

Gathering is I/O over the verifiers of the other packages; deciding is `checks.run_checks`, a pure
function over what was gathered."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from acxoci.attest.canonical import loads_strict, sha256_digest
from acxoci.attest.errors import AttestError
from acxoci.attest.typed import opt
from acxoci.errors import AcxError, InvalidInput, Tampered, TransientError
from acxoci.install import checks as C
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.descriptor import Descriptor, Manifest, parse_manifest
from acxoci.oci.digest import copy_verified
from acxoci.oci.errors import SizeMismatch, TruncatedBody
from acxoci.oci.reference import Reference, parse_reference
from acxoci.oci.target import ReadView, RemoteOptions, Target, fetch_bytes, open_target, resolve_manifest
from acxoci.policy.limits import ResourceLimits

if TYPE_CHECKING:
    from acxoci.install.store import InstalledItem

CARTRIDGE_FILE = "cartridge.acx"
WORKFLOW_FILE = "workflow.cal.json"
GRAPH_FILE = "agent-graph.json"
MANIFEST_FILE = "manifest.json"
LEVEL_ARTIFACT_TYPE = "application/vnd.acx.level-attestation.v1"
MAX_DOC_BYTES = 16 * 1024 * 1024
Kind = Literal["cartridge", "workflow", "agent-graph"]
CONTENT_FILE: dict[str, str] = {"cartridge": CARTRIDGE_FILE, "workflow": WORKFLOW_FILE,
                                "agent-graph": GRAPH_FILE}


@dataclass(frozen=True)
class HostInputs:
    """The host's side: its descriptor (parsed JSON) and resource limits, each with where it came from."""

    descriptor: dict[str, Any] | None = None
    descriptor_source: str | None = None
    descriptor_digest: str | None = None
    limits: ResourceLimits | None = None
    limits_source: str | None = None
    limits_digest: str | None = None
    roster: Path | None = None


class InstalledView(Protocol):
    """What the judge reads of an install store: the installed items (a `Store` is one)."""

    def list(self) -> list[InstalledItem]:
        """The current installed items."""
        ...


@dataclass
class Pulled:
    """What a pull brought into the work folder."""

    manifest: Manifest | None = None
    manifest_bytes: bytes | None = None
    kind: Kind | None = None
    content_path: Path | None = None
    content_digest: str | None = None
    error: str | None = None
    blobs: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Judgement:
    """What the one decision said, with everything it decided on (an install record is built
    from this, and only from an accepting one)."""

    reference: str
    digest: str | None
    kind: str | None
    checks: tuple[C.CheckResult, ...]
    gathered: C.Gathered | None = None
    meta: Mapping[str, str] = field(default_factory=dict)
    pulled: Pulled | None = None
    name: str | None = None

    @property
    def failed(self) -> list[C.CheckResult]:
        return C.failures(self.checks)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and not self.failed

    def check(self, cid: str) -> C.CheckResult | None:
        return next((c for c in self.checks if c.id == cid), None)

    def relied_credential(self, policy: VerificationPolicy) -> C.CredentialFound | None:
        """The level credential the decision relied on (None: no level required or none usable)."""
        g = self.gathered
        if g is None or g.credentials is None or g.signature is None:
            return None
        return C.relied_credential(g.credentials, policy, g.signature.rom_digest)[0]

    def proven_level(self, policy: VerificationPolicy) -> C.CredentialFound | None:
        """The credential a team slot may count on: the one relied on, held to the revocation check
        as if the policy required a level (verified, accepted issuer, ROM-bound, not revoked)."""
        best = self.relied_credential(policy)
        if best is None or best.level is None or self.gathered is None or self.gathered.signature is None:
            return None
        rom = self.gathered.signature.rom_digest
        floor = replace(policy, level_minimum=policy.level_minimum if policy.level_minimum is not None else 0)
        return best if not C.check_revocation([best], floor, rom).failed else None

    def reasons(self) -> list[str]:
        """One line per failed check (`id [kind]: reason`)."""
        return [f"{c.id} [{c.kind}]: {c.reason}" for c in self.failed]

    def to_json(self) -> dict[str, Any]:
        return {"reference": self.reference, "digest": self.digest, "kind": self.kind, "ok": self.ok,
                "verdict": "accepted" if self.ok else "refused", "name": self.name,
                "reasons": self.reasons(), "checks": [c.to_json() for c in self.checks]}


def not_attempted(results: Sequence[C.CheckResult], why: str) -> list[C.CheckResult]:
    """`results` followed by every later check, skipped with `why`."""
    done = {r.id for r in results}
    return [*results, *(C.CheckResult(cid, "skip", f"not attempted: {why}") for cid in C.CHECK_ORDER
                        if cid not in done)]


# ---- pulling ----------------------------------------------------------------------------------


def pull(target: Target, desc: Descriptor, staged: Path) -> Pulled:
    """Fetch the manifest, its config and its content layer into `staged`, each digest-verified.
    A digest mismatch is reported (not raised): it becomes the content-digest check's failure."""
    from acxoci.attestation.attach import artifact_kind, content_layer

    out = Pulled()
    try:
        data = fetch_bytes(target, desc)
        out.manifest_bytes = data
        (staged / MANIFEST_FILE).write_bytes(data)
        manifest = parse_manifest(data, media_type=desc.media_type, where=desc.digest)
        out.manifest = manifest
        kind = artifact_kind(manifest)
        if kind == "other":
            raise InvalidInput(f"{desc.digest} is not a cartridge, workflow or agent graph "
                               f"(artifactType {manifest.artifact_type or 'none'})")
        out.kind = kind
        if manifest.config is not None and manifest.config.size <= MAX_DOC_BYTES:
            fetch_bytes(target, manifest.config, limit=MAX_DOC_BYTES)
            out.blobs.append(("config", manifest.config.digest))
        layer = content_layer(manifest, kind)
        if not layer.digest.startswith("sha256:"):  # installed files are held to sha256 digests
            out.error = f"content layer {layer.digest[:20]}…: only sha256 content is installed"
            return out
        dest = staged / CONTENT_FILE[kind]
        with target.fetch(layer) as reader:
            copy_verified(reader, dest, fsync=True)
        out.content_path, out.content_digest = dest, layer.digest
        out.blobs.append(("content", layer.digest))
    except TruncatedBody as exc:  # the connection was cut: a transport failure, not a verdict
        raise TransientError(f"transfer cut short: {exc.one_line()}", hint="retry") from exc
    except SizeMismatch as exc:
        out.error = f"pulled content does not match its size: {exc.one_line()}"
    except Tampered as exc:
        out.error = f"pulled content does not match its digest: {exc.one_line()}"
    return out


# ---- gathering: signature and trust -------------------------------------------------------------


def _signature_evidence(v: Any) -> C.SignatureEvidence:
    return C.SignatureEvidence(status=v.status, trust=v.trust, summary=v.summary, issues=tuple(v.issues),
                               keyid=v.keyid, publisher_id=v.publisher_id,
                               rom_digest=getattr(v, "rom_digest", None), signed_at=v.signed_at)


def cartridge_signature(path: Path, policy: VerificationPolicy, now: datetime) -> tuple[C.SignatureEvidence,
                                                                                        dict[str, str]]:
    """Run the cartridge verifier against the policy's trusted keys; also return the cartridge meta."""
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.cartridge.verify import verify_cartridge

    verdict = verify_cartridge(path, registry=policy.combined_registry(), now=now)
    with open_cartridge(path) as cart:
        meta = cart.meta()
    return _signature_evidence(verdict), meta


def _json_content(path: Path, what: str, limit: int) -> Any:
    from acxoci.fsutil import read_bytes

    data = read_bytes(path, what, limit=limit + 1)
    if len(data) > limit:
        raise Tampered(f"{what} exceeds {limit} bytes", where=str(path))
    try:
        return loads_strict(data)
    except AttestError as exc:
        raise Tampered(f"the artifact type says {what}, but the content is not JSON: {exc}",
                       where=str(path)) from exc


def graph_signature(path: Path, policy: VerificationPolicy,
                    now: datetime) -> tuple[C.SignatureEvidence, dict[str, str]]:
    """Verify an Agent Graph (structure + publish profile + signature + trust against the policy's
    keys); the signed version becomes the artifact version a version tag must name."""
    from acxoci.workflow.graph import MAX_GRAPH_BYTES, is_graph, verify_graph

    doc = _json_content(path, "agent graph", MAX_GRAPH_BYTES)
    if not is_graph(doc):
        raise Tampered("the artifact type says agent graph, but the content is not one", where=str(path))
    verdict = verify_graph(doc, registry=policy.combined_registry(), now=now)
    meta = {"agentGraphId": str(doc.get("id") or ""), "digest": verdict.digest}
    if verdict.ok and verdict.signed and isinstance(doc.get("version"), str):
        meta["acx.artifact_version"] = doc["version"]  # signed: the digest covers it
    return _signature_evidence(verdict), meta


def workflow_signature(path: Path, policy: VerificationPolicy,
                       now: datetime) -> tuple[C.SignatureEvidence, dict[str, str], Any, Any]:
    """Verify a workflow (signature + trust against the policy's keys): the evidence, identity
    fields, the parsed document and the verifier's verdict (staffing needs both)."""
    from acxoci.workflow.verify import verify_workflow

    doc = _json_content(path, "workflow", MAX_DOC_BYTES)
    verdict = verify_workflow(doc, registry=policy.combined_registry(), now=now)
    meta = {"workflowId": str(doc.get("id") or doc.get("workflowId") or "") if isinstance(doc, dict) else "",
            "digest": verdict.digest}
    if verdict.ok and verdict.signed and isinstance(doc, dict) and isinstance(doc.get("version"), str):
        meta["acx.artifact_version"] = doc["version"]
    return _signature_evidence(verdict), meta, doc, verdict


# ---- gathering: attestations and level credentials ----------------------------------------------


def _attestation_keys(policy: VerificationPolicy, publisher_id: str | None) -> list[Any]:
    """The keys that may sign this artifact's attestations: its own publisher's keys (as the policy
    ties them) and the policy's `attestations.keys`, never another policy publisher's keys."""
    from acxoci.attest.keys import load_public_pem
    from acxoci.attestation.signing import TrustedKey

    own = policy.publisher_for(publisher_id)
    keys: list[Any] = [] if own is None else [TrustedKey(k.public_key, f"policy publisher {own.id}", k)
                                              for k in own.registry.keys]
    keys += [TrustedKey(load_public_pem(pem), "policy attestation key") for pem in policy.attestation_keys]
    return keys


def _sigstore(policy: VerificationPolicy, publisher_id: str | None) -> Any:
    from acxoci.attestation.keyless_policy import policy_sigstore

    own = policy.publisher_for(publisher_id)
    return policy_sigstore(policy.model, policy.source, own.id if own is not None else None)


def gather_attestations(target: Target, desc: Descriptor, ref: str, policy: VerificationPolicy,
                        staged: Path, now: datetime, publisher_id: str | None = None
                        ) -> list[C.AttestationFound]:
    """Verify the artifact's attestations (legacy .att and bundle referrers) with the policy's keys,
    and copy the verified documents into `staged/attestations/` (with what re-judging them needs)."""
    from acxoci.attestation.sigstore_verify import legacy_material
    from acxoci.attestation.verify import find_attestations, provenance_item, verify_artifact

    located = find_attestations(target, desc)
    report = verify_artifact(target, desc, _attestation_keys(policy, publisher_id), reference=ref,
                             now=now, sigstore=_sigstore(policy, publisher_id),
                             artifact_publisher=publisher_id, found=located)
    found = {f.location: f for f in located[0]}
    out: list[C.AttestationFound] = []
    folder = staged / "attestations"
    for i, a in enumerate(report.attestations):
        if a.format not in ("legacy", "bundle"):
            continue
        j = a.judgement
        verified = j.verdict == "verified"
        digest = None
        item = found.get(a.location)
        if verified and item is not None and a.document is not None:  # the bytes judged, not a refetch
            folder.mkdir(exist_ok=True)
            (folder / f"{i:02d}-{a.format}.json").write_bytes(a.document)
            if legacy_material(item.layer.annotations or {}) is not None:  # cosign 2 keyless: the cert
                (folder / f"{i:02d}-{a.format}.annotations.json").write_text(
                    json.dumps(dict(item.layer.annotations), sort_keys=True), encoding="utf-8")
            digest = item.layer.digest
        out.append(C.AttestationFound(a.format, j.predicate_type or "", verified, "; ".join(j.reasons),
                                      digest, j.signer_keyid,
                                      j.signer.signer_json() if verified and j.signer is not None else None,
                                      provenance_item(a.location, j)))
    return out


def rejudge_attestations(folder: Path, subject_digest: str, policy: VerificationPolicy, now: datetime,
                         publisher_id: str | None) -> list[C.AttestationFound]:
    """The attestations kept by an install, judged again with today's keys and identities (the
    statement must still name the installed manifest)."""
    from acxoci.attestation.judge import judge
    from acxoci.attestation.sigstore_verify import legacy_material
    from acxoci.attestation.verify import provenance_item
    from acxoci.fsutil import read_bytes
    from acxoci.oci.errors import LimitExceeded
    from acxoci.oci.listing import MAX_ATTESTATION_LAYERS

    out: list[C.AttestationFound] = []
    keys = _attestation_keys(policy, publisher_id)
    sig = _sigstore(policy, publisher_id)
    kept = sorted(p for p in folder.glob("*.json") if not p.name.endswith(".annotations.json")) \
        if folder.is_dir() else []
    if len(kept) > MAX_ATTESTATION_LAYERS:  # the same cap as when they were read from the registry
        raise LimitExceeded(f"{len(kept)} kept attestations (at most {MAX_ATTESTATION_LAYERS})",
                            where=str(folder))
    for doc in kept:
        fmt = "bundle" if doc.stem.endswith("-bundle") else "legacy"
        data = read_bytes(doc, "kept attestation", limit=MAX_DOC_BYTES, nofollow=True)
        legacy = None
        notes = doc.with_name(doc.stem + ".annotations.json")
        if fmt == "legacy" and notes.is_file():
            try:
                ann = loads_strict(read_bytes(notes, "kept annotations", limit=1 << 20, nofollow=True),
                                   max_bytes=1 << 20)
            except (AttestError, AcxError):
                ann = {}
            if isinstance(ann, dict):
                legacy = legacy_material({str(k): str(v) for k, v in ann.items()})
        j = judge(data, "bundle" if fmt == "bundle" else "envelope", keys,
                  subject_sha256=subject_digest.removeprefix("sha256:"), want_type=None, now=now,
                  sigstore=sig, legacy=legacy, artifact_publisher=publisher_id)
        verified = j.verdict == "verified"
        out.append(C.AttestationFound(fmt, j.predicate_type or "", verified, "; ".join(j.reasons),
                                      sha256_digest(data), j.signer_keyid,
                                      j.signer.signer_json() if verified and j.signer is not None else None,
                                      provenance_item(doc.name, j)))
    return out


def _referrer_credential_docs(target: Target, desc: Descriptor) -> list[tuple[str, bytes]]:
    docs: list[tuple[str, bytes]] = []
    for entry in target.referrers(desc.plain(), LEVEL_ARTIFACT_TYPE):
        try:
            m = parse_manifest(fetch_bytes(target, entry), media_type=entry.media_type, where=entry.digest)
        except AcxError:
            continue
        for layer in m.layers:
            try:
                docs.append((f"referrer {entry.digest}", fetch_bytes(target, layer, limit=MAX_DOC_BYTES)))
            except AcxError:
                continue
    return docs


def _embedded_credential_docs(cartridge: Path) -> list[tuple[str, bytes]]:
    from acxoci.cartridge.reader import open_cartridge

    docs: list[tuple[str, bytes]] = []
    with open_cartridge(cartridge) as cart:
        if cart.has_table("attestations"):
            for row in cart.attestations():
                if "vc" in row.media_type or "level" in row.type.lower():
                    docs.append((f"cartridge attestation {row.att_id}", row.document))
    return docs


def gather_credentials(docs: Iterable[tuple[str, bytes]], sig: C.SignatureEvidence,
                       policy: VerificationPolicy, staged: Path | None, now: datetime, cache: Path
                       ) -> list[C.CredentialFound]:
    """Verify every level credential (proof, issuer, gate, ROM binding, how it was measured) with
    the level verifier, then check revocation of each verified one against a fresh status list."""
    from acxoci.attest.trust import TrustRegistry
    from acxoci.level.credential import verify_credential
    from acxoci.level.issuers import IssuerRegistry

    issuers = IssuerRegistry(policy.issuer_registry or TrustRegistry(keys=()))
    rom = sig.rom_digest or ""
    out: list[C.CredentialFound] = []
    for i, (where, data) in enumerate(docs):
        try:
            doc = loads_strict(data)
        except AttestError as exc:
            out.append(C.CredentialFound("?", None, None, None, False, f"{where}: not JSON: {exc}"))
            continue
        if not isinstance(doc, dict) or "credentialSubject" not in doc:
            continue
        v = verify_credential(doc, issuers=issuers, expected_rom_digest=rom, now=now,
                              subject_publisher=sig.publisher_id, subject_keyid=sig.keyid)
        verified = v.state == "unresolved"  # everything but revocation checked out
        cred = C.CredentialFound(v.issuer or "?", v.level, v.tier, v.rom_digest, verified,
                                 "; ".join(r for r in v.reasons if "revocation status not checked" not in r),
                                 sha256_digest(data), v.keyid,
                                 measurement=C.measurement_of(doc))
        if verified:
            if staged is not None:
                folder = staged / "credentials"
                folder.mkdir(exist_ok=True)
                (folder / f"{i:02d}-level.json").write_bytes(data)
            cred = _with_status(cred, doc, policy, issuers, now, cache)
        out.append(cred)
    return out


def status_cache_dir(policy: VerificationPolicy) -> Path:
    """Where status lists and the trust documents' high-water marks are kept: the policy's
    `revocation.statusListCache`, else the user's cache folder (`acxoci/status-lists`). Not in the
    store: a refusal leaves the store byte-identical, while a mark must outlive the refusal."""
    from acxoci.level.status import default_cache_dir

    return Path(policy.status_list_cache) if policy.status_list_cache else default_cache_dir()


def _with_status(cred: C.CredentialFound, doc: dict[str, Any], policy: VerificationPolicy, issuers: Any,
                 now: datetime, cache: Path) -> C.CredentialFound:
    from acxoci.attest.statuslist import StatusEntry
    from acxoci.level.status import check_status

    raw = doc.get("credentialStatus")
    if raw is None:
        return cred
    try:
        entry = StatusEntry.from_json(raw)
    except AttestError as exc:
        return replace(cred, status_error=f"credentialStatus: {exc}")
    source = policy.status_list_sources.get(entry.list_credential, entry.list_credential)
    outcome = check_status(entry, source=source, issuers=issuers, vc_issuer=cred.issuer, now=now,
                           max_age=timedelta(seconds=policy.max_status_list_age),
                           allow_offline=policy.allow_offline_cached, cache_dir=cache)
    return replace(cred, status_list=entry.list_credential, status_index=entry.index,
                   revoked={"revoked": True, "valid": False}.get(outcome.state),
                   status_list_valid_from=outcome.list_valid_from,
                   status_list_source="cache" if outcome.from_cache else "fetched",
                   status_stale=outcome.stale,
                   status_error=outcome.reason if outcome.state == "failed" else None,
                   status_reason=outcome.reason)


# ---- gathering: the host's side ----------------------------------------------------------------


def gather_harness(path: Path, host: HostInputs, staged: Path | None) -> C.HarnessEvidence | None:
    """Negotiate the cartridge's harness requirements with the host descriptor (None: no host)."""
    if host.descriptor is None:
        return None
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.policy.harness import ROM_PATH, negotiate, parse_harness, parse_host

    parsed_host = parse_host(host.descriptor, where=host.descriptor_source or "host descriptor")
    with open_cartridge(path) as cart:
        data = cart.sqlar_read(ROM_PATH)
    if data is None:
        return C.HarnessEvidence(False, ("missing harness-requirements manifest",))
    try:
        req = parse_harness(loads_strict(data))
    except (AcxError, AttestError) as exc:
        msg = exc.one_line() if isinstance(exc, AcxError) else str(exc)
        return C.HarnessEvidence(False, (f"harness requirements invalid: {msg}",))
    descriptor = negotiate(req, parsed_host, sha256_digest(data))
    doc = descriptor.to_json()
    if staged is not None:
        (staged / "harness-compliance.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return C.HarnessEvidence(descriptor.accepted, tuple(descriptor.unmet), doc)


def gather_budget(path: Path, host: HostInputs) -> C.BudgetEvidence:
    """The package's problems as `acx cartridge spec` finds them (loop + context policy, harness
    document, package spec, skill table against the SKILL.md files: one set of checks for spec,
    `check`, `harness negotiate` and install), its budget, and the host's limits."""
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.cartridge.spec import check_spec
    from acxoci.policy.loop_context import ROM_PATH

    with open_cartridge(path) as cart:
        data = cart.sqlar_read(ROM_PATH)
    if data is None:
        return C.BudgetEvidence(present=False, host=host.limits)
    errors = tuple(f"{i.path}: {i.message} ({i.rule})" for i in check_spec(path).issues
                   if i.severity == "error")
    try:
        doc = loads_strict(data)
    except AttestError:
        return C.BudgetEvidence(policy_errors=errors or ("loop + context policy is not JSON",),
                                host=host.limits)
    budget = doc.get("budget") if isinstance(doc, dict) else None
    limits = ResourceLimits.from_json(budget) if isinstance(budget, dict) and not errors else None
    return C.BudgetEvidence(errors, limits, host.limits)


# ---- gathering: lifecycle ----------------------------------------------------------------------


def gather_lifecycle(target: Target, desc: Descriptor, ref_text: str, cache: Path,
                     now: datetime) -> C.LifecycleEvidence:
    """The Exchange lifecycle of the release (docs/exchange.md), never older than the newest record
    already seen for it (a registry that drops a `withdrawn` record does not un-withdraw it)."""
    from acxoci.exchange.lifecycle import lifecycle_verdict
    from acxoci.freshness import HighWater

    try:
        verdict = lifecycle_verdict(target, desc, ref_text, HighWater(cache), now)
    except TruncatedBody as exc:  # a cut transfer is retryable, not a verdict
        raise TransientError(f"transfer cut short: {exc.one_line()}", hint="retry") from exc
    except TransientError:
        raise
    except Tampered as exc:
        return C.LifecycleEvidence("refuse", f"lifecycle referrers: {exc.one_line()}", error=exc.one_line())
    return C.LifecycleEvidence(verdict.action, verdict.message, verdict.to_json())


# ---- the gathering of one artifact ---------------------------------------------------------------


def _guard(cid: str, fn: Callable[[], Any]) -> tuple[Any, C.CheckResult | None]:
    """Run a gatherer; a missing verifier or an unexpected failure makes its check `unavailable`."""
    try:
        return fn(), None
    except ImportError as exc:
        return None, C.unavailable(cid, f"verifier not available: {exc}")
    except TransientError:
        raise  # a flaky registry is not a verdict: the caller fails with a retryable error
    except AcxError as exc:
        return None, C.unavailable(cid, exc.one_line())


@dataclass(frozen=True)
class Source:
    """Where the artifact's referrers live: the target it came from and its manifest (None for a
    local file), or the folder an install kept its attestations in."""

    target: Target | None = None
    desc: Descriptor | None = None
    reference: str = ""
    kept: Path | None = None
    kept_subject: str | None = None


def default_name(meta_publisher: str | None, artifact_id: str | None, fallback: str) -> str:
    """`publisher/artifact-id` lowercased and made path-safe (the fallback when unknown)."""
    import re

    raw = f"{meta_publisher}/{artifact_id}" if meta_publisher and artifact_id else fallback
    cleaned = "/".join(re.sub(r"[^a-z0-9._-]+", "-", seg.lower()).strip("-._") or "x"
                       for seg in raw.split("/") if seg)
    return cleaned[:200] or "artifact"


@dataclass(frozen=True)
class Context:
    """The explicit inputs besides the artifact: policy, time, host, and (for install) the store
    the version and staffing checks look at."""

    policy: VerificationPolicy
    now: datetime
    host: HostInputs = HostInputs()
    installed: InstalledView | None = None
    name: str | None = None
    allow_downgrade: bool = False
    remote: RemoteOptions | None = None
    levels: bool = False  # gather level credentials even when the policy requires no level (staffing)
    pulled: tuple[Any, ...] = ()  # roster entries pulled from registries, for a workflow's staffing
    source: str | None = None  # where the artifact is recorded as coming from (`file:PATH` for load)
    note: Callable[[str], None] | None = None  # told what is being done (progress on a terminal)
    cache: Path | None = None  # where trust documents are cached (default: `status_cache_dir`)

    def trust_cache(self) -> Path:
        """The status-list cache and high-water marks this judgement reads and writes."""
        if self.cache is not None and not self.policy.status_list_cache:
            return self.cache
        return status_cache_dir(self.policy)

    def tell(self, what: str) -> None:
        """Say what the judge is doing now (for a progress line; nothing when nobody listens)."""
        if self.note is not None:
            self.note(what)


def gather(kind: Kind | None, path: Path | None, src: Source, ctx: Context, *, repository: str,
           content: C.ContentEvidence | None, tag: str | None, lifecycle: C.LifecycleEvidence | None,
           workdir: Path | None, fallback_name: str, local_file: bool = False
           ) -> tuple[C.Gathered, dict[str, str], str]:
    """Everything the checks decide on for one artifact whose content is at `path`."""
    policy, now, host = ctx.policy, ctx.now, ctx.host
    meta: dict[str, str] = {}
    pre: dict[str, C.CheckResult] = {}
    sig: C.SignatureEvidence | None = None
    atts: list[C.AttestationFound] | None = None
    creds: list[C.CredentialFound] | None = None
    harness: C.HarnessEvidence | None = None
    budget: C.BudgetEvidence | None = None
    staffing: dict[str, Any] | None = None
    usable = path is not None and (content is None or content.error is None)
    if usable and path is not None and kind == "cartridge":
        got, err = _guard("signature", lambda: cartridge_signature(path, policy, now))
        if got is not None:
            sig, meta = got
        elif err is not None:
            pre["signature"], pre["trust"] = err, C.unavailable("trust", err.reason)
        if (policy.level_floor is not None or ctx.levels) and sig is not None:
            s = sig

            def creds_now() -> list[C.CredentialFound]:
                docs = _embedded_credential_docs(path)
                if src.target is not None and src.desc is not None:
                    docs = _referrer_credential_docs(src.target, src.desc) + docs
                elif src.kept is not None:
                    docs = kept_credential_docs(src.kept) + docs
                return gather_credentials(docs, s, policy, workdir, now, ctx.trust_cache())

            creds, err = _guard("level", creds_now)
            if err:
                pre["level"], pre["revocation"] = err, C.unavailable("revocation", err.reason)
        if host.descriptor is not None:
            harness, err = _guard("harness", lambda: gather_harness(path, host, workdir))
            if err:
                pre["harness"] = err
        budget, err = _guard("policy-budget", lambda: gather_budget(path, host))
        if err:
            pre["policy-budget"] = err
    elif usable and path is not None and kind == "workflow":
        got_wf, err = _guard("signature", lambda: gather_workflow(path, ctx))
        if got_wf is not None:
            sig, staffing, meta = got_wf
        elif err is not None:
            pre["signature"] = err
    elif usable and path is not None and kind == "agent-graph":
        got_g, err = _guard("signature", lambda: graph_signature(path, policy, now))
        if got_g is not None:
            sig, meta = got_g
        elif err is not None:
            pre["signature"] = err
    if usable and (policy.attestation_formats or policy.predicate_types or policy.provenance is not None):
        publisher = sig.publisher_id if sig else None
        if src.target is not None and src.desc is not None:
            t, d = src.target, src.desc
            atts, err = _guard("attestations", lambda: gather_attestations(t, d, src.reference, policy,
                                                                          workdir or Path("."), now,
                                                                          publisher))
        elif src.kept is not None and src.kept_subject is not None:
            kept, subject = src.kept, src.kept_subject
            atts, err = _guard("attestations", lambda: rejudge_attestations(kept / "attestations", subject,
                                                                           policy, now, publisher))
        else:
            atts, err = [], None
        if err:
            pre["attestations"] = err
    version: C.VersionEvidence | None = None
    item_name = ""
    if sig is not None:
        item_name = ctx.name or default_name(meta.get("acx.publisher_id") or sig.publisher_id,
                                             meta.get("acx.artifact_id") or meta.get("workflowId")
                                             or meta.get("agentGraphId"), fallback_name)
        installed = _installed_version(ctx.installed, item_name)
        version = C.VersionEvidence(meta.get("acx.artifact_version"), tag, installed, item_name,
                                    ctx.allow_downgrade)
    gathered = C.Gathered(repository, content, sig, atts, creds, harness, host.descriptor is not None,
                          True, budget, kind=kind, staffing=staffing, version=version, lifecycle=lifecycle,
                          unavailable=pre, local_file=local_file)
    return gathered, meta, item_name


def _installed_version(installed: InstalledView | None, name: str) -> str | None:
    if installed is None:
        return None
    for item in installed.list():
        if item.name == name:
            return opt(item.doc.artifact_version) if item.doc is not None else None
    return None


def kept_credential_docs(folder: Path) -> list[tuple[str, bytes]]:
    """The level credentials an install kept (`credentials/*.json`)."""
    creds = folder / "credentials"
    if not creds.is_dir():
        return []
    from acxoci.fsutil import read_bytes

    return [(f"kept {p.name}", read_bytes(p, "kept credential", limit=1 << 20, nofollow=True))
            for p in sorted(creds.glob("*.json"))]


# ---- staffing: a workflow's team, each member judged now ------------------------------------------


class JudgedLevels:
    """`workflow ready`'s level resolver over judgements: a cartridge's level is the level of the
    credential the one decision relied on (verified, accepted issuer, ROM-bound, not revoked)."""

    def __init__(self, levels: Mapping[str, tuple[int, str | None, str | None]]) -> None:
        self._levels = dict(levels)

    def proven_level(self, cartridge: Any) -> Any:
        from acxoci.workflow.ready import ProvenLevel

        got = self._levels.get(str(cartridge.path))
        return None if got is None else ProvenLevel(got[0], got[1], got[2])


def staffing_roster(ctx: Context, pulled: Sequence[Any] = ()) -> tuple[list[Any], JudgedLevels]:
    """The cartridges a team may be staffed from, each judged now under the team's policy: the
    store's installed ones, those in `host.roster` (a folder), and `pulled` roster entries (pulled
    from a registry or layout, judged at the digest they were pulled at). A refused one stays on the
    roster as unstaffable, with the decision's reasons; a slot's level comes only from the
    credential the decision relied on (`Judgement.proven_level`)."""
    from acxoci.oci.reference import parse_reference as parse
    from acxoci.workflow.ready import directory_roster, load_roster_entry

    policy, now = ctx.policy, ctx.now
    member = staffing_policy(policy)
    member_ctx = replace(ctx, policy=member, installed=None, name=None, levels=True, cache=ctx.trust_cache())
    entries: list[Any] = []
    levels: dict[str, tuple[int, str | None, str | None]] = {}

    def admit(entry: Any, verdict: Judgement) -> None:
        entry = replace(entry, minimum=policy.minimum_trust)
        if not verdict.ok:
            entry = replace(entry, error="refused by the policy: " + "; ".join(verdict.reasons()))
        else:
            proven = verdict.proven_level(member)
            if proven is not None and proven.level is not None:
                levels[entry.path] = (proven.level, proven.tier, proven.digest)
        entries.append(entry)

    for item in ctx.installed.list() if ctx.installed is not None else []:
        if item.kind != "cartridge":
            continue
        entry = load_roster_entry(f"installed:{item.name}", item.path / CARTRIDGE_FILE,
                                  registry=policy.combined_registry(), now=now)
        admit(entry, judge_installed(item, member_ctx))
    for label, path in directory_roster(ctx.host.roster) if ctx.host.roster is not None else []:
        entry = load_roster_entry(label, path, registry=policy.combined_registry(), now=now)
        admit(entry, judge_file(path, member_ctx))
    for entry in pulled:
        if entry.manifest_digest is None:  # it could not be pulled: unstaffable, with its error
            entries.append(replace(entry, minimum=policy.minimum_trust))
            continue
        at_digest = f"{parse(entry.source, require_ref=False).repo_string()}@{entry.manifest_digest}"
        admit(entry, judge_reference(at_digest, member_ctx))
    return entries, JudgedLevels(levels)


def staffing_policy(policy: VerificationPolicy) -> VerificationPolicy:
    """The policy a team member is judged under: the workflow's, minus what applies only to the
    workflow document itself (its attestations). A slot's level is then proven from the member's
    own credentials (`Judgement.proven_level`)."""
    return replace(policy, attestation_formats=(), predicate_types=())


def gather_workflow(path: Path, ctx: Context) -> tuple[C.SignatureEvidence, dict[str, Any], dict[str, str]]:
    """Verify the workflow and staff it from the judged roster (`ready`)."""
    from acxoci.workflow.model import Workflow
    from acxoci.workflow.ready import assess

    sig, meta, doc, verdict = workflow_signature(path, ctx.policy, ctx.now)
    entries, levels = staffing_roster(ctx, ctx.pulled)
    report = assess(Workflow.from_json(doc), entries, workflow_verdict=verdict, level_resolver=levels)
    staffing = report.to_json()
    staffing["ready"] = report.ready
    return sig, staffing, meta


# ---- the entry points --------------------------------------------------------------------------


def _decide(reference: str, digest: str | None, kind: str | None, gathered: C.Gathered,
            meta: Mapping[str, str], pulled: Pulled | None, name: str, ctx: Context) -> Judgement:
    results = C.run_checks(gathered, ctx.policy, ctx.now)
    return Judgement(reference, digest, kind, tuple(results), gathered, dict(meta), pulled, name or None)


def judge_descriptor(target: Target, desc: Descriptor, ref: Reference, ref_text: str, resolved: str,
                     ctx: Context, workdir: Path, lifecycle: C.LifecycleEvidence | None) -> Judgement:
    """Pull the artifact `desc` into `workdir` and judge it (the registry check already passed)."""
    ctx.tell(f"pulling {desc.digest}")
    pulled = pull(target, desc, workdir)
    ctx.tell(f"judging {pulled.kind or 'artifact'} {desc.digest}")
    manifest_digest = sha256_digest(pulled.manifest_bytes) if pulled.manifest_bytes is not None else None
    content = C.ContentEvidence(resolved, manifest_digest, pulled.error, tuple(pulled.blobs))
    src = Source(target, desc, str(ref))
    repository = ctx.source or ref.repo_string()
    gathered, meta, name = gather(pulled.kind, pulled.content_path, src, ctx, repository=repository,
                                  content=content, tag=None if ctx.source else ref.tag, lifecycle=lifecycle,
                                  workdir=workdir, fallback_name=repository)
    return _decide(ref_text, resolved, pulled.kind, gathered, meta, pulled, name, ctx)


def open_reference(ref_text: str, ctx: Context) -> tuple[Target, Reference]:
    """The reference parsed (a layout's path made absolute: a record names it from anywhere) and
    its target opened read-only (one referrer listing per subject)."""
    import os

    ref = parse_reference(ref_text, require_ref=False)
    if ref.layout_path is not None:
        ref = replace(ref, layout_path=os.path.abspath(ref.layout_path))
    opened, ref = open_target(ref, ctx.remote or RemoteOptions(), create=False)
    return ReadView(opened), ref


def registry_refusal(ref_text: str, repository: str, policy: VerificationPolicy) -> Judgement | None:
    """A refusal before any registry is contacted, when the policy does not allow the repository."""
    reg = C.check_registry(repository, policy)
    if not reg.failed:
        return None
    return Judgement(ref_text, None, None, tuple(not_attempted([reg], "the registry is not allowed")))


def resolve_and_gate(target: Target, ref: Reference, ref_text: str, ctx: Context
                     ) -> tuple[Descriptor, str, C.LifecycleEvidence | None] | Judgement:
    """One GET resolves the reference; then the lifecycle gate. A refusal comes back as a Judgement
    (a pinned digest answered with other bytes, a withdrawn release)."""
    reg = C.check_registry(ctx.source or ref.repo_string(), ctx.policy)
    ctx.tell(f"resolving {ref_text}")
    try:
        desc = resolve_manifest(target, ref.reference or "latest")
    except TruncatedBody as exc:  # the manifest GET was cut: a transport failure, not a verdict
        raise TransientError(f"transfer cut short: {exc.one_line()}", hint="retry") from exc
    except Tampered as exc:  # the registry answered a pinned digest with other content
        bad = C.check_content(C.ContentEvidence(ref.digest or "?", None, exc.one_line()))
        return Judgement(ref_text, ref.digest, None,
                         tuple(not_attempted([reg, bad], "nothing verifiable was pulled")))
    resolved = ref.digest if ref.digest is not None and desc.digest != ref.digest else desc.digest
    if ctx.source is not None:  # a local file staged in a scratch layout: no Exchange lifecycle
        return desc, resolved, None
    ctx.tell(f"reading the lifecycle of {resolved}")
    lifecycle = gather_lifecycle(target, desc, ref_text, ctx.trust_cache(), ctx.now)
    if lifecycle.error is not None:  # the registry served altered referrer bytes: a content refusal
        bad = C.check_content(C.ContentEvidence(resolved, None, lifecycle.message))
        return Judgement(ref_text, resolved, None,
                         tuple(not_attempted([reg, bad], "nothing verifiable was pulled")))
    if lifecycle.action == "refuse":
        results = [reg, C.CheckResult("content-digest", "skip", "not attempted: the release is withdrawn")]
        done = not_attempted(results, "the release is withdrawn")
        done = [C.check_lifecycle(lifecycle) if r.id == "lifecycle" else r for r in done]
        return Judgement(ref_text, resolved, None, tuple(done))
    return desc, resolved, lifecycle


def judge_reference(ref_text: str, ctx: Context) -> Judgement:
    """`acx verify REF --policy`, `push --policy` and the release read-back: the artifact at
    `ref_text` judged exactly as `install` would, writing nothing but a scratch folder."""
    import tempfile

    repository = ctx.source or parse_reference(ref_text, require_ref=False).repo_string()
    early = registry_refusal(ref_text, repository, ctx.policy)
    if early is not None:
        return early
    target, ref = open_reference(ref_text, ctx)
    gated = resolve_and_gate(target, ref, ref_text, ctx)
    if isinstance(gated, Judgement):
        return gated
    desc, resolved, lifecycle = gated
    with tempfile.TemporaryDirectory(prefix="acx-judge-") as tmp:
        return judge_descriptor(target, desc, ref, ref_text, resolved, ctx, Path(tmp), lifecycle)


def signed_version(path: Path, kind: str) -> str | None:
    """The version an artifact file's signature covers (a cartridge's `acx.artifact_version`, a
    signed workflow's or graph's `version`), read without judging trust; None when unsigned."""
    if kind == "cartridge":
        from acxoci.cartridge.reader import open_cartridge

        with open_cartridge(path) as cart:
            return cart.meta().get("acx.artifact_version")
    doc = _json_content(path, kind, MAX_DOC_BYTES)
    if not isinstance(doc, dict) or not isinstance(doc.get("integrity"), dict):
        return None
    version = doc.get("version")
    return version if isinstance(version, str) else None


def tag_decision(path: Path, kind: str, tag: str | None) -> C.CheckResult:
    """The version check `install` makes, asked at publish time: a SemVer-shaped tag must name the
    artifact's signed version (a tag that does not is a rollback to every consumer)."""
    signed = signed_version(path, kind)
    verdict = C.check_version(C.VersionEvidence(signed, tag))
    if verdict.failed and signed is None:  # say what is wrong: there is no signed version at all
        return replace(verdict, reason=f"{path.name} is an unsigned {kind}: a version tag ({tag}) names a "
                       "signed version, and install refuses an unsigned artifact anyway")
    return verdict


def _file_kind(path: Path) -> Kind:
    from acxoci.artifact import detect_kind

    kind = detect_kind(path)
    return "agent-graph" if kind == "agent-graph" else "workflow" if kind == "workflow" else "cartridge"


def judge_file(path: Path, ctx: Context, policy: VerificationPolicy | None = None,
               workdir: Path | None = None) -> Judgement:
    """A local artifact file judged as `install` judges a pulled one (no registry: the registry,
    content-digest and lifecycle checks do not apply; only embedded credentials count)."""
    if policy is not None:
        ctx = replace(ctx, policy=policy)
    kind = _file_kind(path)
    gathered, meta, name = gather(kind, path, Source(), ctx, repository=f"file:{path}", content=None,
                                  tag=None, lifecycle=None, workdir=workdir, fallback_name=path.stem,
                                  local_file=True)
    return _decide(f"file:{path}", None, kind, gathered, meta, None, name, ctx)


def judge_installed(item: InstalledItem, ctx: Context, policy: VerificationPolicy | None = None, *,
                    content: Path | None = None) -> Judgement:
    """An installed item judged now: its files against its record (the content check), then as a
    pulled artifact under today's policy, trust registries, status lists and lifecycle records.
    `content`: a private copy of the item's content file, already proven equal to the record's
    digest, to judge instead of the store's file (activation reads only what was judged)."""
    from acxoci.install.store import record_files_problems

    if policy is not None:
        ctx = replace(ctx, policy=policy)
    doc = item.doc
    kind: Kind | None = item.kind if item.kind in CONTENT_FILE else None  # type: ignore[assignment]
    repository = doc.repository if doc is not None else ""
    from_file = repository.startswith("file:")
    ctx.tell(f"judging installed {item.name}")
    problems = record_files_problems(item)
    manifest_digest = file_sha256(item.path / MANIFEST_FILE)
    if not problems and kind is not None:
        problems = _chain_problems(item, kind, manifest_digest)
    evidence: C.ContentEvidence | None = C.ContentEvidence(
        item.digest, manifest_digest,
        "; ".join(problems[:5]) if problems else None,
        (("content", str(opt(doc.content_digest)) if doc is not None else "none"),))
    path = content if content is not None else item.path / CONTENT_FILE[kind] if kind is not None else None
    lifecycle: C.LifecycleEvidence | None = None
    if not from_file and not problems:
        lifecycle = _installed_lifecycle(item, ctx)
    src = Source(kept=item.path, kept_subject=item.digest)
    gathered, meta, _ = gather(kind, path, src, replace(ctx, name=item.name), repository=repository,
                               content=evidence, tag=None, lifecycle=lifecycle, workdir=None,
                               fallback_name=item.name)
    return _decide(doc.reference if doc is not None else item.name, item.digest, kind, gathered, meta, None,
                   item.name, ctx)


def _chain_problems(item: InstalledItem, kind: str, manifest_digest: str | None) -> list[str]:
    """The installed bytes must be the artifact the record names: manifest.json hashes to the item's
    digest, and its content layer is the content file (a record rewritten to match other bytes
    does not make them the artifact)."""
    from acxoci.attestation.attach import content_layer

    if manifest_digest != item.digest:
        return [f"{MANIFEST_FILE}: hashes to {manifest_digest}, not the installed digest {item.digest}"]
    try:
        from acxoci.fsutil import read_bytes
        from acxoci.oci.descriptor import MANIFEST_LIMIT

        data = read_bytes(item.path / MANIFEST_FILE, "installed manifest", limit=MANIFEST_LIMIT)
        manifest = parse_manifest(data, where=MANIFEST_FILE)
        layer = content_layer(manifest, kind)
    except AcxError as exc:
        return [f"{MANIFEST_FILE}: {exc.one_line()}"]
    got = file_sha256(item.path / CONTENT_FILE[kind])
    if got != layer.digest:
        return [f"{CONTENT_FILE[kind]}: hashes to {got}, not the manifest's content layer {layer.digest}"]
    return []


def file_sha256(path: Path) -> str | None:
    """`sha256:<hex>` of a regular file (None when missing or not a regular file)."""
    import hashlib

    from acxoci.fsutil import open_regular

    try:
        fh = open_regular(path, "installed file", nofollow=True)
    except AcxError:
        return None
    with fh:
        h = hashlib.sha256()
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def _installed_lifecycle(item: InstalledItem, ctx: Context) -> C.LifecycleEvidence:
    """The lifecycle of an installed release, read again from the repository it came from (a
    failed read falls back to the newest record seen, which a registry cannot make older)."""
    from acxoci.exchange.lifecycle import lifecycle_from_high_water, seen_key
    from acxoci.freshness import HighWater

    assert item.doc is not None  # only a record that decodes has files that check (judge_installed)
    ref_text = item.doc.reference
    hw = HighWater(ctx.trust_cache())
    try:
        repo = parse_reference(item.doc.repository, require_ref=False)
        target, _ = open_target(replace(repo, digest=item.digest, tag=None), ctx.remote or RemoteOptions(),
                                create=False)
        desc = ReadView(target).resolve(item.digest)
        return gather_lifecycle(ReadView(target), desc, ref_text, ctx.trust_cache(), ctx.now)
    except AcxError as exc:
        max_age = None if ctx.policy.allow_offline_cached else float(ctx.policy.max_status_list_age)
        verdict = lifecycle_from_high_water(seen_key(item.doc.repository, item.digest), ref_text, hw, ctx.now,
                                            max_age)
        if verdict is None:
            return C.LifecycleEvidence("unknown", f"lifecycle could not be read ({exc.one_line()}) and no "
                                       "fresh enough record was seen before", error=exc.one_line())
        return C.LifecycleEvidence(verdict.action, f"{verdict.message} (the newest record seen; "
                                   f"the registry could not be read: {exc.one_line()})", verdict.to_json())
