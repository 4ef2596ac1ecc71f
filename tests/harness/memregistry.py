"""A small in-memory OCI registry of our own on loopback that counts what it is asked: the most
blob GET/PUT/PATCH requests in flight at once (`max_in_flight`), every request (`seen`), and
referrer listings per subject (`referrer_lists`). Each blob request can be held for `hold`
seconds inside the in-flight window, so overlapping transfers overlap observably; `faults`
maps a digest to a function that may answer a blob GET in its own (hostile) way.

Serves: /v2/, blob HEAD/GET (with Range), upload POST/PATCH/PUT/GET, manifest HEAD/GET/PUT by
tag or digest, tags/list, and the Referrers API (from the `subject` of stored manifests)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tests.harness.evilregistry import OCI_INDEX, EvilServer, Reply, Request

BlobFault = Callable[[Request, bytes], Reply | None]


@dataclass
class MemRegistry:
    hold: float = 0.0
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    faults: dict[str, BlobFault] = field(default_factory=dict)
    referrer_lists: dict[str, int] = field(default_factory=dict)
    extra_referrers: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    """Entries listed under a subject although the manifest names another (a lying listing)."""
    referrers_api: bool = True
    """False: the Referrers API answers 404, as distribution 2.8 does (the fallback tag is used)."""
    in_flight: int = 0
    max_in_flight: int = 0
    _uploads: dict[str, bytearray] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    server: EvilServer | None = None

    def start(self) -> MemRegistry:
        self.server = EvilServer(self.script)
        return self

    @property
    def host(self) -> str:
        assert self.server is not None
        return self.server.host

    @property
    def seen(self) -> list[Request]:
        assert self.server is not None
        return self.server.seen

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def reset_counts(self) -> None:
        with self._lock:
            self.max_in_flight = 0
            self.referrer_lists.clear()
        if self.server is not None:
            self.server.seen.clear()

    # -- the in-flight window ---------------------------------------------------------------------
    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.hold:
            time.sleep(self.hold)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _counted(self, body: bytes) -> Iterator[bytes]:
        """A blob body sent inside the window (left when the last byte went out)."""
        try:
            for i in range(0, len(body), 256 * 1024):
                yield body[i : i + 256 * 1024]
        finally:
            self._leave()

    # -- the API -----------------------------------------------------------------------------------
    def script(self, req: Request) -> Reply:
        path, _, query = req.path.partition("?")
        if path == "/v2/":
            return Reply(200, {"Content-Type": "application/json"}, b"{}")
        parts = path.split("/")
        if "/blobs/uploads/" in path:
            return self._upload(req, path, query)
        if "/blobs/" in path:
            return self._blob(req, parts[-1])
        if "/manifests/" in path:
            repo = "/".join(parts[2 : parts.index("manifests")])
            return self._manifest(req, repo, parts[-1])
        if "/referrers/" in path:
            if not self.referrers_api:
                return Reply(404)
            subject = parts[-1]
            with self._lock:
                self.referrer_lists[subject] = self.referrer_lists.get(subject, 0) + 1
            return Reply(200, {"Content-Type": OCI_INDEX}, json.dumps(self.referrers_index(subject)).encode())
        if path.endswith("/tags/list"):
            return Reply(200, {"Content-Type": "application/json"},
                         json.dumps({"name": "r", "tags": sorted(self.tags)}).encode())
        return Reply(404)

    def referrers_index(self, subject: str) -> dict[str, object]:
        entries = []
        for digest, (mt, data) in self.manifests.items():
            m = json.loads(data)
            if isinstance(m.get("subject"), dict) and m["subject"].get("digest") == subject:
                entry: dict[str, object] = {"mediaType": mt, "digest": digest, "size": len(data)}
                if m.get("artifactType"):
                    entry["artifactType"] = m["artifactType"]
                if m.get("annotations"):
                    entry["annotations"] = m["annotations"]
                entries.append(entry)
        entries += self.extra_referrers.get(subject, [])
        return {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}

    def _blob(self, req: Request, digest: str) -> Reply:
        data = self.blobs.get(digest)
        if data is None:
            return Reply(404)
        if req.method == "HEAD":
            return Reply(200, {"Docker-Content-Digest": digest}, data)  # HEAD: length only, no body
        if req.method != "GET":
            return Reply(405)
        self._enter()
        fault = self.faults.get(digest)
        rep = fault(req, data) if fault is not None else None
        if rep is not None:
            self._leave()
            return rep
        rng = req.headers.get("range")
        if rng:
            start = int(rng.split("=", 1)[1].split("-", 1)[0])
            body = data[start:]
            return Reply(206, {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"},
                         self._counted(body), length=len(body))
        return Reply(200, {"Docker-Content-Digest": digest}, self._counted(data), length=len(data))

    def _upload(self, req: Request, path: str, query: str) -> Reply:
        repo_path = path.split("/blobs/uploads/", 1)[0]
        if req.method == "POST":
            sid = uuid.uuid4().hex
            self._uploads[sid] = bytearray()
            return Reply(202, {"Location": f"{repo_path}/blobs/uploads/{sid}", "Range": "0-0"})
        sid = path.rsplit("/", 1)[-1]
        buf = self._uploads.get(sid)
        if buf is None:
            return Reply(404)
        if req.method == "GET":
            return Reply(204, {"Location": path, "Range": f"0-{max(0, len(buf) - 1)}"})
        if req.method not in ("PATCH", "PUT"):
            return Reply(405)
        self._enter()
        try:
            buf.extend(req.body)
            if req.method == "PATCH":
                return Reply(202, {"Location": path, "Range": f"0-{len(buf) - 1}"})
            params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            digest = params.get("digest", "").replace("%3A", ":")
            if "sha256:" + hashlib.sha256(bytes(buf)).hexdigest() != digest:
                return Reply(400, {"Content-Type": "application/json"},
                             b'{"errors":[{"code":"DIGEST_INVALID","message":"digest mismatch"}]}')
            self.blobs[digest] = bytes(buf)
            del self._uploads[sid]
            return Reply(201, {"Location": f"{repo_path}/blobs/{digest}", "Docker-Content-Digest": digest})
        finally:
            self._leave()

    def _manifest(self, req: Request, repo: str, ref: str) -> Reply:
        if req.method == "PUT":
            mt = req.headers.get("content-type", "")
            digest = "sha256:" + hashlib.sha256(req.body).hexdigest()
            self.manifests[digest] = (mt, req.body)
            if not ref.startswith("sha256:"):
                self.tags[ref] = digest
            return Reply(201, {"Docker-Content-Digest": digest, "Location": f"/v2/{repo}/manifests/{digest}"})
        digest = self.tags.get(ref, ref)
        found = self.manifests.get(digest)
        if found is None:
            return Reply(404, {"Content-Type": "application/json"},
                         b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}')
        mt, data = found
        return Reply(200, {"Content-Type": mt, "Docker-Content-Digest": digest}, data)

    # -- building content ------------------------------------------------------------------------
    def add_blob(self, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[digest] = data
        return digest

    def add_manifest(self, manifest: dict[str, object], tag: str | None = None) -> tuple[str, int]:
        data = json.dumps(manifest, separators=(",", ":")).encode()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.manifests[digest] = (str(manifest.get("mediaType")), data)
        if tag:
            self.tags[tag] = digest
        return digest, len(data)
