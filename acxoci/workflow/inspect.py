"""`workflow inspect`: a structured summary of a workflow (participants, RAC checklist, nodes,
flow and conditional transitions, limits, signature status) for humans and `--json`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from acxoci.workflow.lint import LintResult
from acxoci.workflow.model import Node, Participant, Workflow
from acxoci.workflow.verify import WorkflowVerdict


def condition_text(when: Mapping[str, Any] | None) -> str:
    """Compact JSON of a condition (`always` when absent)."""
    if when is None:
        return "always"
    return json.dumps(when, ensure_ascii=False, separators=(",", ":"))


def _participant(p: Participant) -> dict[str, Any]:
    out: dict[str, Any] = {"alias": p.alias, "bind": p.bind, "required": p.required}
    if p.bind == "hash":
        out["romDigest"] = p.rom_digest
        if p.cartridge_id:
            out["cartridgeId"] = p.cartridge_id
    elif p.slot is not None:
        out["role"] = p.slot.role
        if p.slot.min_level is not None:
            out["minLevel"] = {
                k: v
                for k, v in (
                    ("careerTier", p.slot.min_level.career_tier),
                    ("acxLevel", p.slot.min_level.acx_level),
                )
                if v is not None
            }
        out["capabilities"] = [{"taskType": c.task_type, "stack": list(c.stack)} for c in p.slot.capabilities]
    return out


def _node(n: Node) -> dict[str, Any]:
    out: dict[str, Any] = {"id": n.id, "type": n.type}
    if n.type == "task":
        out.update(
            agent=n.agent,
            action=n.action,
            capabilities=list(n.requires_capabilities),
            skills=list(n.requires_skills),
            rac=list(n.requires_rac),
            completion=(n.completion or {}).get("type"),
            sideEffects=n.side_effects,
            approval=n.approval,
        )
    elif n.type == "gateway":
        out["gateway"] = n.gateway
    else:
        out["event"] = n.event
        if n.after_ms is not None:
            out["afterMs"] = n.after_ms
    return out


def inspect_workflow(
    wf: Workflow, *, lint_result: LintResult | None = None, verdict: WorkflowVerdict | None = None
) -> dict[str, Any]:
    """The inspect view as a JSON-able dict."""
    flow = [{"from": e.source, "to": e.target, "when": e.when} for e in wf.edges]
    out: dict[str, Any] = {
        "id": wf.id,
        "version": wf.version,
        "name": wf.name,
        "start": wf.start,
        "participants": [_participant(p) for p in wf.participants],
        "rac": [
            {
                "id": r.id,
                "kind": r.kind,
                "required": r.required,
                "description": r.description,
                "check": r.check_type,
                "hint": r.check_hint,
            }
            for r in wf.rac
        ],
        "variables": [{"name": v.name, "type": v.type} for v in wf.variables],
        "nodes": [_node(n) for n in wf.nodes],
        "flow": flow,
        "conditional": [f for f in flow if f["when"] is not None],
        "limits": {
            "maxSteps": wf.limits.max_steps,
            "maxDurationMs": wf.limits.max_duration_ms,
            "maxParallel": wf.limits.max_parallel,
        },
        "lineage": wf.lineage,
    }
    if verdict is not None:
        out["signature"] = verdict.to_json()
    if lint_result is not None:
        out["lint"] = lint_result.to_json()
    return out


def render_lines(view: Mapping[str, Any]) -> list[str]:
    """Plain-text lines of an inspect view (the CLI prints them)."""
    lines = [
        f"workflow {view['id']}@{view.get('version') or 'unversioned'}  {view.get('name') or ''}".rstrip()
    ]
    sig = view.get("signature")
    if sig:
        who = f" by {sig['publisherId']}" if sig.get("publisherId") else ""
        lines.append(f"signature: {sig['status']}/{sig['trust']}{who}  digest {sig['digest']}")
    lines.append("")
    lines.append("Participants:")
    for p in view["participants"]:
        opt = "" if p["required"] else "  (optional)"
        if p["bind"] == "hash":
            lines.append(f"  {p['alias']:<12} hash  {p.get('romDigest')}{opt}")
        else:
            caps = ",".join(
                c["taskType"] + (f"[{'+'.join(c['stack'])}]" if c["stack"] else "")
                for c in p.get("capabilities", [])
            )
            lvl = (
                f"  minLevel={json.dumps(p['minLevel'], separators=(',', ':'))}" if p.get("minLevel") else ""
            )
            lines.append(
                f"  {p['alias']:<12} slot  role={p.get('role') or '*'}  caps={caps or '-'}{lvl}{opt}"
            )
    lines.append("")
    lines.append("RAC checklist (□ required, · optional):")
    if not view["rac"]:
        lines.append("  (none)")
    for r in view["rac"]:
        mark = "□" if r["required"] else "·"
        hint = f"  [{r['check']}: {r['hint']}]" if r.get("check") else ""
        lines.append(f"  {mark} {r['id']} ({r['kind']}) {r['description']}{hint}")
    lines.append("")
    lines.append(f"Nodes (start: {view['start']}):")
    for n in view["nodes"]:
        if n["type"] == "task":
            caps = f"  {{cap:{','.join(n['capabilities'])}}}" if n["capabilities"] else ""
            lines.append(
                f"  [task] {n['id']:<12} agent={n['agent'] or '-':<12} {n.get('action') or ''}{caps}"
                f"  completion={n['completion']}  approval={n['approval']}"
            )
        elif n["type"] == "gateway":
            lines.append(f"  [gateway] {n['id']} ({n['gateway']})")
        else:
            lines.append(f"  [event] {n['id']} ({n['event']})")
    lines.append("")
    lines.append("Flow:")
    for f in view["flow"]:
        if f["when"] is None:
            lines.append(f"  {f['from']} → {f['to']}")
    lines.append("Conditional transitions:")
    if not view["conditional"]:
        lines.append("  (none)")
    for f in view["conditional"]:
        lines.append(f"  {f['from']} → {f['to']}  when {condition_text(f['when'])}")
    lines.append("")
    lim = view["limits"]
    lines.append(
        "Limits: " + ", ".join(f"{k}={v}" for k, v in lim.items() if v is not None)
        if any(v is not None for v in lim.values())
        else "Limits: none"
    )
    if view.get("lineage"):
        for par in view["lineage"].get("parents", []):
            if isinstance(par, dict):
                lines.append(
                    f"Lineage: {par.get('relation')} of {par.get('artifactType')} "
                    f"{par.get('publisherId')}/{par.get('id')}@{par.get('version', '')} {par.get('digest')}"
                )
    return lines
