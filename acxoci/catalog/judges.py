"""The judges a catalog is built with: each returns, for one candidate, the verdict the command
line gives for it, by calling the code that command calls (never a copy of its checks).

- `FolderGate`: an Exchange folder as `acx exchange verify` judges it (`exchange.index.derive`,
  the Exchange's gate), with the signers judged against the trust registry given, as `acx
  cartridge verify` / `workflow verify` / `graph verify --trust-registry` would; with a policy,
  what the gate accepts is judged by the one acceptance decision (`install.judge.judge_file`).
- `DecisionJudge`: a tag of a mirrored OCI layout judged by the one acceptance decision, as `acx
  verify REF --policy P` and `acx install` judge it (`install.judge.judge_reference`).

The catalog takes whichever judge the command wires (`Judge` in catalog.model)."""

from __future__ import annotations

import itertools
import shlex
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.catalog.model import Candidate, Check, Kind, Level, Lifecycle, Verdict
from acxoci.errors import AcxError
from acxoci.exchange.coordinates import repository_path, version_tag
from acxoci.exchange.index import Derived, Release, derive
from acxoci.install.checks import CheckResult
from acxoci.install.judge import Context, Judgement, judge_file, judge_reference, pull
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.target import RemoteOptions, open_target, resolve_manifest

KIND_OF_INSTALL: dict[str, Kind] = {"cartridge": "agent", "workflow": "workflow",
                                    "agent-graph": "agent-graph"}
VERIFY_COMMAND: dict[str, str] = {"agent": "acx cartridge verify", "workflow": "acx workflow verify",
                                  "agent-graph": "acx graph verify"}


GATE_PASSED = Check("exchange-gate", "pass", "accepted by the Exchange gate (path, signature, spec, profile)")


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
    """`acx exchange verify`'s gate over one folder, run once; each candidate looks up its verdict.
    With a policy, each artifact the gate accepts is also judged by the one decision
    (`install.judge.judge_file`: the checks `install` makes of these bytes, but the registry's).
    A release the folder's ledger withdraws is shown as withdrawn, never as verified."""

    root: Path
    display: str
    now: datetime
    registry: Any
    option: str
    policy: VerificationPolicy | None = None
    mirror: str | None = None  # where the folder is mirrored: the install commands name it
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
        return shlex.quote(f"{self.display.rstrip('/')}/{rel}")

    def _command(self, kind: str, rel: str) -> str:
        if self.policy is None:
            return f"{VERIFY_COMMAND[kind]} {self._path(rel)} {self.option}"
        if kind == "agent":  # the command that judges a local cartridge under a policy
            return f"acx load {self._path(rel)} --host claude --print-only {self.option}"
        return f"acx exchange verify {shlex.quote(self.display)}; the install decision {self.option}"

    def _install(self, r: Release) -> str | None:
        if self.mirror is None:
            return f"acx load {self._path(r.rel)} --host claude {self.option}" if r.kind == "agent" else None
        repo = repository_path(r.kind, r.publisher, r.id)
        ref = f"{self.mirror.rstrip('/')}/{repo}:{version_tag(r.version)}"
        option = self.option if self.policy is not None else "--policy policy.yaml"
        return f"acx install {shlex.quote(ref)} {option}"

    def __call__(self, cand: Candidate) -> Verdict:
        self._run()
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
        verdict = self._judged(release, cand) if self.policy is not None else self._accepted(release)
        life = _lifecycle(release.entry.get("registryStatus"))
        verdict = replace(verdict, lifecycle=life)
        if life is not None and life.status == "withdrawn":
            return replace(verdict, verified=False, word="withdrawn", content=None, install=None,
                           summary=f"withdrawn in the folder's status.json: {life.reason}")
        return verdict

    def _judged(self, r: Release, cand: Candidate) -> Verdict:
        assert self.policy is not None
        j = judge_file(r.path, Context(self.policy, self.now))
        v = from_judgement(j, cand, self._command(r.kind, r.rel), self._install(r), lambda: r.path)
        level = v.level if v.level is None or v.level.state != "not-required" else _level(
            r.entry.get("levelClaim"))
        return replace(v, checks=(GATE_PASSED, *v.checks), digest=v.digest or r.digest,
                       publisher_id=v.publisher_id or r.publisher, level=level)

    def _accepted(self, r: Release) -> Verdict:
        e = r.entry
        trust = str(e.get("trust"))
        status = str(e.get("trustStatus"))
        word = trust if trust in ("trusted", "portable") else status
        by = "trusted by" if trust == "trusted" else "not in"
        summary = f"signature verifies; signer {by} the trust registry"
        checks = (
            GATE_PASSED,
            Check("signature", "pass" if trust in ("trusted", "portable") else "fail", f"{trust} ({status})"),
        )
        return Verdict(
            True, word, trust, summary, self._command(r.kind, r.rel), r.kind,  # type: ignore[arg-type]
            digest=r.digest, publisher_id=r.publisher, checks=checks,
            level=_level(e.get("levelClaim")) if r.kind == "agent" else None,
            content=r.path, install=self._install(r),
        )


