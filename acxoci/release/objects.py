"""Local helpers of the interpreter: the goal's frozen object store and the HTTP receipt recorder.

- `ObjectStore` (`.acx-release/<goal>/objects/sha256/<hex>`): the `prepare` effect freezes every
  byte a release pushes (artifact file, manifest, signed envelopes and bundles, credential) here,
  content-addressed, so a resumed run pushes exactly the same bytes (a re-signed P-256 statement
  would otherwise differ and duplicate a referrer). Reads re-hash.
- `Recorder`: a `requests` response hook on the registry transport's session that records what
  the registry answered (method, host, path, status, body sizes, and the headers that matter) for
  the effect being executed: that is the effect's receipt, and what it spent (`spend_by_host`).
  A receipt is never proof; the read-back is.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from acxoci.errors import InvalidInput, NotFound, Tampered
from acxoci.oci.target import Target

RECEIPT_HEADERS = ("Docker-Content-Digest", "OCI-Subject", "Retry-After", "Location", "Range")
WRITE_METHODS = frozenset({"PUT", "POST", "PATCH", "DELETE"})
MAX_RECEIPT_REQUESTS = 16


class ObjectStore:
    """Content-addressed, hash-on-read local store of the bytes a goal pushes."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        alg, _, hexpart = digest.partition(":")
        if alg != "sha256" or len(hexpart) != 64:
            raise InvalidInput(f"unsupported object digest {digest!r}")
        return self.root / alg / hexpart

    def put(self, data: bytes) -> str:
        """Store bytes; returns their digest (a no-op when already present)."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        dest = self.path(digest)
        if dest.exists() and dest.stat().st_size == len(data):
            return digest
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".part", dir=str(dest.parent))
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def put_file(self, src: Path) -> str:
        """Copy a file in (hashing while copying); returns its digest."""
        h = hashlib.sha256()
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".part", dir=str(self.root))
        try:
            with os.fdopen(fd, "wb") as out, src.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            digest = "sha256:" + h.hexdigest()
            dest = self.path(digest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dest)
        except FileNotFoundError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise NotFound("input file not found", where=str(src)) from exc
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, digest: str) -> bytes:
        """The bytes of `digest`, re-hashed (Tampered if the frozen copy changed)."""
        try:
            data = self.path(digest).read_bytes()
        except FileNotFoundError as exc:
            raise NotFound("frozen object is missing from the goal folder", where=digest) from exc
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise Tampered("frozen object no longer matches its digest", where=str(self.path(digest)))
        return data

    def verify_file(self, digest: str) -> int:
        """Re-hash a (possibly large) object; returns its size."""
        h = hashlib.sha256()
        size = 0
        try:
            with self.path(digest).open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                    size += len(chunk)
        except FileNotFoundError as exc:
            raise NotFound("frozen object is missing from the goal folder", where=digest) from exc
        if "sha256:" + h.hexdigest() != digest:
            raise Tampered("frozen object no longer matches its digest", where=str(self.path(digest)))
        return size

class Recorder:
    """Collects registry responses per effect through a `requests` response hook."""

    def __init__(self) -> None:
        self.current: list[dict[str, Any]] | None = None
        self._hooked: dict[int, Any] = {}

    def attach(self, target: Target) -> None:
        """Hook the transport session of a registry target (once per session)."""
        transport = getattr(target, "transport", None)
        session = getattr(transport, "session", None)
        if session is None or id(session) in self._hooked:
            return
        session.hooks.setdefault("response", []).append(self._hook)
        self._hooked[id(session)] = session

    def detach(self) -> None:
        """Remove the hook from every session it was added to (sessions are pooled per host)."""
        for session in self._hooked.values():
            hooks = session.hooks.get("response", [])
            if self._hook in hooks:
                hooks.remove(self._hook)
        self._hooked.clear()

    def _hook(self, resp: Any, *args: Any, **kwargs: Any) -> None:
        if self.current is None:
            return
        req = resp.request
        url = urlsplit(str(req.url))
        item: dict[str, Any] = {"method": req.method, "host": url.netloc, "path": url.path,
                                "status": resp.status_code,
                                "sent": _length(req.headers.get("Content-Length")),
                                "received": (0 if req.method == "HEAD"
                                             else _length(resp.headers.get("Content-Length")))}
        for h in RECEIPT_HEADERS:
            v = resp.headers.get(h)
            if v:
                item[h] = urlsplit(v).path if h == "Location" else v
        self.current.append(item)

    def begin(self) -> None:
        self.current = []

    def end(self) -> list[dict[str, Any]]:
        got = self.current or []
        self.current = None
        return got


def _length(value: str | None) -> int:
    """A Content-Length header as a count of bytes (0 when absent or not a plain number)."""
    return int(value) if value is not None and value.isascii() and value.isdigit() and len(value) < 19 else 0


def http_receipt(requests_seen: list[dict[str, Any]]) -> dict[str, Any]:
    """The HTTP part of a receipt: the last requests (bounded) and how many were writes."""
    writes = sum(1 for r in requests_seen if r.get("method") in WRITE_METHODS)
    out: dict[str, Any] = {"requests": len(requests_seen), "httpWrites": writes}
    if requests_seen:
        out["responses"] = [{k: v for k, v in r.items() if k not in ("host", "sent", "received")}
                            for r in requests_seen[-MAX_RECEIPT_REQUESTS:]]
    return out


def spend_by_host(requests_seen: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """What the recorded requests cost each registry host: requests and body bytes (sent and
    received, by Content-Length)."""
    out: dict[str, dict[str, int]] = {}
    for r in requests_seen:
        host = str(r.get("host") or "")
        if not host:
            continue
        row = out.setdefault(host, {"requests": 0, "bytes": 0})
        row["requests"] += 1
        row["bytes"] += int(r.get("sent") or 0) + int(r.get("received") or 0)
    return out
