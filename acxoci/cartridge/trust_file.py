"""Read an `acx.trust-registry/1` file from disk (the I/O half of attest.trust), with typed errors."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from acxoci.errors import InvalidInput, NotFound
from attest.canonical import loads_strict
from attest.errors import MalformedError
from attest.trust import TrustRegistry

MAX_REGISTRY_BYTES = 16 * 1024 * 1024


def load_trust_registry(path: str | os.PathLike[str], *, now: datetime | None = None) -> TrustRegistry:
    """Parse and validate a trust registry file; InvalidInput/NotFound name the file and field."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_REGISTRY_BYTES + 1)
    except FileNotFoundError as exc:
        raise NotFound(f"no such trust registry: {p}", where=str(p)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read trust registry: {exc.strerror or exc}", where=str(p)) from exc
    if len(data) > MAX_REGISTRY_BYTES:
        raise InvalidInput(f"trust registry exceeds {MAX_REGISTRY_BYTES} bytes", where=str(p))
    try:
        return TrustRegistry.from_json(loads_strict(data), now=now)
    except MalformedError as exc:
        raise InvalidInput(f"invalid trust registry: {exc}", where=str(p)) from exc
