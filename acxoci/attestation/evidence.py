"""What counts as attestation evidence (decision 0043), the one rule plain `acx verify` and the
acceptance decision's attestations check (`install.checks.check_attestations`) both apply. Pure.

Only a *verified* attestation is evidence. One that does not verify for this artifact (another
signer, a replayed statement about another subject, a tampered or malformed document, a revoked
key) is shown as rejected or unverified, but it is neither evidence nor a veto: the verdict is
whether the verified ones meet the requirement, as in cosign."""

from __future__ import annotations

from collections.abc import Sequence


def missing_evidence(verified: Sequence[tuple[str, str]], formats: Sequence[str] = (),
                     types: Sequence[str] = ()) -> list[str]:
    """What a requirement still lacks, given the verified attestations as (format, predicate type)
    pairs: each of `formats` × `types` needs one; with only `types`, each type in any format; with
    neither, any one verified attestation. Empty: the requirement is met."""
    if formats:
        return [f"{fmt}:{pt}" if pt else fmt for fmt in formats for pt in (types or (None,))
                if not any(f == fmt and (pt is None or t == pt) for f, t in verified)]
    if types:
        return [pt for pt in types if not any(t == pt for _, t in verified)]
    return [] if verified else ["a verified attestation"]
