"""Interop, both directions, with oras 1.2 and 1.3 on distribution 2.8 (tag-schema fallback),
acx-refreg (Referrers API) and the OCI layout store: push/pull, attach/discover, cp -r, and
cosign's legacy `.att` tag carried by `acx cp -r`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from tests.harness.fixtures import start_registry
from tests.harness.peers import Cosign, Oras
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

DSSE = "application/vnd.dsse.envelope.v1+json"
CART_LAYER = "application/vnd.acx.cartridge.layer.v1+sqlite"


def acx(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """Run `acx --json ARGS` in-process; return its JSON (fails the test on a non-zero exit)."""
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    capsys.readouterr()
    with pytest.raises(SystemExit) as ex:
        cli_main.main(["--json", *args])
    out = capsys.readouterr().out
    assert ex.value.code == 0, f"acx {' '.join(args)} exited {ex.value.code}: {out}"
    data: dict[str, Any] = json.loads(out)
    return data


def acx_fails(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    capsys.readouterr()
    with pytest.raises(SystemExit) as ex:
        cli_main.main(["--json", *args])
    out = capsys.readouterr().out
    assert ex.value.code != 0
    return int(ex.value.code or 0), json.loads(out)


@pytest.fixture(params=["distribution", "refreg"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    reg = start_registry(str(request.param), tmp_path / str(request.param))
    yield reg
    reg.stop()


@pytest.fixture
def work(tmp_path: Path, vectors_dir: Path) -> Path:
    w = tmp_path / "work"
    w.mkdir()
    shutil.copy(vectors_dir / "sample" / "sample.acx", w / "cart.acx")
    (w / "env.json").write_text(
        json.dumps({"payloadType": "application/vnd.in-toto+json", "payload": "e30=", "signatures": []})
    )
    return w


def _oras_pull(oras: Oras, ref: str, dest: Path, *flags: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    oras.run("pull", *flags, "-o", str(dest), ref)
    return dest


def test_acx_push_attach_oras_pull_discover(
    registry: Registry, oras12: Oras, oras13: Oras, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"{registry.host}/acx/demo:v1"
    pushed = acx(capsys, "push", str(work / "cart.acx"), ref)
    digest = str(pushed["digest"])
    assert acx(capsys, "push", str(work / "cart.acx"), ref)["digest"] == digest  # reproducible
    att = acx(
        capsys,
        "attach",
        f"{registry.host}/acx/demo@{digest}",
        str(work / "env.json"),
        "--artifact-type",
        DSSE,
    )
    for oras in (oras12, oras13):
        out = _oras_pull(oras, ref, work / f"pull-{oras.name}", "--plain-http")
        assert (out / "cart.acx").read_bytes() == (work / "cart.acx").read_bytes()
        subject = f"{registry.host}/acx/demo@{digest}"
        assert att["digest"] in oras.referrer_digests(subject)
        if not registry.has_referrers_api:  # ggcr lists the config type as artifactType (PEERS §9.2)
            assert att["digest"] in oras.referrer_digests(subject, artifact_type=DSSE)
    tags = acx(capsys, "tags", f"{registry.host}/acx/demo")["tags"]
    assert "v1" in tags
    assert ("sha256-" + digest[7:] in tags) == (not registry.has_referrers_api)
    manifest = acx(capsys, "manifest", "get", ref)["manifest"]
    assert manifest["artifactType"] == "application/vnd.acx.cartridge.v1"
    assert manifest["config"]["data"] == "e30="


def test_oras_push_attach_acx_pull_discover(
    registry: Registry, oras13: Oras, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"{registry.host}/oras/demo:v1"
    oras13.run(
        "push",
        "--plain-http",
        "--artifact-type",
        "application/vnd.acx.cartridge.v1",
        ref,
        f"cart.acx:{CART_LAYER}",
        cwd=work,
    )
    digest = oras13.run("resolve", "--plain-http", ref).stdout.strip()
    oras13.run(
        "attach",
        "--plain-http",
        "--artifact-type",
        DSSE,
        f"{registry.host}/oras/demo@{digest}",
        f"env.json:{DSSE}",
        cwd=work,
    )
    oras_refs = oras13.referrer_digests(f"{registry.host}/oras/demo@{digest}")
    out = acx(capsys, "pull", ref, "-o", str(work / "pulled.acx"))
    assert out["digest"] == digest
    assert (work / "pulled.acx").read_bytes() == (work / "cart.acx").read_bytes()
    tree = acx(capsys, "discover", ref)
    assert [r["digest"] for r in tree["referrers"]] == oras_refs
    filtered = acx(capsys, "discover", ref, "--artifact-type", DSSE)
    assert len(filtered["referrers"]) == 1
    assert acx(capsys, "discover", ref, "--artifact-type", "application/x.none")["referrers"] == []


def test_cp_recursive_both_ways(
    registry: Registry, oras13: Oras, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = registry.host
    # ours, copied by oras
    digest = str(acx(capsys, "push", str(work / "cart.acx"), f"{h}/acx/a:v1")["digest"])
    att = acx(capsys, "attach", f"{h}/acx/a@{digest}", str(work / "env.json"), "--artifact-type", DSSE)
    oras13.run("cp", "-r", "--from-plain-http", "--to-plain-http", f"{h}/acx/a:v1", f"{h}/acx/b:v1")
    assert [r["digest"] for r in acx(capsys, "discover", f"{h}/acx/b:v1")["referrers"]] == [att["digest"]]
    # oras', copied by acx
    oras13.run(
        "push",
        "--plain-http",
        "--artifact-type",
        "application/vnd.acx.cartridge.v1",
        f"{h}/oras/c:v1",
        f"cart.acx:{CART_LAYER}",
        cwd=work,
    )
    od = oras13.run("resolve", "--plain-http", f"{h}/oras/c:v1").stdout.strip()
    oras13.run(
        "attach", "--plain-http", "--artifact-type", DSSE, f"{h}/oras/c@{od}", f"env.json:{DSSE}", cwd=work
    )
    want = oras13.referrer_digests(f"{h}/oras/c@{od}")
    copied = acx(capsys, "cp", "-r", f"{h}/oras/c:v1", f"{h}/oras/d:v2")
    assert copied["digest"] == od and copied["referrers"] == want
    assert oras13.referrer_digests(f"{h}/oras/d@{od}") == want
    assert oras13.run("resolve", "--plain-http", f"{h}/oras/d:v2").stdout.strip() == od
    again = acx(capsys, "cp", "-r", f"{h}/oras/c:v1", f"{h}/oras/d:v2")
    assert again["bytes"] == 0  # everything already there


def test_layout_interop(
    oras12: Oras,
    oras13: Oras,
    work: Path,
    tmp_path: Path,
    distribution_registry: Registry,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ours = tmp_path / "ours"
    digest = str(acx(capsys, "push", str(work / "cart.acx"), f"oci-layout:{ours}:v1")["digest"])
    att = acx(
        capsys, "attach", f"oci-layout:{ours}@{digest}", str(work / "env.json"), "--artifact-type", DSSE
    )
    for oras in (oras12, oras13):
        out = _oras_pull(oras, f"{ours}:v1", work / f"lay-{oras.name}", "--oci-layout")
        assert (out / "cart.acx").read_bytes() == (work / "cart.acx").read_bytes()
        assert oras.referrer_digests(f"{ours}@{digest}", layout=True) == [att["digest"]]
    theirs = tmp_path / "theirs"
    oras13.run(
        "push",
        "--oci-layout",
        "--artifact-type",
        "application/vnd.acx.cartridge.v1",
        f"{theirs}:v1",
        f"cart.acx:{CART_LAYER}",
        cwd=work,
    )
    od = oras13.run("resolve", "--oci-layout", f"{theirs}:v1").stdout.strip()
    oras13.run(
        "attach", "--oci-layout", "--artifact-type", DSSE, f"{theirs}@{od}", f"env.json:{DSSE}", cwd=work
    )
    want = oras13.referrer_digests(f"{theirs}@{od}", layout=True)
    assert acx(capsys, "pull", f"oci-layout:{theirs}:v1", "-o", str(work / "from-theirs.acx"))["digest"] == od
    assert [r["digest"] for r in acx(capsys, "discover", f"oci-layout:{theirs}:v1")["referrers"]] == want
    # layout -> registry -> layout with acx, read back by oras
    h = distribution_registry.host
    acx(capsys, "cp", "-r", f"oci-layout:{theirs}:v1", f"{h}/lay/x:v1")
    assert oras13.referrer_digests(f"{h}/lay/x@{od}") == want
    back = tmp_path / "back"
    acx(capsys, "cp", "-r", f"{h}/lay/x:v1", f"oci-layout:{back}:v1")
    assert oras13.referrer_digests(f"{back}@{od}", layout=True) == want
    assert acx(capsys, "tags", f"oci-layout:{back}")["tags"] == ["v1"]


def test_cp_carries_cosign_legacy_att(
    distribution_registry: Registry, cosign2: Cosign, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = distribution_registry.host
    digest = str(acx(capsys, "push", str(work / "cart.acx"), f"{h}/acx/s:v1")["digest"])
    key, pub = cosign2.generate_key_pair(work)
    pred = work / "pred.json"
    pred.write_text(json.dumps({"hello": "world"}))
    ptype = "https://acx.dev/attestation/test/v1"
    cosign2.attest(f"{h}/acx/s@{digest}", key, ptype, pred, fmt="legacy")
    report = acx(capsys, "cp", "-r", f"{h}/acx/s:v1", f"{h}/acx/t:v1")
    assert report["legacyTags"] == [f"sha256-{digest[7:]}.att"]
    cosign2.verify_attestation(f"{h}/acx/t@{digest}", pub, ptype)


def test_pull_refuses_tampered_and_missing(
    distribution_registry: Registry, work: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = distribution_registry.host
    bad = vectors_dir / "sample" / "tampered" / "bound-meta.acx"
    code, err = acx_fails(capsys, "push", str(bad), f"{h}/acx/bad:v1")
    assert code == 1 and err["error"]["kind"] == "tampered"
    acx(capsys, "push", "--no-verify", str(bad), f"{h}/acx/bad:v1")
    dest = work / "bad.acx"
    code, err = acx_fails(capsys, "pull", f"{h}/acx/bad:v1", "-o", str(dest))
    assert code == 1 and not dest.exists()
    assert not [p for p in work.iterdir() if p.name.endswith(".part")]
    code, err = acx_fails(capsys, "pull", f"{h}/acx/nothing:v1", "-o", str(dest))
    assert code == 4 and not dest.exists()


def test_fallback_index_keeps_other_tools_entries(
    distribution_registry: Registry,
    oras13: Oras,
    cosign3: Cosign,
    work: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    h = distribution_registry.host
    digest = str(acx(capsys, "push", str(work / "cart.acx"), f"{h}/acx/k:v1")["digest"])
    subject = f"{h}/acx/k@{digest}"
    key, pub = cosign3.generate_key_pair(work)
    pred = work / "pred.json"
    pred.write_text(json.dumps({"hello": "world"}))
    ptype = "https://acx.dev/attestation/test/v1"
    cosign3.attest(subject, key, ptype, pred, fmt="bundle")  # cosign writes the sha256-<hex> index
    oras13.run(
        "attach",
        "--plain-http",
        "--artifact-type",
        "application/x.oras",
        subject,
        f"env.json:{DSSE}",
        cwd=work,
    )
    before = oras13.referrer_digests(subject)
    ours = acx(capsys, "attach", subject, str(work / "env.json"), "--artifact-type", DSSE)["digest"]
    after = oras13.referrer_digests(subject)
    assert set(after) == {*before, ours} and len(before) == 2
    cosign3.verify_attestation(subject, pub, ptype)  # cosign's own entry survived our rewrite
