"""Level credentials as OCI referrers, status lists as OCI artifacts, and the cosign-verifiable
level attestation (stock cosign 2.5 and 3.x against a real registry)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.artifact import build, gather, push_file
from acxoci.attest.keys import generate_ed25519
from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from acxoci.level import oci as level_oci
from acxoci.oci.target import open_target
from tests.harness.peers import Cosign
from tests.harness.servers import Registry
from tests.harness.trustdocs import make_level_verifier

ISSUER = "did:web:verifier.example"
LIST_ID = "https://status.example/lists/9"
NOW = "2026-08-01T12:00:00Z"
LATER = "2026-08-01T13:00:00Z"
AT = datetime(2026, 8, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _reset_opts() -> Iterator[None]:
    yield
    OPTS.json = OPTS.verbose = OPTS.quiet = False


def acx(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    with pytest.raises(SystemExit) as exc:
        cli_main.main(["--json", *args])
    out = capsys.readouterr().out
    return int(exc.value.code or 0), json.loads(out) if out.strip() else None


def _push(cartridge: Path, ref: str) -> str:
    target, parsed = open_target(ref)
    facts = gather(cartridge, verify=True, registry=None, now=AT)
    desc = push_file(target, facts, build(facts, "2026-07-16T00:00:00Z"), parsed.tag)
    return desc.digest


@pytest.fixture
def verifier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    return make_level_verifier(capsys, tmp_path, issuer=ISSUER, list_id=LIST_ID, now=NOW)


def _issue(capsys: pytest.CaptureFixture[str], v: dict[str, Path], ref: str, competence: str) -> Any:
    d = v["dir"]
    code, out = acx(
        capsys,
        "level",
        "issue",
        ref,
        "--bench",
        str(v["bench"]),
        "--issuer",
        ISSUER,
        "--issuer-key",
        str(d / "issuer.pem"),
        "--status-list",
        str(d / "sl.json"),
        "--attempt-log",
        str(d / "attempts.jsonl"),
        "--competence",
        competence,
        "--now",
        NOW,
        "-o",
        str(d / "vc.json"),
    )
    assert code == 0, out
    return out


def test_layout_attach_verify_publish_revoke(
    verifier: dict[str, Path], capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    d = verifier["dir"]
    layout = f"oci-layout:{d / 'store'}"
    subject = _push(vectors_dir / "reference" / "rex-calder.acx", f"{layout}:rex")
    out = _issue(capsys, verifier, f"{layout}:rex", "24")
    assert out["level"] == 18 and out["attestation"]["subject"] == subject
    target, _ = open_target(layout)
    found = level_oci.find_credentials(target, target.resolve(subject))
    assert [r.digest for r, _ in found] == [out["referrer"]]
    assert found[0][1]["credentialSubject"]["result"][0]["acx:cartridgeRomDigest"] == out["romDigest"]
    status_ref = f"{layout}:status"
    code, pub = acx(
        capsys,
        "status-list",
        "publish",
        str(d / "sl.json"),
        status_ref,
        "--issuers",
        str(d / "issuers.json"),
        "--now",
        NOW,
    )
    assert code == 0 and pub["tag"] == "status"
    verify = [
        "--issuers",
        str(d / "issuers.json"),
        "--status-list",
        status_ref,
        "--now",
        LATER,
        "--cache-dir",
        str(d / "cache"),
    ]
    code, res = acx(capsys, "level", "verify", f"{layout}:rex", *verify)
    assert code == 0 and res["ok"] and res["credentials"][0]["state"] == "verified"
    code, res = acx(capsys, "level", "verify", f"{layout}:rex", *verify, "--min-level", "senior")
    assert code == 1 and "a demonstration" in res["reason"]  # the demo solver's level needs allowing
    code, res = acx(capsys, "level", "verify", f"{layout}:rex", *verify, "--min-level", "senior",
                    "--allow-demo-level")
    assert code == 0 and res["requiredLevel"] == 15
    code, res = acx(capsys, "level", "verify", f"{layout}:rex", *verify, "--min-level", "19",
                    "--allow-demo-level")
    assert code == 1 and "below the required 19" in res["reason"]
    code, res = acx(
        capsys,
        "level",
        "revoke",
        str(d / "vc.json"),
        "--status-list",
        str(d / "sl.json"),
        "--issuer-key",
        str(d / "issuer.pem"),
        "--publish",
        status_ref,
        "--now",
        NOW,
    )
    assert code == 0 and res["published"]["digest"] != pub["digest"]  # the moving tag now points elsewhere
    code, res = acx(capsys, "level", "verify", f"{layout}:rex", *verify)
    assert code == 1 and res["credentials"][0]["state"] == "revoked"


def test_transplanted_referrer_fails_binding(
    verifier: dict[str, Path], capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    d = verifier["dir"]
    layout = f"oci-layout:{d / 'store'}"
    _push(vectors_dir / "reference" / "ada-ridge.acx", f"{layout}:ada")
    ada_vc = _issue(capsys, verifier, f"{layout}:ada", "33")
    rex = _push(vectors_dir / "reference" / "rex-calder.acx", f"{layout}:rex")
    target, _ = open_target(layout)
    cred = json.loads((d / "vc.json").read_text())
    level_oci.attach_credential(target, target.resolve(rex), cred, now=AT)  # ada's VC onto rex
    code, res = acx(
        capsys,
        "level",
        "verify",
        f"{layout}:rex",
        "--issuers",
        str(d / "issuers.json"),
        "--status-list",
        str(d / "sl.json"),
        "--now",
        LATER,
        "--cache-dir",
        str(d / "cache"),
    )
    assert code == 1 and ada_vc["level"] == 28
    assert any(r.startswith("ROM digest binding mismatch") for r in res["credentials"][0]["reasons"])


def test_no_credential_attached(
    verifier: dict[str, Path], capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    d = verifier["dir"]
    layout = f"oci-layout:{d / 'store'}"
    _push(vectors_dir / "reference" / "rex-calder.acx", f"{layout}:rex")
    code, res = acx(capsys, "level", "verify", f"{layout}:rex", "--issuers", str(d / "issuers.json"))
    assert code == 1 and res["credentials"] == []


@pytest.mark.interop
def test_cosign_verifies_the_level_attestation(
    verifier: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    vectors_dir: Path,
    distribution_registry: Registry,
    cosign2: Cosign,
    cosign3: Cosign,
) -> None:
    d = verifier["dir"]
    ref = f"{distribution_registry.host}/acx/rex:1.0.0"
    subject = _push(vectors_dir / "reference" / "rex-calder.acx", ref)
    out = _issue(capsys, verifier, ref, "24")
    assert out["attestation"]["subject"] == subject
    pinned = f"{distribution_registry.host}/acx/rex@{subject}"
    for cosign in (cosign2, cosign3):
        r = cosign.verify_attestation(pinned, d / "issuer.pub", level_oci.LEVEL_PREDICATE_TYPE)
        assert r.returncode == 0
    other = generate_ed25519()
    (d / "other.pub").write_text(other.public().spki_pem())
    bad = cosign3.verify_attestation(pinned, d / "other.pub", level_oci.LEVEL_PREDICATE_TYPE, check=False)
    assert bad.returncode != 0
