"""Keyless signing through the `sigstore` library (decision 0034): a short-lived Fulcio
certificate for the signer's OIDC identity, the signature recorded in the transparency log the
signing config names (Rekor v2 where it says so) and timestamped by its timestamp authorities.

Where an identity token may come from (decision 0034): `--identity-token-file FILE`, GitHub
Actions' OIDC token endpoint (the one ambient provider acx asks: it mints a token for this job,
through the `id` library's GitHub detector), or the interactive browser flow when a person is at a
terminal. acx reads no token from an environment variable (no `SIGSTORE_ID_TOKEN`, not even under
GitLab CI, whose `id_tokens:` are variables; no `--identity-token TEXT` on the command line):
whatever sets the environment would choose the identity acx signs as. A CI whose token is a
variable writes it to a file and names the file.

The library does the signing; acx uses its public API (`SigningContext`, `Signer.sign_dsse`,
`IdentityToken`, `Issuer`) except for signing without a transparency log (`--tlog-upload=false`),
which the library does not offer: `_TimestampOnlySigner` composes its steps (`Signer._signing_cert`,
`Signer._private_key`, `sigstore.dsse._sign`, the context's TSA clients) into a bundle whose time
comes only from the timestamp authority; and the `id` library's GitHub detector alone (its public
`detect_credential` also reads GitLab's variable). Every private name used is listed in
PRIVATE_HOOKS and checked by tests/attestation/test_keyless_signer.py.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from acxoci.attest.canonical import loads_strict
from acxoci.attest.intoto import Statement
from acxoci.errors import AuthError, InvalidInput, TransientError, UsageError
from acxoci.fsutil import read_bytes

TokenSource = Literal["file", "ambient", "interactive"]
MAX_TOKEN_BYTES = 64 * 1024
MAX_TRUST_CONFIG_BYTES = 4 * 1024 * 1024
BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json"

#: The library's private names the signing side relies on: (object, name); a name set in the
#: object's `__init__` counts (checked by a test, so an upgrade that drops one fails loudly).
PRIVATE_HOOKS: tuple[tuple[str, str], ...] = (
    ("sigstore.sign.Signer", "_signing_cert"),
    ("sigstore.sign.Signer", "_private_key"),
    ("sigstore.sign.Signer", "_signing_ctx"),
    ("sigstore.sign.SigningContext", "_tsa_clients"),
    ("sigstore.dsse", "_sign"),
    ("id._internal.oidc.ambient", "detect_github"),
)
AUDIENCE = "sigstore"
"""The audience of the tokens Fulcio accepts (the library's default client id)."""


def load_trust_config(path: Path | None) -> Any:
    """`--trust-config FILE` (a ClientTrustConfig: trusted root + signing config), else the
    public-good production instance (its TUF repository, as the library fetches it)."""
    from sigstore.models import ClientTrustConfig

    if path is None:
        try:
            return ClientTrustConfig.production()
        except Exception as exc:  # TUF fetch or parse failure
            raise TransientError(f"cannot load the public-good Sigstore trust config: {_short(exc)}",
                                 hint="give --trust-config FILE for another Sigstore deployment") from exc
    data = read_bytes(path, "trust config", limit=MAX_TRUST_CONFIG_BYTES)
    try:
        from acxoci.attest.canonical import loads_strict

        loads_strict(data, max_bytes=MAX_TRUST_CONFIG_BYTES)
        config = ClientTrustConfig.from_json(data.decode("utf-8"))
        config.signing_config  # noqa: B018 -- the library checks its services when it is built
        config.trusted_root  # noqa: B018
    except Exception as exc:  # pydantic, ValueError, the library's Error
        raise InvalidInput(f"not a usable Sigstore ClientTrustConfig: {_short(exc)}",
                           where=str(path)) from exc
    return config


def trust_config_root_bytes(path: Path) -> bytes:
    """The `trustedRoot` of a ClientTrustConfig file, as JSON bytes (what verifying commands use)."""
    from acxoci.attest.canonical import loads_strict

    data = read_bytes(path, "trust config", limit=MAX_TRUST_CONFIG_BYTES)
    try:
        doc = loads_strict(data, max_bytes=MAX_TRUST_CONFIG_BYTES)
    except Exception as exc:
        raise InvalidInput(f"not a Sigstore ClientTrustConfig: {_short(exc)}", where=str(path)) from exc
    root = doc.get("trustedRoot") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        raise InvalidInput("a ClientTrustConfig needs a trustedRoot object", where=str(path))
    return json.dumps(root).encode("utf-8")


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def identity_token(token_file: Path | None, trust: Callable[[], Any], *,
                   interactive: bool) -> tuple[Any, TokenSource]:
    """The OIDC identity token to sign with and where it came from (see the module docstring):
    the file named, else a token GitHub Actions mints for this job, else the browser flow on a
    terminal (whose issuer `trust()`'s signing config names)."""
    from id import IdentityError as AmbientError
    from id._internal.oidc.ambient import detect_github
    from sigstore.oidc import IdentityError, IdentityToken, Issuer

    if token_file is not None:
        raw = read_bytes(token_file, "identity token", limit=MAX_TOKEN_BYTES)
        try:
            return IdentityToken(raw.decode("ascii").strip()), "file"
        except (IdentityError, UnicodeDecodeError) as exc:
            raise AuthError(f"not a usable identity token: {_short(exc)}", where=str(token_file)) from exc
    try:
        ambient = detect_github(AUDIENCE)  # only where GITHUB_ACTIONS is set; no token from a variable
    except AmbientError as exc:
        raise AuthError(f"the CI's ambient OIDC provider failed: {_short(exc)}",
                        hint="in GitHub Actions give the job `permissions: id-token: write`") from exc
    if ambient is not None:
        try:
            return IdentityToken(ambient), "ambient"
        except IdentityError as exc:
            raise AuthError(f"the CI's ambient identity token is not usable: {_short(exc)}") from exc
    if not interactive:
        raise UsageError("keyless signing needs an identity token: give --identity-token-file FILE, run "
                         "in a GitHub Actions job with `permissions: id-token: write`, or run at a "
                         "terminal to sign in; or sign with --key",
                         hint="acx reads no token from an environment variable: where a CI hands one in "
                         "a variable (GitLab CI's id_tokens), write it to a file and name the file")
    try:
        return Issuer(trust().signing_config.get_oidc_url()).identity_token(), "interactive"
    except Exception as exc:  # network, user abort, the library's errors
        raise AuthError(f"interactive sign-in failed: {_short(exc)}") from exc


@dataclass(frozen=True)
class KeylessSignature:
    """One keyless signature of a statement: the bundle v0.3 and what a legacy `.att` layer needs."""

    bundle: bytes
    envelope: bytes
    certificate_pem: str
    identity: str
    issuer: str | None
    logged: bool
    timestamps: int
    rfc3161_timestamp: str | None = None


class KeylessSigner:
    """Signs statements keylessly; one certificate per signer (the library's cached key and
    certificate), requested at the first signature."""

    def __init__(self, trust: Any, token: Any, source: TokenSource, *, tlog_upload: bool = True) -> None:
        from sigstore.sign import SigningContext

        try:
            self._context = SigningContext.from_trust_config(trust)
        except Exception as exc:
            raise InvalidInput(f"the signing config cannot be used: {_short(exc)}",
                               where="--trust-config") from exc
        if not tlog_upload and not self._context._tsa_clients:
            raise UsageError("--tlog-upload=false needs a timestamp authority, and the signing config "
                             "names none")
        self._token, self.source, self.tlog_upload = token, source, tlog_upload
        self._signer: Any = None
        self.identity: str | None = None

    @property
    def label(self) -> str:
        """Who signs: the certificate's identity once one was issued, else the token's."""
        return f"keyless:{self.identity or self._token.identity}"

    def _library_signer(self) -> Any:
        if self._signer is None:
            try:
                self._signer = _timestamp_only_signer(self._token, self._context, cache=True)
            except Exception as exc:  # Fulcio refused the token, network
                raise AuthError(f"Fulcio did not issue a signing certificate: {_short(exc)}") from exc
        return self._signer

    def sign(self, statement: Statement, *, legacy: bool = False) -> KeylessSignature:
        """Sign `statement` (its JCS bytes are the DSSE payload) into a bundle v0.3; with `legacy`,
        also timestamp the `.att` layer bytes as cosign 2 does (`dev.sigstore.cosign/rfc3161timestamp`:
        a legacy layer has no place for a Rekor v2 entry, so its time comes from the TSA)."""
        from cryptography.hazmat.primitives import serialization
        from sigstore import dsse

        from acxoci.attest.errors import MalformedError
        from acxoci.attestation.identity import certificate_facts

        signer = self._library_signer()
        payload = dsse.Statement(statement.canonical_bytes())
        try:
            if self.tlog_upload:
                bundle_json = signer.sign_dsse(payload).to_json().encode("utf-8")
            else:
                bundle_json = signer.sign_dsse_timestamp_only(payload)
        except (AuthError, UsageError):
            raise
        except Exception as exc:  # Rekor, TSA or Fulcio failures
            raise TransientError(f"keyless signing failed: {_short(exc)}") from exc
        doc = loads_strict(bundle_json)
        env = doc["dsseEnvelope"]
        legacy_env = {"payloadType": env["payloadType"], "payload": env["payload"],
                      "signatures": [{"keyid": "", "sig": s["sig"]} for s in env["signatures"]]}
        legacy_bytes = json.dumps(legacy_env, separators=(",", ":")).encode("utf-8")
        stamp: str | None = None
        if legacy:
            if not self._context._tsa_clients:
                raise UsageError("a keyless legacy .att attestation needs a timestamp authority (it cannot "
                                 "carry a Rekor v2 entry), and the signing config names none; use "
                                 "--attestation-format bundle")
            client = self._context._tsa_clients[0]
            try:
                response = client.request_timestamp(legacy_bytes)
            except Exception as exc:
                raise TransientError(f"timestamp authority {client.url} failed: {_short(exc)}") from exc
            der = base64.b64encode(response.as_bytes()).decode("ascii")
            stamp = json.dumps({"SignedRFC3161Timestamp": der})
        cert = signer._signing_cert()
        try:
            facts = certificate_facts(cert)
        except MalformedError as exc:
            raise InvalidInput(f"Fulcio issued a certificate acx cannot read: {exc}", where="Fulcio") from exc
        subjects = facts.subjects
        vm = doc["verificationMaterial"]
        stamps = (vm.get("timestampVerificationData") or {}).get("rfc3161Timestamps") or []
        self.identity = subjects[0] if subjects else self._token.identity
        return KeylessSignature(
            bundle=bundle_json,
            envelope=legacy_bytes,
            certificate_pem=cert.public_bytes(serialization.Encoding.PEM).decode("ascii"),
            identity=subjects[0] if subjects else self._token.identity,
            issuer=facts.issuer, logged=bool(vm.get("tlogEntries")), timestamps=len(stamps),
            rfc3161_timestamp=stamp)


@functools.cache
def _timestamp_only_class() -> type:
    """`sigstore.sign.Signer` plus signing without a transparency log (imported lazily)."""
    from cryptography.hazmat.primitives import serialization
    from sigstore import dsse
    from sigstore.sign import Signer

    class TimestampOnly(Signer):
        def sign_dsse_timestamp_only(self, statement: Any) -> bytes:
            """The library's DSSE signing without the log: certificate, envelope, timestamps of
            the signature by every TSA of the context; at least one timestamp is required."""
            cert = self._signing_cert()
            envelope = dsse._sign(self._private_key, statement)
            sig = envelope.signature
            stamps = []
            for client in self._signing_ctx._tsa_clients:
                try:
                    stamps.append(client.request_timestamp(sig))
                except Exception as exc:  # TimestampError, network
                    raise TransientError(f"timestamp authority {client.url} failed: {_short(exc)}") from exc
            if not stamps:
                raise UsageError("--tlog-upload=false needs a timestamp authority")
            doc = {
                "mediaType": BUNDLE_V03,
                "verificationMaterial": {
                    "certificate": {"rawBytes": base64.b64encode(
                        cert.public_bytes(serialization.Encoding.DER)).decode("ascii")},
                    "tlogEntries": [],
                    "timestampVerificationData": {"rfc3161Timestamps": [
                        {"signedTimestamp": base64.b64encode(t.as_bytes()).decode("ascii")} for t in stamps]},
                },
                "dsseEnvelope": loads_strict(envelope.to_json()),
            }
            return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    return TimestampOnly


def _timestamp_only_signer(token: Any, context: Any, *, cache: bool) -> Any:
    return _timestamp_only_class()(token, context, cache)
