"""The release journal: an append-only JSON-lines file `.acx-release/<goal-id>/journal.jsonl`, the ONE
source of truth of a release goal. Every append is a single `write` of one line followed by
`fsync`, under the journal's file lock (a runner and an operator's `pause`/`approve` may append
at once), so a SIGKILL leaves at most a torn last line, which readers ignore and the next writer
cuts off before appending. Every line is decoded into a typed, frozen entry model
(`attest.typed.decode_as`, schema `schemas/acx.release-journal-1.schema.json`); nothing reads
the raw JSON.

Entry types (each has `seq`, `at`, `type`):
- `goal`: the goal opened: instance id, plan path and digest, `createdAt` (the one time every built
  object is stamped with), its identity (vision, acceptance criteria, non-goals, authority sources
  with their digests), the per-registry quota, and the effect list (the todos);
- `run`: a runner started (`event: start`) or ended (`event: end`: effects attempted, writes,
  the progress it made, the failures it met);
- `attempt`: an effect's try is about to do remote work (so a crash after it is never "nothing
  spent");
- `effect`: a state transition of one effect (`from`, `to`, `attempt`, `wrote`), with its
  `receipt` (what the registry answered), `evidence` (what the read-back proved), `failure`, and
  the `continuation` it declared;
- `spend` / `void`: the quota ledger (requests, bytes, publishes of one registry, per goal instance
  and window; keyed, so a replayed event never counts twice; a void corrects a spend);
- `signal`: a registry's health (5xx, connection failure, a probe that answered) or throttle (429
  with Retry-After);
- `observation`: what a monitor saw, per target (value, changed, consecutive unchanged count) and
  when it observes next;
- `approval`, `pause`, `unpause`, `repair`: an operator's word;
- `stop`: the goal stopped (repair_required / replan_required);
- `closeout`: the terminal audit began, passed (`done`) or failed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec
from filelock import FileLock, Timeout

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.trust import parse_rfc3339
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.errors import InvalidInput, NotFound, TransientError
from acxoci.fsutil import open_regular, require_own_folder
from acxoci.release.effects import Continuation, Effect
from acxoci.release.failures import Failure, State, StopClass
from acxoci.release.plan import check_goal_id, plain

STATE_DIR_ENV = "ACX_RELEASE_DIR"
DEFAULT_STATE_DIR = ".acx-release"
JOURNAL = "journal.jsonl"
LOCK = ".journal.lock"
SCHEMA_FILE = "acx.release-journal-1.schema.json"
MAX_JOURNAL_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 4 * 1024 * 1024


def state_root(explicit: Path | None = None) -> Path:
    """Where goal folders live: `explicit`, else `$ACX_RELEASE_DIR`, else `./.acx-release`."""
    if explicit is not None:
        return explicit
    env = os.environ.get(STATE_DIR_ENV)
    return Path(env) if env else Path.cwd() / DEFAULT_STATE_DIR


def goal_dir(goal_id: str, root: Path | None = None) -> Path:
    """The folder of one goal (journal, lease, objects, cached status); `goal_id` must be a goal
    id (the plan's `goal.id` rule), so the folder is always one name below the state folder."""
    return state_root(root) / check_goal_id(goal_id)


def goal_folder(goal_id: str, root: Path | None = None, *, create: bool = False) -> Path:
    """The folder of one goal, checked before anything in it is touched: a real folder (no
    symlink) owned by this user; created (0700) when `create`. NotFound names a missing goal."""
    folder = goal_dir(goal_id, root)
    if create:
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise InvalidInput(f"cannot create the goal folder: {exc.strerror or exc}",
                               where=str(folder)) from exc
    try:
        require_own_folder(folder, "goal folder")
    except NotFound as exc:
        raise NotFound(f"no release goal {goal_id!r}", where=str(folder)) from exc
    return folder


@contextlib.contextmanager
def folder_lock(folder: Path, name: str, *, timeout: float) -> Iterator[None]:
    """Hold the file lock `name` of a goal folder: the lock file must be a regular file (or absent;
    a symlink or FIFO planted there is refused naming it); a busy lock is TransientError (retry)."""
    path = folder / name
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise InvalidInput(f"cannot inspect the lock file: {exc.strerror or exc}", where=str(path)) from exc
    else:
        if not stat.S_ISREG(st.st_mode):
            raise InvalidInput("the lock file is not a regular file (a symlink or other file stands there)",
                               where=str(path))
    try:
        held = FileLock(str(path)).acquire(timeout=timeout)
    except Timeout as exc:
        raise TransientError(f"{name} is held by another process", where=str(path),
                             hint="retry later") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot take the lock: {exc.strerror or exc}", where=str(path)) from exc
    with held:
        yield


def iso(dt: datetime) -> str:
    """RFC 3339 UTC with milliseconds."""
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
"""The times a goal's files may hold: a journal is written now, and every time it schedules lies
at most a day or a window ahead, so anything outside these bounds is a forged or broken record
(and would overflow the arithmetic done on it)."""


def parse_iso(text: str, where: str) -> datetime:
    """An RFC 3339 time read from a goal's files or plan, parsed by the one RFC 3339 parser
    (`attest.trust.parse_rfc3339`) and held to [EARLIEST, LATEST): InvalidInput naming `where`."""
    try:
        out = parse_rfc3339(text, where="RFC 3339 time")
    except AttestError as exc:
        raise InvalidInput(str(exc), where=where) from exc
    if not EARLIEST <= out < LATEST:
        raise InvalidInput(f"time {text!r} lies outside the years 1970-8999 a release uses", where=where)
    return out


# ---- entry models --------------------------------------------------------------------------------


class _M(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, rename="camel",
         kw_only=True):
    """Base of the journal's nested models."""


class _Entry(_M, tag_field="type", frozen=True, kw_only=True):
    """Base of every journal line: its sequence number and time (stamped by `append`)."""

    seq: int = 0
    at: str = ""


class AuthoritySource(_M, frozen=True, kw_only=True):
    """A document authoritative for the goal and the digest of the bytes read when it opened."""

    role: str
    source: str
    digest: str | None = None
    problem: str | None = None


class GoalIdentity(_M, frozen=True, kw_only=True):
    """What the goal is, what it must not do, and what is authoritative for it."""

    vision: str | None = None
    criteria: tuple[str, ...] = ()
    non_goals: tuple[str, ...] = ()
    authority: tuple[AuthoritySource, ...] = ()


class QuotaRecord(_M, frozen=True, kw_only=True):
    """One registry's budget per window, as the goal opened with it (None: unlimited)."""

    host: str
    window_seconds: float
    requests: int | None = None
    bytes: int | None = None
    publishes: int | None = None


class GoalEntry(_Entry, tag="goal", frozen=True, kw_only=True):
    goal: str
    plan_path: str
    plan_digest: str
    created_at: str
    effects: tuple[Effect, ...]
    instance: str | None = None
    identity: GoalIdentity = GoalIdentity()
    quota: tuple[QuotaRecord, ...] = ()
    wait_seconds: float = 0.0
    freshness_seconds: float = 600.0


class Progress(_M, frozen=True, kw_only=True):
    """What a run achieved: receipts read back, gates and monitors resolved, successors opened, a
    terminal audit closed."""

    read_back: int = 0
    gates_resolved: int = 0
    monitors_resolved: int = 0
    successors_opened: int = 0
    closeout: bool = False

    @property
    def any(self) -> bool:
        return bool(self.read_back or self.gates_resolved or self.monitors_resolved or self.successors_opened
                    or self.closeout)


class RunEntry(_Entry, tag="run", frozen=True, kw_only=True):
    event: Literal["start", "end"]
    runner: str
    allow_retag: bool = False
    took_over_from: str | None = None
    executed: int | None = None
    attempted: int | None = None
    writes: int | None = None
    http_writes: int | None = None
    outcome: str | None = None
    progress: Progress | None = None
    failures: tuple[Failure, ...] = ()


class AttemptEntry(_Entry, tag="attempt", frozen=True, kw_only=True):
    effect: str
    attempt: int
    key: str


class EffectEntry(_Entry, tag="effect", frozen=True, kw_only=True):
    effect: str
    from_: State = msgspec.field(name="from")
    to: State
    attempt: int | None = None
    wrote: bool = False
    receipt: dict[str, Any] | None = None
    evidence: dict[str, Any] | None = None
    failure: Failure | None = None
    retry_in: float | None = None
    reason: str | None = None
    continuation: Continuation | None = None


class SpendEntry(_Entry, tag="spend", frozen=True, kw_only=True):
    key: str
    attempt_key: str
    instance: str
    window: str
    registry: str
    effect: str
    requests: int = 0
    bytes: int = 0
    publishes: int = 0
    estimated: bool = False


class VoidEntry(_Entry, tag="void", frozen=True, kw_only=True):
    key: str
    voids: str
    instance: str
    reason: str
    requests: int = 0
    bytes: int = 0
    publishes: int = 0


class SignalEntry(_Entry, tag="signal", frozen=True, kw_only=True):
    registry: str
    signal: Literal["unhealthy", "healthy", "throttled"]
    until: str | None = None
    status: int | None = None
    detail: str = ""


class TargetObservation(_M, frozen=True, kw_only=True):
    """One target of a monitor as observed: its value (None when absent), whether it satisfies the
    monitor, whether it changed since the last observation, and the count of unchanged ones."""

    target: str
    value: str | None = None
    ok: bool = False
    changed: bool = True
    no_change: int = 0
    error: str | None = None


class ObservationEntry(_Entry, tag="observation", frozen=True, kw_only=True):
    effect: str
    targets: tuple[TargetObservation, ...]
    satisfied: bool
    next_at: str | None = None
    escalated: Literal["gate", "replan"] | None = None
    continuation: Continuation | None = None


class ApprovalEntry(_Entry, tag="approval", frozen=True, kw_only=True):
    approval: str
    by: str
    note: str | None = None


class PauseEntry(_Entry, tag="pause", frozen=True, kw_only=True):
    by: str | None = None
    reason: str | None = None


class UnpauseEntry(_Entry, tag="unpause", frozen=True, kw_only=True):
    by: str | None = None
    reason: str | None = None


class StopEntry(_Entry, tag="stop", frozen=True, kw_only=True):
    cls: StopClass = msgspec.field(name="class")
    reason: str
    details: dict[str, Any] = {}


class RepairEntry(_Entry, tag="repair", frozen=True, kw_only=True):
    note: str
    by: str | None = None


AUDIT_CHECKS: tuple[str, ...] = ("todos", "read-back", "monitors", "gates", "successors", "ledger",
                                 "acceptance")
"""The checks of the terminal audit (audit.py), each of which a passed audit's record carries."""


class AuditFinding(msgspec.Struct, frozen=True, kw_only=True):
    check: str
    ok: bool
    detail: str = ""


class AuditRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The part of a `closeout` entry's audit the projection holds a `done` to."""

    ok: bool
    findings: tuple[AuditFinding, ...]


class CloseoutEntry(_Entry, tag="closeout", frozen=True, kw_only=True):
    event: Literal["begin", "done", "failed"]
    audit: dict[str, Any] | None = None
    failure: Failure | None = None


Entry = (GoalEntry | RunEntry | AttemptEntry | EffectEntry | SpendEntry | VoidEntry | SignalEntry
         | ObservationEntry | ApprovalEntry | PauseEntry | UnpauseEntry | StopEntry | RepairEntry
         | CloseoutEntry)


def decode_entry(value: Any, where: str) -> Entry:
    """One parsed journal line as its typed entry (InvalidInput naming the line and pointer)."""
    try:
        out: Entry = decode_as(value, Entry, document=where)  # type: ignore[arg-type]
    except DocumentTypeError as exc:
        raise InvalidInput(str(exc), where=where) from exc
    return out


def entry_json(entry: Entry) -> dict[str, Any]:
    """An entry as the JSON object its line holds."""
    out: dict[str, Any] = plain(entry)
    return out


def journal_schema() -> dict[str, Any]:
    """The JSON Schema of one journal line, generated from the entry models (the checked-in copy,
    schemas/acx.release-journal-1.schema.json, must equal this: tests/release checks it)."""
    doc: dict[str, Any] = plain({"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://acx.dev/schemas/acx.release-journal-1.schema.json",
            "title": "acx release journal entry (one line of .acx-release/<goal>/journal.jsonl)",
            "description": "Each line of a release goal's journal is one of these entries, told apart by "
                           "`type`. The first line is the `goal` entry. Generated from the typed models in "
                           "acxoci/release/journal.py, which decode every line.",
            **msgspec.json.schema(Entry)})
    return doc


# ---- the file ------------------------------------------------------------------------------------


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


Guard = Callable[[], contextlib.AbstractContextManager[None]]
"""Entered under the journal's lock around the writing of an entry (the run's lease check, held
until the line is written): raising stops the append."""


@dataclass
class Journal:
    """Append-only JSON lines with fsync'd, locked appends; `entries()` tolerates a torn last line
    and reads only what was appended since its last call (same file, grown). The file is only ever
    opened without following a symlink and only if it is a regular file (a FIFO cannot hang it)."""

    path: Path
    _ident: tuple[int, int] | None = field(default=None, repr=False)
    _offset: int = field(default=0, repr=False)
    _cache: list[Entry] = field(default_factory=list, repr=False)

    @classmethod
    def for_goal(cls, folder: Path) -> Journal:
        return cls(folder / JOURNAL)

    @property
    def exists(self) -> bool:
        """Is there a journal entry in the folder at all (a symlink or FIFO there counts: reading
        it is then refused, naming it)?"""
        return os.path.lexists(self.path)

    def entries(self) -> list[Entry]:
        """Every complete entry in order. A corrupt complete line is an error naming its number."""
        try:
            fh = open_regular(self.path, "release journal", nofollow=True)
        except NotFound:
            self._ident, self._offset, self._cache = None, 0, []
            return []
        with fh:
            st = os.fstat(fh.fileno())
            if st.st_size > MAX_JOURNAL_BYTES:
                raise InvalidInput(f"journal is larger than {MAX_JOURNAL_BYTES} bytes", where=str(self.path))
            ident = (st.st_dev, st.st_ino)
            if ident != self._ident or st.st_size < self._offset:
                self._ident, self._offset, self._cache = ident, 0, []
            fh.seek(self._offset)
            data = fh.read(st.st_size - self._offset)
        pos = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            if nl < 0:
                break  # torn tail: written without its newline
            line = data[pos:nl]
            pos = nl + 1
            if not line.strip():
                continue
            n = len(self._cache) + 1
            where = f"{self.path}: line {n}"
            if len(line) > MAX_LINE_BYTES:
                raise InvalidInput(f"journal line {n} is longer than {MAX_LINE_BYTES} bytes",
                                   where=str(self.path))
            try:
                obj = loads_strict(line)
            except (AttestError, ValueError) as exc:
                raise InvalidInput(f"journal line {n} is not JSON: {exc}", where=str(self.path)) from exc
            if not isinstance(obj, dict) or "type" not in obj:
                raise InvalidInput(f"journal line {n} is not an entry object", where=str(self.path))
            self._cache.append(decode_entry(obj, where))
        self._offset += pos
        return list(self._cache)

    def _cut_torn_tail(self, fd: int) -> None:
        """Cut a torn last line (written without its newline by a killed process) off the open file."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        span = min(size, MAX_LINE_BYTES + 1)
        tail = os.pread(fd, span, size - span)
        nl = tail.rfind(b"\n")
        if nl < 0 and span < size:
            raise InvalidInput(f"the journal's last line is longer than {MAX_LINE_BYTES} bytes",
                               where=str(self.path))
        os.ftruncate(fd, size - span + nl + 1)
        os.fsync(fd)

    def append(self, entry: Entry, *, now: datetime, guard: Guard | None = None) -> Entry:
        """Append one entry (stamped with the next `seq` and `at`) under the lock and inside `guard`
        (if given), fsync, and return it as written."""
        folder = self.path.parent
        held = guard() if guard is not None else contextlib.nullcontext()
        with folder_lock(folder, LOCK, timeout=30), held:
            created = not self.exists
            with open_regular(self.path, "release journal", nofollow=True, append=True) as fh:
                fd = fh.fileno()
                self._cut_torn_tail(fd)
                prior = self.entries()
                seq = prior[-1].seq + 1 if prior else 1
                full = msgspec.structs.replace(entry, seq=seq, at=iso(now))
                line = msgspec.json.encode(full) + b"\n"
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            if created:
                _fsync_dir(folder)
        return full
