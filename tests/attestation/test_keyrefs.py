"""Keys that never touch disk, as cosign names them: a PKCS#11 token (SoftHSM2, a real token with
keys generated in it at test time) and `env://VAR`. An attestation signed in the token verifies
with stock cosign 2.5 and 3.1 and the public key; a cartridge's Ed25519 publisher signature is
made in the token; any other `scheme://` is refused naming what acx supports."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.errors import UsageError
from acxoci.pkcs11key import parse_pkcs11_uri
from tests.harness import env
from tests.harness.env import REPO
from tests.harness.peers import Cosign
from tests.harness.servers import Registry
from tests.harness.sigstack import clean_env

CARTRIDGE = "https://acx.dev/attestation/cartridge/v1"
MODULE = "/usr/lib/softhsm/libsofthsm2.so"
P256_PARAMS = bytes.fromhex("06082a8648ce3d030107")
ED25519_PARAMS = bytes.fromhex("130c656477617264733235353139")


def acx(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, cwd=REPO,
                          env=clean_env(**(extra or {})), timeout=300, check=False)


@pytest.fixture(scope="module")
def token(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A fresh SoftHSM2 token `acx-test` (PIN 1234) holding a P-256 key `p256` and an Ed25519 key
    `ed`, both generated inside it; the environment that points SoftHSM2 at it."""
    util = shutil.which("softhsm2-util")
    if util is None or not Path(MODULE).exists():
        env.missing("SoftHSM2 (Debian package softhsm2) is not installed; run `make peers`")
    d = tmp_path_factory.mktemp("softhsm")
    (d / "tokens").mkdir()
    conf = d / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {d / 'tokens'}\nobjectstore.backend = file\nlog.level = ERROR\n")
    hsm_env = {"SOFTHSM2_CONF": str(conf)}
    subprocess.run([str(util), "--init-token", "--free", "--label", "acx-test", "--pin", "1234",
                    "--so-pin", "5678"], check=True, capture_output=True, env={**os.environ, **hsm_env})
    script = f"""
import pkcs11
from pkcs11 import Attribute, KeyType, Mechanism
tok = pkcs11.lib({MODULE!r}).get_token(token_label="acx-test")
with tok.open(user_pin="1234", rw=True) as s:
    s.generate_keypair(KeyType.EC, 256, store=True, label="p256", mechanism=Mechanism.EC_KEY_PAIR_GEN,
                       public_template={{Attribute.EC_PARAMS: {P256_PARAMS!r}}})
    s.generate_keypair(KeyType.EC_EDWARDS, 256, store=True, label="ed",
                       mechanism=Mechanism.EC_EDWARDS_KEY_PAIR_GEN,
                       public_template={{Attribute.EC_PARAMS: {ED25519_PARAMS!r}}})
"""
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ, **hsm_env})
    return hsm_env


def uri(obj: str) -> str:
    return f"pkcs11:token=acx-test;object={obj}?module-path={MODULE}&pin-value=1234"


def public_pem(token: dict[str, str], obj: str, out: Path) -> Path:
    """The token key's public half, read through acx's PKCS#11 loader (the private half stays)."""
    code = ("import sys; from acxoci.keyfiles import load_key_reference; "
            "sys.stdout.write(load_key_reference(sys.argv[1]).public().spki_pem())")
    r = subprocess.run([sys.executable, "-c", code, uri(obj)], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, **token}, check=True)
    out.write_text(r.stdout)
    return out


@pytest.mark.interop
def test_pkcs11_attestation_verifies_with_cosign_and_the_public_key(
        token: dict[str, str], distribution_registry: Registry, cosign2: Cosign, cosign3: Cosign,
        tmp_path: Path, vectors_dir: Path) -> None:
    cart = tmp_path / "a.acx"
    cart.write_bytes((vectors_dir / "sample" / "sample.acx").read_bytes())
    ref = f"{distribution_registry.host}/acx/hsm:v1"
    r = acx("--json", "push", str(cart), ref, "--sign", "--key", uri("p256"), extra=token)
    assert r.returncode == 0, r.stdout + r.stderr
    subject = f"{distribution_registry.host}/acx/hsm@{json.loads(r.stdout)['digest']}"
    pub = public_pem(token, "p256", tmp_path / "hsm.pub.pem")
    cosign2.verify_attestation(subject, pub, CARTRIDGE)
    cosign3.verify_attestation(subject, pub, CARTRIDGE)
    assert acx("verify", subject, "--key", str(pub)).returncode == 0
    other = tmp_path / "other.pem"
    assert acx("-q", "key", "generate", "--type", "p256", "-o", str(other)).returncode == 0
    wrong = cosign3.verify_attestation(subject, tmp_path / "other.pub.pem", CARTRIDGE, check=False)
    assert wrong.returncode != 0


