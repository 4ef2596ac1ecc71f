"""`acx installed sync`: keep a host in line with its policy over time. Every activation is held to
the one acceptance decision now; an activation whose item is gone (orphaned), was replaced by
another digest, or no longer passes is deactivated (exactly the files it wrote). Run it on a timer.

`plan` is pure over what was gathered; `sync` gathers (judging each installed item once) and acts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from acxoci.errors import AcxError
from acxoci.install.activate import Activation, activations_dir, deactivate, scan_activations
from acxoci.install.reverify import ItemCheck, verify_installed
from acxoci.install.store import Store
from acxoci.oci.target import RemoteOptions

Action = Literal["keep", "deactivate"]


@dataclass(frozen=True)
class Step:
    """What sync does (or would do) with one activation, and why."""

    name: str
    root: str
    action: Action
    reason: str
    done: str | None = None  # deactivated | kept-edited | failed: … (None in a dry run or for keep)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "root": self.root, "action": self.action, "reason": self.reason,
                "done": self.done}


def plan(acts: Sequence[Activation], installed: Mapping[str, str],
         verdicts: Mapping[str, ItemCheck]) -> list[Step]:
    """Pure: keep an activation only when its item is installed, at the activated digest, and
    accepted now. `installed` maps install names to their current digest."""
    steps: list[Step] = []
    for act in acts:
        root = str(act.root)
        digest = installed.get(act.name)
        if digest is None:
            steps.append(Step(act.name, root, "deactivate", "orphaned: the item is no longer installed"))
        elif act.digest != digest:
            steps.append(Step(act.name, root, "deactivate",
                              f"activated from {act.digest}, installed is {digest}"))
        elif not verdicts[act.name].ok:
            why = "; ".join(verdicts[act.name].problems[:3]) or "not accepted"
            steps.append(Step(act.name, root, "deactivate", f"no longer passes its policy: {why}"))
        else:
            steps.append(Step(act.name, root, "keep", "installed and accepted now"))
    return steps


def sync(store: Store, now: datetime, *, policy_file: Path | None = None, dry_run: bool = False,
         remote: RemoteOptions | None = None) -> list[Step]:
    """Judge every activated item now and deactivate what `plan` says (unless `dry_run`). A manifest
    that cannot be read is reported as a step that failed, and the others go on."""
    acts, bad = scan_activations(store)
    items = {i.name: i for i in store.list()}
    verdicts = {name: verify_installed(items[name], policy_file, now, store=store, remote=remote)
                for name in sorted({a.name for a in acts}) if name in items}
    steps = plan(acts, {n: i.digest for n, i in items.items()}, verdicts)
    broken = [Step("?", str(activations_dir(store)), "deactivate", f"unreadable activation manifest: {b}",
                   None if dry_run else "failed: fix or remove the manifest by hand") for b in bad]
    if dry_run:
        return steps + broken
    out: list[Step] = []
    for step in steps:
        if step.action == "keep":
            out.append(step)
            continue
        try:
            res = deactivate(store, step.name, root=Path(step.root), force=False)
            done = "deactivated" + (f" (kept {len(res.kept)} file(s) it did not write)" if res.kept else "")
        except AcxError as exc:  # an edited file is never removed: reported, left for a person
            done = f"failed: {exc.one_line()}"
        out.append(Step(step.name, step.root, step.action, step.reason, done))
    return out + broken
