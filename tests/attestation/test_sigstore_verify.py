"""Sigstore verification beyond the conformance verdicts: hostile bundles and trusted roots end in
typed results (never exit 70), key-based bundles get their log entries checked only against an
explicit root, a genuinely wrong key is refused, and the identity rules (flags and policy) mean
exactly what they say."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_p256
from acxoci.attest.typed import decode_as
from acxoci.attestation.identity import IdentityRule, rule_from_flags
from acxoci.attestation.keyless_policy import policy_sigstore
from acxoci.attestation.sigstore_verify import shipped_root_bytes
from acxoci.documents.verification_policy import VerificationPolicyDoc
from acxoci.errors import InvalidInput, UsageError
from acxoci.install.vpolicy import policy_from_json
from tests.harness.cli import acx_json
from tests.harness.env import SHARED, missing
from tests.harness.sigstore_pki import GITHUB_ISSUER, FakeSigstore

SUITE = SHARED / "conformance" / "sigstore-bundle-verify"
BEACON = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
    ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
KEYLESS = ["--certificate-identity", BEACON, "--certificate-oidc-issuer", GITHUB_ISSUER]


def _case(name: str) -> Path:
    if not (SUITE / name).is_dir():
        missing(f"conformance case {name} not found")
    return SUITE / name


def _doc(name: str) -> dict[str, Any]:
    return json.loads((_case(name) / "bundle.sigstore.json").read_text())


def _run(
    capsys: pytest.CaptureFixture[str], tmp: Path, bundle: bytes | dict[str, Any], *args: str
) -> tuple[int, Any]:
    path = tmp / "bundle.json"
    path.write_bytes(bundle if isinstance(bundle, bytes) else json.dumps(bundle).encode())
    return acx_json(capsys, "verify-blob", str(SUITE / "a.txt"), "--bundle", str(path), *args)


def _hostile_keyless() -> list[tuple[str, Any]]:
    good = _doc("happy-path-v0.3") if (SUITE / "happy-path-v0.3").is_dir() else {}
    out: list[tuple[str, Any]] = [
        ("not-json", b'{"mediaType": '),
        ("array", b"[]"),
        ("duplicate-keys", b'{"mediaType": "a", "mediaType": "b"}'),
        ("nul-bytes", b"\x00" * 64),
    ]
    if not good:
        return out

    def mutate(fn: Any) -> dict[str, Any]:
        d = copy.deepcopy(good)
        fn(d)
        return d

    vm = "verificationMaterial"
    out += [
        ("bad-base64-cert", mutate(lambda d: d[vm]["certificate"].update(rawBytes="!!!not base64***"))),
        (
            "random-cert",
            mutate(lambda d: d[vm]["certificate"].update(rawBytes=base64.b64encode(b"x" * 300).decode())),
        ),
        (
            "huge-cert",
            mutate(
                lambda d: d[vm]["certificate"].update(rawBytes=base64.b64encode(b"\x30" * 200_000).decode())
            ),
        ),
        ("bad-base64-sig", mutate(lambda d: d["messageSignature"].update(signature="%%%"))),
        ("many-entries", mutate(lambda d: d[vm].update(tlogEntries=d[vm]["tlogEntries"] * 50))),
        (
            "many-hashes",
            mutate(lambda d: d[vm]["tlogEntries"][0]["inclusionProof"].update(hashes=["AAAA"] * 5000)),
        ),
        ("entries-not-list", mutate(lambda d: d[vm].update(tlogEntries="nope"))),
        ("negative-index", mutate(lambda d: d[vm]["tlogEntries"][0].update(logIndex="-5"))),
        (
            "far-future-time",
            mutate(lambda d: d[vm]["tlogEntries"][0].update(integratedTime="99999999999999")),
        ),
        ("body-not-base64", mutate(lambda d: d[vm]["tlogEntries"][0].update(canonicalizedBody="@@@"))),
        ("no-material", mutate(lambda d: d.pop(vm))),
        (
            "checkpoint-garbage",
            mutate(
                lambda d: d[vm]["tlogEntries"][0]["inclusionProof"]["checkpoint"].update(
                    envelope="\n\n\u2014 x " + "A" * 10000 + "\n"
                )
            ),
        ),
    ]
    return out


@pytest.mark.parametrize(("name", "bundle"), _hostile_keyless(), ids=[n for n, _ in _hostile_keyless()])
def test_hostile_bundles_are_typed_refusals(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, bundle: Any
) -> None:
    for extra in (KEYLESS, ["--key", str(_case("managed-key-happy-path") / "key.pub")]):
        code, out = _run(capsys, tmp_path, bundle, *extra)
        assert code in (1, 3), (name, code, out)
        assert out is not None and (out.get("ok") is False or out["error"]["kind"] == "invalid_input"), out


@pytest.mark.parametrize(
    "root",
    [
        b"{",
        b"[]",
        b'{"mediaType": "x", "mediaType": "y"}',
        b'{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", "tlogs": "nope"}',
        b"\xff\xfe",
    ],
)
def test_hostile_trusted_root_is_invalid_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root: bytes
) -> None:
    path = tmp_path / "root.json"
    path.write_bytes(root)
    code, out = _run(capsys, tmp_path, _doc("happy-path-v0.3"), *KEYLESS, "--trusted-root", str(path))
    assert code == 3 and out["error"]["kind"] == "invalid_input", out


def test_wrong_root_refuses(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A public-good bundle against a root of our own (or staging) does not verify."""
    root = tmp_path / "root.json"
    root.write_bytes(FakeSigstore().trusted_root_bytes())
    code, out = _run(capsys, tmp_path, _doc("happy-path-v0.3"), *KEYLESS, "--trusted-root", str(root))
    assert code == 1 and out["verdict"] == "unverified", out
    code, out = _run(capsys, tmp_path, _doc("happy-path-v0.3"), *KEYLESS, "--staging")
    assert code == 1, out
    code, out = _run(capsys, tmp_path, _doc("happy-path-v0.3"), *KEYLESS)
    assert code == 0, out