def test_pkcs11_ed25519_key_signs_a_cartridge(token: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "hsm.acx"
    r = acx("--json", "cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(out),
            "--publisher", "dev.acxoci.demo", "--key", uri("ed"), "--created-at", "2026-11-30T00:00:00Z",
            extra=token)
    assert r.returncode == 0, r.stdout + r.stderr
    pub = public_pem(token, "ed", tmp_path / "ed.pub.pem")
    keyid = json.loads(r.stdout)["keyId"]
    shown = acx("--json", "key", "inspect", str(pub))
    assert shown.returncode == 0 and keyid in shown.stdout
    v = acx("--json", "cartridge", "verify", str(out))
    assert v.returncode in (0, 1) and '"tampered"' not in v.stdout, v.stdout  # signature verifies
    assert keyid in v.stdout


def test_env_key_reference_signs_and_a_kms_reference_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    assert acx("-q", "key", "generate", "-o", str(key)).returncode == 0
    blob = tmp_path / "notes.txt"
    blob.write_text("hello\n")
    pred = tmp_path / "p.json"
    pred.write_text("{}")
    out = tmp_path / "b.json"
    r = acx("--json", "attest-blob", str(blob), "--predicate", str(pred), "--bundle", str(out),
            "--key", "env://ACX_TEST_SIGNING_KEY", extra={"ACX_TEST_SIGNING_KEY": key.read_text()})
    assert r.returncode == 0, r.stdout + r.stderr
    pub = tmp_path / "k.pub.pem"
    assert acx("verify-blob", str(blob), "--bundle", str(out), "--key", str(pub)).returncode == 0
    unset = acx("--json", "attest-blob", str(blob), "--predicate", str(pred), "--bundle", str(out),
                "--key", "env://ACX_TEST_NOT_SET")
    assert unset.returncode == 5 and "ACX_TEST_NOT_SET" in unset.stdout
    for ref in ("awskms:///alias/release", "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k",
                "hashivault://transit-key"):
        refused = acx("--json", "attest-blob", str(blob), "--predicate", str(pred), "--bundle", str(out),
                      "--key", ref)
        assert refused.returncode == 2, refused.stdout
        msg = json.loads(refused.stdout)["error"]["message"]
        assert "unsupported key reference" in msg and "env://VAR" in msg and "pkcs11:" in msg, msg


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.text(max_size=60))
def test_hostile_pkcs11_uris_are_usage_errors_never_crashes(tail: str) -> None:
    with contextlib.suppress(UsageError):  # anything else (a crash) fails the test
        parse_pkcs11_uri("pkcs11:" + tail)


def test_pkcs11_uri_parts() -> None:
    u = parse_pkcs11_uri("pkcs11:token=acx%20test;id=%01%02?module-path=/m.so&pin-source=file:/p")
    assert (u.token, u.id, u.module_path) == ("acx test", b"\x01\x02", "/m.so")
    assert (u.pin_source, u.pin) == ("file:/p", None)
    assert "1234" not in parse_pkcs11_uri(uri("p256")).describe()  # the PIN is never shown
    for bad in ("pkcs11:object=a;object=b", "pkcs11:slot-id=x;object=a", "pkcs11:token=t", "pkcs11:bogus=1",
                "pkcs11:object=a?pin=1"):
        with pytest.raises(UsageError):
            parse_pkcs11_uri(bad)


@pytest.mark.parametrize("bad", [
    "pkcs11:slot-id=²;object=x?module-path=/nonexistent",  # str.isdigit() says yes, int() says no
    "pkcs11:slot-id=٣;object=x", "pkcs11:slot-id=" + "9" * 21 + ";object=x",
    "pkcs11:object=x?pin-value=a&pin-value=b", "pkcs11:object=x?module-path=/a&module-path=/b",
])
def test_unicode_digits_and_repeated_query_attributes_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_pkcs11_uri(bad)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(max_size=24))
def test_any_slot_id_is_a_number_or_a_usage_error(slot: str) -> None:
    with contextlib.suppress(UsageError):
        assert isinstance(parse_pkcs11_uri(f"pkcs11:object=x;slot-id={slot}").slot_id, int)


def test_a_unicode_digit_slot_is_exit_2_on_the_command_line(tmp_path: Path) -> None:
    blob, pred = tmp_path / "f", tmp_path / "p.json"
    blob.write_text("hi\n")
    pred.write_text("{}")
    r = acx("--json", "attest-blob", str(blob), "--predicate", str(pred), "--bundle",
            str(tmp_path / "o.json"), "--key", "pkcs11:slot-id=²;object=x?module-path=/nonexistent")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["kind"] == "usage", r.stdout + r.stderr
