"""`workflow ready`: can a roster of cartridges staff every participant of a workflow?

Unlike the reference, a hash participant binds only to a cartridge whose ROM digest was
*recomputed and verified* (never the stored meta copy), tampered or unverifiable cartridges are
never staffed, and a `minLevel` slot is staffed only through a `LevelResolver` that proves the
level (`acxoci.workflow.level_resolver.VerifiedLevelResolver`; without one such slots report
"level unverifiable").

I/O (`load_roster`) is separate from the pure decision (`assess`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from acxoci.attest.trust import TrustRegistry
from acxoci.attest.trustdecision import Decision, Minimum, SignerFacts, decide
from acxoci.cartridge.capabilities import read_capability
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import CartridgeVerdict, verify_open
from acxoci.errors import AcxError, Tampered
from acxoci.fsutil import walk_files
from acxoci.workflow.lint import LintResult
from acxoci.workflow.model import CAREER_TIERS, Participant, Slot, Workflow
from acxoci.workflow.verify import WorkflowVerdict

#: A roster: (source label, path to a `.acx` file). A registry roster yields pulled files.
Roster = Iterable[tuple[str, Path]]

STAFFABLE_TRUST = frozenset({"trusted", "local", "portable"})


def directory_roster(root: Path) -> list[tuple[str, Path]]:
    """Every `*.acx` under `root`, in sorted path order (deterministic 'first'): a bounded,
    iterative walk that never follows a symlink (`acxoci.fsutil.walk_files`)."""
    return [(str(p.relative_to(root)), p) for p in walk_files(root, suffix=".acx")]


@dataclass(frozen=True)
class ProvenLevel:
    """A level that a verifier proved (credential signature, issuer, revocation, ROM binding)."""

    acx_level: int
    career_tier: str | None = None
    credential_id: str | None = None


@dataclass(frozen=True)
class CapabilityRecord:
    """A capability a cartridge declares: taskType and stack (purls)."""

    task_type: str
    stack: tuple[str, ...] = ()


@dataclass(frozen=True)
class RosterCartridge:
    """What staffing needs to know about one roster entry, gathered by `load_roster`."""

    source: str
    path: str
    verdict: CartridgeVerdict | None
    role: str | None = None
    stored_rom_digest: str | None = None
    capabilities: tuple[CapabilityRecord, ...] = ()
    skills: tuple[str, ...] = ()
    agent_name: str | None = None
    cartridge_id: str | None = None
    error: str | None = None
    declared_level: str | None = None  # meta acx.declared_level: claimed by the publisher, never proven
    manifest_digest: str | None = None  # set for registry/layout rosters: the pulled OCI manifest
    minimum: Minimum = "none"  # the trust table's minimum (`--require`; portable with a registry)

    def trust_decision(self) -> Decision | None:
        """The one trust table's answer for this cartridge's signer (None: no signer was judged)."""
        facts = self.verdict.extra.get("signerFacts") if self.verdict is not None else None
        if not isinstance(facts, SignerFacts):
            return None
        return decide(facts, minimum=self.minimum, command="workflow ready")

    @property
    def verified_rom_digest(self) -> str | None:
        """The recomputed ROM digest, only when the cartridge verified (signature checked)."""
        if self.staffable and self.verdict is not None:
            return self.verdict.rom_digest
        return None

    @property
    def staffable(self) -> bool:
        """Verified with a checked signature and not rejected: trusted, local or portable."""
        v = self.verdict
        return (
            v is not None
            and not v.rejected
            and v.trust in STAFFABLE_TRUST
            and v.rom_digest is not None
            and self.error is None
            and self._trust_ok()
        )

    def _trust_ok(self) -> bool:
        d = self.trust_decision()
        if d is None:  # unverified/legacy never reach here with a staffable trust label
            return self.minimum == "none"
        return d.accepted

    def why_not(self) -> str:
        """Why this cartridge cannot be staffed (for reasons)."""
        if self.error:
            return f"not usable: {self.error}"
        v = self.verdict
        if v is None:
            return "not verified"
        d = self.trust_decision()
        if d is not None and not d.accepted and not v.rejected:
            return f"{v.status}/{v.trust}: {d.reason} (required {self.minimum})"
        detail = f"; {v.issues[0]}" if v.issues else ""
        return f"{v.status}/{v.trust}: {v.summary}{detail}"

    @property
    def label(self) -> str:
        """Name for humans: agent name and source."""
        return f"{self.agent_name} ({self.source})" if self.agent_name else self.source


class LevelResolver(Protocol):
    """Proves a cartridge's level (VC verified, issuer resolved, not revoked, bound to the ROM).
    Return None when no level can be proven. The level verifier plugs in here."""

    def proven_level(self, cartridge: RosterCartridge) -> ProvenLevel | None:
        """The proven level of `cartridge`, or None."""
        ...


def describe_error(exc: AcxError) -> str:
    """`tampered: …` for any integrity failure (digest or size mismatch included), else `<kind>: …`."""
    kind = "tampered" if isinstance(exc, Tampered) else exc.kind
    return f"{kind}: {exc.one_line()}"


def _capability(json_bytes: bytes) -> CapabilityRecord | None:
    rec = read_capability(json_bytes)
    return None if rec is None else CapabilityRecord(rec.task_type, rec.stack)


def load_roster_entry(
    source: str, path: Path, *, registry: TrustRegistry | None, now: datetime
) -> RosterCartridge:
    """Open, verify and read one cartridge; an unreadable file becomes an unstaffable entry."""
    try:
        with open_cartridge(path) as cart:
            verdict = verify_open(cart, registry=registry, now=now)
            meta = cart.meta()
            caps = tuple(c for c in (_capability(r.json) for r in cart.capabilities()) if c is not None)
            skills = tuple(s.name for s in cart.skills()) if cart.has_table("acx_skill") else ()
    except AcxError as exc:
        return RosterCartridge(source, str(path), None, error=describe_error(exc))
    return RosterCartridge(
        source,
        str(path),
        verdict,
        role=meta.get("acx.role"),
        stored_rom_digest=meta.get("acx.rom_manifest_hash"),
        capabilities=caps,
        skills=skills,
        agent_name=meta.get("acx.agent_name"),
        cartridge_id=meta.get("acx.cartridge_id"),
        declared_level=meta.get("acx.declared_level"),
    )


def load_roster(roster: Roster, *, registry: TrustRegistry | None, now: datetime) -> list[RosterCartridge]:
    """Read every roster entry (the I/O half of `ready`)."""
    return [load_roster_entry(src, path, registry=registry, now=now) for src, path in roster]


@dataclass(frozen=True)
class Staffing:
    """How one participant was (or was not) staffed."""

    alias: str
    bind: str
    required: bool
    staffed: bool
    cartridge: RosterCartridge | None = None
    candidates: int = 0
    reason: str = ""
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        c = self.cartridge
        return {
            "alias": self.alias,
            "bind": self.bind,
            "required": self.required,
            "staffed": self.staffed,
            "cartridge": None
            if c is None
            else {
                "source": c.source,
                "path": c.path,
                "agentName": c.agent_name,
                "role": c.role,
                "romDigest": c.verified_rom_digest,
                "trust": c.verdict.trust if c.verdict else None,
            },
            "candidates": self.candidates,
            "reason": self.reason,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ReadyReport:
    """READY / NOT READY with every reason and warning."""

    ready: bool
    participants: tuple[Staffing, ...]
    reasons: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    roster_size: int = 0
    rejected_cartridges: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """JSON form for `--json`."""
        return {
            "ready": self.ready,
            "verdict": "READY" if self.ready else "NOT READY",
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "participants": [p.to_json() for p in self.participants],
            "rosterSize": self.roster_size,
            "rejectedCartridges": list(self.rejected_cartridges),
        }


def _tier_rank(tier: str | None) -> int:
    return CAREER_TIERS.index(tier) if tier in CAREER_TIERS else -1


def _caps_ok(slot: Slot, c: RosterCartridge) -> bool:
    for need in slot.capabilities:
        if not any(
            rec.task_type == need.task_type and all(s in rec.stack for s in need.stack)
            for rec in c.capabilities
        ):
            return False
    return True


def _staff_hash(p: Participant, roster: Sequence[RosterCartridge]) -> Staffing:
    for c in roster:
        if c.verified_rom_digest is not None and c.verified_rom_digest == p.rom_digest:
            id_notes: tuple[str, ...] = ()
            if p.cartridge_id is not None and c.cartridge_id != p.cartridge_id:
                id_notes = (
                    f"cartridgeId {p.cartridge_id} differs from the cartridge's {c.cartridge_id} "
                    "(the ROM digest is the binding)",
                )
            return Staffing(
                p.alias,
                "hash",
                p.required,
                True,
                c,
                1,
                f"matched by verified ROM digest {p.rom_digest}",
                id_notes,
            )
    notes: list[str] = []
    for c in roster:
        recomputed = c.verdict.rom_digest if c.verdict is not None else None
        if recomputed == p.rom_digest or c.stored_rom_digest == p.rom_digest:
            if not c.staffable:
                notes.append(f"{c.label} refused: {c.why_not()}")
            elif recomputed != p.rom_digest:
                notes.append(
                    f"{c.label} claims romDigest {p.rom_digest} in meta but recomputes to {recomputed}"
                )
    reason = "no verified cartridge with that romDigest"
    if notes:
        reason += " (" + "; ".join(notes) + ")"
    return Staffing(p.alias, "hash", p.required, False, None, 0, reason, tuple(notes))


def _why_unproven(resolver: LevelResolver | None, c: RosterCartridge) -> str | None:
    """The resolver's reason a level is unproven, if it offers one (`why_unproven`)."""
    explain = getattr(resolver, "why_unproven", None)
    if resolver is None or not callable(explain):
        return None
    why = explain(c)
    return why if isinstance(why, str) else None


