"""Keyless signer identities: the rule a Fulcio certificate must meet (cosign's
`--certificate-identity[-regexp]` / `--certificate-oidc-issuer[-regexp]`, and the install policy's
`publishers[].identities[]`), and reading the identity out of a certificate. Pure: no I/O.

Regular expressions are matched against the whole value (`re.fullmatch`), unlike cosign's Go
`MatchString`, so `^…$` is implied and a pattern cannot accidentally match a substring.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, ObjectIdentifier

from acxoci.attest.errors import MalformedError
from acxoci.attest.typed import opt
from acxoci.documents.verification_policy import VerificationPolicyDocPublishersItemIdentitiesItem
from acxoci.errors import InvalidInput, UsageError

OIDC_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OIDC_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
SIGSTORE_OTHERNAME = ObjectIdentifier("1.3.6.1.4.1.57264.1.7")
#: Fulcio's CI extensions (1.3.6.1.4.1.57264.1.N, DER UTF8String), by FulcioFacts field.
FULCIO_CI_EXTENSIONS = {"build_signer_uri": 9, "source_repository_uri": 12, "source_repository_digest": 13,
                        "source_repository_ref": 14, "build_config_uri": 18, "run_invocation_uri": 21}
MAX_PATTERN = 1024
MAX_IDENTITIES = 64


@dataclass(frozen=True)
class IdentityRule:
    """One acceptable signer: an issuer (exact or pattern) and a subject (exact or pattern)."""

    issuer: str | None = None
    issuer_regexp: str | None = None
    subject: str | None = None
    subject_regexp: str | None = None

    def describe(self) -> str:
        """Human form, e.g. `subject ~ https://github.com/org/.* from https://token…`."""
        who = f"subject {self.subject}" if self.subject is not None else f"subject ~ {self.subject_regexp}"
        iss = f"issuer {self.issuer}" if self.issuer is not None else f"issuer ~ {self.issuer_regexp}"
        return f"{who}, {iss}"

    def to_json(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.issuer is not None:
            out["issuer"] = self.issuer
        if self.issuer_regexp is not None:
            out["issuerRegExp"] = self.issuer_regexp
        if self.subject is not None:
            out["subject"] = self.subject
        if self.subject_regexp is not None:
            out["subjectRegExp"] = self.subject_regexp
        return out

    def matches(self, subjects: Sequence[str], issuer: str | None) -> bool:
        """True when the certificate's issuer and one of its subjects (SANs) meet this rule."""
        if issuer is None:
            return False
        if self.issuer is not None and issuer != self.issuer:
            return False
        if self.issuer_regexp is not None and re.fullmatch(self.issuer_regexp, issuer) is None:
            return False
        if self.subject is not None:
            return self.subject in subjects
        return any(re.fullmatch(self.subject_regexp or "", s) is not None for s in subjects)


def _pattern(value: str, what: str) -> str:
    if len(value) > MAX_PATTERN:
        raise UsageError(f"{what} is longer than {MAX_PATTERN} characters")
    try:
        re.compile(value)
    except re.error as exc:
        raise UsageError(f"{what} is not a valid regular expression: {exc}") from exc
    return value


def rule_from_flags(identity: str | None, identity_regexp: str | None, issuer: str | None,
                    issuer_regexp: str | None) -> IdentityRule | None:
    """The rule given by cosign's four flags; None when none is given. Like cosign, a keyless
    check needs exactly one subject flag and exactly one issuer flag."""
    if identity is None and identity_regexp is None and issuer is None and issuer_regexp is None:
        return None
    if (identity is None) == (identity_regexp is None):
        raise UsageError("give exactly one of --certificate-identity or --certificate-identity-regexp")
    if (issuer is None) == (issuer_regexp is None):
        raise UsageError("give exactly one of --certificate-oidc-issuer or --certificate-oidc-issuer-regexp")
    return IdentityRule(issuer, None if issuer_regexp is None else _pattern(issuer_regexp, "issuer regexp"),
                        identity, None if identity_regexp is None else _pattern(identity_regexp,
                                                                                 "identity regexp"))


def rules_from_policy(items: Sequence[VerificationPolicyDocPublishersItemIdentitiesItem], *,
                      where: str) -> tuple[IdentityRule, ...]:
    """`publishers[].identities[]` of an install policy (decoded): `{issuer, subject | subjectRegExp}`."""
    if not items:
        raise InvalidInput("identities must be a non-empty list", where=where)
    if len(items) > MAX_IDENTITIES:
        raise InvalidInput(f"more than {MAX_IDENTITIES} identities", where=where)
    out: list[IdentityRule] = []
    for i, item in enumerate(items):
        here = f"{where}[{i}]"
        subject, regexp = opt(item.subject), opt(item.subject_reg_exp)
        if not item.issuer:
            raise InvalidInput("identity needs an issuer", where=here)
        if (subject is None) == (regexp is None):
            raise InvalidInput("identity needs exactly one of subject or subjectRegExp", where=here)
        if subject is not None and not subject:
            raise InvalidInput("subject must be a non-empty string", where=here)
        if regexp is not None:
            if not regexp:
                raise InvalidInput("subjectRegExp must be a non-empty string", where=here)
            try:
                _pattern(regexp, "subjectRegExp")
            except UsageError as exc:
                raise InvalidInput(exc.message, where=here) from exc
        out.append(IdentityRule(issuer=item.issuer, subject=subject, subject_regexp=regexp))
    return tuple(out)


