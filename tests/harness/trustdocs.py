"""Test documents: one-key `acx.trust-registry/1` registries built through the same
`attest.trust.make_key_entry` that `acx key trust` uses (so tests share one shape)."""

from __future__ import annotations

from typing import Any

from attest.keys import PublicKey
from attest.trust import SCHEMA_VERSION, make_key_entry, parse_rfc3339


def registry_doc(
    pub: PublicKey,
    publisher: str,
    *,
    not_before: str = "2026-01-01T00:00:00Z",
    not_after: str = "2028-01-01T00:00:00Z",
    verified_at: str = "2026-01-01T00:00:00Z",
    oidc_subject: str | None = None,
) -> dict[str, Any]:
    """A registry vouching for `pub` as `publisher` (dns-txt proof, or github-oidc for io.github.*)."""
    entry = make_key_entry(
        pub,
        publisher_id=publisher,
        not_before=parse_rfc3339(not_before),
        not_after=parse_rfc3339(not_after),
        verified_at=parse_rfc3339(verified_at),
        oidc_subject=oidc_subject,
    )
    return {"schemaVersion": SCHEMA_VERSION, "keys": [entry]}
