"""The loopback Sigstore stack (`scripts/sigstore-stack.sh`): real Fulcio, Rekor v2 and timestamp
authority, with the project's STAND-IN OIDC issuers and CT log. One stack per machine (the TSA
always binds port 2112), so a test session shares one (`sigstack` session fixture)."""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.harness.env import PEERS, REPO

SCRIPT = REPO / "scripts" / "sigstore-stack.sh"
SIGSTACK_BINS = ("sigstack/bin/fulcio", "sigstack/bin/rekor-server-posix", "sigstack/bin/timestamp-server")
SGV = PEERS / "sigstore-go/usr/bin/sigstore-go-verification"
#: Ambient-credential variables of CI systems: cleared for subprocesses, so a test decides itself
#: whether acx runs in a (simulated) CI job.
CI_TOKEN_VARS = ("GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
                 "GITLAB_CI", "BUILDKITE", "CIRCLECI", "GOOGLE_SERVICE_ACCOUNT_NAME", "SIGSTORE_ID_TOKEN")


def read_env_file(path: Path) -> dict[str, str]:
    """The `export NAME=VALUE` lines of DIR/env (shell-quoted values)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            out[name] = value
    return out


@dataclass(frozen=True)
class SigStack:
    """A running stack: its folder and the exports of DIR/env."""

    dir: Path
    env: dict[str, str]

    @property
    def identity(self) -> str:
        return self.env["SIGSTACK_IDENTITY"]

    @property
    def issuer(self) -> str:
        return self.env["SIGSTACK_ISSUER"]

    @property
    def trust_config(self) -> Path:
        return Path(self.env["SIGSTACK_TRUST_CONFIG"])

    @property
    def trusted_root(self) -> Path:
        return Path(self.env["SIGSTACK_TRUSTED_ROOT"])

    @property
    def signing_config(self) -> Path:
        return Path(self.env["SIGSTACK_SIGNING_CONFIG"])

    def token(self, *args: str) -> str:
        """`sigstore-stack.sh token DIR ARGS…` (e.g. `--github REPO REF WORKFLOW SHA`, `--issuer second`)."""
        r = subprocess.run(["bash", str(SCRIPT), "token", str(self.dir), *args], capture_output=True,
                           text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def token_file(self, path: Path, *args: str) -> Path:
        path.write_text(self.token(*args))
        path.chmod(0o600)
        return path


def clean_env(**extra: str) -> dict[str, str]:
    """The process environment without any CI's ambient-credential variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in CI_TOKEN_VARS}
    env.update(extra)
    return env


def start(root: Path) -> SigStack:
    """`sigstore-stack.sh up ROOT` (raises with the script's message when it cannot)."""
    r = subprocess.run(["bash", str(SCRIPT), "up", str(root)], capture_output=True, text=True, timeout=120,
                       check=False, env={**os.environ, "ACX_PEERS_DIR": str(PEERS)})
    if r.returncode != 0:
        raise RuntimeError(f"sigstore-stack.sh up failed: {r.stderr.strip()}")
    return SigStack(root, read_env_file(root / "env"))


def stop(stack: SigStack) -> None:
    subprocess.run(["bash", str(SCRIPT), "down", str(stack.dir)], capture_output=True, timeout=60,
                   check=False)
