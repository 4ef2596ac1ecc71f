"""Keyless attestations on the OCI path.

1. A conformance DSSE bundle (a real public-good Sigstore signature) attached as a bundle
   referrer in an OCI layout: `acx verify` applies the identity policy there exactly as
   `verify-blob` does (right identity verifies; wrong identity, wrong issuer, an expired
   certificate, a mismatched envelope do not; nothing is reported `unsupported`).
2. A throwaway Sigstore instance (tests/harness/sigstore_pki.py) signing a real cartridge's
   attestation: `acx verify` and `acx install` accept it only when the policy's identity
   matches, and refuse a wrong identity, a wrong issuer, an expired certificate without a
   verified time, and a tampered artifact. The install record keeps identity, issuer, log
   index and integrated time.
"""

from __future__ import annotations

import hashlib
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.attestation.content import cartridge_facts
from acxoci.attestation.formats import (
    DSSE_MEDIA_TYPE,
    LegacyLayer,
    build_legacy_manifest,
    legacy_tag,
)
from acxoci.attestation.statements import CARTRIDGE_PREDICATE_TYPE, cartridge_statement
from acxoci.install.install import install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.oci.descriptor import OCI_MANIFEST, Descriptor
from acxoci.oci.layout import LayoutStore
from tests.harness.attestations import attach_bundle
from tests.harness.cli import acx_json
from tests.harness.env import SHARED, missing
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    blob_path,
    make_cartridge,
    push_cartridge,
    registry_entry,
    tree_hash,
    write_policy,
    write_registry,
)
from tests.harness.sigstore_pki import GITHUB_ISSUER, FakeSigstore

SUITE = SHARED / "conformance" / "sigstore-bundle-verify"
BEACON = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
    ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
RELEASE = "https://github.com/example-acx/carts/.github/workflows/release.yml@refs/tags/v1.0.0"
RELEASE_RE = r"https://github\.com/example-acx/carts/\.github/workflows/release\.yml@refs/tags/v.*"


