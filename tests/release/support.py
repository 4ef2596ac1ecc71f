"""Helpers of the release control-plane tests (no tests here): a clock whose sleep advances it, a
release world on a real registry, and readers of the journal's ledger and entries."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import requests

from acxoci.oci.descriptor import OCI_INDEX
from acxoci.oci.reference import fallback_tag
from acxoci.release.journal import Entry, Journal
from acxoci.release.quota import fold_ledger
from acxoci.release.status import GoalStatus, project
from tests.harness.env import REPO
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
