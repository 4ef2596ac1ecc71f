"""`acx install REF`: resolve the reference to a digest, pull into a staging folder of the store
through the OCI Target, gather every input the checks need (using the cartridge, attestation,
level, harness, policy and workflow verifiers), run the checks in their fixed order, and either
install with one atomic rename or refuse and leave the store as it was.

Test-only hook: with `ACX_TEST_PAUSE_AT=<stage>` the install sleeps at that stage (after touching
`$ACX_TEST_PAUSE_FILE` if set) so a test can SIGKILL it there deterministically. Stages: locked,
resolved, pulled, checked, staged (record written, before the rename), renamed (after the rename,
before superseded items are removed). Never set it outside tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from acxoci import __version__
from acxoci.errors import AcxError, InternalError, InvalidInput, RefusedByPolicy, Tampered, TransientError
from acxoci.install import checks as C
from acxoci.install.store import InstalledItem, Store, Transaction, check_name, list_files
from acxoci.install.testhooks import pause_for_test
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.jsonschemas import schema_errors
from acxoci.oci.descriptor import Descriptor, Manifest, parse_manifest
from acxoci.oci.digest import copy_verified
from acxoci.oci.errors import SizeMismatch, TruncatedBody
from acxoci.oci.reference import Reference, parse_reference
from acxoci.oci.target import ReadView, RemoteOptions, Target, fetch_bytes, open_target, resolve_manifest
from acxoci.policy.limits import ResourceLimits
from attest.canonical import loads_strict, sha256_digest
from attest.errors import AttestError

RECORD_SCHEMA = "acx.install-record/1"
RECORD_SCHEMA_FILE = "acx.install-record-1.schema.json"
CARTRIDGE_FILE = "cartridge.acx"
WORKFLOW_FILE = "workflow.cal.json"
GRAPH_FILE = "agent-graph.json"
MANIFEST_FILE = "manifest.json"
LEVEL_ARTIFACT_TYPE = "application/vnd.acx.level-attestation.v1"
MAX_DOC_BYTES = 16 * 1024 * 1024
Kind = Literal["cartridge", "workflow", "agent-graph"]


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


@dataclass(frozen=True)
class InstallOutcome:
    """What `install` did: installed, already-installed (a no-op) or refused, with every check."""

    status: Literal["installed", "already-installed", "refused"]
    reference: str
    digest: str | None
    name: str | None
    kind: str | None
    checks: tuple[C.CheckResult, ...] = ()
    record: dict[str, Any] | None = None
    path: str | None = None
    lifecycle: dict[str, Any] | None = None

    @property
    def failed(self) -> list[C.CheckResult]:
        return C.failures(self.checks)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "reference": self.reference, "digest": self.digest,
                               "name": self.name, "kind": self.kind,
                               "checks": [c.to_json() for c in self.checks]}
        if self.status == "refused":
            out["refusal"] = {"kind": RefusedByPolicy.kind, "exitCode": RefusedByPolicy.exit_code,
                              "failed": [c.to_json() for c in self.failed]}
        if self.path is not None:
            out["path"] = self.path
        if self.lifecycle is not None:
            out["lifecycle"] = self.lifecycle
        return out


class InstallRefused(RefusedByPolicy):
    """The verification or host policy refused the artifact; `outcome` lists every failed check."""

    def __init__(self, outcome: InstallOutcome) -> None:
        failed = outcome.failed
        super().__init__(f"install refused: {len(failed)} check(s) failed ("
                         + ", ".join(f"{c.id}: {c.kind}" for c in failed) + ")",
                         where=outcome.reference, details={"failed": [c.to_json() for c in failed]})
        self.outcome = outcome


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def default_name(meta_publisher: str | None, artifact_id: str | None, fallback: str) -> str:
    """`publisher/artifact-id` lowercased and made path-safe (the fallback when unknown)."""
    raw = f"{meta_publisher}/{artifact_id}" if meta_publisher and artifact_id else fallback
    cleaned = "/".join(re.sub(r"[^a-z0-9._-]+", "-", seg.lower()).strip("-._") or "x"
                       for seg in raw.split("/") if seg)
    return cleaned[:200] or "artifact"


# ---- gathering (I/O over the other capabilities' verifiers) ------------------------------------


@dataclass
class Pulled:
    """What the pull brought into staging."""

    manifest: Manifest | None = None
    manifest_bytes: bytes | None = None
    kind: Kind | None = None
    content_path: Path | None = None
    content_digest: str | None = None
    error: str | None = None
    blobs: list[tuple[str, str]] = field(default_factory=list)


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
        dest = staged / {"cartridge": CARTRIDGE_FILE, "agent-graph": GRAPH_FILE}.get(kind, WORKFLOW_FILE)
        with target.fetch(layer) as reader:
            copy_verified(reader, dest, fsync=True)
        out.content_path, out.content_digest = dest, layer.digest
        out.blobs.append(("content", layer.digest))
    except TruncatedBody as exc:  # the connection was cut: a transport failure, not a verdict
        raise TransientError(f"transfer cut short: {exc.one_line()}", hint="retry the install") from exc
    except SizeMismatch as exc:
        out.error = f"pulled content does not match its size: {exc.one_line()}"
    except Tampered as exc:
        out.error = f"pulled content does not match its digest: {exc.one_line()}"
    return out


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


def _attestation_keys(policy: VerificationPolicy, publisher_id: str | None) -> list[Any]:
    """The keys that may sign this artifact's attestations: its own publisher's keys (as the policy
    ties them) and the policy's `attestations.keys`, never another policy publisher's keys."""
    from acxoci.attestation.signing import TrustedKey
    from attest.keys import load_public_pem

    own = policy.publisher_for(publisher_id)
    keys: list[Any] = [] if own is None else [TrustedKey(k.public_key, f"policy publisher {own.id}", k)
                                              for k in own.registry.keys]
    keys += [TrustedKey(load_public_pem(pem), "policy attestation key") for pem in policy.attestation_keys]
    return keys


def gather_attestations(target: Target, desc: Descriptor, ref: Reference, policy: VerificationPolicy,
                        staged: Path, now: datetime, publisher_id: str | None = None
                        ) -> list[C.AttestationFound]:
    """Verify the artifact's attestations (legacy .att and bundle referrers) with the policy's keys,
    and copy the verified documents into `staged/attestations/`."""
    from acxoci.attestation.keyless_policy import policy_sigstore
    from acxoci.attestation.verify import find_attestations, verify_artifact

    own = policy.publisher_for(publisher_id)
    located = find_attestations(target, desc)
    report = verify_artifact(target, desc, _attestation_keys(policy, publisher_id), reference=str(ref),
                             now=now, sigstore=policy_sigstore(policy.document, policy.source,
                                                               own.id if own is not None else None),
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
        if verified and item is not None:
            data = fetch_bytes(target, item.layer, limit=MAX_DOC_BYTES)
            folder.mkdir(exist_ok=True)
            (folder / f"{i:02d}-{a.format}.json").write_bytes(data)
            digest = item.layer.digest
        out.append(C.AttestationFound(a.format, j.predicate_type or "", verified, "; ".join(j.reasons),
                                      digest,
                                      j.signer_keyid,
                                      j.signer.signer_json() if verified and j.signer is not None else None))
    return out


def _credential_docs(target: Target, desc: Descriptor, cartridge: Path | None) -> list[tuple[str, bytes]]:
    """Level credentials attached as referrers (artifactType level-attestation) and embedded in the
    cartridge's attestations table."""
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
    if cartridge is not None:
        from acxoci.cartridge.reader import open_cartridge

        with open_cartridge(cartridge) as cart:
            if cart.has_table("attestations"):
                for row in cart.attestations():
                    if "vc" in row.media_type or "level" in row.type.lower():
                        docs.append((f"cartridge attestation {row.att_id}", row.document))
    return docs


