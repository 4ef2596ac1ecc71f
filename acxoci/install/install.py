"""`acx install REF`: resolve the reference to a digest, pull it into a staging folder of the store,
judge it with the one acceptance decision (`judge.py` gathers, `checks.py` decides), and either
install with one atomic rename or refuse and leave the store as it was.

Stages a caller may hook (`InstallHooks`, for crash tests): locked, resolved, checked, staged
(record written, before the rename), renamed (after the rename, before superseded items go)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from acxoci import __version__
from acxoci.errors import InternalError, InvalidInput, RefusedByPolicy
from acxoci.install import checks as C
from acxoci.install import judge as J
from acxoci.install.judge import HostInputs
from acxoci.install.store import InstalledItem, Store, check_name, decode_record, list_files
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.reference import Reference, parse_reference
from acxoci.oci.target import RemoteOptions

if TYPE_CHECKING:
    from acxoci.install.activate import ActivationResult

__all__ = ["ActivateRequest", "HostInputs", "InstallHooks", "InstallOutcome", "InstallRefused",
           "build_record", "install"]

RECORD_SCHEMA = "acx.install-record/1"


def _no_hook(stage: str) -> None:
    return None


@dataclass(frozen=True)
class InstallHooks:
    """Called at each stage of an install (tests use it to stop a child process there)."""

    at: Callable[[str], None] = _no_hook


@dataclass(frozen=True)
class ActivateRequest:
    """Activate the installed cartridge's skills into `root` (for `host`) in the same install."""

    root: Path
    host: str | None = None
    force: bool = False


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
    activation: ActivationResult | None = None

    @property
    def failed(self) -> list[C.CheckResult]:
        return C.failures(self.checks)

    @classmethod
    def of(cls, j: J.Judgement) -> InstallOutcome:
        """A refusal from a judgement that did not accept."""
        return cls("refused", j.reference, j.digest, None, j.kind, j.checks)

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
        if self.activation is not None:
            out["activation"] = self.activation.to_json()
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


def install(ref_text: str, *, policy: VerificationPolicy, store: Store, now: datetime,
            host: HostInputs | None = None, remote: RemoteOptions | None = None,
            name: str | None = None, allow_downgrade: bool = False,
            hooks: InstallHooks | None = None, activate: ActivateRequest | None = None,
            recorded_as: str | None = None, note: Callable[[str], None] | None = None) -> InstallOutcome:
    """Pull, judge (the one acceptance decision) and install `ref_text` into `store`, or refuse
    leaving the store unchanged. With `activate`, the item is also activated, both or neither.
    `recorded_as` names where the artifact comes from when `ref_text` is a scratch copy (`acx load`:
    `file:PATH`): the registry check, the record and later judgements use it.
    Errors that are not refusals (bad reference, registry unreachable) raise their AcxError."""
    if name is not None:
        check_name(name)
    hook = (hooks or InstallHooks()).at
    ctx = J.Context(policy, now, host or HostInputs(), store, name, allow_downgrade, remote,
                    source=recorded_as, note=note)
    repository = recorded_as or parse_reference(ref_text, require_ref=False).repo_string()
    early = J.registry_refusal(recorded_as or ref_text, repository, policy)
    if early is not None:  # never contact a registry the policy does not allow
        return InstallOutcome.of(early)
    target, ref = J.open_reference(ref_text, ctx)
    with store.transaction() as txn:
        hook("locked")
        gated = J.resolve_and_gate(target, ref, ref_text, ctx)
        if isinstance(gated, J.Judgement):
            return InstallOutcome.of(gated)
        desc, resolved, lifecycle = gated
        hook("resolved")
        warning = (dict(lifecycle.verdict) if lifecycle is not None and lifecycle.action == "warn"
                   and lifecycle.verdict else None)
        for have in store.list():
            if have.digest == resolved and (name is None or have.name == name):
                # already installed: judged again now, under this policy (a record is no proof)
                again = J.judge_installed(have, ctx)
                if not again.ok:
                    return InstallOutcome("refused", ref_text, resolved, have.name, again.kind, again.checks,
                                          lifecycle=warning)
                txn.tidy(have.name)
                act = None
                if activate is not None:
                    from acxoci.install.activate import activate_in

                    act = activate_in(txn, have, activate.root, host=activate.host, now=now,
                                      force=activate.force, remote=remote)
                return InstallOutcome("already-installed", ref_text, resolved, have.name,
                                      str(have.kind), again.checks, record=have.record,
                                      path=str(have.path), lifecycle=warning, activation=act)
        staged = txn.stage()
        judgement = J.judge_descriptor(target, desc, ref, ref_text, resolved, ctx, staged, lifecycle)
        hook("checked")
        if not judgement.ok:
            return replace(InstallOutcome.of(judgement), lifecycle=warning)
        record = build_record(judgement, ref=ref, desc=desc, policy=policy, host=ctx.host, seq=txn.next_seq(),
                              now=now, staged=staged, recorded_as=recorded_as)
        try:
            decode_record(record)
        except InvalidInput as exc:  # a bug in acxoci, never a half-written item: staging is discarded
            raise InternalError(f"install record does not decode: {exc.message}") from exc
        hook("staged")
        ctx.tell(f"installing {judgement.name} @ {resolved}")
        activated: list[ActivationResult] = []

        def after_rename(new: InstalledItem) -> None:
            hook("renamed")
            if activate is not None:
                from acxoci.install.activate import activate_in

                ctx.tell(f"activating {new.name} into {activate.root}")
                activated.append(activate_in(txn, new, activate.root, host=activate.host, now=now,
                                             force=activate.force, remote=remote))

        item: InstalledItem = txn.commit(staged, record, allow_downgrade=allow_downgrade,
                                         after_rename=after_rename)
        return InstallOutcome("installed", ref_text, resolved, item.name, judgement.kind, judgement.checks,
                              record, str(item.path), lifecycle=warning,
                              activation=activated[0] if activated else None)


