"""Typed release effects and the pure planner: plan → ordered effect list with dependencies.

An effect is a proposal ("push this blob to that repository"); the interpreter decides whether it
may run (dependencies done, lease held, gate open), runs it idempotently and closes it only on a
read-back. Effect ids are stable strings built from names (never from digests), so a resumed run
finds the same effects in the journal.

Kinds:
- `prepare`             local: build/verify the input, freeze its bytes and signed attestations
- `push_blob`           a config or content blob into a repository
- `push_manifest`       the artifact manifest
- `tag`                 point a tag at the manifest (gated: moving a tag needs `--allow-retag`)
- `attach_attestation`  a signed statement in one format (`legacy` .att tag or `bundle` referrer)
- `attach_envelope`     the cartridge's own DSSE envelope as a referrer
- `attach_credential`   a level credential as a referrer
- `publish_status_list` a status list under its moving tag
- `verify`              read back and verify the release the way `acx install` will (acceptance)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acxoci.errors import InvalidInput
from acxoci.release.plan import ReleasePlan

EffectKind = Literal["prepare", "push_blob", "push_manifest", "tag", "attach_attestation", "attach_envelope",
                     "attach_credential", "publish_status_list", "verify"]
KINDS: tuple[EffectKind, ...] = ("prepare", "push_blob", "push_manifest", "tag", "attach_attestation",
                                 "attach_envelope", "attach_credential", "publish_status_list", "verify")
REMOTE_WRITES: frozenset[str] = frozenset(KINDS) - {"prepare", "verify"}


@dataclass(frozen=True)
class Effect:
    """One typed effect: what, on which artifact and repository, with which parameters, after what."""

    id: str
    kind: EffectKind
    artifact: str | None = None
    repository: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    deps: tuple[str, ...] = ()

    @property
    def writes(self) -> bool:
        """May this effect write to a registry (as opposed to local work or read-only checks)?"""
        return self.kind in REMOTE_WRITES

    def describe(self) -> str:
        """One human line."""
        p = self.params
        what = {
            "prepare": f"prepare {self.artifact} (verify input, freeze bytes, sign attestations)",
            "push_blob": f"push {p.get('role', '')} blob of {self.artifact}",
            "push_manifest": f"push manifest of {self.artifact}",
            "tag": f"tag {self.artifact} as :{p.get('tag', '')}",
            "attach_attestation": f"attach {p.get('format', '')} attestation to {self.artifact}",
            "attach_envelope": f"attach the DSSE envelope of {self.artifact}",
            "attach_credential": f"attach level credential to {self.artifact}",
            "publish_status_list": f"publish status list {self.artifact} as :{p.get('tag', '')}",
            "verify": f"read back and verify {self.artifact} under the acceptance policy",
        }[self.kind]
        return f"{what} @ {self.repository}" if self.repository else what

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.artifact is not None:
            out["artifact"] = self.artifact
        if self.repository is not None:
            out["repository"] = self.repository
        if self.params:
            out["params"] = dict(self.params)
        out["deps"] = list(self.deps)
        out["writes"] = self.writes
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Effect:
        kind = obj.get("kind")
        if kind not in KINDS:
            raise InvalidInput(f"unknown effect kind {kind!r}", where=str(obj.get("id")))
        return cls(str(obj["id"]), kind, obj.get("artifact"), obj.get("repository"),
                   dict(obj.get("params") or {}), tuple(obj.get("deps") or ()))


def plan_effects(plan: ReleasePlan) -> list[Effect]:
    """The effects of `plan`, dependencies first (pure: same plan → same list)."""
    out: list[Effect] = []
    status_id: str | None = None
    if plan.status_list is not None:
        s = plan.status_list
        status_id = f"status-list:{s.name}@{s.repository}"
        out.append(Effect(status_id, "publish_status_list", s.name, s.repository, {"tag": s.tag}))
    for rel in plan.releases:
        name = rel.input.name
        prep = f"prepare:{name}"
        out.append(Effect(prep, "prepare", name))
        for dest in rel.to:
            repo = dest.repository
            at = f"{name}@{repo}"
            blobs = [Effect(f"blob:{role}:{at}", "push_blob", name, repo, {"role": role}, (prep,))
                     for role in ("config", "content")]
            out += blobs
            man = Effect(f"manifest:{at}", "push_manifest", name, repo, {}, tuple(b.id for b in blobs))
            out.append(man)
            after = [man.id]
            for tag in dest.tags:
                eff = Effect(f"tag:{tag}:{at}", "tag", name, repo, {"tag": tag}, (man.id,))
                out.append(eff)
                after.append(eff.id)
            for fmt in plan.formats:
                eff = Effect(f"attest:{fmt}:{at}", "attach_attestation", name, repo, {"format": fmt},
                             (man.id,))
                out.append(eff)
                after.append(eff.id)
            if plan.envelope and rel.input.artifact_kind == "cartridge":
                eff = Effect(f"envelope:{at}", "attach_envelope", name, repo, {}, (man.id,))
                out.append(eff)
                after.append(eff.id)
            if rel.level_credential is not None:
                eff = Effect(f"credential:{at}", "attach_credential", name, repo, {}, (man.id,))
                out.append(eff)
                after.append(eff.id)
            if status_id is not None:
                after.append(status_id)
            out.append(Effect(f"verify:{at}", "verify", name, repo, {"tags": ",".join(dest.tags)},
                              tuple(after)))
    check_graph(out)
    return out


def check_graph(effects: Sequence[Effect]) -> None:
    """Ids are unique and every dependency names an earlier effect (so the list is a valid order)."""
    seen: set[str] = set()
    for e in effects:
        if e.id in seen:
            raise InvalidInput(f"duplicate effect id {e.id}")
        for d in e.deps:
            if d not in seen:
                raise InvalidInput(f"effect {e.id} depends on {d}, which does not come before it")
        seen.add(e.id)
