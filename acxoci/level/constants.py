"""Names and formats shared by the level modules (a leaf: it imports nothing of ours), so the
OCI glue, the credential verifier and the status lists do not import each other in a circle."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

CREDENTIAL_MEDIA_TYPE: Final = "application/vc"
LEVEL_ARTIFACT_TYPE: Final = "application/vnd.acx.level-attestation.v1"
STATUS_MEDIA_TYPE: Final = "application/vnd.acx.status-list.v1+json"


def iso(dt: datetime) -> str:
    """RFC 3339 UTC with milliseconds and `Z`, as the reference writes timestamps."""
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
