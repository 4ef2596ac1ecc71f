"""The judges a catalog is built with: each returns, for one candidate, the verdict the command
line gives for it, by calling the code that command calls (never a copy of its checks).

- `FolderGate`: an Exchange folder as `acx exchange verify` judges it (`exchange.index.derive`,
  the Exchange's gate), with the signers judged against the trust registry given (or the keys of
  the policy given), as `acx cartridge verify` / `acx workflow verify` / `acx graph verify
  --trust-registry` would.
- `InstallJudge`: a tag of a mirrored OCI layout as `acx install REF --policy P` judges it
  (`install.install` into a throwaway store), lifecycle included.

The lead's single acceptance decision (issue 28) replaces these by one judge; the catalog takes
whichever judge the command wires."""

from __future__ import annotations

import itertools
import shlex
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.catalog.model import Candidate, Check, Kind, Level, Lifecycle, Verdict
from acxoci.errors import AcxError
from acxoci.exchange.errors import ReleaseWithdrawn
from acxoci.exchange.index import Derived, Release, derive
from acxoci.install.checks import CheckResult
from acxoci.install.install import InstallOutcome, install, pull
from acxoci.install.store import Store
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.target import RemoteOptions, open_target, resolve_manifest

KIND_OF_INSTALL: dict[str, Kind] = {"cartridge": "agent", "workflow": "workflow",
                                    "agent-graph": "agent-graph"}
VERIFY_COMMAND: dict[str, str] = {"agent": "acx cartridge verify", "workflow": "acx workflow verify",
                                  "agent-graph": "acx graph verify"}


def trust_option(trust_registry: str | None, policy: str | None) -> str:
    """The `--trust-registry F` / `--policy F` words the printed commands repeat."""
    if policy is not None:
        return f"--policy {shlex.quote(policy)}"
    return f"--trust-registry {shlex.quote(trust_registry or 'trust-registry.json')}"


# ---- an Exchange folder --------------------------------------------------------------------------


def _level(claim: Any) -> Level | None:
    """The index card's level claim (never resolved by the gate: no issuer keys, no revocation)."""
    if not isinstance(claim, dict):
        return None
    lvl, tier, state = claim.get("acxLevel"), claim.get("careerTier"), claim.get("verificationState")
    if lvl is None and tier is None:
        return Level(None, "none", "no level credential embedded")
    shown = " ".join(str(x) for x in (f"Lv{lvl}" if lvl is not None else None, tier) if x)
    return Level(shown, str(state or "unresolved"),
                 "claimed in an embedded credential; the Exchange gate does not resolve issuer keys or "
                 "revocation (build the catalog from a mirror with a level policy to verify it)")


def _lifecycle(status: Any) -> Lifecycle | None:
    if not isinstance(status, dict) or status.get("status") in (None, "active"):
        return None
    succ = status.get("successor")
    successor = (f"{succ.get('publisherId')}/{succ.get('id')}@{succ.get('version')}"
                 if isinstance(succ, dict) else None)
    return Lifecycle(str(status.get("status")), str(status.get("reason") or ""), successor)


@dataclass
class FolderGate:
    """`acx exchange verify`'s gate over one folder, run once; each candidate looks up its verdict."""

    root: Path
    display: str
    now: datetime
    registry: Any
    option: str
    load_command: bool = False  # `acx load FILE` exists in this acx (issue 33)
    _derived: Derived | None = None
    _error: str | None = None
    findings: list[str] = field(default_factory=list)

    def _run(self) -> None:
        if self._derived is not None or self._error is not None:
            return
        try:
            self._derived = derive(self.root, now=self.now, allow_pending_graphs=True, registry=self.registry)
        except AcxError as exc:
            self._error = exc.one_line()
            self.findings.append(f"the folder does not verify: {self._error}")
            return
        d = self._derived
        self.findings += [f"{r.path}: {r.reason}" for r in d.rejected if r.type in ("policy", "status")]
        self.findings += [f"{g}: left out, graph support pending" for g in d.pending_graphs]

    def _path(self, rel: str) -> str:
        """The artifact's path as the user would type it (the folder as given), shell-quoted."""
        return shlex.quote(f"{self.display.rstrip('/')}/{rel}")

    def _command(self, kind: str, rel: str) -> str:
        return f"{VERIFY_COMMAND[kind]} {self._path(rel)} {self.option}"

    def __call__(self, cand: Candidate) -> Verdict:
        self._run()
        kind = cand.kind or "agent"
        command = f"acx exchange verify {shlex.quote(self.display)}"
        if self._derived is None:
            return Verdict(False, "rejected", "unknown", self._error or "not verified", command, cand.kind)
        d = self._derived
        release = next((r for r in d.releases if r.rel == cand.location), None)
        if release is None:
            reasons = [r.reason for r in d.rejected if r.path == cand.location]
            if cand.location in d.pending_graphs:
                return Verdict(False, "unverified", "unknown", "graph support pending", command, cand.kind)
            checks = tuple(Check("exchange-gate", "fail", r) for r in reasons)
            return Verdict(False, "rejected", "unknown", "; ".join(reasons) or "not accepted by the gate",
                           command, cand.kind, checks=checks)
        return self._accepted(release, kind)

    def _accepted(self, r: Release, kind: str) -> Verdict:
        e = r.entry
        trust = str(e.get("trust"))
        status = str(e.get("trustStatus"))
        word = trust if trust in ("trusted", "portable") else status
        summary = (f"signature verifies; signer {'trusted by' if trust == 'trusted' else 'not in'} "
                   f"{'the trust registry' if 'trust-registry' in self.option else 'the policy'}")
        checks = (
            Check("exchange-gate", "pass", "accepted by the Exchange gate (path, signature, spec, profile)"),
            Check("signature", "pass" if trust in ("trusted", "portable") else "fail", f"{trust} ({status})"),
        )
        life = _lifecycle(e.get("registryStatus"))
        return Verdict(
            True, word, trust, summary, self._command(kind, r.rel), r.kind,  # type: ignore[arg-type]
            digest=r.digest, publisher_id=r.publisher, checks=checks,
            level=_level(e.get("levelClaim")) if r.kind == "agent" else None,
            lifecycle=life, content=r.path,
            install=(f"acx load {self._path(r.rel)} --host claude {self.option}"
                     if r.kind == "agent" and self.load_command else None),
        )


