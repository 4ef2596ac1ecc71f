"""The install policy's keyless part: `publishers[].identities[]` (`{issuer, subject |
subjectRegExp}`) and `attestations.trustedRoot`, read from the policy document as written, so
`acx install` (and `acx release`'s read-back, which runs the install checks) verify keyless
attestations with the same rules as `acx verify --certificate-identity …`. The one hook into
`acxoci.install` is `policy_sigstore`, called where attestations are gathered."""

from __future__ import annotations

from pathlib import Path

from msgspec import UnsetType

from acxoci.attest.typed import opt, seq
from acxoci.attestation.identity import IdentityRule, rules_from_policy
from acxoci.attestation.judge import Sigstore
from acxoci.attestation.sigstore_verify import Trust, load_trust, trust_from_config
from acxoci.documents.verification_policy import VerificationPolicyDoc
from acxoci.errors import InvalidInput


def policy_rules(doc: VerificationPolicyDoc, publisher: str | None) -> tuple[IdentityRule, ...]:
    """The keyless identities of the policy publisher `publisher` (the entry the artifact's signed
    publisher id matched), in policy order. Another policy publisher's identities never count for
    this artifact (the trust table's rule for keys, docs/trust-decisions.md); None gives none.
    Every publisher's identities are still validated, so a bad entry is an error wherever it is."""
    out: list[IdentityRule] = []
    for i, pub in enumerate(seq(doc.publishers)):
        if not isinstance(pub.identities, UnsetType):
            rules = rules_from_policy(pub.identities, where=f"publishers[{i}].identities")
            if publisher is not None and pub.id == publisher:
                out.extend(rules)
    return tuple(out)


def policy_trust(value: str | None, source: str | None) -> Trust:
    """`production` / `staging` (shipped roots), or a trusted_root.json or ClientTrustConfig file
    next to the policy file."""
    if value is None:
        return load_trust(None, staging=False)
    if not value:
        raise InvalidInput("attestations.trustedRoot must be a non-empty string", where=source)
    if value in ("production", "staging"):
        trust = load_trust(None, staging=value == "staging")
        return Trust(trust.root, trust.name, True)
    base = Path(source).parent if source else Path.cwd()
    path = base / value
    if _is_client_trust_config(path):  # a ClientTrustConfig (as --trust-config takes): its trusted root
        return trust_from_config(path)
    return load_trust(path, staging=False)


def _is_client_trust_config(path: Path) -> bool:
    """True when the file is a Sigstore ClientTrustConfig (its mediaType says so)."""
    from acxoci.attest.canonical import loads_strict
    from acxoci.attest.errors import AttestError
    from acxoci.attestation.sigstore_verify import MAX_TRUSTED_ROOT_BYTES
    from acxoci.errors import AcxError
    from acxoci.fsutil import read_bytes

    try:
        doc = loads_strict(read_bytes(path, "trusted root", limit=MAX_TRUSTED_ROOT_BYTES),
                           max_bytes=MAX_TRUSTED_ROOT_BYTES)
    except (AcxError, AttestError):  # unreadable or not JSON: load_trust names the problem
        return False
    return isinstance(doc, dict) and str(doc.get("mediaType", "")).startswith(
        "application/vnd.dev.sigstore.clienttrustconfig")


def policy_sigstore(doc: VerificationPolicyDoc, source: str | None,
                    publisher: str | None) -> Sigstore | None:
    """The keyless context of an install policy for an artifact of policy publisher `publisher`;
    None when it names no identity for it and no root (then keyless attestations stay unverified
    and key-based log entries are only reported)."""
    rules = policy_rules(doc, publisher)
    att = opt(doc.attestations)
    root = opt(att.trusted_root) if att is not None else None
    if not rules and root is None:
        return None
    return Sigstore(rules, policy_trust(root, source))
