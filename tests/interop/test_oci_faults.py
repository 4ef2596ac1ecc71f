"""A lying or flaky registry, via the fault proxy in front of real distribution 2.8: uploads
resume or retry and finish; every lie on a read ends in a typed error and leaves no file."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.artifact import pull_file
from acxoci.errors import AcxError, NotFound, Tampered, TransientError
from acxoci.oci.descriptor import OCI_MANIFEST, manifest_bytes
from acxoci.oci.digest import file_descriptor
from acxoci.oci.errors import (
    DigestMismatch,
    MalformedManifest,
    ManifestTooLarge,
    RegistryProtocolError,
    RegistryUnavailable,
    SizeMismatch,
)
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget, Transport
from acxoci.oci.shapes import EMPTY_CONFIG_BLOB, empty_config
from acxoci.oci.target import RemoteOptions, push_bytes
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def _target(host: str, repo: str = "f/x", **kw: object) -> RegistryTarget:
    opts = RemoteOptions(plain_http=True, max_retries=4, max_retry_seconds=20, **kw)  # type: ignore[arg-type]
    t = RegistryTarget(parse_reference(f"{host}/{repo}:v1"), opts, transport=Transport(host, opts))
    t.transport.sleep = lambda s: None  # keep the suite fast; the delays themselves are unit-tested
    return t


@pytest.fixture
def proxy(distribution_registry: Registry) -> Iterator[FaultProxy]:
    with FaultProxy(distribution_registry.host) as fp:
        yield fp


def _payload(tmp: Path, size: int) -> Path:
    f = tmp / f"blob-{size}.bin"
    f.write_bytes(bytes(range(251)) * (size // 251) + b"z" * (size % 251))
    return f


def _push_artifact(t: RegistryTarget, f: Path) -> None:
    layer = file_descriptor(f, "application/octet-stream")
    push_bytes(t, EMPTY_CONFIG_BLOB, "application/vnd.oci.empty.v1+json")
    with f.open("rb") as fh:
        t.push(layer, fh)
    m = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/x.acx.test",
        "config": empty_config(),
        "layers": [{**layer.to_json(), "annotations": {"org.opencontainers.image.title": "blob.bin"}}],
    }
    t.tag(push_bytes(t, manifest_bytes(m), OCI_MANIFEST), "v1")


def test_chunked_upload_resumes_after_resets_and_retries_5xx_429(
    proxy: FaultProxy, distribution_registry: Registry, tmp_path: Path
) -> None:
    f = _payload(tmp_path, 9 * 1024 * 1024 + 17)
    proxy.add(Rule("PATCH", "/blobs/uploads/", "reset_body", times=2))
    proxy.add(Rule("PATCH", "/blobs/uploads/", "status", times=1, status=503))
    proxy.add(Rule("PUT", r"/blobs/uploads/.*digest=", "status", times=1, status=429, retry_after="0"))
    t = _target(proxy.host, chunk_size=2 * 1024 * 1024, monolithic_limit=1024 * 1024)
    _push_artifact(t, f)
    actions = [a for _, _, a in proxy.log.entries]
    assert actions.count("reset_body") == 2 and "status" in actions
    direct = _target(distribution_registry.host)
    desc = file_descriptor(f, "application/octet-stream")
    with direct.fetch(desc) as r:
        assert sum(len(c) for c in r.chunks()) == desc.size  # digest proven by the reader


def test_monolithic_upload_retries(proxy: FaultProxy, tmp_path: Path) -> None:
    f = _payload(tmp_path, 300_000)
    proxy.add(Rule("PUT", r"/blobs/uploads/", "reset_body", times=1))
    proxy.add(Rule("POST", r"/blobs/uploads/", "status", times=2, status=502))
    t = _target(proxy.host)
    _push_artifact(t, f)
    assert t.exists(file_descriptor(f, "application/octet-stream"))


def test_non_seekable_chunked_upload_resumes(proxy: FaultProxy, tmp_path: Path) -> None:
    data = bytes(range(256)) * 12_000
    f = tmp_path / "ns.bin"
    f.write_bytes(data)
    desc = file_descriptor(f, "application/octet-stream")
    proxy.add(Rule("PATCH", "/blobs/uploads/", "reset_body", times=1))

    class Stream:
        def __init__(self) -> None:
            self._b = io.BytesIO(data)

        def read(self, n: int = -1, /) -> bytes:
            return self._b.read(n)

    t = _target(proxy.host, chunk_size=1024 * 1024, monolithic_limit=1024)
    t.push(desc, Stream())
    assert t.exists(desc)


@pytest.mark.parametrize(
    ("method", "path", "action", "error"),
    [
        ("GET", r"/blobs/sha256:", "corrupt", DigestMismatch),
        ("GET", r"/blobs/sha256:", "truncate", SizeMismatch),
        ("GET", r"/blobs/sha256:", "redirect_loop", RegistryProtocolError),
        ("GET", r"/manifests/sha256:", "corrupt", DigestMismatch),  # pulled by its digest
        ("GET", r"/manifests/v1", "corrupt", DigestMismatch),  # body vs Docker-Content-Digest
        ("GET", r"/manifests/sha256:", "oversize", ManifestTooLarge),
        ("*", r"/manifests/v1", "oversize", ManifestTooLarge),
        ("*", r"/manifests/v1", "bad_json", MalformedManifest),
        ("*", r"/manifests/v1", "bad_auth", RegistryProtocolError),
        ("GET", r"/blobs/sha256:", "status", RegistryUnavailable),
    ],
)
def test_lying_registry_typed_error_no_file(
    proxy: FaultProxy,
    tmp_path: Path,
    method: str,
    path: str,
    action: str,
    error: type[AcxError] | tuple[type[AcxError], ...],
) -> None:
    f = _payload(tmp_path, 200_000)
    _push_artifact(_target(proxy.host), f)
    # a rule on the by-digest manifest GET: pull by the digest (a tag is read with one GET)
    reference = _target(proxy.host).resolve("v1").digest if "sha256:" in path else "v1"
    rule = proxy.add(Rule(method, path, action, times=10, status=503))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(error):
        pull_file(_target(proxy.host), reference, out, verify=False, registry=None, now=NOW)
    assert list(out.iterdir()) == []
    assert rule.hits >= 1 and rule.hits <= 10  # bounded: no request loop


def test_extra_bytes_and_wrong_length_are_refused(proxy: FaultProxy, tmp_path: Path) -> None:
    f = _payload(tmp_path, 50_000)
    _push_artifact(_target(proxy.host), f)
    desc = file_descriptor(f, "application/octet-stream")
    proxy.add(Rule("GET", r"/blobs/sha256:", "extra", times=1))
    with pytest.raises(Tampered):
        _target(proxy.host).fetch(desc).read_all()
    with pytest.raises(NotFound):
        _target(proxy.host).resolve("missing")


def test_persistent_5xx_is_bounded(proxy: FaultProxy) -> None:
    rule = proxy.add(Rule("HEAD", r"/manifests/", "status", times=100, status=503))
    with pytest.raises(TransientError):
        _target(proxy.host).resolve("v1")
    assert rule.hits == 5  # 1 + max_retries


def test_hash_while_uploading_resumes_and_dedupes(
    proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vectors_dir: Path
) -> None:
    import acxoci.artifact as art
    from acxoci.oci.target import fetch_manifest

    monkeypatch.setattr(art, "HASH_WHILE_UPLOADING", 1024)
    cart = vectors_dir / "sample" / "sample.acx"
    proxy.add(Rule("PATCH", "/blobs/uploads/", "reset_body", times=1))
    t = _target(proxy.host, chunk_size=1024 * 1024, monolithic_limit=1024)
    desc, facts, built = art.push_path(t, cart, "v1", verify=True, registry=None, now=NOW)
    plain = art.gather(cart, verify=True, registry=None, now=NOW)
    assert facts.digest == plain.digest and built.data == art.build(plain).data  # same manifest either way
    layer = fetch_manifest(t, t.resolve("v1")).layers[0]
    with t.fetch(layer) as r:
        assert r.read_all() == cart.read_bytes()
    before = len(proxy.log.entries)
    again, _, _ = art.push_path(
        _target(proxy.host, chunk_size=1024 * 1024, monolithic_limit=1024),
        cart,
        "v1",
        verify=True,
        registry=None,
        now=NOW,
    )
    assert again.digest == desc.digest
    assert not any(a == "forward" and m == "PUT" and "digest=" in p for m, p, a in proxy.log.entries[before:])


def test_fallback_index_lost_update_is_detected_and_retried(proxy: FaultProxy, tmp_path: Path) -> None:
    from acxoci.oci.shapes import referrer_manifest

    f = _payload(tmp_path, 1000)
    t = _target(proxy.host)
    _push_artifact(t, f)
    subject = t.resolve("v1")
    rule = proxy.add(Rule("PUT", r"/manifests/sha256-", "fake_ok", times=2))
    blob = push_bytes(t, b"signature", "application/x.sig")
    built = referrer_manifest(
        subject=subject,
        artifact_type="application/x.sig",
        file_digest=blob.digest,
        file_size=blob.size,
        media_type="application/x.sig",
        title=None,
        created="2026-01-01T00:00:00Z",
    )
    ref = push_bytes(t, built.data, OCI_MANIFEST)
    assert rule.hits == 2  # two writes "lost", detected by the re-read, retried
    assert [r.digest for r in _target(proxy.host).referrers(subject)] == [ref.digest]


def test_blob_cut_mid_body_resumes_with_range(proxy: FaultProxy, tmp_path: Path) -> None:
    """The connection drops halfway through a blob: the pull goes on from where it stopped with a
    Range request (the bytes already received are kept and hashed), and the file verifies."""
    f = _payload(tmp_path, 3_000_000)
    _push_artifact(_target(proxy.host), f)
    rule = proxy.add(Rule("GET", r"/blobs/sha256:", "truncate", times=1))
    out = tmp_path / "out"
    out.mkdir()
    pulled = pull_file(_target(proxy.host), "v1", out, verify=False, registry=None, now=NOW)
    assert pulled.path.read_bytes() == f.read_bytes()
    blob_gets = [e for e in proxy.log.entries if e[0] == "GET" and pulled.layer.digest in e[1]]
    assert rule.hits == 1 and [a for _, _, a in blob_gets] == ["truncate", "forward"]


@pytest.mark.parametrize("size", [3_000_000, 20_000_000, 40_000_000])  # buffered, streamed, chunked
def test_registry_to_registry_copy_of_a_lying_source_stores_nothing(
    proxy: FaultProxy, refreg: Registry, tmp_path: Path, size: int
) -> None:
    """cp from a registry whose blob bytes are corrupted: whichever upload path the size takes
    (buffered PUT, one streamed PUT, chunked PATCHes) the copy fails with DigestMismatch and the
    destination does not hold the blob."""
    from acxoci.oci.copy import copy

    f = _payload(tmp_path, size)
    _push_artifact(_target(proxy.host), f)
    proxy.add(Rule("GET", r"/blobs/sha256:", "corrupt", times=10))
    dst = _target(refreg.host, "copy/x")
    with pytest.raises(DigestMismatch):
        copy(_target(proxy.host), dst, "v1", referrers=False)
    assert not dst.exists(file_descriptor(f, "application/octet-stream"))