# ---- a mirrored OCI layout -----------------------------------------------------------------------


def _check(c: CheckResult) -> Check:
    return Check(c.id, c.status, c.reason)


def _install_level(checks: tuple[CheckResult, ...]) -> Level | None:
    by = {c.id: c for c in checks}
    lvl, rev = by.get("level"), by.get("revocation")
    if lvl is None or (lvl.status == "skip" and "does not apply" in lvl.reason):
        return None
    if lvl.status == "skip":
        return Level(None, "not-required", lvl.reason)
    if lvl.status == "pass" and (rev is None or rev.status == "pass"):
        return Level(lvl.reason, "verified", rev.reason if rev is not None else "")
    bad = rev if rev is not None and rev.failed else lvl
    state = "revoked" if bad.kind == "revoked" or "revoked" in bad.reason else "failed"
    return Level(None, state, bad.reason)


@dataclass
class InstallJudge:
    """`acx install REF --policy P` for each tag, into a throwaway store (nothing else is written)."""

    policy: VerificationPolicy
    option: str
    now: datetime
    workdir: Path
    remote: RemoteOptions = field(default_factory=RemoteOptions)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def __call__(self, cand: Candidate) -> Verdict:
        ref = cand.location
        n = next(self._seq)
        command = f"acx install {shlex.quote(ref)} {self.option}"
        store = Store(self.workdir / f"store-{n}")
        try:
            outcome = install(ref, policy=self.policy, store=store, now=self.now, remote=self.remote,
                              name=f"catalog-{n}")
        except ReleaseWithdrawn as exc:
            life = (exc.details or {}).get("lifecycle") or {}
            return Verdict(False, "withdrawn", "unknown", exc.message, command, cand.kind,
                           lifecycle=Lifecycle("withdrawn", str(life.get("message") or exc.message)),
                           checks=(Check("lifecycle", "fail", exc.message),))
        except AcxError as exc:
            return Verdict(False, "refused", "unknown", exc.one_line(), command, cand.kind,
                           checks=(Check("install", "fail", exc.one_line()),))
        return self._verdict(cand, outcome, command, n)

    def _verdict(self, cand: Candidate, o: InstallOutcome, command: str, n: int) -> Verdict:
        kind = KIND_OF_INSTALL.get(o.kind or "")
        checks = tuple(_check(c) for c in o.checks)
        # staffing depends on the installing host's roster, not on the artifact: shown, not judged
        failed = [c for c in o.failed if c.id != "staffing"]
        staffing = [c for c in o.failed if c.id == "staffing"]
        if staffing:
            checks += (Check("staffing", "note", "staffing depends on the installing host's roster "
                             "(`acx workflow ready`); not part of this verdict"),)
        by = {c.id: c for c in o.checks}
        sig, trust_check = by.get("signature"), by.get("trust")
        trust = "unknown"
        if sig is not None and sig.details.get("trust"):
            trust = str(sig.details["trust"])
        if trust_check is not None and trust_check.status == "pass":
            trust = str(trust_check.details.get("standing") or trust)
        publisher = trust_check.details.get("publisherId") if trust_check is not None else None
        key_id = trust_check.details.get("keyid") if trust_check is not None else None
        life = o.lifecycle or {}
        lifecycle = (Lifecycle(str(life.get("status")), str(life.get("message") or ""),
                               life.get("successorReference") or None) if life else None)
        content = self._content(cand.location, o.digest, n) if not failed and o.digest else None
        verified = content is not None
        if failed:
            summary = f"{failed[0].id}: {failed[0].reason}"
        elif not verified:
            summary = "the content install verified could not be read again (it changed meanwhile?)"
        else:
            summary = "every install check passed" + (
                " but staffing, which depends on the host's roster" if staffing else "")
        return Verdict(
            verified, "verified" if verified else "refused", trust, summary,
            command, kind, digest=o.digest, publisher_id=publisher if isinstance(publisher, str) else None,
            key_id=key_id if isinstance(key_id, str) else None, checks=checks,
            level=_install_level(o.checks) if kind == "agent" else None,
            lifecycle=lifecycle, content=content, install=command if verified else None,
        )

    def _content(self, ref: str, digest: str, n: int) -> Path | None:
        """The content the install verified, fetched again pinned to the digest it resolved."""
        staged = self.workdir / f"content-{n}"
        staged.mkdir(parents=True, exist_ok=True)
        try:
            target, _ = open_target(ref, self.remote, create=False)
            pulled = pull(target, resolve_manifest(target, digest), staged)
        except AcxError:
            return None
        return pulled.content_path if pulled.error is None else None


def scratch() -> tempfile.TemporaryDirectory[str]:
    """A throwaway folder for the install judge's stores (removed when the build ends)."""
    return tempfile.TemporaryDirectory(prefix="acx-site-")