def gather_credentials(target: Target, desc: Descriptor, cartridge: Path | None, sig: C.SignatureEvidence,
                       policy: VerificationPolicy, staged: Path, now: datetime) -> list[C.CredentialFound]:
    """Verify every level credential (proof, issuer, gate, ROM binding) with the level verifier, then
    check revocation of each verified one against its status list (policy freshness and offline rules)."""
    from acxoci.level.credential import verify_credential
    from acxoci.level.issuers import IssuerRegistry
    from acxoci.level.status import check_status
    from attest.statuslist import StatusEntry
    from attest.trust import TrustRegistry

    issuers = IssuerRegistry(policy.issuer_registry or TrustRegistry(keys=()))
    rom = sig.rom_digest or ""
    out: list[C.CredentialFound] = []
    folder = staged / "credentials"
    for i, (where, data) in enumerate(_credential_docs(target, desc, cartridge)):
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
        digest = sha256_digest(data)
        cred = C.CredentialFound(v.issuer or "?", v.level, v.tier, v.rom_digest, verified,
                                 "; ".join(r for r in v.reasons if "revocation status not checked" not in r),
                                 digest, v.keyid)
        if verified:
            folder.mkdir(exist_ok=True)
            (folder / f"{i:02d}-level.json").write_bytes(data)
            cred = _with_status(cred, doc, policy, issuers, now, check_status, StatusEntry)
        out.append(cred)
    return out


def _with_status(cred: C.CredentialFound, doc: dict[str, Any], policy: VerificationPolicy, issuers: Any,
                 now: datetime, check_status: Callable[..., Any], entry_cls: Any) -> C.CredentialFound:
    from dataclasses import replace

    raw = doc.get("credentialStatus")
    if raw is None:
        return cred
    try:
        entry = entry_cls.from_json(raw)
    except AttestError as exc:
        return replace(cred, status_error=f"credentialStatus: {exc}")
    source = policy.status_list_sources.get(entry.list_credential, entry.list_credential)
    cache = Path(policy.status_list_cache) if policy.status_list_cache else None
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


def gather_harness(path: Path, host: HostInputs, staged: Path) -> C.HarnessEvidence | None:
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
    (staged / "harness-compliance.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return C.HarnessEvidence(descriptor.accepted, tuple(descriptor.unmet), doc)


def gather_budget(path: Path, host: HostInputs) -> C.BudgetEvidence:
    """The cartridge's loop + context policy findings and budget, with the host's limits."""
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.policy.loop_context import ROM_PATH, errors_only, validate_policy

    with open_cartridge(path) as cart:
        data = cart.sqlar_read(ROM_PATH)
    if data is None:
        return C.BudgetEvidence(present=False, host=host.limits)
    try:
        doc = loads_strict(data)
    except AttestError as exc:
        return C.BudgetEvidence(policy_errors=(f"not JSON: {exc}",), host=host.limits)
    errors = tuple(str(i) for i in errors_only(validate_policy(doc)))
    budget = doc.get("budget") if isinstance(doc, dict) else None
    limits = ResourceLimits.from_json(budget) if isinstance(budget, dict) else None
    return C.BudgetEvidence(errors, limits, host.limits)


def _guard(cid: str, fn: Callable[[], Any]) -> tuple[Any, C.CheckResult | None]:
    """Run a gatherer; a missing verifier or an unexpected failure makes its check `unavailable`."""
    try:
        return fn(), None
    except ImportError as exc:
        return None, C.unavailable(cid, f"verifier not available: {exc}")
    except TransientError:
        raise  # a flaky registry is not a verdict: the install fails with a retryable error
    except AcxError as exc:
        return None, C.unavailable(cid, exc.one_line())


# ---- the orchestrator ------------------------------------------------------------------------


def _refuse_early(ref_text: str, results: list[C.CheckResult]) -> InstallOutcome:
    return InstallOutcome("refused", ref_text, None, None, None, tuple(results))


def install(ref_text: str, *, policy: VerificationPolicy, store: Store, now: datetime,
            host: HostInputs | None = None, remote: RemoteOptions | None = None,
            name: str | None = None, allow_downgrade: bool = False) -> InstallOutcome:
    """Pull, prove and install `ref_text` into `store`, or refuse leaving the store unchanged.
    Errors that are not refusals (bad reference, registry unreachable) raise their AcxError."""
    host = host or HostInputs()
    if name is not None:
        check_name(name)
    ref = parse_reference(ref_text, require_ref=False)
    repo = ref.repo_string()
    reg = C.check_registry(repo, policy)
    if reg.failed:  # never contact a registry the policy does not allow
        skipped = [C.CheckResult(cid, "skip", "not attempted: the registry is not allowed")
                   for cid in C.CHECK_ORDER[1:]]
        return _refuse_early(ref_text, [reg, *skipped])
    opened, ref = open_target(ref, remote or RemoteOptions(), create=False)
    target = ReadView(opened)  # one referrer listing per subject for this install, no writes
    with store.transaction() as txn:
        pause_for_test("locked")
        try:  # one GET: the manifest verified and installed is the one whose digest was resolved
            desc = resolve_manifest(target, ref.reference or "latest")
        except TruncatedBody as exc:  # the manifest GET was cut: a transport failure, not a verdict
            raise TransientError(f"transfer cut short: {exc.one_line()}", hint="retry the install") from exc
        except Tampered as exc:  # the registry answered a pinned digest with other content
            bad = C.check_content(C.ContentEvidence(ref.digest or "?", None, exc.one_line()))
            rest = [C.CheckResult(cid, "skip", "not attempted: nothing verifiable was pulled")
                    for cid in C.CHECK_ORDER[2:]]
            return _refuse_early(ref_text, [reg, bad, *rest])
        pause_for_test("resolved")
        resolved = desc.digest
        if ref.digest is not None and desc.digest != ref.digest:
            resolved = ref.digest  # the registry answered with something else: content-digest fails
        try:
            lifecycle = exchange_lifecycle(target, desc, ref_text)
        except Tampered as exc:  # the registry served altered referrer bytes: a content refusal
            bad = C.check_content(C.ContentEvidence(resolved, None, f"lifecycle referrers: {exc.one_line()}"))
            rest = [C.CheckResult(cid, "skip", "not attempted: nothing verifiable was pulled")
                    for cid in C.CHECK_ORDER[2:]]
            return _refuse_early(ref_text, [reg, bad, *rest])
        for item in store.list():
            if item.digest == resolved and (name is None or item.name == name):
                txn.tidy(item.name)
                return InstallOutcome("already-installed", ref_text, resolved, item.name,
                                      str(item.record.get("kind")), record=item.record, path=str(item.path),
                                      lifecycle=lifecycle)
        staged = txn.stage()
        outcome = _install_staged(txn, staged, target, ref, ref_text, desc, resolved, policy, host, now,
                                  name, allow_downgrade)
        return replace(outcome, lifecycle=lifecycle)


def exchange_lifecycle(target: Target, desc: Descriptor, ref_text: str) -> dict[str, Any] | None:
    """The Exchange lifecycle of the release (docs/exchange.md): ReleaseWithdrawn (exit 8) refuses a
    withdrawn one before anything is pulled; deprecated/superseded come back as a warning."""
    from acxoci.exchange.lifecycle import lifecycle_gate

    try:
        verdict = lifecycle_gate(target, desc, ref_text)
    except TruncatedBody as exc:  # a cut transfer is retryable, not a verdict
        raise TransientError(f"transfer cut short: {exc.one_line()}", hint="retry the install") from exc
    return None if verdict.action == "allow" else verdict.to_json()


def _install_staged(txn: Transaction, staged: Path, target: Target, ref: Reference, ref_text: str,
                    desc: Descriptor, resolved: str, policy: VerificationPolicy,
                    host: HostInputs, now: datetime, name: str | None,
                    allow_downgrade: bool = False) -> InstallOutcome:
    pulled = pull(target, desc, staged)
    pause_for_test("pulled")
    manifest_digest = sha256_digest(pulled.manifest_bytes) if pulled.manifest_bytes is not None else None
    content = C.ContentEvidence(resolved, manifest_digest, pulled.error, tuple(pulled.blobs))
    meta: dict[str, str] = {}
    pre: dict[str, C.CheckResult] = {}
    sig: C.SignatureEvidence | None = None
    atts: list[C.AttestationFound] | None = None
    creds: list[C.CredentialFound] | None = None
    harness: C.HarnessEvidence | None = None
    budget: C.BudgetEvidence | None = None
    staffing: dict[str, Any] | None = None
    kind = pulled.kind
    path = pulled.content_path
    if pulled.error is None and path is not None and kind == "cartridge":
        got, err = _guard("signature", lambda: cartridge_signature(path, policy, now))
        if got is not None:
            sig, meta = got
        elif err is not None:
            pre["signature"] = err
            pre["trust"] = C.unavailable("trust", err.reason)
        if policy.attestation_formats or policy.predicate_types:
            atts, err = _guard("attestations",
                               lambda: gather_attestations(target, desc, ref, policy, staged, now,
                                                           sig.publisher_id if sig else None))
            if err:
                pre["attestations"] = err
        if policy.level_floor is not None and sig is not None:
            s = sig
            creds, err = _guard("level",
                                lambda: gather_credentials(target, desc, path, s, policy, staged, now))
            if err:
                pre["level"], pre["revocation"] = err, C.unavailable("revocation", err.reason)
        if host.descriptor is not None:
            harness, err = _guard("harness", lambda: gather_harness(path, host, staged))
            if err:
                pre["harness"] = err
        budget, err = _guard("policy-budget", lambda: gather_budget(path, host))
        if err:
            pre["policy-budget"] = err
    elif pulled.error is None and path is not None and kind == "workflow":
        from acxoci.install.workflow_install import gather_workflow

        got, err = _guard("signature", lambda: gather_workflow(path, policy, txn.store, host.roster, now))
        if got is not None:
            sig, staffing, meta = got
        elif err is not None:
            pre["signature"] = err
        if policy.attestation_formats or policy.predicate_types:
            atts, err = _guard("attestations",
                               lambda: gather_attestations(target, desc, ref, policy, staged, now,
                                                           sig.publisher_id if sig else None))
            if err:
                pre["attestations"] = err
    elif pulled.error is None and path is not None and kind == "agent-graph":
        from acxoci.install.workflow_install import gather_graph

        got_graph, err = _guard("signature", lambda: gather_graph(path, policy, now))
        if got_graph is not None:
            sig, meta = got_graph
        elif err is not None:
            pre["signature"] = err
        if policy.attestation_formats or policy.predicate_types:
            atts, err = _guard("attestations",
                               lambda: gather_attestations(target, desc, ref, policy, staged, now,
                                                           sig.publisher_id if sig else None))
            if err:
                pre["attestations"] = err
    version: C.VersionEvidence | None = None
    item_name = ""
    if sig is not None:
        item_name = name or default_name(meta.get("acx.publisher_id") or sig.publisher_id,
                                         meta.get("acx.artifact_id") or meta.get("workflowId")
                                         or meta.get("agentGraphId"), ref.repo_string())
        current = txn.store.get(item_name)
        installed = current.record.get("artifactVersion") if current is not None else None
        version = C.VersionEvidence(meta.get("acx.artifact_version"), ref.tag,
                                    installed if isinstance(installed, str) else None, item_name,
                                    allow_downgrade)
    gathered = C.Gathered(ref.repo_string(), content, sig, atts, creds, harness, host.descriptor is not None,
                          True, budget, kind=kind, staffing=staffing, version=version)
    results = [pre.get(r.id, r) for r in C.run_checks(gathered, policy, now)]
    pause_for_test("checked")
    if C.failures(results):
        return InstallOutcome("refused", ref_text, resolved, None, kind, tuple(results))
    assert path is not None and kind is not None and sig is not None
    record = build_record(
        name=item_name, kind=kind, ref_text=ref_text, ref=ref, resolved=resolved, desc=desc, pulled=pulled,
        results=results, policy=policy, host=host, sig=sig, atts=atts, creds=creds, harness=harness,
        budget=budget, staffing=staffing, seq=txn.next_seq(), now=now, staged=staged,
        artifact_version=version.signed if version is not None else None)
    problems = record_errors(record)
    if problems:  # a bug in acxoci, never a half-written item: the staging folder is discarded
        raise InternalError("install record violates its schema: " + "; ".join(problems[:5]))
    pause_for_test("staged")
    item: InstalledItem = txn.commit(staged, record, allow_downgrade=allow_downgrade)
    return InstallOutcome("installed", ref_text, resolved, item.name, kind, tuple(results), record,
                          str(item.path))


def record_errors(record: Any) -> list[str]:
    """Schema violations of an install record (`schemas/acx.install-record-1.schema.json`)."""
    return schema_errors(RECORD_SCHEMA_FILE, record)


def build_record(*, name: str, kind: str, ref_text: str, ref: Reference, resolved: str, desc: Descriptor,
                 pulled: Pulled, results: Sequence[C.CheckResult], policy: VerificationPolicy,
                 host: HostInputs,
                 sig: C.SignatureEvidence, atts: Sequence[C.AttestationFound] | None,
                 creds: Sequence[C.CredentialFound] | None, harness: C.HarnessEvidence | None,
                 budget: C.BudgetEvidence | None, staffing: dict[str, Any] | None, seq: int, now: datetime,
                 staged: Path, artifact_version: str | None = None) -> dict[str, Any]:
    """The install record (`acx.install-record/1`): what was checked, against which policy, with
    which digests, keys, status-list versions and times."""
    keys = [{"role": f"{kind}-signer", "keyid": sig.keyid, "publisherId": sig.publisher_id,
             "signedAt": sig.signed_at}]
    keys += [{"role": "attestation-signer", "keyid": a.keyid, "publisherId": None, "signedAt": None}
             for a in (atts or []) if a.verified and a.keyid]
    relied = None
    if creds is not None:
        relied, _ = C.relied_credential(creds, policy, sig.rom_digest)
    status_lists = []
    if relied is not None:
        keys.append({"role": "level-issuer", "keyid": relied.keyid, "publisherId": relied.issuer,
                     "signedAt": None})
        if relied.status_list is not None:
            status_lists.append({
                "id": relied.status_list, "index": relied.status_index,
                "validFrom": _iso(relied.status_list_valid_from) if relied.status_list_valid_from else None,
                "source": relied.status_list_source, "checkedAt": _iso(now), "revoked": bool(relied.revoked)})
    eff = None
    for r in results:
        if r.id == "policy-budget" and "effectiveLimits" in r.details:
            eff = r.details["effectiveLimits"]
    return {
        "schemaVersion": RECORD_SCHEMA,
        "name": name,
        "kind": kind,
        "digest": resolved,
        "reference": ref_text,
        "repository": ref.repo_string(),
        "tag": ref.tag,
        "artifactVersion": artifact_version,
        "mediaType": desc.media_type,
        "artifactType": pulled.manifest.artifact_type if pulled.manifest else None,
        "contentDigest": pulled.content_digest,
        "romDigest": sig.rom_digest,
        "publisherId": sig.publisher_id,
        "trust": sig.trust,
        "seq": seq,
        "installedAt": _iso(now),
        "tool": {"name": "acxoci", "version": __version__},
        "policy": policy.summary(),
        "host": {"descriptor": host.descriptor_source, "descriptorDigest": host.descriptor_digest,
                 "limits": host.limits_source, "limitsDigest": host.limits_digest},
        "checks": [r.to_json() for r in results],
        "keys": keys,
        "statusLists": status_lists,
        "attestations": [{"format": a.format, "predicateType": a.predicate_type, "digest": a.digest,
                          "keyid": a.keyid, "signer": a.signer} for a in (atts or []) if a.verified],
        "level": None if relied is None else {"level": relied.level, "tier": relied.tier,
                                              "issuer": relied.issuer, "credentialDigest": relied.digest},
        "harness": harness.descriptor if harness is not None else None,
        "effectiveLimits": eff,
        "staffing": staffing,
        "files": list_files(staged),
    }
