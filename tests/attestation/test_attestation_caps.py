"""F3 of the keyless review: attestation layers are bounded where any reader reads them. A cosign
`.att` manifest past 64 layers or 64 MiB (declared), or an artifact with more than 64 distinct
attestation documents, is refused with LimitExceeded naming the manifest or subject, before a
layer is fetched, by `verify`, `verify --policy`, `install`, `cp -r` and `attest`; a document
listed many times is fetched once. Real cartridges, keys and OCI layouts made at test time."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acxoci.oci.layout import LayoutStore
from tests.harness.attplant import att_layer, plant_bundle, set_att
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO

PUBLISHER = "dev.acxoci.demo"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A publisher key, its trust registry and a signed cartridge (built once)."""
    import subprocess
    import sys

    d = tmp_path_factory.mktemp("caps")

    def acx(*args: str) -> None:
        r = subprocess.run([sys.executable, "-m", "acxoci", "-q", *args], capture_output=True, text=True,
                           cwd=REPO, timeout=300, check=False)
        assert r.returncode == 0, r.stdout + r.stderr

    acx("key", "generate", "-o", str(d / "k.pem"))
    acx("cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(d / "a.acx"), "--publisher",
        PUBLISHER, "--key", str(d / "k.pem"), "--now", "2026-11-30T00:00:00Z")
    acx("key", "trust", str(d / "k.pub.pem"), "--publisher", PUBLISHER, "--trust-registry",
        str(d / "trust.json"), "--not-before", "2026-01-01T00:00:00Z")
    policy = d / "policy.yaml"
    policy.write_text(f"schemaVersion: acx.verification-policy/1\npublishers:\n  - id: {PUBLISHER}\n"
                      f"    trustRegistries: [{d / 'trust.json'}]\nattestations: {{formats: [legacy]}}\n")
    return {"key": d / "k.pem", "pub": d / "k.pub.pem", "acx": d / "a.acx", "policy": policy}


@pytest.fixture
def attested(signed: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The cartridge pushed to a layout with one genuine key-signed `.att` attestation."""
    ref = f"oci-layout:{tmp_path / 'lay'}:v1"
    assert run_acx(capsys, "-q", "push", str(signed["acx"]), ref).returncode == 0
    r = run_acx(capsys, "-q", "attest", ref, "--key", str(signed["key"]), "--attestation-format", "legacy")
    assert r.returncode == 0, r.stdout + r.stderr
    code, out = acx_json(capsys, "verify", ref, "--key", str(signed["pub"]))
    assert code == 0, out
    return ref


@pytest.fixture
def fetches(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every blob or manifest a layout is asked for, by digest (the real LayoutStore underneath)."""
    seen: Counter[str] = Counter()
    real = LayoutStore.fetch

    def counted(self: LayoutStore, desc: Any) -> Any:
        seen[desc.digest] += 1
        return real(self, desc)

    monkeypatch.setattr(LayoutStore, "fetch", counted)
    yield seen


JUNK = b'{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}'


def test_an_att_manifest_past_the_layer_cap_is_refused_by_every_reader(
        attested: str, signed: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, fetches: Counter[str]) -> None:
    junk = [JUNK + b" " * i for i in range(64)]  # 64 distinct planted layers + the genuine one = 65
    manifest = set_att(attested, [att_layer(b) for b in junk], tuple(junk))
    fetches.clear()
    code, out = acx_json(capsys, "verify", attested, "--key", str(signed["pub"]))
    assert code == 3 and out["error"]["kind"] == "limit_exceeded", out
    assert manifest in out["error"]["where"] and "65 attestation layers" in out["error"]["message"]
    assert not any(fetches[f"sha256:{hashlib.sha256(b).hexdigest()}"] for b in junk)

    code, out = acx_json(capsys, "verify", attested, "--policy", str(signed["policy"]))
    assert code == 8, out
    assert any("attestations" in r and "65 attestation layers" in r for r in out["reasons"]), out
    monkeypatch.setenv("ACX_STORE", str(tmp_path / "store"))
    code, out = acx_json(capsys, "install", attested, "--policy", str(signed["policy"]))
    assert code == 8, out
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("cartridge.acx"))

    code, out = acx_json(capsys, "cp", "-r", attested, f"oci-layout:{tmp_path / 'copy'}:v1")
    assert code == 3 and manifest in out["error"]["where"], out
    code, out = acx_json(capsys, "attest", attested, "--key", str(signed["key"]), "--attestation-format",
                         "legacy")
    assert code == 3 and out["error"]["kind"] == "limit_exceeded", out


def test_declared_bytes_past_the_cap_are_refused_before_any_fetch(
        attested: str, signed: dict[str, Path], capsys: pytest.CaptureFixture[str],
        fetches: Counter[str]) -> None:
    fake = [att_layer(b"", size=16 * 1024 * 1024, digest="sha256:" + f"{i:x}" * 64) for i in range(1, 6)]
    set_att(attested, fake)  # 80 MiB declared, never pushed: a reader must refuse before fetching
    fetches.clear()
    code, out = acx_json(capsys, "verify", attested, "--key", str(signed["pub"]))
    assert code == 3 and "bytes" in out["error"]["message"], out
    assert not any(fetches[la["digest"]] for la in fake)


def test_more_distinct_documents_than_the_cap_are_refused_for_the_artifact(
        attested: str, signed: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    junk = [JUNK + b" " * i for i in range(60)]  # 61 in the .att (within its cap) + 4 bundle referrers
    set_att(attested, [att_layer(b) for b in junk], tuple(junk))
    for i in range(4):
        plant_bundle(attested, b'{"planted": %d}' % i)
    code, out = acx_json(capsys, "verify", attested, "--key", str(signed["pub"]))
    assert code == 3 and "attestations of sha256:" in out["error"]["where"], out


def test_a_layer_listed_many_times_is_fetched_and_judged_once(
        attested: str, signed: dict[str, Path], capsys: pytest.CaptureFixture[str],
        fetches: Counter[str]) -> None:
    big = b'"' + b"A" * (1024 * 1024) + b'"'  # parses as JSON, is not an envelope
    layer = att_layer(big)
    set_att(attested, [layer] * 40, (big,))
    fetches.clear()
    code, out = acx_json(capsys, "verify", attested, "--key", str(signed["pub"]), "--no-content")
    assert code == 0, out  # the genuine attestation verifies; the planted copies are not evidence
    assert fetches[layer["digest"]] == 1, fetches[layer["digest"]]
    verdicts = Counter(a["verdict"] for a in out["attestations"] if a["format"] == "legacy")
    assert verdicts == {"verified": 1, "unverified": 40}, verdicts
