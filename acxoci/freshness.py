"""High-water marks for fetched trust documents (TUF's rollback and freeze attacks): a status list
is never accepted older (by `validFrom`, then digest) than one already seen for the same list id,
and an artifact's lifecycle is never older (by `recordedAt`) than the newest record already seen
for it. The marks live beside the status-list cache, one small JSON file each, written atomically.

Local files the user names are the user's own and are not held to a mark (the caller decides)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.errors import InvalidInput
from acxoci.fsutil import atomic_write

MAX_MARK_BYTES = 256 * 1024
MAX_RECORDS = 64


def _iso(dt: datetime) -> str:
    return dt.isoformat()


class HighWater:
    """The marks under `cache_dir/high-water/`."""

    def __init__(self, cache_dir: Path) -> None:
        self.folder = cache_dir / "high-water"

    def _path(self, kind: str, key: str) -> Path:
        return self.folder / f"{kind}-{hashlib.sha256(key.encode('utf-8')).hexdigest()}.json"

    def _read(self, kind: str, key: str) -> dict[str, Any] | None:
        from acxoci.attest.canonical import loads_strict
        from acxoci.attest.errors import AttestError
        from acxoci.errors import NotFound
        from acxoci.fsutil import read_bytes

        path = self._path(kind, key)
        try:  # regular files only (a FIFO would hang, a link may point anywhere), bounded
            data = read_bytes(path, "high-water mark", limit=MAX_MARK_BYTES, nofollow=True)
        except NotFound:
            return None
        except InvalidInput as exc:
            raise InvalidInput(f"{exc.message}; remove it to start over", where=str(path)) from exc
        try:
            doc = loads_strict(data)
        except AttestError as exc:
            raise InvalidInput(f"high-water mark is corrupt ({exc}); remove it to start over",
                               where=str(path)) from exc
        if not isinstance(doc, dict) or doc.get("key") != key:
            raise InvalidInput("high-water mark is corrupt; remove it to start over", where=str(path))
        return doc

    def _write(self, kind: str, key: str, doc: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"key": key, **doc}, sort_keys=True, ensure_ascii=False).encode("utf-8")
        atomic_write(self._path(kind, key), body)

    # ---- status lists ---------------------------------------------------------------------------

    def status_list(self, list_id: str, valid_from: datetime, digest: str) -> str | None:
        """Accept (and remember) a verified list, or say why not: its validFrom is earlier than that
        of the newest list seen for `list_id` (a rollback), or equal to it with other contents (two
        lists the issuer signed for the same instant cannot be ordered, so neither is trusted over
        the other: fail closed)."""
        seen = self._read("status-list", list_id)
        seen_ts = seen.get("validFromTs") if seen is not None else None
        if isinstance(seen_ts, int | float) and seen is not None:
            shown = seen.get("validFrom")
            if valid_from.timestamp() < seen_ts:
                return (f"status list {list_id} (validFrom {_iso(valid_from)}) is older than one already "
                        f"seen (validFrom {shown}): a rollback is refused")
            if valid_from.timestamp() == seen_ts and seen.get("digest") != digest:
                return (f"status list {list_id} has other contents than the one already seen with the same "
                        f"validFrom {shown}: the two cannot be ordered (the issuer must re-issue it later)")
            if valid_from.timestamp() == seen_ts:
                return None
        self._write("status-list", list_id, {"validFrom": _iso(valid_from),
                                             "validFromTs": valid_from.timestamp(), "digest": digest})
        return None

    # ---- lifecycle records ----------------------------------------------------------------------

    def lifecycle(self, subject: str, records: list[dict[str, Any]], checked_at: datetime,
                  severity: Callable[[dict[str, Any]], int]) -> list[dict[str, Any]]:
        """`records` as read now, plus every record seen before for `subject`: a registry that drops a
        record (a withdrawal) cannot make the lifecycle older, and the most severe record seen keeps
        deciding (decide() takes the most severe). Remembers them all (bounded) with the check time."""
        from acxoci.attest.canonical import jcs_digest

        seen = self._read("lifecycle", subject)
        kept = seen.get("records") if seen is not None else None
        merged: dict[str, dict[str, Any]] = {}
        for r in [*(kept if isinstance(kept, list) else []), *records]:
            if isinstance(r, dict):
                merged.setdefault(jcs_digest(r), r)
        out = list(merged.values())
        if len(out) > MAX_RECORDS:  # keep what decides: the most severe, then the newest
            out = sorted(out, key=lambda r: (severity(r), _recorded(r)), reverse=True)[:MAX_RECORDS]
        self._write("lifecycle", subject, {"records": out, "checkedAt": _iso(checked_at),
                                           "checkedAtTs": checked_at.timestamp()})
        return out

    def lifecycle_seen(self, subject: str) -> tuple[list[dict[str, Any]], float] | None:
        """Every lifecycle record seen for `subject` and when they were last checked, or None."""
        seen = self._read("lifecycle", subject)
        if seen is None:
            return None
        ts = seen.get("checkedAtTs")
        kept = seen.get("records")
        records = [r for r in kept if isinstance(r, dict)] if isinstance(kept, list) else []
        return records, (float(ts) if isinstance(ts, int | float) else 0.0)


def _recorded(record: dict[str, Any]) -> float:
    """A record's `recordedAt` as a timestamp (an undated or unparseable one sorts first)."""
    from acxoci.attest.errors import AttestError
    from acxoci.attest.trust import parse_rfc3339

    value = record.get("recordedAt")
    try:
        return parse_rfc3339(value).timestamp() if isinstance(value, str) else float("-inf")
    except AttestError:
        return float("-inf")
