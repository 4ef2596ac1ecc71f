"""High-water marks for fetched trust documents (TUF's rollback and freeze attacks): a status list
is never accepted older (by `validFrom`, then digest) than one already seen for the same list id,
and an artifact's lifecycle is never older (by `recordedAt`) than the newest record already seen
for it. The marks live beside the status-list cache, one small JSON file each, written atomically.

Local files the user names are the user's own and are not held to a mark (the caller decides)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.errors import InvalidInput
from acxoci.fsutil import atomic_write

MAX_MARK_BYTES = 256 * 1024


def _iso(dt: datetime) -> str:
    return dt.isoformat()


class HighWater:
    """The marks under `cache_dir/high-water/`."""

    def __init__(self, cache_dir: Path) -> None:
        self.folder = cache_dir / "high-water"

    def _path(self, kind: str, key: str) -> Path:
        return self.folder / f"{kind}-{hashlib.sha256(key.encode('utf-8')).hexdigest()}.json"

    def _read(self, kind: str, key: str) -> dict[str, Any] | None:
        from attest.canonical import loads_strict
        from attest.errors import AttestError

        path = self._path(kind, key)
        try:
            with path.open("rb") as fh:
                data = fh.read(MAX_MARK_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InvalidInput(f"high-water mark unreadable: {exc.strerror}", where=str(path)) from exc
        try:
            if len(data) > MAX_MARK_BYTES:
                raise AttestError("too large")
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
        """Accept (and remember) a verified list, or say why it is a rollback: its validFrom is
        earlier than that of the newest list seen for `list_id`. (Two lists the issuer signed with
        the same validFrom are neither older than the other: the later one seen is remembered.)"""
        seen = self._read("status-list", list_id)
        seen_ts = seen.get("validFromTs") if seen is not None else None
        if isinstance(seen_ts, int | float) and valid_from.timestamp() < seen_ts:
            return (f"status list {list_id} (validFrom {_iso(valid_from)}) is older than one already seen "
                    f"(validFrom {seen.get('validFrom') if seen else '?'}): a rollback is refused")
        if seen is None or seen.get("digest") != digest:
            self._write("status-list", list_id, {"validFrom": _iso(valid_from),
                                                 "validFromTs": valid_from.timestamp(), "digest": digest})
        return None

    # ---- lifecycle records ----------------------------------------------------------------------

    def lifecycle(self, subject: str, records: list[dict[str, Any]], checked_at: datetime
                  ) -> list[dict[str, Any]]:
        """`records` as read now, plus the newest record seen before when none read now is as new
        (a registry that drops a record cannot make the lifecycle older); remembers the newest."""
        seen = self._read("lifecycle", subject)
        newest = _newest(records)
        kept: dict[str, Any] | None = seen.get("newest") if seen is not None else None
        out = list(records)
        if isinstance(kept, dict) and (newest is None or _recorded(kept) > _recorded(newest)):
            out.append(kept)
            newest = kept
        self._write("lifecycle", subject, {"newest": newest, "checkedAt": _iso(checked_at),
                                           "checkedAtTs": checked_at.timestamp()})
        return out

    def lifecycle_seen(self, subject: str) -> tuple[list[dict[str, Any]], float] | None:
        """The newest lifecycle record seen for `subject` (as a list) and when, or None."""
        seen = self._read("lifecycle", subject)
        if seen is None:
            return None
        ts = seen.get("checkedAtTs")
        kept = seen.get("newest")
        return ([kept] if isinstance(kept, dict) else []), (float(ts) if isinstance(ts, int | float) else 0.0)


def _recorded(record: dict[str, Any]) -> float:
    """A record's `recordedAt` as a timestamp (an undated or unparseable one sorts first)."""
    from attest.errors import AttestError
    from attest.trust import parse_rfc3339

    value = record.get("recordedAt")
    try:
        return parse_rfc3339(value).timestamp() if isinstance(value, str) else float("-inf")
    except AttestError:
        return float("-inf")


def _newest(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    dated = [r for r in records if _recorded(r) > float("-inf")]
    return max(dated, key=_recorded) if dated else None
