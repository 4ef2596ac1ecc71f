"""The release journal: an append-only JSON-lines file `.acx-release/<goal-id>/journal.jsonl`, the ONE
source of truth of a release goal. Every append is a single `write` of one line followed by
`fsync`, so a SIGKILL leaves at most a torn last line, which readers ignore and the next writer
cuts off before appending.

Entry types (each has `seq`, `at`, `type`):
- `goal`: the goal opened: plan path and digest, `createdAt` (the one time every built object is
  stamped with, so rebuilding yields the same bytes), and the effect list (id, kind, deps, ...);
- `run`: a runner started (`event: start`, runner id, `allowRetag`) or ended (`event: end`,
  `executed` effects, `writes`, outcome);
- `effect`: a state transition of one effect (`from`, `to`, `attempt`, `wrote`), with its
  `receipt` (what the registry answered), `evidence` (what the read-back proved) and `failure`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.errors import InvalidInput
from attest.canonical import loads_strict

STATE_DIR_ENV = "ACX_RELEASE_DIR"
DEFAULT_STATE_DIR = ".acx-release"
JOURNAL = "journal.jsonl"


def state_root(explicit: Path | None = None) -> Path:
    """Where goal folders live: `explicit`, else `$ACX_RELEASE_DIR`, else `./.acx-release`."""
    if explicit is not None:
        return explicit
    env = os.environ.get(STATE_DIR_ENV)
    return Path(env) if env else Path.cwd() / DEFAULT_STATE_DIR


def goal_dir(goal_id: str, root: Path | None = None) -> Path:
    """The folder of one goal (journal, lease, objects, cached status)."""
    return state_root(root) / goal_id


def iso(dt: datetime) -> str:
    """RFC 3339 UTC with milliseconds."""
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class Journal:
    """Append-only JSON lines with fsync'd appends; `entries()` tolerates a torn last line."""

    path: Path

    @classmethod
    def for_goal(cls, folder: Path) -> Journal:
        return cls(folder / JOURNAL)

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def _lines(self) -> Iterator[tuple[int, bytes, bool]]:
        data = self.path.read_bytes() if self.path.exists() else b""
        pos = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            if nl < 0:
                yield pos, data[pos:], False  # torn tail: written without its newline
                return
            yield pos, data[pos:nl], True
            pos = nl + 1

    def entries(self) -> list[dict[str, Any]]:
        """Every complete entry in order. A corrupt complete line is an error naming its number."""
        out: list[dict[str, Any]] = []
        for n, (_, line, complete) in enumerate(self._lines(), start=1):
            if not complete:
                break
            if not line.strip():
                continue
            try:
                obj = loads_strict(line)
            except ValueError as exc:
                raise InvalidInput(f"journal line {n} is not JSON: {exc}", where=str(self.path)) from exc
            if not isinstance(obj, dict) or "type" not in obj:
                raise InvalidInput(f"journal line {n} is not an entry object", where=str(self.path))
            out.append(obj)
        return out

    def _cut_torn_tail(self) -> None:
        for pos, _, complete in self._lines():
            if not complete:
                with self.path.open("r+b") as fh:
                    fh.truncate(pos)
                    fh.flush()
                    os.fsync(fh.fileno())
                return

    def append(self, entry: dict[str, Any], *, now: datetime) -> dict[str, Any]:
        """Append one entry (stamped with the next `seq` and `at`), fsync, and return it."""
        created = not self.path.exists()
        if created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        else:
            self._cut_torn_tail()
        prior = self.entries()
        seq = (int(prior[-1].get("seq", len(prior))) + 1) if prior else 1
        full = {"seq": seq, "at": iso(now), **entry}
        line = json.dumps(full, separators=(",", ":"), ensure_ascii=False, sort_keys=False) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.path.parent)
        return full
