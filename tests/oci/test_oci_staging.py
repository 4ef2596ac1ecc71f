"""A pull cut off mid-blob (here: the registry stalls past the deadline) keeps its digest-named
staging file; the next pull hashes those bytes again and continues with a Range request, and
the result is digest-checked as a whole. A registry that then serves different bytes, or none
for the range, never yields a wrong file."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.artifact import pull_file
from acxoci.oci.descriptor import EMPTY_DIGEST, Descriptor
from acxoci.oci.errors import DeadlineExceeded, DigestMismatch
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget, Transport
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.staging import staging_path
from tests.harness.evilregistry import OCI_MANIFEST, EvilServer, Reply, Request

LAYER = os.urandom(5 * 1024 * 1024)
LAYER_DIGEST = "sha256:" + hashlib.sha256(LAYER).hexdigest()
MANIFEST = json.dumps({
    "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/x.test",
    "config": {"mediaType": "application/vnd.oci.empty.v1+json",
               "digest": EMPTY_DIGEST, "size": 2},
    "layers": [{"mediaType": "application/octet-stream", "digest": LAYER_DIGEST, "size": len(LAYER),
                "annotations": {"org.opencontainers.image.title": "blob.bin"}}],
}).encode()
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _stall_after(data: bytes, n: int) -> Iterator[bytes]:
    yield data[:n]
    time.sleep(4)  # past the client's 2 s deadline


@pytest.fixture
def server() -> Iterator[EvilServer]:
    state = {"mode": "stall"}

    def script(req: Request) -> Reply:
        if "/manifests/" in req.path:
            return Reply(200, {"Content-Type": OCI_MANIFEST}, MANIFEST)
        if LAYER_DIGEST not in req.path:
            return Reply(404)
        rng = req.headers.get("range")
        body = LAYER if state["mode"] != "lie" else bytes(len(LAYER))
        if state["mode"] == "stall":
            return Reply(200, {}, _stall_after(body, 3 * 1024 * 1024), length=len(body))
        if rng and state["mode"] != "no-range":
            start = int(rng.split("=")[1].rstrip("-"))
            return Reply(206, {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"}, body[start:])
        return Reply(200, {}, body)

    s = EvilServer(script)
    s.state = state  # type: ignore[attr-defined]
    yield s
    s.stop()


def _target(server: EvilServer) -> RegistryTarget:
    opts = RemoteOptions(plain_http=True, max_retries=0, deadline=2.0, min_rate=100 * 1024 * 1024)
    ref = parse_reference(f"{server.host}/r/x:v1")
    return RegistryTarget(ref, opts, transport=Transport(server.host, opts))


@pytest.mark.parametrize("then", ["range", "no-range", "lie"])
def test_interrupted_pull_resumes_from_its_staging_file(
    server: EvilServer, tmp_path: Path, then: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DeadlineExceeded):
        pull_file(_target(server), "v1", out, verify=False, registry=None, now=NOW)
    staged = staging_path(out, Descriptor("application/octet-stream", LAYER_DIGEST, len(LAYER)))
    assert staged.exists() and 0 < staged.stat().st_size < len(LAYER)
    assert [p.name for p in out.iterdir()] == [staged.name]  # nothing else, and no final file
    kept = staged.stat().st_size
    server.state["mode"] = then  # type: ignore[attr-defined]
    if then == "lie":
        with pytest.raises(DigestMismatch):
            pull_file(_target(server), "v1", out, verify=False, registry=None, now=NOW)
        assert list(out.iterdir()) == []  # a lie removes the staging file too
        return
    pulled = pull_file(_target(server), "v1", out, verify=False, registry=None, now=NOW)
    assert pulled.path.read_bytes() == LAYER and list(out.iterdir()) == [pulled.path]
    ranges = [r.headers.get("range") for r in server.seen if LAYER_DIGEST in r.path]
    assert ranges[-2 if then == "no-range" else -1] == f"bytes={kept}-"  # resumed where it stopped


def test_a_reader_that_proves_nothing_stages_nothing(tmp_path: Path) -> None:
    """Staging keeps a file only when the copy itself proved the digest: a target handing out a
    reader that was already read (so `copy_to` moves 0 bytes) is refused and leaves no file."""
    import io

    from acxoci.oci.digest import VerifyingReader
    from acxoci.oci.errors import SizeMismatch
    from acxoci.oci.staging import fetch_staged

    data = b"staged bytes"
    desc = Descriptor("application/octet-stream", "sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    used = VerifyingReader(io.BytesIO(data), desc)
    used.read(5)  # read elsewhere: the copy moves only the other 7 bytes, yet the reader proves 12

    class Spent:
        def fetch(self, d: Descriptor) -> VerifyingReader:
            return used

    path = tmp_path / "blob.partial"
    with pytest.raises((SizeMismatch, DigestMismatch)):
        fetch_staged(Spent(), desc, path)  # type: ignore[arg-type]
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []
