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
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from acxoci.errors import InvalidInput, NotFound, Tampered
from acxoci.fsutil import open_regular, require_real_folders
from acxoci.oci.target import Target

RECEIPT_HEADERS = ("Docker-Content-Digest", "OCI-Subject", "Retry-After", "Location", "Range")
WRITE_METHODS = frozenset({"PUT", "POST", "PATCH", "DELETE"})
MAX_RECEIPT_REQUESTS = 16
MAX_OBJECT_BYTES = 64 * 1024 * 1024
"""What `ObjectStore.get` reads into memory (manifests, signed documents); the artifact file is
streamed (`open`, `verify_file`)."""


class ObjectStore:
    """Content-addressed, hash-on-read local store of the bytes a goal pushes. Its folders must be
    real folders and its files regular files, opened without following a symlink."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        alg, _, hexpart = digest.partition(":")
        if alg != "sha256" or len(hexpart) != 64 or not all(c in "0123456789abcdef" for c in hexpart):
            raise InvalidInput(f"unsupported object digest {digest!r}")
        require_real_folders(self.root.parent, f"{self.root.name}/{alg}/{hexpart}", "goal folder")
        return self.root / alg / hexpart

    def _present(self, dest: Path, size: int) -> bool:
        try:
            st = os.lstat(dest)
        except FileNotFoundError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == size

    def put(self, data: bytes) -> str:
        """Store bytes; returns their digest (a no-op when already present)."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        dest = self.path(digest)
        if self._present(dest, len(data)):
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
        require_real_folders(self.root.parent, f"{self.root.name}/x", "goal folder")
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".part", dir=str(self.root))
        try:
            with os.fdopen(fd, "wb") as out, open_regular(src, "input file") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            digest = "sha256:" + h.hexdigest()
            dest = self.path(digest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def open(self, digest: str) -> BinaryIO:
        """The frozen object of `digest`, opened for reading (a regular file, no symlink)."""
        try:
            return open_regular(self.path(digest), "frozen object", nofollow=True)
        except NotFound as exc:
            raise NotFound("frozen object is missing from the goal folder", where=digest) from exc

    def get(self, digest: str) -> bytes:
        """The bytes of `digest`, re-hashed (Tampered if the frozen copy changed)."""
        with self.open(digest) as fh:
            data = fh.read(MAX_OBJECT_BYTES + 1)
        if len(data) > MAX_OBJECT_BYTES:
            raise InvalidInput(f"frozen object exceeds {MAX_OBJECT_BYTES} bytes",
                               where=str(self.path(digest)))
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise Tampered("frozen object no longer matches its digest", where=str(self.path(digest)))
        return data

    def verify_file(self, digest: str) -> int:
        """Re-hash a (possibly large) object; returns its size."""
        h = hashlib.sha256()
        size = 0
        with self.open(digest) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
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
