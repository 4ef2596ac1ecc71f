"""Where things are (repo, shared vectors, peers) and the skip-vs-fail rule.

Outside CI a missing peer or vector folder skips with a reason; with CI set it fails the run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("ACX_SHARED_DIR", REPO.parent / "shared"))
VECTORS = SHARED / "vectors"
PEERS = Path(os.environ.get("ACX_PEERS_DIR", REPO / ".peers"))

IN_CI = bool(os.environ.get("CI"))

PEER_PATHS = {
    "oras12": PEERS / "oras12/usr/bin/oras",
    "oras13": PEERS / "oras13/usr/bin/oras",
    "cosign2": PEERS / "cosign2/usr/bin/cosign",
    "cosign3": PEERS / "cosign3/usr/bin/cosign",
    "crane": PEERS / "crane/usr/bin/crane",
    "acx-refreg": PEERS / "refreg/acx-refreg",
    # the reference MCP filesystem server (npm @modelcontextprotocol/server-filesystem)
    "mcp-filesystem": PEERS / "mcp-filesystem/node_modules/.bin/mcp-server-filesystem",
}


def missing(reason: str) -> None:
    """Skip on a developer machine; fail in CI, where every peer must be installed."""
    if IN_CI:
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip; run `make peers`)")
    pytest.skip(reason)


def peer(name: str) -> Path:
    """Path of a peer binary, or skip/fail with the reason."""
    if name == "docker-registry":
        found = shutil.which("docker-registry")
        if not found:
            missing("docker-registry (distribution 2.8) is not installed; run `make peers`")
        return Path(str(found))
    path = PEER_PATHS[name]
    if not path.exists():
        missing(f"peer {name} not found at {path}; run `make peers`")
    return path


def vectors() -> Path:
    """The shared vectors folder, or skip/fail with the reason."""
    if not (VECTORS / "expected.json").exists():
        missing(f"shared vectors not found at {VECTORS} (set ACX_SHARED_DIR)")
    return VECTORS
