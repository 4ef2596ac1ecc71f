"""`--concurrency N` on push and pull (and cp) is the number of blob transfers in flight: a
loopback registry of ours that holds each blob request a moment and counts the most in flight
at once sees N > 1 with `--concurrency 4` and exactly 1 with `--concurrency 1`. A multi-file
artifact pulls byte-identical; one blob lying mid-transfer is a typed error with nothing left
behind, and a rerun completes; one blob cut off mid-transfer keeps only hidden staging files,
and the rerun resumes it with a Range request without fetching the finished blobs again."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.artifact import pull_file, push_path
from acxoci.oci.errors import DeadlineExceeded
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget, Transport
from acxoci.oci.scheduler import BlobScheduler, TransferCancelled
from acxoci.oci.settings import RemoteOptions
from tests.harness.cli import acx_json
from tests.harness.evilregistry import EMPTY, EMPTY_DIGEST, OCI_MANIFEST, Reply, Request
from tests.harness.memregistry import MemRegistry

NOW = datetime(2026, 12, 1, tzinfo=UTC)
FILES = {f"part-{i}.bin": os.urandom(256 * 1024 + i) for i in range(4)}


@pytest.fixture
def reg() -> Iterator[MemRegistry]:
    r = MemRegistry(hold=0.3).start()
    yield r
    r.stop()


def _multi_file(reg: MemRegistry, files: dict[str, bytes] = FILES) -> str:
    """A multi-file artifact as `oras push REF part-0.bin … part-3.bin` makes it (tag v1)."""
    reg.add_blob(EMPTY)
    layers = [{"mediaType": "application/octet-stream", "digest": reg.add_blob(data), "size": len(data),
               "annotations": {"org.opencontainers.image.title": name}} for name, data in files.items()]
    digest, _ = reg.add_manifest({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/x.test.files",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2},
        "layers": layers}, tag="v1")
    return digest


def _blob_requests(reg: MemRegistry) -> list[Request]:
    return [r for r in reg.seen if "/blobs/" in r.path and r.method in ("GET", "PUT", "PATCH")]


@pytest.mark.parametrize(("n", "most"), [("4", None), ("1", 1)])
def test_push_uploads_blobs_concurrently_then_the_manifest(
    reg: MemRegistry, vectors_dir: Path, capsys: pytest.CaptureFixture[str], n: str, most: int | None
) -> None:
    ref = f"{reg.host}/acx/demo:v1"
    code, out = acx_json(capsys, "push", "--plain-http", "--concurrency", n,
                         str(vectors_dir / "sample" / "sample.acx"), ref)
    assert code == 0, out
    if most is None:
        assert reg.max_in_flight == 2  # the config and the cartridge layer at once
    else:
        assert reg.max_in_flight == most
    puts = [i for i, r in enumerate(reg.seen) if r.method == "PUT"]
    manifest_puts = [i for i in puts if "/manifests/" in reg.seen[i].path]
    assert manifest_puts and all(i < manifest_puts[0] for i in puts if "/blobs/" in reg.seen[i].path)
    data = (vectors_dir / "sample" / "sample.acx").read_bytes()
    assert reg.blobs["sha256:" + hashlib.sha256(data).hexdigest()] == data


@pytest.mark.parametrize(("n", "most"), [("4", 4), ("1", 1)])
def test_pull_downloads_every_layer_concurrently(
    reg: MemRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str], n: str, most: int
) -> None:
    manifest = _multi_file(reg)
    out = tmp_path / "out"
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", "--concurrency", n,
                         f"{reg.host}/acx/files:v1", "-o", str(out))
    assert code == 0, res
    assert reg.max_in_flight == most
    assert res["digest"] == manifest and res["layer"] is None and res["size"] == sum(map(len, FILES.values()))
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)  # no staging file left over
    for name, data in FILES.items():
        assert (out / name).read_bytes() == data
    assert {f["path"] for f in res["files"]} == {str(out / name) for name in FILES}


def test_pull_of_a_multi_file_artifact_needs_no_verify_and_a_folder(
    reg: MemRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _multi_file(reg)
    ref = f"{reg.host}/acx/files:v1"
    code, res = acx_json(capsys, "pull", "--plain-http", ref, "-o", str(tmp_path / "o"))
    assert code == 8 and res["error"]["kind"] == "refused_by_policy"
    assert not _blob_requests(reg)  # refused before any layer moved
    (tmp_path / "file").write_bytes(b"x")
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", ref, "-o", str(tmp_path / "file"))
    assert code == 2 and res["error"]["kind"] == "usage"
    assert (tmp_path / "file").read_bytes() == b"x"


@pytest.mark.parametrize("title", ["../evil", "", "same"])
def test_multi_file_titles_must_be_safe_and_unique(
    reg: MemRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str], title: str
) -> None:
    files = dict(FILES)
    reg.add_blob(EMPTY)
    layers = [{"mediaType": "application/octet-stream", "digest": reg.add_blob(d), "size": len(d),
               "annotations": {"org.opencontainers.image.title": "same" if title == "same" else name}}
              for name, d in files.items()]
    layers[1]["annotations"] = {"org.opencontainers.image.title": title} if title else {}
    reg.add_manifest({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/x.t",
                      "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST,
                                 "size": 2}, "layers": layers}, tag="v1")
    out = tmp_path / "out"
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", f"{reg.host}/acx/f:v1",
                         "-o", str(out))
    assert code == 3 and res["error"]["kind"] == "invalid_input", res
    assert not out.exists() or list(out.iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_one_lying_blob_is_typed_leaves_nothing_and_a_rerun_completes(
    reg: MemRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _multi_file(reg)
    bad = "sha256:" + hashlib.sha256(FILES["part-2.bin"]).hexdigest()

    def lie(req: Request, data: bytes) -> Reply:
        return Reply(200, {}, bytes(len(data)))  # the right length, the wrong bytes

    reg.faults[bad] = lie
    out = tmp_path / "out"
    ref = f"{reg.host}/acx/files:v1"
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", "--concurrency", "4", ref,
                         "-o", str(out))
    assert code == 1 and res["error"]["kind"] == "digest_mismatch", res
    assert not out.exists()  # no final file, no staging file, not even the folder: a lie keeps nothing
    del reg.faults[bad]
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", "--concurrency", "4", ref,
                         "-o", str(out))
    assert code == 0, res
    assert {p.name: p.read_bytes() for p in out.iterdir()} == FILES


def test_a_blob_cut_off_mid_transfer_resumes_per_blob(reg: MemRegistry, tmp_path: Path) -> None:
    """Library level (a short deadline, no retries): one blob stalls past the deadline while
    the others finish. Nothing takes a final name; the rerun resumes that blob from its staging
    file with a Range request and does not fetch the finished ones again."""
    reg.hold = 0.0
    _multi_file(reg)
    slow = "sha256:" + hashlib.sha256(FILES["part-1.bin"]).hexdigest()

    def stall(req: Request, data: bytes) -> Reply:
        def body() -> Iterator[bytes]:
            yield data[: 100 * 1024]
            time.sleep(4)  # past the 2 s deadline

        return Reply(200, {}, body(), length=len(data))

    reg.faults[slow] = stall
    opts = RemoteOptions(plain_http=True, max_retries=0, deadline=2.0, min_rate=100 * 1024 * 1024)

    def target() -> RegistryTarget:
        ref = parse_reference(f"{reg.host}/acx/files:v1")
        return RegistryTarget(ref, opts, transport=Transport(reg.host, opts))

    out = tmp_path / "out"
    with pytest.raises(DeadlineExceeded):
        pull_file(target(), "v1", out, verify=False, registry=None, now=NOW, concurrency=4)
    left = sorted(p.name for p in out.iterdir())
    assert left and all(n.startswith(".acx-sha256-") and n.endswith(".partial") for n in left)
    del reg.faults[slow]
    reg.reset_counts()
    pulled = pull_file(target(), "v1", out, verify=False, registry=None, now=NOW, concurrency=4)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == FILES
    assert {layer.digest for layer, _ in pulled.files} == {
        "sha256:" + hashlib.sha256(d).hexdigest() for d in FILES.values()}
    gets = [r for r in reg.seen if r.method == "GET" and "/blobs/" in r.path]
    assert [r.headers.get("range") for r in gets] == ["bytes=102400-"]  # only the cut-off blob, resumed


def test_cp_concurrency_goes_through_the_same_scheduler(
    reg: MemRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    _multi_file(reg)
    dst = MemRegistry(hold=0.3).start()
    try:
        code, res = acx_json(capsys, "cp", "--from-plain-http", "--to-plain-http", "--concurrency", "4",
                             f"{reg.host}/acx/files:v1", f"{dst.host}/acx/copy:v1")
        assert code == 0, res
        assert reg.max_in_flight >= 2 and dst.max_in_flight >= 2
        assert all(dst.blobs[d] == data for d, data in reg.blobs.items())
    finally:
        dst.stop()


def test_first_failure_stops_the_other_transfers() -> None:
    started = threading.Event()
    stopped: list[str] = []

    def long_one(sched: BlobScheduler) -> None:
        started.set()
        try:
            for _ in range(500):
                sched.check()
                time.sleep(0.01)
        except TransferCancelled:
            stopped.append("cancelled")
            raise

    def failing() -> None:
        started.wait(5)
        raise ValueError("first")

    t0 = time.monotonic()
    with pytest.raises(ValueError, match="first"), BlobScheduler(2) as sched:
        sched.submit(long_one, sched)
        sched.submit(failing)
        queued = sched.submit(lambda: stopped.append("ran"))
    assert stopped == ["cancelled"]  # the running one stopped at its next check; the queued one never ran
    assert queued.cancelled() or isinstance(queued.exception(), TransferCancelled)
    assert time.monotonic() - t0 < 3


def test_progress_labels_carry_name_and_digest(
    reg: MemRegistry, tmp_path: Path, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each blob's bar is labelled with its title and digest, from whichever thread moves it."""
    from acxoci.cli import cmd_oci

    labels: list[str] = []

    class FakeBar:
        def __init__(self, *a: object, **k: object) -> None:
            pass

        def __enter__(self) -> FakeBar:
            return self

        def __exit__(self, *a: object) -> None:
            pass

        def add_task(self, text: str, total: int) -> int:
            labels.append(text)
            return len(labels)

        def update(self, *a: object, **k: object) -> None:
            pass

    import rich.progress

    monkeypatch.setattr(rich.progress, "Progress", FakeBar)
    monkeypatch.setattr(cmd_oci.sys.stderr, "isatty", lambda: True, raising=False)
    _multi_file(reg)
    target = RegistryTarget(parse_reference(f"{reg.host}/acx/files:v1"),
                            RemoteOptions(plain_http=True))
    with cmd_oci._progress("pull") as prog:
        pull_file(target, "v1", tmp_path / "o", verify=False, registry=None, now=NOW, progress=prog,
                  concurrency=4)
    want = {f"pull {name} {hashlib.sha256(d).hexdigest()[:12]}" for name, d in FILES.items()}
    assert set(labels) == want
    labels.clear()
    cart = vectors_dir / "sample" / "sample.acx"
    with cmd_oci._progress("push") as prog:
        push_path(RegistryTarget(parse_reference(f"{reg.host}/acx/cart:v1"), RemoteOptions(plain_http=True)),
                  cart, "v1", verify=False, registry=None, now=NOW, progress=prog, concurrency=4)
    assert labels == [f"push sample.acx {hashlib.sha256(cart.read_bytes()).hexdigest()[:12]}"]


