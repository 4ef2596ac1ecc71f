"""Helpers of the release control-plane tests (no tests here): a clock whose sleep advances it, a
release world on a real registry, and readers of the journal's ledger and entries."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import requests
import yaml

from acxoci.oci.descriptor import OCI_INDEX
from acxoci.oci.reference import fallback_tag
from acxoci.release.effects import plan_effects
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import EffectEntry, Entry, Journal
from acxoci.release.plan import load_plan
from acxoci.release.quota import fold_ledger
from acxoci.release.status import GoalStatus, project
from tests.harness.env import REPO
from tests.harness.killer import Killer
from tests.harness.releases import run_forked
from tests.harness.servers import Registry

GOAL = "sample-1"


@dataclass
class FakeTime:
    """A clock that only moves when the code under test sleeps (or the test says so)."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    slept: list[float] = field(default_factory=list)

    def clock(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def entries(state: Path, goal: str = GOAL) -> list[Entry]:
    return Journal(state / goal / "journal.jsonl").entries()


def status(state: Path, goal: str = GOAL, now: datetime | None = None) -> GoalStatus:
    return project(entries(state, goal), now=now)


def net_publishes_by_effect(state: Path, goal: str = GOAL) -> Counter[str]:
    """Net publishes booked per effect (spends minus voids), from the journal alone."""
    es = entries(state, goal)
    st = project(es)
    ledger = fold_ledger(es, st.instance)
    out: Counter[str] = Counter()
    for key, s in ledger.spends.items():
        out[s.effect] += ledger.net_of(key).publishes
    return out


def referrer_digests(reg: Registry, repo: str, subject: str) -> list[str]:
    """Raw referrer entries (duplicates not folded): the tag-schema fallback index of distribution."""
    r = requests.get(f"{reg.url}/v2/{repo}/manifests/{fallback_tag(subject)}", headers={"Accept": OCI_INDEX},
                     timeout=10)
    r.raise_for_status()
    return sorted(m["digest"] for m in r.json().get("manifests", []))


def tags(reg: Registry, repo: str) -> list[str]:
    r = requests.get(f"{reg.url}/v2/{repo}/tags/list", timeout=10)
    r.raise_for_status()
    return sorted(r.json().get("tags") or [])


def status_schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REPO / "schemas" / "output" / "release-status.schema.json").read_text())
    return doc


def check_status_json(out: dict[str, Any]) -> None:
    """`release status/run --json` output validates against its schema in schemas/output/."""
    jsonschema.validate(out, status_schema(), cls=jsonschema.Draft202012Validator)


def own_trust(w: Any, vectors: Path) -> Path:
    """Point the world's acceptance policy at its own copy of the vectors' trust registry (so a
    test can compromise the publisher's key later); returns the copy's path."""
    trust = w.tmp / "trust.json"
    shutil.copyfile(vectors / "sample" / "trust-active.json", trust)
    doc = yaml.safe_load(w.policy.read_text())
    doc["publishers"][0]["trustRegistries"] = [str(trust)]
    w.policy.write_text(yaml.safe_dump(doc, sort_keys=False))
    return trust


def published_before_closeout(w: Any, clock: FakeTime | None = None) -> None:
    """Run the world's goal in a forked child killed right after its last verify todo is done: every
    todo is done and read back, the terminal audit has not run."""
    plan = load_plan(w.plan)
    verifies = sum(1 for e in plan_effects(plan) if e.kind == "verify")
    last = Killer(verifies, matches=lambda e: isinstance(e, EffectEntry) and e.effect.startswith("verify:")
                  and e.to == "done")
    t = clock or FakeTime()
    code = run_forked(lambda: run_goal(plan, root=w.state, clock=t.clock, sleep=t.sleep).exit_code(), last)
    assert code == -9, code


def append_line(state: Path, line: dict[str, Any] | bytes, goal: str = GOAL) -> None:
    """Append a raw line to a goal's journal, as a person (or an attacker) editing the file would."""
    data = line if isinstance(line, bytes) else json.dumps(line, separators=(",", ":")).encode() + b"\n"
    with (state / goal / "journal.jsonl").open("ab") as fh:
        fh.write(data)
