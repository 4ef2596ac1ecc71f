"""`acx init --from-code`: from an Analysis, every file of the agent set (one fillable package per
role, a workflow wiring them, a README). Pure: returns `{relative path: bytes}`, the same bytes
for the same analysis."""

from __future__ import annotations

import json
from typing import Any

from acxoci.authoring.detect import Analysis
from acxoci.authoring.roles import ROLES
from acxoci.authoring.scaffold import package_files

WORKFLOW_PATH = "cal/from-code.cal.json"


def workflow(analysis: Analysis) -> dict[str, Any]:
    """An `acx.cal/1` workflow: one slot per role, a task per role in flow order, each task needing
    the role's capabilities and every RAC item; linear, with a verification completion per task."""
    rac_ids = [r.id for r in analysis.rac]
    participants = [
        {
            "alias": f.role,
            "bind": "slot",
            "slot": {"role": f.role, "capabilities": [{"taskType": t} for t in f.tasks]},
        }
        for f in analysis.roles
    ]
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "event", "event": "start"}]
    edges: list[dict[str, Any]] = []
    prev = "start"
    for f in analysis.roles:
        requires: dict[str, Any] = {"capabilities": list(f.tasks)}
        if rac_ids:
            requires["rac"] = rac_ids
        nodes.append(
            {
                "id": f.role,
                "type": "task",
                "agent": f.role,
                "action": f"TODO: what the {ROLES[f.role].label.lower()} does in this loop",
                "requires": requires,
                "completion": {
                    "type": "verification",
                    "commands": ["lint", "test:touched"],
                    "passIntent": "the touched checks are green",
                },
            }
        )
        edges.append({"from": prev, "to": f.role})
        prev = f.role
    nodes.append({"id": "done", "type": "event", "event": "end"})
    edges.append({"from": prev, "to": "done"})
    return {
        "schemaVersion": "acx.cal/1",
        "id": "from-code",
        "version": "0.1.0",
        "name": "Team generated from a codebase",
        "description": (
            "A generated agent team and loop: one slot per role the codebase calls for, a task per "
            "role, and the context each task needs. Fill in the actions, then build and sign each agent."
        ),
        "license": "Apache-2.0",
        "authors": [{"name": "TODO workflow author"}],
        "tags": ["generated", "agent-team"],
        "participants": participants,
        "rac": [r.to_json() for r in analysis.rac],
        "limits": {"maxSteps": max(8, 3 * len(nodes)), "maxParallel": 1},
        "start": "start",
        "nodes": nodes,
        "edges": edges,
    }


def readme(analysis: Analysis) -> str:
    """The agent set's README: what was found and why, the RAC checklist, the next commands."""
    lines = ["# Generated agent set", "", f"Roles found ({len(analysis.roles)}):", ""]
    for f in analysis.roles:
        lines.append(
            f"- **{f.role}** ({ROLES[f.role].label}): capabilities {', '.join(f.tasks)}; "
            f"because of: {'; '.join(f.reasons)}"
        )
    lines += ["", "Ecosystems: " + (", ".join(analysis.ecosystems) or "none found"), ""]
    if analysis.truncated:
        lines += [f"The analysis stopped early ({analysis.truncated}): the roles may be incomplete.", ""]
    lines += ["## Required Available Context (descriptions only)", ""]
    lines += [f"- **{r.id}** [{r.kind}]: {r.description} (check: {r.check} `{r.hint}`)" for r in analysis.rac]
    if not analysis.rac:
        lines.append("- none")
    lines += [
        "",
        "## Next steps",
        "",
        "1. Fill in each `agents/<role>/` package (manifest, memory records, skills).",
        "2. Build and sign each one:",
        "   `acx cartridge build agents/<role> -o <role>.acx --publisher ID --key KEY`.",
        f"3. Write the actions in `{WORKFLOW_PATH}`, then `acx workflow lint {WORKFLOW_PATH} --publish`.",
        f"4. Staff it: `acx workflow ready {WORKFLOW_PATH} --cartridges DIR`.",
        "",
    ]
    return "\n".join(lines)


def agent_set_files(analysis: Analysis) -> dict[str, bytes]:
    """Every file of the agent set, by path relative to the output folder."""
    files: dict[str, bytes] = {}
    for f in analysis.roles:
        pkg = package_files(f.role, stack=f.stack, tasks=f.tasks, reasons=f.reasons)
        files.update({f"agents/{f.role}/{rel}": data for rel, data in pkg.items()})
    files[WORKFLOW_PATH] = (json.dumps(workflow(analysis), indent=2, ensure_ascii=False) + "\n").encode(
        "utf-8"
    )
    files["README.md"] = readme(analysis).encode("utf-8")
    return dict(sorted(files.items()))