def test_pull_json_of_a_one_file_artifact_is_unchanged(
    reg: MemRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = {"only.bin": FILES["part-0.bin"]}
    _multi_file(reg, one)
    out = tmp_path / "one.bin"
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", f"{reg.host}/acx/one:v1",
                         "-o", str(out))
    assert code == 0, res
    assert res["layer"] == "sha256:" + hashlib.sha256(one["only.bin"]).hexdigest()
    assert res["path"] == str(out) and out.read_bytes() == one["only.bin"]
    assert [f["path"] for f in res["files"]] == [str(out)]


@pytest.mark.parametrize(("n", "most"), [("4", None), ("1", 1)])
def test_push_sign_writes_the_attestation_blobs_under_the_same_concurrency(
    reg: MemRegistry, vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], n: str,
    most: int | None,
) -> None:
    key = tmp_path / "k.pem"
    code, res = acx_json(capsys, "key", "generate", "-o", str(key))
    assert code == 0, res
    reg.hold = 0.2
    code, res = acx_json(capsys, "push", "--plain-http", "--concurrency", n, "--sign", "--key", str(key),
                         str(vectors_dir / "sample" / "sample.acx"), f"{reg.host}/acx/signed:v1")
    assert code == 0, res
    assert res["attestation"]["bundleReferrer"] and res["attestation"]["legacy"]
    if most is None:
        assert reg.max_in_flight >= 2
    else:
        assert reg.max_in_flight == most


