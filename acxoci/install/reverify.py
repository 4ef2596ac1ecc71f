"""`acx installed verify [NAME]` and `acx installed sync`: every installed item judged NOW by the one
acceptance decision (`judge.judge_installed`): its files against its record, its signer under
today's trust registries, its level credential against fresh status lists and the policy's
issuers, its lifecycle as the registry says now. The install record is a cache of a decision made
once, never proof. The policy is the one given, else the one recorded at install (read now)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.typed import opt
from acxoci.errors import AcxError
from acxoci.install import judge as J
from acxoci.install.store import InstalledItem, Store
from acxoci.install.vpolicy import BUILTIN, VerificationPolicy, load_policy
from acxoci.oci.target import RemoteOptions


@dataclass(frozen=True)
class ItemCheck:
    """One installed item judged now, in the words `installed verify` reports."""

    name: str
    digest: str
    judgement: J.Judgement | None
    problems: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    files: tuple[str, ...] | None = None  # the file problems, when checked without a judgement

    def _status(self, cid: str) -> str | None:
        c = self.judgement.check(cid) if self.judgement is not None else None
        return None if c is None else c.status

    @property
    def ok(self) -> bool:
        return self.judgement is not None and self.judgement.ok

    @property
    def files_ok(self) -> bool:
        """The item's files are exactly those the record pins (the content check; checked on its own
        when the item could not be judged, e.g. its policy is gone)."""
        if self.judgement is None:
            return self.files is not None and not self.files
        return self._status("content-digest") in ("pass", "skip")

    @property
    def signer_ok(self) -> bool:
        return self._status("signature") == "pass" and self._status("trust") == "pass"

    @property
    def revocation(self) -> str:
        """not-applicable | not-revoked | revoked | unknown (the level credential relied on)."""
        c = self.judgement.check("revocation") if self.judgement is not None else None
        if c is None or c.status == "skip":
            return "not-applicable"
        if c.status == "pass":
            return "not-revoked"
        return "revoked" if c.kind == "revoked" else "unknown"

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "digest": self.digest, "ok": self.ok, "filesOk": self.files_ok,
               "signerOk": self.signer_ok, "revocation": self.revocation, "problems": list(self.problems),
               **self.details}
        if self.judgement is not None:
            trust = self.judgement.check("trust")
            revocation = self.judgement.check("revocation")
            if trust is not None:
                out["signer"] = {"status": trust.status, "reason": trust.reason, "kind": trust.kind,
                                 "standing": trust.details.get("standing")}
            if revocation is not None:
                out["revocationReason"] = revocation.reason
            out["checks"] = [c.to_json() for c in self.judgement.checks]
        return out


def policy_now(item: InstalledItem, override: Path | None, now: datetime) -> VerificationPolicy:
    """The policy an installed item is judged under: `override`, else the file recorded at install
    (read as it is now). NotFound when the recorded file is gone and none is given."""
    from acxoci.errors import NotFound

    if override is not None:
        return load_policy(override, now=now)
    if item.doc is None:  # judged as failed anyway (record_files_problems names the record)
        return load_policy(None, now=now)
    recorded = item.doc.policy.source
    if recorded == BUILTIN:
        return load_policy(None, now=now)
    path = Path(recorded)
    if not path.is_file():
        raise NotFound(f"the policy {item.name} was installed under is gone", where=recorded,
                       hint="pass --policy FILE to judge it under another policy")
    return load_policy(path, now=now)


def host_now(item: InstalledItem) -> J.HostInputs:
    """The host inputs an item was installed with, read as they are now (a file that is gone is
    not given: the policy decides whether a host is required)."""
    from acxoci.install.hostfiles import host_inputs

    host = item.doc.host if item.doc is not None else None
    desc = opt(host.descriptor) if host is not None else None
    limits = opt(host.limits) if host is not None else None
    return host_inputs(Path(desc) if desc and Path(desc).is_file() else None,
                       Path(limits) if limits and Path(limits).is_file() else None, None)


def verify_item(item: InstalledItem, policy: VerificationPolicy, now: datetime, *, store: Store | None = None,
                remote: RemoteOptions | None = None, content: Path | None = None) -> ItemCheck:
    """Judge one installed item now (the same decision as `install`, over the installed files)."""
    try:
        host = host_now(item)
    except AcxError as exc:
        return ItemCheck(item.name, item.digest, None, (f"host descriptor: {exc.one_line()}",))
    ctx = J.Context(policy, now, host, store, None, False, remote)
    try:
        j = J.judge_installed(item, ctx, content=content)
    except AcxError as exc:  # a broken cache or store file of this item: reported, the others go on
        from acxoci.install.store import record_files_problems

        files = tuple(record_files_problems(item))
        return ItemCheck(item.name, item.digest, None, (exc.one_line(), *files), files=files)
    return ItemCheck(item.name, item.digest, j, tuple(j.reasons()))


def verify_installed(item: InstalledItem, policy_file: Path | None, now: datetime, *,
                     store: Store | None = None, remote: RemoteOptions | None = None) -> ItemCheck:
    """`verify_item` under `policy_now`; a policy that cannot be read is reported, not raised."""
    try:
        policy = policy_now(item, policy_file, now)
    except AcxError as exc:
        from acxoci.install.store import record_files_problems

        files = tuple(record_files_problems(item))
        return ItemCheck(item.name, item.digest, None, (f"policy: {exc.one_line()}", *files), files=files)
    return verify_item(item, policy, now, store=store, remote=remote)
