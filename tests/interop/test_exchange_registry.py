"""`acx exchange mirror` into a real distribution 2.8 registry (no Referrers API: the tag fallback
carries attestations and lifecycle), a rerun counted through a logging proxy sending no upload at
all, then `acx install` from the registry: withdrawn refused, active installed and activated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.exchange.lifecycle import read_lifecycle
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.target import RemoteOptions
from tests.harness.cli import acx_json
from tests.harness.exchanges import make_exchange
from tests.harness.faultproxy import FaultProxy
from tests.harness.installs import PUBLISHER, registry_entry, trusting_policy, write_registry
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

UPLOADS = ("POST", "PUT", "PATCH")


def test_mirror_to_distribution_is_idempotent_and_install_honours_withdrawn(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    vectors_dir: Path,
    distribution_registry: Registry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = generate_ed25519()
    ex = make_exchange(tmp_path, key, vectors_dir)
    prefix = f"{distribution_registry.host}/exchange"
    code, out = acx_json(capsys, "exchange", "mirror", str(ex.root), prefix)
    assert code == 0, out
    assert out["blobsSent"] > 0 and len(out["items"]) == 6 + len(ex.reference_cartridges)
    refs = {i["coordinate"]: i for i in out["items"]}
    assert refs[f"agent/{PUBLISHER}/pr-reviewer@1.0.0"]["lifecycle"] == "withdrawn"
    assert {r["kind"] for r in refs[f"agent/{PUBLISHER}/pr-reviewer@1.1.0"]["referrers"]} == {"dsse-envelope"}
    # the rerun goes through a logging proxy: not one upload request reaches the registry
    with FaultProxy(distribution_registry.host) as proxy:
        code, again = acx_json(capsys, "exchange", "mirror", str(ex.root), f"{proxy.host}/exchange")
        uploads = [(m, p) for m, p, _a in proxy.log.entries if m in UPLOADS]
    assert code == 0 and again["blobsSent"] == 0 and again["manifestsSent"] == 0, [
        i for i in again["items"] if i["blobsSent"] or i["manifestsSent"]
    ]
    assert uploads == [] and proxy.log.entries  # it did talk to the registry, read-only
    # the lifecycle is readable through the tag fallback
    target = RegistryTarget(parse_reference(f"{prefix}/agent/{PUBLISHER}/pr-reviewer"), RemoteOptions())
    withdrawn = target.resolve("1.0.0")
    assert [r["status"] for r in read_lifecycle(target, withdrawn)] == ["withdrawn"]
    # install from the registry: withdrawn refused, nothing stored; 1.1.0 installed and activated
    trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    policy = trusting_policy(tmp_path, trust)
    store = tmp_path / "store"
    repo = f"{prefix}/agent/{PUBLISHER}/pr-reviewer"
    code, err = acx_json(capsys, "install", f"{repo}:1.0.0", "--policy", str(policy), "--store", str(store))
    assert (
        code == 8 and err["error"]["kind"] == "refused_by_policy" and "withdrawn" in err["error"]["message"]
    )
    assert not store.exists()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    code, res = acx_json(
        capsys,
        "install",
        f"{repo}:1.1.0",
        "--policy",
        str(policy),
        "--store",
        str(store),
        "--activate",
        "cursor",
    )
    assert code == 0 and res["status"] == "installed", res
    skill = home / ".cursor" / "skills" / "review-checklist" / "SKILL.md"
    assert (
        skill.read_bytes()
        == (
            Path(__file__).parents[2]
            / "examples"
            / "agent-package"
            / "skills"
            / "review-checklist"
            / "SKILL.md"
        ).read_bytes()
    )
    code, ver = acx_json(capsys, "installed", "verify", "--store", str(store))
    assert code == 0, json.dumps(ver)
