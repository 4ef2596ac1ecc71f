"""The reference's real cartridges (and an acxoci build rewritten to the reference builder's harness
shape) go through `spec`, `harness negotiate` and `install`: the legacy harness is read as the
schema shape (decision 0016), and the roles, scopes and executables required are exactly those the
reference's `check` preflight requires (ACX brief §7)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.sign import resign_file
from acxoci.cartridge.spec import check_spec
from acxoci.install.install import HostInputs, install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.policy.files import load_document
from acxoci.policy.harness import ROM_PATH, negotiate, parse_harness, parse_host
from tests.harness.cli import run_acx
from tests.harness.env import REPO
from tests.harness.installs import NOW, push_cartridge, write_policy, write_registry

HOST_JSON = REPO / "examples" / "host.json"
PACKAGE = "sample/sample-agent-package"
CARTRIDGES = (
    "reference/ada-ridge.acx",
    "reference/rex-calder.acx",
    "sample/sample.acx",
    "sample/sample.stripped.acx",
)


def _harness(path: Path) -> dict[str, Any]:
    doc = load_document(path, ROM_PATH).doc
    assert isinstance(doc, dict)
    return doc


def _signer(path: Path) -> tuple[str, str, str]:
    """(publisher, keyid, public key PEM) recorded in the cartridge (read, not trusted)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        keyid, pem = conn.execute("SELECT keyid, public_key_pem FROM signatures").fetchone()
        (publisher,) = conn.execute("SELECT value FROM cartridge WHERE key = 'acx.publisher_id'").fetchone()
    finally:
        conn.close()
    return publisher, keyid, pem


