"""The goal lease: `.acx-release/<goal-id>/lease.json` names the runner executing the goal and until
when. Two runners never execute one goal at once; an expired lease (or one whose holder process on
this very host is gone) may be taken over. Acquire/renew/check/release run under a file lock, so the
read-check-write is atomic between runners sharing the folder.

The owner of a lease is a per-process nonce (`token`), never the runner's name: two processes
given the same `ACX_RELEASE_RUNNER` are still two holders. The runner name is kept for display.
Every journal append of a run checks, under the journal's lock, that the run still holds the
lease (`GoalLease.check`, renewing it when half its time is gone), so a runner whose lease was
taken over cannot write one more entry (LeaseLost, exit 6, naming the new holder).

The lease is ownership METADATA, not an effect state: effects stay open/done/blocked/deferred
whoever holds the lease, and `acx release status` never reads this file."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.errors import InvalidInput, NotFound, TransientError
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.release.journal import folder_lock, iso, parse_iso

LEASE = "lease.json"
LOCK = ".lease.lock"
RUNNER_ENV = "ACX_RELEASE_RUNNER"
MAX_LEASE_BYTES = 64 * 1024
LOCK_TIMEOUT = 10.0


class LeaseHeld(TransientError):
    """Another runner holds the goal's lease: retry later (exit 6)."""

    kind = "lease_held"


class LeaseLost(LeaseHeld):
    """This run's lease was taken over (it outlived its expiry): it must not write again (exit 6)."""

    kind = "lease_lost"


def default_runner_id() -> str:
    """`$ACX_RELEASE_RUNNER`, else `hostname:pid`."""
    return os.environ.get(RUNNER_ENV) or f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Lease:
    """Who holds the goal (the holder's nonce, its runner name for display, host and pid, which let
    a same-host successor detect a dead holder) and until when."""

    runner: str
    host: str
    pid: int
    acquired_at: str
    expires_at: datetime
    token: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"runner": self.runner, "host": self.host, "pid": self.pid, "acquiredAt": self.acquired_at,
                "expiresAt": iso(self.expires_at), "token": self.token}

    def describe(self) -> str:
        return f"{self.runner} (host {self.host}, pid {self.pid}) until {iso(self.expires_at)}"

    @classmethod
    def from_json(cls, obj: Any, where: str) -> Lease:
        try:
            return cls(str(obj["runner"]), str(obj["host"]), int(obj["pid"]), str(obj["acquiredAt"]),
                       parse_iso(str(obj["expiresAt"]), f"{where}: expiresAt"), str(obj.get("token", "")))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(f"lease file is malformed: {exc}", where=where) from exc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def holder_gone(lease: Lease, now: datetime) -> bool:
    """True if the lease may be taken over: expired, or held by a dead process on this host."""
    if lease.expires_at <= now:
        return True
    return lease.host == socket.gethostname() and lease.pid != os.getpid() and not _alive(lease.pid)


class GoalLease:
    """Acquire, renew, check and release the lease of one goal folder, for this process only."""

    def __init__(self, folder: Path, runner: str, ttl_seconds: float) -> None:
        self.folder = folder
        self.runner = runner
        self.ttl = timedelta(seconds=ttl_seconds)
        self.path = folder / LEASE
        self.token = secrets.token_hex(16)
        self._renewed: datetime | None = None

    def current(self) -> Lease | None:
        """The lease on disk, if any (read without following a symlink, bounded)."""
        try:
            data = read_bytes(self.path, "lease file", limit=MAX_LEASE_BYTES, nofollow=True)
        except NotFound:
            return None
        try:
            obj = loads_strict(data)
        except (AttestError, ValueError) as exc:
            raise InvalidInput(f"lease file unreadable: {exc}", where=str(self.path)) from exc
        return Lease.from_json(obj, str(self.path))

    def _mine(self, lease: Lease | None) -> bool:
        return lease is not None and lease.token == self.token

    def _write(self, lease: Lease) -> None:
        atomic_write(self.path, json.dumps(lease.to_json(), indent=2).encode() + b"\n", mode=0o600)

    def acquire(self, now: datetime) -> Lease | None:
        """Take the lease (returns the previous holder's lease if one was taken over); LeaseHeld if
        another live holder has it, whatever its runner name."""
        with folder_lock(self.folder, LOCK, timeout=LOCK_TIMEOUT):
            old = self.current()
            if old is not None and not self._mine(old) and not holder_gone(old, now):
                raise LeaseHeld(f"goal is being run by {old.describe()}", where=str(self.path),
                                hint="wait, or let the lease expire")
            self._write(Lease(self.runner, socket.gethostname(), os.getpid(), iso(now), now + self.ttl,
                              self.token))
            self._renewed = now
            return old if old is not None and not self._mine(old) else None

    def _lost(self, cur: Lease | None) -> LeaseLost:
        return LeaseLost(f"lease lost to {cur.describe() if cur else 'nobody'}: this run stops writing",
                         where=str(self.path), hint="the holder goes on with the goal; resume later")

    def renew(self, now: datetime) -> None:
        """Extend the lease; LeaseLost if someone took it over meanwhile (stop writing at once)."""
        with folder_lock(self.folder, LOCK, timeout=LOCK_TIMEOUT):
            self._renew_held(now)

    def _renew_held(self, now: datetime) -> None:
        cur = self.current()
        if cur is None or not self._mine(cur):
            raise self._lost(cur)
        self._write(Lease(self.runner, cur.host, cur.pid, cur.acquired_at, now + self.ttl, self.token))
        self._renewed = now

    @contextlib.contextmanager
    def holding(self, now: datetime) -> Iterator[None]:
        """Around a journal append: LeaseLost unless this process still holds the lease, which no
        one can take over until the entry is written; renewed when half of its time is gone (so a
        run that keeps journaling keeps its lease)."""
        with folder_lock(self.folder, LOCK, timeout=LOCK_TIMEOUT):
            cur = self.current()
            if cur is None or not self._mine(cur):
                raise self._lost(cur)
            if self._renewed is None or now - self._renewed >= self.ttl / 2 or cur.expires_at <= now:
                self._renew_held(now)
            yield

    def release(self) -> None:
        """Give the lease up (only if still ours)."""
        with folder_lock(self.folder, LOCK, timeout=LOCK_TIMEOUT):
            if self._mine(self.current()):
                self.path.unlink(missing_ok=True)