# ---- a mirrored OCI layout -----------------------------------------------------------------------


def _check(c: CheckResult) -> Check:
    return Check(c.id, c.status, c.reason)


def _level_of(checks: Sequence[CheckResult]) -> Level | None:
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


def _lifecycle_of(checks: Sequence[CheckResult]) -> Lifecycle | None:
    check = next((c for c in checks if c.id == "lifecycle"), None)
    life = check.details.get("lifecycle") if check is not None else None
    if not isinstance(life, Mapping) or life.get("status") in (None, "active"):
        return None
    successor = life.get("successorReference")
    return Lifecycle(str(life.get("status")), str(life.get("message") or ""),
                     successor if isinstance(successor, str) else None)


def from_judgement(j: Judgement, cand: Candidate, command: str, install: str | None,
                   content: Callable[[], Path | None]) -> Verdict:
    """The one decision's judgement as a catalog verdict. A workflow's staffing depends on the
    installing host's roster, not on the artifact: it is shown as a note and does not refuse."""
    kind = KIND_OF_INSTALL.get(j.kind or "")
    checks = tuple(_check(c) for c in j.checks if not (c.id == "staffing" and c.failed))
    failed = [c for c in j.failed if c.id != "staffing"]
    staffing = len(failed) < len(j.failed)
    if staffing:
        checks += (Check("staffing", "note", "staffing depends on the installing host's roster "
                         "(`acx workflow ready --policy`); not part of this verdict"),)
    by = {c.id: c for c in j.checks}
    sig, trust_check = by.get("signature"), by.get("trust")
    trust = str(sig.details.get("trust")) if sig is not None and sig.details.get("trust") else "unknown"
    if trust_check is not None and trust_check.status == "pass":
        trust = str(trust_check.details.get("standing") or trust)
    publisher = trust_check.details.get("publisherId") if trust_check is not None else None
    key_id = trust_check.details.get("keyid") if trust_check is not None else None
    lifecycle = _lifecycle_of(j.checks)
    path = content() if not failed and bool(j.checks) else None
    verified = path is not None
    withdrawn = lifecycle is not None and lifecycle.status == "withdrawn"
    if failed:
        summary = f"{failed[0].id}: {failed[0].reason}"
    elif not verified:
        summary = "the content the decision accepted could not be read again (it changed meanwhile?)"
    else:
        summary = "every check passed" + (" but staffing, which depends on the host's roster"
                                          if staffing else "")
    return Verdict(
        verified, "verified" if verified else "withdrawn" if withdrawn else "refused", trust, summary,
        command, kind, digest=j.digest, publisher_id=publisher if isinstance(publisher, str) else None,
        key_id=key_id if isinstance(key_id, str) else None, checks=checks,
        level=_level_of(j.checks) if kind == "agent" else None, lifecycle=lifecycle, content=path,
        install=install if verified else None,
    )


@dataclass
class DecisionJudge:
    """A tag of a mirrored layout judged by the one acceptance decision, exactly as `acx verify REF
    --policy P` and `acx install REF --policy P` judge it (`install.judge.judge_reference`: the
    lifecycle, signature, trust, attestations, level, revocation, harness, budget and version
    checks); only the bytes it accepted, fetched again pinned to their digest, make a card."""

    policy: VerificationPolicy
    option: str
    now: datetime
    workdir: Path
    remote: RemoteOptions = field(default_factory=RemoteOptions)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def __call__(self, cand: Candidate) -> Verdict:
        ref = cand.location
        n = next(self._seq)
        command = f"acx verify {shlex.quote(ref)} {self.option}"
        install = f"acx install {shlex.quote(ref)} {self.option}"
        try:
            j = judge_reference(ref, Context(self.policy, self.now, remote=self.remote))
        except AcxError as exc:  # the reference could not be judged at all (unreadable layout)
            return Verdict(False, "refused", "unknown", exc.one_line(), command, cand.kind,
                           checks=(Check("judge", "fail", exc.one_line()),))
        return from_judgement(j, cand, command, install, lambda: self._content(ref, j.digest, n))

    def _content(self, ref: str, digest: str | None, n: int) -> Path | None:
        """The content the decision accepted, fetched again pinned to the digest it resolved."""
        if digest is None:
            return None
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
