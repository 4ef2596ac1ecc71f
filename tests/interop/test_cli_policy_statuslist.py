"""`acx policy init --publisher`, `acx install` without a policy, and status-list ids in every
reference form the CLI accepts (a missing list is not_found, never "retry later")."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.install.vpolicy import load_policy
from tests.harness.cli import acx_json, run_acx
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop



def _trusted_key(capsys: pytest.CaptureFixture[str], folder: Path, publisher: str,
                 name: str = "trust") -> Path:
    assert run_acx(capsys, "key", "generate", "-o", str(folder / f"{name}.pem")).returncode == 0
    reg = folder / f"{name}.json"
    r = run_acx(capsys, "key", "trust", str(folder / f"{name}.pub.pem"), "--publisher", publisher,
                "-r", str(reg), "--not-before", "2026-01-01T00:00:00Z")
    assert r.returncode == 0, r.stderr
    return reg


def test_policy_init_trusts_the_named_publisher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = _trusted_key(capsys, tmp_path, "dev.example.me")
    out = tmp_path / "nested" / "policy.yaml"
    code, data = acx_json(capsys, "policy", "init", "-o", str(out), "--publisher", "dev.example.me",
                          "--trust-registry", str(reg))
    assert code == 0 and data["publishers"] == ["dev.example.me"]
    assert 'trustRegistries: ["../trust.json"]' in out.read_text()  # relative to the policy's folder
    pol = load_policy(out, now=datetime.now(UTC))
    assert [p.id for p in pol.publishers] == ["dev.example.me"]
    assert pol.publishers[0].registry.keys and pol.minimum_trust == "trusted"


@pytest.mark.parametrize("args, message", [
    (["--publisher", "dev.example.other", "--trust-registry", "{reg}"], "no key of publisher"),
    (["--publisher", "dev.example.me"], "go together"),
    (["--trust-registry", "{reg}"], "go together"),
    (["--publisher", "dev.example.me", "--trust-registry", "{reg}", "--require-level", "9"],
     "needs --issuers"),
    (["--publisher", "dev.example.me", "--trust-registry", "{reg}", "--level", "9"], "needs --issuers"),
])
def test_policy_init_refuses_a_policy_that_cannot_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    reg = _trusted_key(capsys, tmp_path, "dev.example.me")
    out = tmp_path / "p.yaml"
    r = run_acx(capsys, "policy", "init", "-o", str(out), *[a.replace("{reg}", str(reg)) for a in args])
    assert r.returncode == 2 and message in r.stderr
    assert not out.exists()


def test_policy_init_with_a_level_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = _trusted_key(capsys, tmp_path, "dev.example.me")
    issuers = _trusted_key(capsys, tmp_path, "example.verifier", "issuers")
    out = tmp_path / "p.yaml"
    code, _ = acx_json(capsys, "policy", "init", "-o", str(out), "--publisher", "dev.example.me",
                       "--trust-registry", str(reg), "--level", "senior",
                       "--issuer", "did:web:verifier.example", "--issuer-registry", str(issuers))
    assert code == 0
    pol = load_policy(out, now=datetime.now(UTC))
    assert pol.level_floor == 15 and pol.level_issuers == ("did:web:verifier.example",)


def test_install_without_a_policy_says_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data = acx_json(capsys, "install", f"oci-layout:{tmp_path / 'store'}:1.0.0")
    assert code == 2 and data["error"]["kind"] == "usage"
    assert "acx policy init" in data["error"]["hint"]
    assert not (tmp_path / "store").exists()


def _make_list(capsys: pytest.CaptureFixture[str], folder: Path, list_id: str) -> Path:
    assert run_acx(capsys, "key", "generate", "-o", str(folder / "v.pem"), "--force").returncode == 0
    out = folder / "status.json"
    r = run_acx(capsys, "status-list", "create", "--id", list_id, "--issuer", "did:web:verifier.example",
                "--issuer-key", str(folder / "v.pem"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_status_list_ids_in_every_reference_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], distribution_registry: Registry
) -> None:
    host = distribution_registry.host
    forms = {
        f"{host}/acx/status:status": f"{host}/acx/status:status",
        f"oci://{host}/acx/other:v1": f"oci://{host}/acx/other:v1",
        f"oci-layout:{tmp_path / 'layout'}:status": f"oci-layout:{tmp_path / 'layout'}:status",
    }
    for list_id, ref in forms.items():
        listed = _make_list(capsys, tmp_path, list_id)
        r = run_acx(capsys, "status-list", "publish", str(listed), ref)
        assert r.returncode == 0, r.stderr
        code, shown = acx_json(capsys, "status-list", "show", list_id)
        assert code == 0, shown
        assert shown["id"] == list_id and shown["size"] >= 131072
    code, shown = acx_json(capsys, "status-list", "show", str(listed))  # and a file
    assert code == 0 and shown["id"] == list(forms)[-1]


@pytest.mark.parametrize("form", ["{host}/acx/none:status", "oci://{host}/acx/none:status",
                                  "oci-layout:{tmp}/none:status", "{tmp}/none.json", "./missing/list.json"])
def test_a_missing_status_list_is_not_found_not_retry_later(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], distribution_registry: Registry, form: str
) -> None:
    (tmp_path / "none").mkdir()
    source = form.format(host=distribution_registry.host, tmp=tmp_path)
    code, data = acx_json(capsys, "status-list", "show", source)
    assert code == 4 and data["error"]["kind"] == "not_found", data