def build_record(j: J.Judgement, *, ref: Reference, desc: Descriptor, policy: VerificationPolicy,
                 host: HostInputs, seq: int, now: datetime, staged: Path,
                 recorded_as: str | None = None) -> dict[str, Any]:
    """The install record (`acx.install-record/1`): what was checked, against which policy, with
    which digests, keys, status-list versions and times. A cache of the decision, never proof:
    every later use judges the item again (docs/install.md)."""
    g = j.gathered
    assert g is not None and g.signature is not None and j.kind is not None and j.pulled is not None
    sig, kind, pulled = g.signature, j.kind, j.pulled
    keys = [{"role": f"{kind}-signer", "keyid": sig.keyid, "publisherId": sig.publisher_id,
             "signedAt": sig.signed_at}]
    keys += [{"role": "attestation-signer", "keyid": a.keyid, "publisherId": None, "signedAt": None}
             for a in (g.attestations or []) if a.verified and a.keyid]
    relied = j.relied_credential(policy)
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
    for r in j.checks:
        if r.id == "policy-budget" and "effectiveLimits" in r.details:
            eff = r.details["effectiveLimits"]
    return {
        "schemaVersion": RECORD_SCHEMA,
        "name": j.name,
        "kind": kind,
        "digest": j.digest,
        "reference": recorded_as or j.reference,
        "repository": recorded_as or ref.repo_string(),
        "tag": None if recorded_as else ref.tag,
        "artifactVersion": g.version.signed if g.version is not None else None,
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
        "checks": [r.to_json() for r in j.checks],
        "keys": keys,
        "statusLists": status_lists,
        "attestations": [{"format": a.format, "predicateType": a.predicate_type, "digest": a.digest,
                          "keyid": a.keyid, "signer": a.signer}
                         for a in (g.attestations or []) if a.verified],
        "level": None if relied is None else {"level": relied.level, "tier": relied.tier,
                                              "issuer": relied.issuer, "credentialDigest": relied.digest},
        "harness": g.harness.descriptor if g.harness is not None else None,
        "effectiveLimits": eff,
        "staffing": g.staffing,
        "files": list_files(staged),
    }
