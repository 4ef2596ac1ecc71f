"""`acx key trust`: writes a registry the strict loader accepts, with the right proof shape,
and that makes a cartridge signed by that key `trusted`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import generate_ed25519, generate_p256
from acxoci.attest.trust import add_key_entry, make_key_entry, parse_rfc3339
from acxoci.cartridge.trust_file import load_trust_registry
from tests.harness.cli import CliResult, run_acx
from tests.harness.env import REPO

NOW = parse_rfc3339("2026-11-30T00:00:00Z")




def test_entry_shapes_follow_publisher_form() -> None:
    pub = generate_ed25519().public()
    dns = make_key_entry(pub, publisher_id="dev.acxoci.demo", not_before=NOW, not_after=NOW, verified_at=NOW)
    assert dns["namespaceProof"] == {
        "method": "dns-txt",
        "txtRecord": "_acx-challenge.demo.acxoci.dev",
        "verifiedAt": "2026-11-30T00:00:00Z",
    }
    with pytest.raises(MalformedError, match="github-oidc"):
        make_key_entry(pub, publisher_id="io.github.someone", not_before=NOW, not_after=NOW, verified_at=NOW)
    gh = make_key_entry(
        pub,
        publisher_id="io.github.someone",
        not_before=NOW,
        not_after=NOW,
        verified_at=NOW,
        oidc_subject="repo:someone/agents:ref:refs/heads/main",
    )
    assert gh["namespaceProof"]["method"] == "github-oidc"
    with pytest.raises(MalformedError, match="Ed25519"):
        make_key_entry(
            generate_p256().public(), publisher_id="dev.x.y", not_before=NOW, not_after=NOW, verified_at=NOW
        )


def test_add_replaces_same_keyid_and_validates() -> None:
    pub = generate_ed25519().public()
    e = make_key_entry(pub, publisher_id="dev.acxoci.demo", not_before=NOW, not_after=NOW, verified_at=NOW)
    doc = add_key_entry(add_key_entry(None, e, now=NOW), e, now=NOW)
    assert len(doc["keys"]) == 1
    bad = dict(e, keyid="ed25519:" + "0" * 64)
    with pytest.raises(MalformedError):
        add_key_entry(doc, bad, now=NOW)


def test_cli_trust_then_verify_is_trusted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`acx key generate`, `key trust`, `cartridge build`, `cartridge verify --require trusted`, run
    in this process (a subprocess per command cost seconds, times every mutant that reaches them)."""

    def acx(*args: str) -> CliResult:
        return run_acx(capsys, *args)

    key = tmp_path / "pub.pem"
    assert acx("-q", "key", "generate", "-o", str(key)).returncode == 0
    reg = tmp_path / "trust.json"
    r = acx(
        "key",
        "trust",
        str(tmp_path / "pub.pub.pem"),
        "--publisher",
        "dev.acxoci.demo",
        "-r",
        str(reg),
        "--not-before",
        "2026-01-01T00:00:00Z",
    )
    assert r.returncode == 0, r.stderr
    load_trust_registry(reg)
    cart = tmp_path / "a.acx"
    r = acx(
        "-q",
        "cartridge",
        "build",
        str(REPO / "examples/agent-package"),
        "-o",
        str(cart),
        "--publisher",
        "dev.acxoci.demo",
        "--key",
        str(key),
        "--created-at",
        "2026-11-30T00:00:00Z",
    )
    assert r.returncode == 0, r.stderr
    out = acx(
        "--json", "cartridge", "verify", str(cart), "--trust-registry", str(reg), "--require", "trusted"
    )
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout)["trust"] == "trusted"
    other = tmp_path / "other.json"
    r = acx(
        "key",
        "trust",
        str(tmp_path / "pub.pub.pem"),
        "--publisher",
        "dev.acxoci.other",
        "-r",
        str(other),
        "--not-before",
        "2026-01-01T00:00:00Z",
    )
    assert r.returncode == 0, r.stderr
    out = acx(
        "--json", "cartridge", "verify", str(cart), "--trust-registry", str(other), "--require", "trusted"
    )
    assert out.returncode != 0


def test_add_keeps_the_other_keys_and_stamps_the_update() -> None:
    first, second = generate_ed25519().public(), generate_ed25519().public()
    when = {"not_before": NOW, "not_after": NOW, "verified_at": NOW}
    a = make_key_entry(first, publisher_id="dev.acxoci.demo", **when)
    b = make_key_entry(second, publisher_id="dev.acxoci.other", **when)
    one = add_key_entry(None, a, now=NOW)
    assert one == {"schemaVersion": "acx.trust-registry/1", "keys": [a], "updatedAt": "2026-11-30T00:00:00Z"}
    later = parse_rfc3339("2026-12-01T08:00:00Z")
    both = add_key_entry(one, b, now=later)
    assert [k["keyid"] for k in both["keys"]] == [first.keyid(), second.keyid()]
    assert both["updatedAt"] == "2026-12-01T08:00:00Z" and one["updatedAt"] == "2026-11-30T00:00:00Z"
    subject = "repo:someone/agents:ref:refs/heads/main"
    gh = make_key_entry(first, publisher_id="io.github.someone", oidc_subject=subject, **when)
    assert gh["namespaceProof"] == {"method": "github-oidc", "oidcSubject": subject,
                                    "oidcIssuer": "https://token.actions.githubusercontent.com",
                                    "verifiedAt": "2026-11-30T00:00:00Z"}