def _trusting_policy(tmp: Path, path: Path) -> Path:
    publisher, keyid, pem = _signer(path)
    owner = publisher.split(".")[2]
    entry = {
        "keyid": keyid,
        "publisherId": publisher,
        "algorithm": "ed25519",
        "publicKeyPem": pem,
        "status": "active",
        "notBefore": "2020-01-01T00:00:00Z",
        "notAfter": "2035-01-01T00:00:00Z",
        "namespaceProof": {
            "method": "github-oidc",
            "oidcSubject": f"repo:{owner}/agents:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    }
    reg = write_registry(tmp / "trust.json", [entry])
    return write_policy(
        tmp / "policy.yaml", {"publishers": [{"id": publisher, "trustRegistries": [str(reg)]}]}
    )


def reference_check_requires(doc: dict[str, Any]) -> tuple[set[str], set[str]]:
    """What the reference's `check` (no tools offered) reports unmet, from the ACX brief §7: every
    requiredTools role as `tool:<role>`, every non-optional externalTools bin as `binary:<bin>`."""
    roles = {t["role"] for t in doc.get("requiredTools", [])}
    bins = {
        (b["bin"] if isinstance(b, dict) else b)
        for b in doc.get("externalTools", [])
        if not (isinstance(b, dict) and b.get("optional"))
    }
    return roles, bins


def _legacy_build(tmp: Path, vectors: Path) -> Path:
    """The sample package built by acxoci (schema-shape harness), then its harness rewritten to the
    reference builder's shape and the cartridge re-signed with a fresh key."""
    out = tmp / "legacy.acx"
    key = generate_ed25519()
    build_cartridge(
        vectors / PACKAGE,
        out,
        publisher="io.github.example-acx",
        key=key,
        created_at="2026-05-04T09:00:00.000Z",
    )
    doc = _harness(out)
    assert isinstance(doc["filesystem"], dict) and "externalTools" not in doc
    doc["filesystem"] = ["fs.read"]
    doc["network"] = []
    doc["externalTools"] = [{"bin": "git", "optional": False}, {"bin": "node", "optional": False}]
    data = json.dumps(doc, indent=2).encode()
    conn = sqlite3.connect(out)
    try:
        conn.execute("UPDATE sqlar SET data = ?, sz = ? WHERE name = ?", (data, len(data), ROM_PATH))
        conn.commit()
    finally:
        conn.close()
    resign_file(out, key, signed_at="2026-05-04T09:00:01.000Z", refresh=True)
    return out


@pytest.fixture(params=[*CARTRIDGES, "acxoci-build-legacy"])
def cartridge(request: pytest.FixtureRequest, vectors_dir: Path, tmp_path: Path) -> Path:
    if request.param == "acxoci-build-legacy":
        return _legacy_build(tmp_path, vectors_dir)
    dest = tmp_path / Path(request.param).name
    shutil.copyfile(vectors_dir / request.param, dest)
    return dest


def test_spec_is_clean_with_legacy_warnings(cartridge: Path) -> None:
    report = check_spec(cartridge)
    assert report.clean, [str(i) for i in report.issues]
    legacy = {i.rule for i in report.issues}
    assert legacy == {"harness.legacy.externalTools", "harness.legacy.filesystem", "harness.legacy.network"}
    assert all(i.severity == "warning" for i in report.issues)


def test_negotiate_against_example_host(cartridge: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_acx(capsys, "--json", "harness", "negotiate", str(cartridge), "--host", str(HOST_JSON))
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["descriptor"]["verdict"] == "accept"
    assert out["descriptor"]["unmet"] == []


def test_same_requirements_as_the_reference_check(cartridge: Path) -> None:
    doc = _harness(cartridge)
    want_roles, want_bins = reference_check_requires(doc)
    req = parse_harness(doc)
    assert {t.role for t in req.required_tools} == want_roles
    assert {b for b, optional in req.external_tools if not optional} == want_bins
    # each role keeps exactly the scopes the document asks for
    assert {t.role: set(t.scopes) for t in req.required_tools} == {
        t["role"]: set(t["capabilityScopes"]) for t in doc["requiredTools"]
    }
    host = json.loads(HOST_JSON.read_text())
    # a host missing one role, or one executable, is refused for exactly that
    for role in sorted(want_roles):
        h = dict(host, tools=[{**t, "roles": [r for r in t["roles"] if r != role]} for t in host["tools"]])
        d = negotiate(req, parse_host(h), "sha256:" + "0" * 64)
        assert d.verdict == "refuse" and f"role:{role}" in d.unmet, d.unmet
    for binary in sorted(want_bins):
        h = dict(host, binaries=[b for b in host["binaries"] if b != binary])
        d = negotiate(req, parse_host(h), "sha256:" + "0" * 64)
        assert list(d.unmet) == [f"binary:{binary}"]
    undeclared = {k: v for k, v in host.items() if k != "binaries"}
    d = negotiate(req, parse_host(undeclared), "sha256:" + "0" * 64)
    assert set(d.unmet) == {f"binary:{b}" for b in want_bins}


def test_install_under_a_policy_trusting_its_key(cartridge: Path, tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    push_cartridge(layout, cartridge, "v1")
    policy = load_policy(_trusting_policy(tmp_path, cartridge), now=NOW)
    host = HostInputs(json.loads(HOST_JSON.read_text()), str(HOST_JSON))
    out = install(
        f"oci-layout:{layout}:v1", policy=policy, store=Store(tmp_path / "store"), now=NOW, host=host
    )
    assert out.status == "installed", [c.to_json() for c in out.failed]
    results = {c.id: c.status for c in out.checks}
    assert results["harness"] == "pass"
    assert results["trust"] == "pass"


def test_reference_cli_accepts_the_legacy_rewrite(vectors_dir: Path, tmp_path: Path) -> None:
    """Opt-in cross-check with the Node reference (never vendored): its `spec` is CLEAN and its
    `check --all-tools` ACCEPTs our build rewritten to its harness shape (needs git and node on PATH)."""
    import os
    import subprocess

    node, cli = os.environ.get("ACX_REF_NODE"), os.environ.get("ACX_REF_CLI")
    if not node or not cli:
        pytest.skip("set ACX_REF_NODE and ACX_REF_CLI to cross-check with the reference CLI")
    out = _legacy_build(tmp_path, vectors_dir)
    base = [node, "--no-warnings", "--experimental-sqlite", cli]
    spec = subprocess.run([*base, "spec", str(out)], capture_output=True, text=True)
    assert spec.returncode == 0 and "CLEAN" in spec.stdout, spec.stdout
    check = subprocess.run([*base, "check", str(out), "--all-tools"], capture_output=True, text=True)
    assert check.returncode == 0 and "ACCEPT" in check.stdout, check.stdout
    refused = subprocess.run([*base, "check", str(out)], capture_output=True, text=True)
    roles, _ = reference_check_requires(_harness(out))
    assert refused.returncode == 1 and all(f"tool:{r}" in refused.stdout for r in roles), refused.stdout