def test_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = _doc("happy-path-v0.3")
    assert _run(capsys, tmp_path, doc)[0] == 2  # neither a key nor an identity
    assert _run(capsys, tmp_path, doc, "--certificate-identity", BEACON)[0] == 2  # no issuer
    assert _run(capsys, tmp_path, doc, *KEYLESS, "--certificate-identity-regexp", ".*")[0] == 2
    assert _run(capsys, tmp_path, doc, *KEYLESS, "--staging", "--trusted-root", "x.json")[0] == 2
    assert (
        _run(
            capsys,
            tmp_path,
            doc,
            "--certificate-identity-regexp",
            "(",
            "--certificate-oidc-issuer",
            GITHUB_ISSUER,
        )[0]
        == 2
    )
    code, out = acx_json(
        capsys, "verify-blob", "sha256:abc", "--bundle", str(tmp_path / "bundle.json"), *KEYLESS
    )
    assert code == 2, out


# --- key-based bundles (managed keys) ------------------------------------------------------------


def test_managed_key_log_entry_checked_only_with_explicit_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    case = _case("managed-key-happy-path")
    prod = tmp_path / "prod.json"
    prod.write_bytes(shipped_root_bytes("production"))
    key = ["--key", str(case / "key.pub")]
    good = _doc("managed-key-happy-path")
    code, out = _run(capsys, tmp_path, good, *key)
    assert code == 0 and any("NOT verified" in n for n in out["notes"]), out
    code, out = _run(capsys, tmp_path, good, *key, "--trusted-root", str(prod))
    assert code == 0 and out["signer"]["logIndex"] == 771488337 and out["signer"]["verifiedTimes"], out
    # the log entry no longer matches its SET / checkpoint: refused once a root is given
    bad = copy.deepcopy(good)
    bad["verificationMaterial"]["tlogEntries"][0]["integratedTime"] = "1766077480"
    assert _run(capsys, tmp_path, bad, *key, "--trusted-root", str(prod))[0] == 1
    assert _run(capsys, tmp_path, bad, *key)[0] == 0  # reported, not verified
    # a valid key that did not sign it
    wrong = tmp_path / "wrong.pub"
    wrong.write_text(generate_p256().public().spki_pem())
    code, out = _run(capsys, tmp_path, good, "--key", str(wrong), "--trusted-root", str(prod))
    assert code == 1 and out["verdict"] == "unverified", out
    # a staging-root log entry (managed-key-and-trusted-root) does not verify against production
    staged = _doc("managed-key-and-trusted-root")
    assert _run(capsys, tmp_path, staged, *key, "--trusted-root", str(prod))[0] == 1
    code, out = _run(
        capsys,
        tmp_path,
        staged,
        *key,
        "--trusted-root",
        str(_case("managed-key-and-trusted-root") / "trusted_root.json"),
    )
    assert code == 0, out