def _staff_slot(
    p: Participant, roster: Sequence[RosterCartridge], resolver: LevelResolver | None
) -> Staffing:
    slot = p.slot or Slot()
    matches: list[tuple[int, int, RosterCartridge]] = []
    level_blocked = 0
    notes: list[str] = []
    for order, c in enumerate(roster):
        if slot.role is not None and c.role != slot.role:
            continue
        if not _caps_ok(slot, c):
            continue
        if not c.staffable:
            notes.append(f"{c.label} matches but is refused: {c.why_not()}")
            continue
        level = resolver.proven_level(c) if resolver is not None else None
        if slot.min_level is not None:
            if level is None:
                level_blocked += 1
                why = _why_unproven(resolver, c)
                if why:
                    notes.append(f"{c.label} level unverifiable: {why}")
                continue
            ml = slot.min_level
            if ml.acx_level is not None and level.acx_level < ml.acx_level:
                notes.append(f"{c.label} proven level {level.acx_level} < {ml.acx_level}")
                continue
            if ml.career_tier is not None and _tier_rank(level.career_tier) < _tier_rank(ml.career_tier):
                notes.append(f"{c.label} proven tier {level.career_tier} < {ml.career_tier}")
                continue
        matches.append((-(level.acx_level if level is not None else -1), order, c))
    if matches:
        matches.sort(key=lambda m: (m[0], m[1]))
        best = matches[0][2]
        return Staffing(
            p.alias,
            "slot",
            p.required,
            True,
            best,
            len(matches),
            f"staffed best of {len(matches)} match(es)",
            tuple(notes),
        )
    if level_blocked:
        why = (
            "level unverifiable: no level verifier is available"
            if resolver is None
            else "level unverifiable: no proven level credential"
        )
        reason = (
            f"{why} for {level_blocked} matching cartridge(s); minLevel slots are never staffed on claims"
        )
    else:
        reason = "no cartridge matches the slot"
    if notes:
        reason += " (" + "; ".join(notes) + ")"
    return Staffing(p.alias, "slot", p.required, False, None, 0, reason, tuple(notes))


