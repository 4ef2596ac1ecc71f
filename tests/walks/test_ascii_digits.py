"""Digits are ASCII digits, and an anchored shape is matched whole. `str.isdigit()` and `\\d` also
accept other scripts' digits (`٣`, `۳`) and superscripts (`²`): `int()` reads the first kind,
which other parsers refuse (a document one verifier accepts and another rejects), and raises
ValueError on the second (an untyped crash on a header a registry sends). `re.match` with `$`
also accepts a trailing newline. Each parser that met one of these is tried with them here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from acxoci.attest import trust
from acxoci.attest.errors import MalformedError
from acxoci.cartridge import build, capabilities
from acxoci.errors import AcxError, UsageError
from acxoci.exchange import status
from acxoci.exchange.order import semver_cmp
from acxoci.level.policy import parse_requirement
from acxoci.oci.descriptor import OCI_MANIFEST
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.retry import retry_after_seconds
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import resolve_manifest
from acxoci.workflow import signed
from acxoci.workflow.conditions import UNDEFINED, resolve
from tests.harness.evilregistry import EvilServer, Reply, Request

ARABIC = "٢٠٢٦-١٢-٠١T٠٠:٠٠:٠٠Z"  # Arabic-Indic digits
PERSIAN_OFFSET = "2026-12-01T00:00:00+۰۱:۰۰"  # Extended Arabic-Indic digits in the offset
GOOD = "2026-12-01T00:00:00Z"


@pytest.mark.parametrize("value", [ARABIC, PERSIAN_OFFSET, GOOD + "\n", "2026-12-0²T00:00:00Z"])
def test_rfc3339_takes_ascii_digits_only(value: str) -> None:
    with pytest.raises(MalformedError, match="is not RFC 3339"):
        trust.parse_rfc3339(value, where="notAfter")
    assert status.parse_time(value) is None
    assert trust.RFC3339_RE.fullmatch(value) is None


def test_every_document_kind_checks_timestamps_with_the_one_pattern() -> None:
    """One shape for RFC 3339 (cartridge build, capabilities, exchange status, signed workflows):
    a copy with `\\d` in one of them is how the digit class came back."""
    assert build.RFC3339_RE is trust.RFC3339_RE
    assert capabilities._DATE_RE is trust.RFC3339_RE
    assert status.RFC3339_RE is trust.RFC3339_RE
    assert signed.RFC3339_RE is trust.RFC3339_RE
    assert trust.parse_rfc3339(GOOD).year == 2026


@pytest.mark.parametrize("header", ["²", "٣", "³0", " ¹ "])
def test_retry_after_with_other_digits_is_ignored(header: str) -> None:
    assert retry_after_seconds(header) is None
    assert retry_after_seconds("3") == 3.0


def test_a_condition_path_takes_ascii_indexes_only() -> None:
    variables = {"a": [10, 20, 30]}
    assert resolve("a.2", variables) == 30
    assert resolve("a.٢", variables) is UNDEFINED
    assert resolve("a.²", variables) is UNDEFINED


@pytest.mark.parametrize("text", ["²", "١٥", "1²"])
def test_a_level_requirement_takes_ascii_digits_only(text: str) -> None:
    with pytest.raises(UsageError, match="is neither a number nor a tier"):
        parse_requirement(text)
    assert parse_requirement("15") == 15


def test_a_semver_is_matched_whole() -> None:
    with pytest.raises(ValueError, match="invalid SemVer"):
        semver_cmp("1.0.0\n", "1.0.0")
    with pytest.raises(ValueError, match="invalid SemVer"):
        semver_cmp("1.0.٣", "1.0.0")
    assert semver_cmp("1.0.1", "1.0.0") == 1


@pytest.fixture
def odd_length() -> Iterator[EvilServer]:
    """A registry that answers a manifest GET with `Content-Length: ²` (close-delimited body),
    after one 429 with `Retry-After: ²`."""
    body = (
        b'{"schemaVersion":2,"mediaType":"' + OCI_MANIFEST.encode() + b'","config":{"mediaType":'
        b'"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc2'
        b'1fe77e8310c060f61caaff8a","size":2},"layers":[]}'
    )
    calls = {"n": 0}

    def script(req: Request) -> Reply:
        if "/manifests/" not in req.path:
            return Reply(200, {"Content-Type": "application/json"}, b"{}")
        calls["n"] += 1
        if calls["n"] == 1:
            return Reply(429, {"Retry-After": "²"}, b"")
        return Reply(200, {"Content-Type": OCI_MANIFEST, "Content-Length": "²"}, iter([body]))

    server = EvilServer(script)
    try:
        yield server
    finally:
        server.stop()


def test_a_registry_sending_other_digits_in_headers_gets_a_verdict(odd_length: EvilServer) -> None:
    target = RegistryTarget(parse_reference(f"{odd_length.host}/a/b:v1"), RemoteOptions(plain_http=True))
    try:
        desc = resolve_manifest(target, "v1")
    except AcxError:
        return  # a typed refusal is a verdict too
    assert desc.media_type == OCI_MANIFEST
    assert desc.data is not None and b'"layers":[]' in desc.data


@pytest.mark.parametrize("index", ["٣", "²", "1٣", "3\n", "", "1234567890123"])
def test_a_status_list_index_takes_ascii_digits_only(index: str) -> None:
    """`statusListIndex` is a base-10 string of at most 12 ASCII digits: Arabic-Indic digits read
    as 3 here would name a bit other verifiers refuse to find; a superscript crashed int()."""
    from acxoci.attest.statuslist import StatusEntry

    doc = {"id": "https://example.test/status/1#3", "type": "BitstringStatusListEntry",
           "statusPurpose": "revocation", "statusListIndex": index,
           "statusListCredential": "https://example.test/status/1"}
    with pytest.raises(MalformedError, match="is not a base-10 string"):
        StatusEntry.from_json(doc)
    assert StatusEntry.from_json({**doc, "statusListIndex": "3"}).index == 3


def test_a_proof_created_time_takes_ascii_digits_only() -> None:
    from acxoci.attest.vc import _check_options

    options = {"type": "DataIntegrityProof", "cryptosuite": "eddsa-jcs-2022",
               "verificationMethod": "did:web:example.test#key-1", "proofPurpose": "assertionMethod"}
    _check_options({**options, "created": GOOD})
    with pytest.raises(MalformedError, match="is not an XML Schema dateTime"):
        _check_options({**options, "created": ARABIC})
