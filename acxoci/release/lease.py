"""The goal lease: `.acx-release/<goal-id>/lease.json` names the runner executing the goal and until
when. Two runners never execute one goal at once; an expired lease (or one whose holder process on
this very host is gone) may be taken over. Acquire/renew/release run under a file lock, so the
read-check-write is atomic between runners sharing the folder.

The lease is ownership METADATA, not an effect state: effects stay open/done/blocked/deferred
whoever holds the lease, and `acx release status` never reads this file."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from acxoci.errors import InvalidInput, TransientError
from acxoci.release.journal import iso
from attest.canonical import loads_strict

LEASE = "lease.json"
LOCK = ".lease.lock"
RUNNER_ENV = "ACX_RELEASE_RUNNER"


class LeaseHeld(TransientError):
    """Another runner holds the goal's lease: retry later (exit 6)."""

    kind = "lease_held"


def default_runner_id() -> str:
    """`$ACX_RELEASE_RUNNER`, else `hostname:pid`."""
    return os.environ.get(RUNNER_ENV) or f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Lease:
    """Who holds the goal and until when (host and pid let a same-host successor detect a dead holder)."""

    runner: str
    host: str
    pid: int
    acquired_at: str
    expires_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {"runner": self.runner, "host": self.host, "pid": self.pid, "acquiredAt": self.acquired_at,
                "expiresAt": iso(self.expires_at)}

    @classmethod
    def from_json(cls, obj: Any, where: str) -> Lease:
        try:
            return cls(str(obj["runner"]), str(obj["host"]), int(obj["pid"]), str(obj["acquiredAt"]),
                       datetime.fromisoformat(str(obj["expiresAt"]).replace("Z", "+00:00")))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"lease file is malformed: {exc}", where=where) from exc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_gone(lease: Lease, now: datetime) -> bool:
    """True if the lease may be taken over: expired, or held by a dead process on this host."""
    if lease.expires_at <= now:
        return True
    return lease.host == socket.gethostname() and lease.pid != os.getpid() and not _alive(lease.pid)


class GoalLease:
    """Acquire, renew and release the lease of one goal folder for `runner`."""

    def __init__(self, folder: Path, runner: str, ttl_seconds: float) -> None:
        self.folder = folder
        self.runner = runner
        self.ttl = timedelta(seconds=ttl_seconds)
        self.path = folder / LEASE
        self._lock = FileLock(str(folder / LOCK))

    def current(self) -> Lease | None:
        """The lease on disk, if any."""
        if not self.path.exists():
            return None
        try:
            obj = loads_strict(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"lease file unreadable: {exc}", where=str(self.path)) from exc
        return Lease.from_json(obj, str(self.path))

    def _write(self, lease: Lease) -> None:
        tmp = self.path.with_name(f".{LEASE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(lease.to_json(), indent=2) + "\n", encoding="utf-8")
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def acquire(self, now: datetime) -> Lease | None:
        """Take the lease (returns the previous holder's lease if one was taken over); LeaseHeld if
        another live runner holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            with self._lock.acquire(timeout=10):
                old = self.current()
                if old is not None and old.runner != self.runner and not holder_gone(old, now):
                    raise LeaseHeld(f"goal is being run by {old.runner} until {iso(old.expires_at)}",
                                    where=str(self.path), hint="wait, or let the lease expire")
                self._write(Lease(self.runner, socket.gethostname(), os.getpid(), iso(now), now + self.ttl))
                return old if old is not None and old.runner != self.runner else None
        except Timeout as exc:
            raise LeaseHeld("lease lock is busy", where=str(self.path)) from exc

    def renew(self, now: datetime) -> None:
        """Extend the lease; LeaseHeld if someone took it over meanwhile (stop writing at once)."""
        with self._lock.acquire(timeout=10):
            cur = self.current()
            if cur is None or cur.runner != self.runner:
                raise LeaseHeld(f"lease lost to {cur.runner if cur else 'nobody'}", where=str(self.path))
            self._write(Lease(self.runner, cur.host, cur.pid, cur.acquired_at, now + self.ttl))

    def release(self) -> None:
        """Give the lease up (only if still ours)."""
        with self._lock.acquire(timeout=10):
            cur = self.current()
            if cur is not None and cur.runner == self.runner:
                self.path.unlink(missing_ok=True)