def assess(
    workflow: Workflow,
    roster: Sequence[RosterCartridge],
    *,
    lint_result: LintResult | None = None,
    workflow_verdict: WorkflowVerdict | None = None,
    level_resolver: LevelResolver | None = None,
) -> ReadyReport:
    """Staff every participant, then check each task's capabilities and skills (pure)."""
    reasons: list[str] = []
    warnings: list[str] = []
    if lint_result is not None and not lint_result.ok:
        reasons.extend(f"structure: {i.text()}" for i in lint_result.errors)
    if workflow_verdict is not None and workflow_verdict.rejected:
        reasons.extend(f"signature: {i}" for i in workflow_verdict.issues)
    staffings: list[Staffing] = []
    for p in workflow.participants:
        if p.bind == "hash":
            s = _staff_hash(p, roster)
        elif p.bind == "slot":
            s = _staff_slot(p, roster, level_resolver)
        else:
            s = Staffing(p.alias, p.bind, p.required, False, reason=f"invalid bind {p.bind!r}")
        staffings.append(s)
        if s.staffed:
            warnings.extend(f"participant '{p.alias}': {n}" for n in s.notes if "cartridgeId" in n)
        else:
            line = f"participant '{p.alias}' unresolved: {s.reason}"
            (reasons if p.required else warnings).append(line if p.required else line + " (optional)")
    bound = {s.alias: s.cartridge for s in staffings if s.staffed and s.cartridge is not None}
    for n in workflow.nodes:
        if n.type != "task" or n.agent is None or n.agent not in bound:
            continue
        c = bound[n.agent]
        assert c is not None
        task_types = {rec.task_type for rec in c.capabilities}
        reasons.extend(
            f"node {n.id}: agent '{n.agent}' lacks required capability '{cap}'"
            for cap in n.requires_capabilities
            if cap not in task_types
        )
        reasons.extend(
            f"node {n.id}: agent '{n.agent}' lacks required skill '{sk}'"
            for sk in n.requires_skills
            if sk not in set(c.skills)
        )
    rejected = tuple(f"{c.label}: {c.why_not()}" for c in roster if not c.staffable)
    return ReadyReport(not reasons, tuple(staffings), tuple(reasons), tuple(warnings), len(roster), rejected)


def rac_checklist(workflow: Workflow) -> list[Mapping[str, Any]]:
    """The RAC checklist rows (required or optional) that a host must confirm before running."""
    return [
        {
            "id": r.id,
            "kind": r.kind,
            "required": r.required,
            "description": r.description,
            "check": r.check_type,
            "hint": r.check_hint,
        }
        for r in workflow.rac
    ]
