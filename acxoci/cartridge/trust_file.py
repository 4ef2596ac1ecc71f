"""Read an `acx.trust-registry/1` file from disk (the I/O half of attest.trust), with typed errors."""

from __future__ import annotations

import os
from pathlib import Path

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.trust import TrustRegistry
from acxoci.errors import InvalidInput
from acxoci.fsutil import read_bytes

MAX_REGISTRY_BYTES = 16 * 1024 * 1024


def load_trust_registry(path: str | os.PathLike[str]) -> TrustRegistry:
    """Parse and validate a trust registry file; InvalidInput/NotFound name the file and field. What
    the file's dates mean at a given time (a namespace proof verified after it: not yet vouched
    for) is the trust decision's to say, not the loader's, so a past `--now` never voids the file."""
    p = Path(path)
    data = read_bytes(p, "trust registry", limit=MAX_REGISTRY_BYTES)
    try:
        return TrustRegistry.from_json(loads_strict(data))
    except MalformedError as exc:
        raise InvalidInput(f"invalid trust registry: {exc}", where=str(p)) from exc