def test_hash_while_uploading_sends_the_config_beside_the_big_layer(
    reg: MemRegistry, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The large-file path (hashed while it uploads, here forced for a small file) moves the
    config at the same time, the manifest last; with concurrency 1 one at a time."""
    import acxoci.artifact as artifact

    monkeypatch.setattr(artifact, "HASH_WHILE_UPLOADING", 1024)
    cart = vectors_dir / "sample" / "sample.acx"
    for n, most in ((4, 2), (1, 1)):
        reg.blobs.clear()
        reg.reset_counts()
        target = RegistryTarget(parse_reference(f"{reg.host}/acx/big:v{n}"), RemoteOptions(plain_http=True))
        desc, facts, _ = artifact.push_path(target, cart, f"v{n}", verify=False, registry=None, now=NOW,
                                            concurrency=n)
        assert reg.max_in_flight == most
        assert reg.blobs[facts.digest] == cart.read_bytes() and EMPTY_DIGEST in reg.blobs
        assert reg.tags[f"v{n}"] == desc.digest
        seen = list(enumerate(reg.seen))
        blob_writes = [i for i, r in seen if r.method in ("PUT", "PATCH") and "/blobs/" in r.path]
        manifest_put = next(i for i, r in seen if r.method == "PUT" and "/manifests/" in r.path)
        assert max(blob_writes) < manifest_put