def _push(layout: LayoutStore, data: bytes, media_type: str) -> Descriptor:
    desc = Descriptor(media_type, "sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    if not layout.exists(desc):
        layout.push(desc, io.BytesIO(data))
    return desc


def blob_subject(layout_dir: Path, artifact: bytes) -> Descriptor:
    """A layout whose one index entry is `artifact` itself (a plain blob, as `oras` may list one),
    so an attestation about the file's digest is an attestation about that entry."""
    desc = Descriptor("text/plain", "sha256:" + hashlib.sha256(artifact).hexdigest(), len(artifact))
    path = blob_path(layout_dir, desc.digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(artifact)
    (layout_dir / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": desc.media_type, "digest": desc.digest, "size": desc.size}],
    }
    (layout_dir / "index.json").write_text(json.dumps(index))
    return desc


def _conformance(name: str) -> Path:
    case = SUITE / name
    if not case.is_dir():
        missing(f"conformance case {name} not found under {SUITE}")
    return case


def _verify(capsys: pytest.CaptureFixture[str], ref: str, *extra: str) -> tuple[int, Any]:
    return acx_json(capsys, "verify", ref, "--no-content", *extra)


# --- 1. a public-good bundle through the OCI path ------------------------------------------------


@pytest.fixture
def beacon_layout(tmp_path: Path) -> tuple[Path, Descriptor]:
    case = _conformance("happy-path-intoto-in-dsse-v3")
    layout = tmp_path / "layout"
    subject = blob_subject(layout, (SUITE / "a.txt").read_bytes())
    attach_bundle(layout, subject, (case / "bundle.sigstore.json").read_bytes())
    return layout, subject


def test_conformance_bundle_as_referrer_applies_identity(
    capsys: pytest.CaptureFixture[str], beacon_layout: tuple[Path, Descriptor]
) -> None:
    layout, subject = beacon_layout
    ref = f"oci-layout:{layout}@{subject.digest}"
    code, out = _verify(
        capsys, ref, "--certificate-identity", BEACON, "--certificate-oidc-issuer", GITHUB_ISSUER
    )
    assert code == 0, out
    att = out["attestations"][0]
    assert att["verdict"] == "verified" and att["signer"]["certificateIdentity"] == BEACON
    assert att["signer"]["certificateIssuer"] == GITHUB_ISSUER and att["signer"]["logIndex"] > 0
    code, out = _verify(
        capsys,
        ref,
        "--certificate-identity-regexp",
        r"https://github\.com/sigstore-conformance/.*",
        "--certificate-oidc-issuer",
        GITHUB_ISSUER,
    )
    assert code == 0, out
    # wrong identity, wrong issuer: the same bytes no longer verify
    code, out = _verify(
        capsys,
        ref,
        "--certificate-identity",
        BEACON.replace("main", "evil"),
        "--certificate-oidc-issuer",
        GITHUB_ISSUER,
    )
    assert code == 1 and out["attestations"][0]["verdict"] == "unverified"
    assert "matches none of" in out["attestations"][0]["reasons"][0]
    code, out = _verify(
        capsys,
        ref,
        "--certificate-identity",
        BEACON,
        "--certificate-oidc-issuer",
        "https://accounts.google.com",
    )
    assert code == 1 and out["attestations"][0]["verdict"] == "unverified"
    # a key alone does not verify a keyless bundle, and nothing says "unsupported"
    pub = layout.parent / "k.pub"
    pub.write_text(generate_ed25519().public().spki_pem())
    code, out = _verify(capsys, ref, "--key", str(pub))
    assert code == 1 and out["attestations"][0]["verdict"] == "unverified"
    assert "unsupported" not in json.dumps(out)


@pytest.mark.parametrize(
    "case_name",
    ["intoto-expired-certificate_fail", "dsse-mismatch-envelope_fail", "intoto-log-entry-mismatch_fail"],
)
def test_conformance_failures_through_oci(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case_name: str
) -> None:
    case = _conformance(case_name)
    artifact = case / "artifact" if (case / "artifact").is_file() else SUITE / "a.txt"
    layout = tmp_path / "layout"
    subject = blob_subject(layout, artifact.read_bytes())
    attach_bundle(layout, subject, (case / "bundle.sigstore.json").read_bytes())
    args = ["--certificate-identity", BEACON, "--certificate-oidc-issuer", GITHUB_ISSUER]
    if (case / "identity").is_file():
        args[1] = (case / "identity").read_text().strip()
    if (case / "trusted_root.json").is_file():
        args += ["--trusted-root", str(case / "trusted_root.json")]
    code, out = _verify(capsys, f"oci-layout:{layout}@{subject.digest}", *args)
    assert code == 1, out
    assert out["attestations"][0]["verdict"] in ("unverified", "rejected")


# --- 2. a test Sigstore instance, a real cartridge, acx verify and acx install --------------------


class Keyless:
    """A signed cartridge in a layout, a test Sigstore instance and its trusted root file."""

    def __init__(self, tmp: Path, vectors: Path) -> None:
        self.tmp = tmp
        self.key = generate_ed25519()
        self.acx = make_cartridge(vectors, tmp / "c.acx", self.key)
        self.layout = tmp / "layout"
        self.desc = push_cartridge(self.layout, self.acx, "v1")
        self.registry = write_registry(tmp / "trust.json", [registry_entry(self.key, PUBLISHER)])
        self.sigstore = FakeSigstore(start=NOW - timedelta(days=2))
        self.root = tmp / "root.json"
        self.root.write_bytes(self.sigstore.trusted_root_bytes())
        self.store = Store(tmp / "store")

    @property
    def ref(self) -> str:
        return f"oci-layout:{self.layout}:v1"

    def statement(self, subject: str | None = None) -> bytes:
        layer = "sha256:" + hashlib.sha256(self.acx.read_bytes()).hexdigest()
        facts = cartridge_facts(self.acx, layer, now=NOW)
        return cartridge_statement(subject or self.desc.digest, "acx/sample", facts).canonical_bytes()

    def attach(
        self, *, identity: str = RELEASE, issuer: str = GITHUB_ISSUER, subject: str | None = None, **kw: Any
    ) -> None:
        bundle = self.sigstore.dsse_bundle(self.statement(subject), identity, issuer, **kw)
        attach_bundle(self.layout, self.desc, bundle, CARTRIDGE_PREDICATE_TYPE)

    def policy(self, identity: dict[str, str] | None = None) -> Path:
        ident = identity or {"issuer": GITHUB_ISSUER, "subjectRegExp": RELEASE_RE}
        return write_policy(
            self.tmp / "policy.yaml",
            {
                "publishers": [
                    {"id": PUBLISHER, "trustRegistries": [str(self.registry)], "identities": [ident]}
                ],
                "attestations": {
                    "formats": ["bundle"],
                    "predicateTypes": [CARTRIDGE_PREDICATE_TYPE],
                    "trustedRoot": "root.json",
                },
            },
        )

    def install(self, policy: Path) -> Any:
        return install(self.ref, policy=load_policy(policy, now=NOW), store=self.store, now=NOW)

    def verify(self, capsys: pytest.CaptureFixture[str], *identity: str) -> tuple[int, Any]:
        args = identity or (
            "--certificate-identity-regexp",
            RELEASE_RE,
            "--certificate-oidc-issuer",
            GITHUB_ISSUER,
        )
        return acx_json(
            capsys,
            "verify",
            self.ref,
            "--trusted-root",
            str(self.root),
            "--now",
            NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
            *args,
        )


@pytest.fixture
def keyless(tmp_path: Path, vectors_dir: Path) -> Keyless:
    return Keyless(tmp_path, vectors_dir)


def _refused_attestations(k: Keyless, policy: Path) -> str:
    before = tree_hash(k.store.root)
    out = k.install(policy)
    assert out.status == "refused", out.to_json()
    failed = {c.id: c for c in out.failed}
    assert "attestations" in failed and failed["attestations"].kind == "missing_attestation", out.to_json()
    assert tree_hash(k.store.root) == before
    return json.dumps(out.to_json())


def test_keyless_attestation_accepted_when_identity_matches(
    keyless: Keyless, capsys: pytest.CaptureFixture[str]
) -> None:
    k = keyless
    k.attach()
    code, out = k.verify(capsys)
    assert code == 0, out
    att = next(a for a in out["attestations"] if a["format"] == "bundle")
    assert att["content"]["ok"] is True and att["signer"]["certificateIdentity"] == RELEASE
    result = k.install(k.policy())
    assert result.status == "installed", [c.to_json() for c in result.failed]
    (signed,) = result.record["attestations"]
    assert signed["signer"] == {
        "mode": "keyless",
        "certificateIdentity": RELEASE,
        "certificateIssuer": GITHUB_ISSUER,
        "logIndex": 7,
        "integratedTime": int((k.sigstore.start + timedelta(minutes=1)).timestamp()),
        "verifiedTimes": [
            (k.sigstore.start + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            + " (transparency_service)"
        ],
    }
    assert signed["keyid"] == f"keyless:{RELEASE}"


def test_wrong_identity_refused(keyless: Keyless, capsys: pytest.CaptureFixture[str]) -> None:
    k = keyless
    k.attach(identity="https://github.com/attacker/carts/.github/workflows/release.yml@refs/tags/v1.0.0")
    code, out = k.verify(capsys)
    assert code == 1 and "matches none of" in json.dumps(out)
    assert "matches none of" in _refused_attestations(k, k.policy())


def test_wrong_issuer_refused(keyless: Keyless, capsys: pytest.CaptureFixture[str]) -> None:
    k = keyless
    k.attach(issuer="https://accounts.google.com")
    code, out = k.verify(capsys)
    assert code == 1, out
    _refused_attestations(k, k.policy())


@pytest.mark.parametrize("how", ["logged-after-expiry", "no-signed-time"])
def test_expired_certificate_without_verified_time_refused(
    keyless: Keyless, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    k = keyless
    if how == "logged-after-expiry":  # the only verified time is after the 10-minute certificate
        k.attach(integrated=k.sigstore.start + timedelta(hours=1))
    else:  # no SET and no timestamp: nothing says when it was signed
        k.attach(promise=False)
    code, out = k.verify(capsys)
    assert code == 1, out
    _refused_attestations(k, k.policy())


def test_tampered_artifact_refused(keyless: Keyless, capsys: pytest.CaptureFixture[str]) -> None:
    k = keyless
    # the identity signed a statement about another artifact: rejected, never verified
    k.attach(subject="sha256:" + "ab" * 32)
    code, out = k.verify(capsys)
    assert code == 1 and out["attestations"][0]["verdict"] == "rejected"
    assert "does not match the manifest digest" in json.dumps(out)
    _refused_attestations(k, k.policy())


def test_tampered_content_refused(keyless: Keyless, capsys: pytest.CaptureFixture[str]) -> None:
    k = keyless
    k.attach()
    layer = json.loads(blob_path(k.layout, k.desc.digest).read_bytes())["layers"][0]["digest"]
    path = blob_path(k.layout, layer)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    code, out = k.verify(capsys)
    assert code == 1 and "tampered" in json.dumps(out)
    out2 = k.install(k.policy())
    assert out2.status == "refused"


def test_release_style_policy_regexp_rejects_branch(keyless: Keyless) -> None:
    """ "A tag of release.yml of github.com/org/repo": a main-branch run of the same workflow fails,
    and an exact subject accepts only that one tag."""
    k = keyless
    k.attach(identity=RELEASE.replace("refs/tags/v1.0.0", "refs/heads/main"))
    _refused_attestations(k, k.policy())
    _refused_attestations(k, k.policy({"issuer": GITHUB_ISSUER, "subject": RELEASE}))
    assert (
        k.install(
            k.policy(
                {"issuer": GITHUB_ISSUER, "subject": RELEASE.replace("refs/tags/v1.0.0", "refs/heads/main")}
            )
        ).status
        == "installed"
    )


def test_now_is_used_only_for_content(keyless: Keyless) -> None:
    """The certificate expired long before NOW; the SET-verified signing time is what counts."""
    k = keyless
    k.attach()
    assert k.sigstore.start + timedelta(minutes=10) < NOW.replace(tzinfo=UTC)
    assert k.install(k.policy()).status == "installed"
    assert datetime.now(UTC) > k.sigstore.start


# --- cosign 2's legacy keyless .att layers ---------------------------------------------------------


def attach_legacy(k: Keyless, envelope: bytes, annotations: dict[str, str]) -> None:
    """Write a cosign-2-shaped `sha256-<hex>.att` manifest with one keyless layer."""
    layout = LayoutStore(k.layout)
    ann = {"dev.cosignproject.cosign/signature": "", "predicateType": CARTRIDGE_PREDICATE_TYPE, **annotations}
    layer = Descriptor(
        DSSE_MEDIA_TYPE, "sha256:" + hashlib.sha256(envelope).hexdigest(), len(envelope), annotations=ann
    )
    _push(layout, envelope, DSSE_MEDIA_TYPE)
    built = build_legacy_manifest([LegacyLayer(layer, CARTRIDGE_PREDICATE_TYPE)])
    for blob in built.blobs:
        _push(layout, blob.data, blob.desc.media_type)
    desc = _push(layout, built.manifest.data, OCI_MANIFEST)
    layout.tag(desc, legacy_tag(k.desc.digest))


def test_legacy_keyless_att_layer(keyless: Keyless, capsys: pytest.CaptureFixture[str]) -> None:
    k = keyless
    envelope, ann = k.sigstore.legacy_att_layer(k.statement(), RELEASE)
    attach_legacy(k, envelope, ann)
    code, out = k.verify(capsys)
    assert code == 0, out
    (att,) = out["attestations"]
    assert att["format"] == "legacy" and att["verdict"] == "verified" and att["content"]["ok"] is True
    assert att["signer"]["certificateIdentity"] == RELEASE and att["signer"]["logIndex"] == 9
    policy = write_policy(
        k.tmp / "legacy.yaml",
        {
            "publishers": [
                {
                    "id": PUBLISHER,
                    "trustRegistries": [str(k.registry)],
                    "identities": [{"issuer": GITHUB_ISSUER, "subjectRegExp": RELEASE_RE}],
                }
            ],
            "attestations": {"formats": ["legacy"], "trustedRoot": "root.json"},
        },
    )
    result = k.install(policy)
    assert result.status == "installed", [c.to_json() for c in result.failed]
    assert result.record["attestations"][0]["signer"]["certificateIssuer"] == GITHUB_ISSUER
    code, out = k.verify(
        capsys, "--certificate-identity", RELEASE, "--certificate-oidc-issuer", "https://accounts.google.com"
    )
    assert code == 1 and out["attestations"][0]["verdict"] == "unverified"


@pytest.mark.parametrize("damage", ["set", "certificate", "body", "late", "no-bundle"])
def test_legacy_keyless_att_damaged(
    keyless: Keyless, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    k = keyless
    envelope, ann = k.sigstore.legacy_att_layer(
        k.statement(), RELEASE, integrated=k.sigstore.start + timedelta(hours=2) if damage == "late" else None
    )
    rekor = json.loads(ann["dev.sigstore.cosign/bundle"])
    if damage == "set":
        rekor["Payload"]["logIndex"] += 1
    elif damage == "body":  # same signer, validly signed, but not the envelope that was logged
        leaf = k.sigstore.leaf(RELEASE)
        _, ann = k.sigstore.legacy_att_layer(k.statement(), RELEASE, leaf=leaf)
        envelope, _ = k.sigstore.legacy_att_layer(k.statement("sha256:" + "ab" * 32), RELEASE, leaf=leaf)
        rekor = json.loads(ann["dev.sigstore.cosign/bundle"])
    elif damage == "certificate":
        _, ann2 = k.sigstore.legacy_att_layer(k.statement(), RELEASE)
        ann["dev.sigstore.cosign/certificate"] = ann2["dev.sigstore.cosign/certificate"]
    ann["dev.sigstore.cosign/bundle"] = "" if damage == "no-bundle" else json.dumps(rekor)
    attach_legacy(k, envelope, ann)
    code, out = k.verify(capsys)
    assert code == 1, out
    assert out["attestations"][0]["verdict"] == "unverified", out
    expect = {
        "set": "keyring",
        "certificate": "DSSE",
        "body": "payload hash",
        "late": "not valid at validation",
        "no-bundle": "invalid JSON",
    }[damage]
    assert expect in out["attestations"][0]["reasons"][0], out["attestations"][0]["reasons"]


def test_another_policy_publishers_identity_does_not_vouch_for_this_artifact(keyless: Keyless) -> None:
    """The release identity is listed, but under another policy publisher: the attestation of this
    publisher's artifact stays unverified and the install is refused (trust table: attestation
    signers count only for the artifact's own publisher)."""
    k = keyless
    k.attach()
    policy = write_policy(
        k.tmp / "policy.yaml",
        {
            "publishers": [
                {"id": PUBLISHER, "trustRegistries": [str(k.registry)]},
                {"id": "dev.example.other", "trustRegistries": [str(k.registry)],
                 "identities": [{"issuer": GITHUB_ISSUER, "subjectRegExp": RELEASE_RE}]},
            ],
            "attestations": {"formats": ["bundle"], "predicateTypes": [CARTRIDGE_PREDICATE_TYPE],
                             "trustedRoot": "root.json"},
        },
    )
    _refused_attestations(k, policy)
    assert k.install(k.policy()).status == "installed"  # the same identity under its own publisher