def first_match(rules: Iterable[IdentityRule], subjects: Sequence[str],
                issuer: str | None) -> IdentityRule | None:
    """The first rule the certificate's (subjects, issuer) meet, or None."""
    for rule in rules:
        if rule.matches(subjects, issuer):
            return rule
    return None


def _der_utf8(value: bytes) -> str | None:
    """A DER UTF8String (tag 0x0c, short or long definite length) as text; None otherwise."""
    if len(value) < 2 or value[0] != 0x0C:
        return None
    n, off = value[1], 2
    if n & 0x80:
        width = n & 0x7F
        if width == 0 or width > 2 or len(value) < 2 + width:
            return None
        n, off = int.from_bytes(value[2:2 + width], "big"), 2 + width
    body = value[off:]
    if len(body) != n:
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class FulcioFacts:
    """What a Fulcio certificate says about the CI run that asked for it (its extensions)."""

    issuer: str | None = None
    source_repository_uri: str | None = None
    source_repository_ref: str | None = None
    source_repository_digest: str | None = None
    build_signer_uri: str | None = None
    build_config_uri: str | None = None
    run_invocation_uri: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"issuer": self.issuer, "sourceRepositoryURI": self.source_repository_uri,
                "sourceRepositoryRef": self.source_repository_ref,
                "sourceRepositoryDigest": self.source_repository_digest,
                "buildSignerURI": self.build_signer_uri, "buildConfigURI": self.build_config_uri,
                "runInvocationURI": self.run_invocation_uri}


@dataclass(frozen=True)
class CertificateFacts:
    """Everything acx reads out of a signing certificate, read once by `certificate_facts`."""

    cert: x509.Certificate
    subjects: tuple[str, ...]
    issuer: str | None
    fulcio: FulcioFacts
    digital_signature: bool
    code_signing: bool


def _issuer(exts: x509.Extensions) -> str | None:
    """The OIDC issuer Fulcio wrote into the certificate (v1 raw, else v2 DER UTF8String)."""
    try:
        raw = exts.get_extension_for_oid(OIDC_ISSUER_V1).value
        return bytes(getattr(raw, "value", b"")).decode("utf-8")
    except (x509.ExtensionNotFound, UnicodeDecodeError):
        pass
    try:
        raw = exts.get_extension_for_oid(OIDC_ISSUER_V2).value
        return _der_utf8(bytes(getattr(raw, "value", b"")))
    except x509.ExtensionNotFound:
        return None


def _subjects(exts: x509.Extensions) -> tuple[str, ...]:
    """Email, URI and Sigstore other-name SANs (as the library reads them)."""
    try:
        san = exts.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    out: list[str] = list(san.get_values_for_type(x509.RFC822Name))
    out.extend(san.get_values_for_type(x509.UniformResourceIdentifier))
    for other in san.get_values_for_type(x509.OtherName):
        if other.type_id == SIGSTORE_OTHERNAME:
            text = _der_utf8(other.value)
            if text is not None:
                out.append(text)
    return tuple(out)


def _usage(exts: x509.Extensions) -> tuple[bool, bool]:
    """(key usage includes digitalSignature, extended key usage includes codeSigning)."""
    try:
        digital = bool(exts.get_extension_for_class(x509.KeyUsage).value.digital_signature)
    except x509.ExtensionNotFound:
        digital = False
    try:
        code = ExtendedKeyUsageOID.CODE_SIGNING in exts.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        code = False
    return digital, code


def certificate_facts(cert: x509.Certificate) -> CertificateFacts:
    """The one reader of a certificate's extensions (identity, issuer, Fulcio's CI facts, key
    usage). A certificate whose extensions do not parse (a malformed SAN, a duplicate extension)
    is a MalformedError naming the certificate, never an untyped crash."""
    try:
        exts = cert.extensions  # cryptography parses every extension here, lazily, once
        values: dict[str, str | None] = {}
        for name, n in FULCIO_CI_EXTENSIONS.items():
            try:
                raw = exts.get_extension_for_oid(ObjectIdentifier(f"1.3.6.1.4.1.57264.1.{n}")).value
                values[name] = _der_utf8(bytes(getattr(raw, "value", b"")))
            except x509.ExtensionNotFound:
                values[name] = None
        issuer = _issuer(exts)
        digital, code = _usage(exts)
        subjects = _subjects(exts)
    except (ValueError, x509.DuplicateExtension, x509.UnsupportedGeneralNameType) as exc:
        raise MalformedError(f"malformed certificate (serial {_serial(cert)}): {_short(exc)}") from exc
    return CertificateFacts(cert, subjects, issuer, FulcioFacts(issuer=issuer, **values), digital, code)


def read_certificate(data: bytes, *, pem: bool = False) -> CertificateFacts:
    """Load a DER (or PEM) certificate and read its facts (`certificate_facts`); any parse failure
    is a MalformedError."""
    try:
        cert = x509.load_pem_x509_certificate(data) if pem else x509.load_der_x509_certificate(data)
    except ValueError as exc:
        raise MalformedError(f"malformed certificate: {_short(exc)}") from exc
    return certificate_facts(cert)


def _serial(cert: x509.Certificate) -> str:
    try:
        return format(cert.serial_number, "x")[:40]
    except ValueError:
        return "?"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
