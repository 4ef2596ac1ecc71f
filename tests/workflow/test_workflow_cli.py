"""`acx workflow …` end to end through the real CLI entry point (in-process, real files and keys)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from tests.harness.env import REPO
from tests.harness.workflows import new_key


@pytest.fixture(autouse=True)
def reset_opts() -> None:
    OPTS.json = OPTS.verbose = OPTS.quiet = False


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ex:
        cli_main.main(args)
    out, err = capsys.readouterr()
    OPTS.json = False
    return int(ex.value.code or 0), out + err


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code, out = run(["--json", *args], capsys)
    return code, json.loads(out)


def test_lint_digest_verify_on_vectors(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(
        ["workflow", "lint", str(vectors_dir / "workflow/lint/unreachable-node.cal.json")], capsys
    )
    assert code == 1 and out.startswith("INVALID") and "[unreachable] $.nodes[5]" in out
    code, out = run(
        ["workflow", "lint", "--publish", str(vectors_dir / "reference/ship-a-feature.cal.json")], capsys
    )
    assert code == 0 and out.startswith("VALID ✓")
    code, out = run(["workflow", "digest", str(vectors_dir / "workflow/team.cal.json")], capsys)
    assert (code, out.strip()) == (
        0,
        "sha256:ace99c5f35183942bf0c715560fd8e4e0e609f98030efbf157deae00114145f7",
    )
    code, data = run_json(
        ["workflow", "verify", str(vectors_dir / "workflow/team.tampered.cal.json")], capsys
    )
    assert code == 1 and data["trust"] == "tampered" and "digest mismatch" in data["issues"][0]
    code, data = run_json(
        ["workflow", "verify", str(vectors_dir / "reference/research-council.cal.json")], capsys
    )
    assert code == 0 and (data["status"], data["trust"]) == ("verified", "portable")
    code, _ = run(["workflow", "verify", str(vectors_dir / "workflow/team.cal.json")], capsys)
    assert code == 1  # unsigned: ok but not signed


def test_sign_verify_remix_resign(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "team.cal.json"
    shutil.copyfile(vectors_dir / "workflow/team.cal.json", src)
    key = tmp_path / "signer.key.pem"
    key.write_bytes(new_key().pkcs8_pem(b"pw"))
    monkeypatch.setenv("ACX_TEST_PW", "pw")
    code, out = run(
        [
            "workflow",
            "sign",
            str(src),
            "--publisher",
            "io.github.tester",
            "--key",
            str(key),
            "--password-env",
            "ACX_TEST_PW",
        ],
        capsys,
    )
    assert code == 0, out
    signed = tmp_path / "team.signed.cal.json"
    text = signed.read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.startswith('{\n  "schemaVersion"')
    code, data = run_json(["workflow", "verify", str(signed)], capsys)
    assert code == 0 and data["trust"] == "portable" and data["publisherId"] == "io.github.tester"
    draft = tmp_path / "draft.cal.json"
    code, out = run(
        [
            "workflow",
            "remix",
            str(signed),
            "-o",
            str(draft),
            "--relation",
            "derived-from",
            "--version",
            "1.3.0",
        ],
        capsys,
    )
    assert code == 0, out
    code, out = run(
        [
            "workflow",
            "sign",
            str(draft),
            "--publisher",
            "io.github.tester",
            "--key",
            str(key),
            "--password-env",
            "ACX_TEST_PW",
            "-o",
            str(tmp_path / "child.cal.json"),
        ],
        capsys,
    )
    assert code == 0, out
    child = json.loads((tmp_path / "child.cal.json").read_text(encoding="utf-8"))
    parent = json.loads(text)
    assert child["lineage"]["parents"][0]["digest"] == parent["integrity"]["digest"]
    assert child["lineage"]["parents"][0]["relation"] == "derived-from"
    code, data = run_json(["workflow", "inspect", str(tmp_path / "child.cal.json")], capsys)
    assert code == 0 and data["signature"]["trust"] == "portable" and data["lineage"] == child["lineage"]


def test_inspect_and_ready(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["workflow", "inspect", str(vectors_dir / "reference/ship-a-feature.cal.json")], capsys)
    assert code == 0
    assert "□ infra-arch" in out and "· warehouse-schema" in out
    assert 'gate → done  when {"var":"review.outcome","op":"eq","value":"completed"}' in out
    assert "maxSteps=24" in out and "verified/portable" in out
    code, out = run(
        [
            "workflow",
            "ready",
            str(vectors_dir / "reference/ship-a-feature.cal.json"),
            "--cartridges",
            str(vectors_dir / "reference"),
        ],
        capsys,
    )
    assert code == 1 and out.startswith("NOT READY")
    assert "participant 'builder' unresolved: level unverifiable" in out


def test_example_workflow_is_publishable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(
        ["workflow", "lint", "--publish", str(REPO / "examples/workflow/review-team.cal.json")], capsys
    )
    assert code == 0, out


def test_bad_input_is_a_typed_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.cal.json"
    bad.write_text('{"id": "a", "id": "b"}', encoding="utf-8")
    code, out = run(["workflow", "lint", str(bad)], capsys)
    assert code == 3 and "duplicate JSON key" in out
    code, out = run(["workflow", "digest", str(tmp_path / "missing.cal.json")], capsys)
    assert code == 4


def test_verify_with_trust_registry_file(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "team.cal.json"
    shutil.copyfile(vectors_dir / "workflow/team.cal.json", src)
    signer = new_key()
    key = tmp_path / "k.pem"
    key.write_bytes(signer.pkcs8_pem())
    code, out = run(
        [
            "workflow",
            "sign",
            str(src),
            "--publisher",
            "io.github.tester",
            "--key",
            str(key),
            "--now",
            "2026-11-30T10:00:00Z",
        ],
        capsys,
    )
    assert code == 0, out
    entry = {
        "keyid": signer.public().keyid(),
        "publisherId": "io.github.tester",
        "algorithm": "ed25519",
        "publicKeyPem": signer.public().spki_pem(),
        "status": "active",
        "notBefore": "2020-01-01T00:00:00Z",
        "notAfter": "2035-01-01T00:00:00Z",
        "namespaceProof": {
            "method": "github-oidc",
            "oidcSubject": "repo:tester/flows:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    }
    reg = tmp_path / "trust.json"
    reg.write_text(json.dumps({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}), encoding="utf-8")
    signed = str(tmp_path / "team.signed.cal.json")
    code, data = run_json(["workflow", "verify", signed, "--trust-registry", str(reg)], capsys)
    assert code == 0 and (data["status"], data["trust"]) == ("verified", "trusted")
    assert data["signedAt"] == "2026-11-30T10:00:00.000Z"
    entry.update(status="revoked", revokedAt="2026-06-01T00:00:00Z", revocationReason="key-compromise")
    reg.write_text(json.dumps({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}), encoding="utf-8")
    code, data = run_json(["workflow", "verify", signed, "--trust-registry", str(reg)], capsys)
    assert code == 1 and data["trust"] == "tampered"