def test_managed_key_digest_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import hashlib

    case = _case("managed-key-happy-path")
    path = tmp_path / "b.json"
    path.write_bytes((case / "bundle.sigstore.json").read_bytes())
    digest = "sha256:" + hashlib.sha256((SUITE / "a.txt").read_bytes()).hexdigest()
    code, out = acx_json(capsys, "verify-blob", digest, "--bundle", str(path), "--key", str(case / "key.pub"))
    assert code == 0, out
    code, out = acx_json(
        capsys, "verify-blob", "sha256:" + "0" * 64, "--bundle", str(path), "--key", str(case / "key.pub")
    )
    assert code == 1, out


def test_key_bundle_log_entry_body_must_match(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Validly logged entries that describe another key or another artifact are refused (our
    body check; the SET, proof and checkpoint all verify)."""
    from cryptography.hazmat.primitives.asymmetric import ec

    fake = FakeSigstore()
    root = tmp_path / "root.json"
    root.write_bytes(fake.trusted_root_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "k.pub"
    from cryptography.hazmat.primitives import serialization

    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    art = (SUITE / "a.txt").read_bytes()
    args = ["--key", str(pub), "--trusted-root", str(root)]
    code, out = _run(capsys, tmp_path, fake.key_message_bundle(art, key), *args)
    assert code == 0 and out["signer"]["logIndex"] == 7, out
    other = ec.generate_private_key(ec.SECP256R1())
    code, out = _run(capsys, tmp_path, fake.key_message_bundle(art, key, logged_key=other), *args)
    assert code == 1 and "not the given key" in json.dumps(out), out
    code, out = _run(capsys, tmp_path, fake.key_message_bundle(art, key, logged_digest=b"\x01" * 32), *args)
    assert code == 1 and "artifact hash" in json.dumps(out), out


# --- identity rules ----------------------------------------------------------------------------


def test_rule_flags_and_regexp_are_whole_value() -> None:
    assert rule_from_flags(None, None, None, None) is None
    with pytest.raises(UsageError):
        rule_from_flags("a", "b", GITHUB_ISSUER, None)
    with pytest.raises(UsageError):
        rule_from_flags("a", None, GITHUB_ISSUER, "x")
    rule = rule_from_flags(None, r"https://github\.com/org/.*", None, r"https://token\..*")
    assert rule is not None
    assert rule.matches(["https://github.com/org/repo/.github/workflows/r.yml@refs/tags/v1"], GITHUB_ISSUER)
    # a pattern is anchored: a look-alike that merely contains the text does not match
    assert not rule.matches(["https://evil.example/https://github.com/org/x"], GITHUB_ISSUER)
    assert not rule.matches(["https://github.com/org/x"], "https://evil.example/https://token.x")
    assert not rule.matches(["https://github.com/org/x"], None)
    exact = IdentityRule(issuer=GITHUB_ISSUER, subject="a@example.com")
    assert exact.matches(["x", "a@example.com"], GITHUB_ISSUER)
    assert not exact.matches(["A@example.com"], GITHUB_ISSUER)


@pytest.mark.parametrize(
    "items",
    [
        [],
        "x",
        [{"issuer": GITHUB_ISSUER}],
        [{"subject": "a"}],
        [{"issuer": GITHUB_ISSUER, "subject": "a", "subjectRegExp": "a"}],
        [{"issuer": GITHUB_ISSUER, "subjectRegExp": "("}],
        [{"issuer": GITHUB_ISSUER, "subject": "a", "extra": 1}],
        [{"issuer": "", "subject": "a"}],
        [{"issuer": GITHUB_ISSUER, "subject": 5}],
        [{"issuer": GITHUB_ISSUER, "subject": "a"}] * 65,
    ],
)
def test_policy_identities_validated(items: Any, tmp_path: Path) -> None:
    doc = {"schemaVersion": "acx.verification-policy/1",
           "publishers": [{"id": "io.github.p", "identities": items}]}
    with pytest.raises(InvalidInput):  # the schema, the model or the rule refuses it, named
        pol = policy_from_json(doc, base=tmp_path, now=datetime.now(UTC), source="policy.yaml")
        policy_sigstore(pol.model, pol.source, "io.github.p")


def _model(doc: dict[str, Any]) -> VerificationPolicyDoc:
    return decode_as({"schemaVersion": "acx.verification-policy/1", **doc}, VerificationPolicyDoc,
                     document="policy")


def test_policy_sigstore(tmp_path: Path) -> None:
    assert policy_sigstore(_model({"publishers": [{"id": "p"}]}), None, "p") is None
    doc = {
        "publishers": [
            {"id": "p", "identities": [{"issuer": GITHUB_ISSUER, "subject": "s"}]},
            {"id": "q", "identities": [{"issuer": GITHUB_ISSUER, "subjectRegExp": "t.*"}]},
        ]
    }
    sig = policy_sigstore(_model(doc), str(tmp_path / "policy.yaml"), "p")
    assert sig is not None and [r.subject or r.subject_regexp for r in sig.rules] == ["s"]
    other = policy_sigstore(_model(doc), str(tmp_path / "policy.yaml"), "q")
    assert other is not None and [r.subject or r.subject_regexp for r in other.rules] == ["t.*"]
    # an artifact no policy publisher vouches for gets no identities at all (fail closed)
    assert policy_sigstore(_model(doc), str(tmp_path / "policy.yaml"), None) is None
    bad = {"publishers": [*doc["publishers"], {"id": "r", "identities": [{"issuer": GITHUB_ISSUER}]}]}
    with pytest.raises(InvalidInput):  # validated even when it is another publisher's entry
        policy_sigstore(_model(bad), None, "p")
    assert sig.trust.name.startswith("public-good production") and not sig.trust.explicit
    root = tmp_path / "root.json"
    root.write_bytes(FakeSigstore().trusted_root_bytes())
    sig = policy_sigstore(
        _model({**doc, "attestations": {"trustedRoot": "root.json"}}), str(tmp_path / "policy.yaml"), "p"
    )
    assert sig is not None and sig.trust.explicit and "root.json" in sig.trust.name
    staging = policy_sigstore(_model({"attestations": {"trustedRoot": "staging"}}), None, None)
    assert staging is not None and staging.trust.explicit and staging.rules == ()


_MEASURED = """
import runpy, sys
sys.argv = ["acx", *sys.argv[1:]]
try:
    runpy.run_module("acxoci", run_name="__main__")
finally:
    # VmHWM, this program's own peak: ru_maxrss of a vforked child also counts the parent's peak
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0].split()[1]
    print(f"maxrss-kb={hwm}", file=sys.stderr)
"""


def test_big_hostile_bundle_is_bounded(tmp_path: Path) -> None:
    """A 15 MB bundle (a giant log-entry body) is refused quickly and without a memory blow-up
    (the child's own peak RSS, reported by itself)."""
    import subprocess
    import sys
    import time

    doc = _doc("happy-path-v0.3")
    doc["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"] = "QUFB" * (15 * 1024 * 1024 // 4)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    start = time.monotonic()
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURED,
            "--json",
            "verify-blob",
            str(SUITE / "a.txt"),
            "--bundle",
            str(path),
            *KEYLESS,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - start
    peak_mb = int(r.stderr.rsplit("maxrss-kb=", 1)[1].split()[0]) / 1024
    assert r.returncode == 1 and json.loads(r.stdout)["ok"] is False, r.stdout + r.stderr
    assert elapsed < 15 and peak_mb < 300, (elapsed, peak_mb)  # measured: ~2 s, ~140 MB
