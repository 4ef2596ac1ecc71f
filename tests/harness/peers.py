"""Thin wrappers around the real peer binaries (oras 1.2/1.3, cosign 2.5/3.x) with the
offline flags from PEERS.md applied once, so tests say what they do, not how."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

NOTLOG_SIGNING_CONFIG = {
    "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
    "caUrls": [],
    "oidcUrls": [],
    "rekorTlogUrls": [],
    "tsaUrls": [],
    "rekorTlogConfig": {"selector": "ANY"},
    "tsaConfig": {"selector": "ANY"},
}
EMPTY_TRUSTED_ROOT = {
    "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
    "tlogs": [],
    "certificateAuthorities": [],
    "ctlogs": [],
    "timestampAuthorities": [],
}


class PeerFailed(AssertionError):
    """A peer command exited non-zero where the test expected success."""


@dataclass
class Peer:
    name: str
    bin: Path
    home: Path
    env: dict[str, str] = field(default_factory=dict)

    def run(
        self,
        *args: str,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the peer; with check=True a non-zero exit raises PeerFailed with its output."""
        full_env = {**os.environ, "HOME": str(self.home), **self.env, **(env or {})}
        full_env.pop("SSL_CERT_FILE", None) if "SSL_CERT_FILE" not in (env or {}) else None
        proc = subprocess.run(
            [str(self.bin), *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=str(cwd) if cwd else None,
            stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            raise PeerFailed(
                f"{self.name} {' '.join(args)} exited {proc.returncode}\n"
                f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
            )
        return proc

    @property
    def version(self) -> str:
        deb = self.bin.parents[2] / "DEB-VERSION"
        if deb.exists():
            for line in deb.read_text().splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
        return "unknown"


@dataclass
class Oras(Peer):
    """oras with loopback plain HTTP: pass `plain_http=True` for 127.0.0.1 registries."""

    def discover_json(
        self, ref: str, *, plain_http: bool = True, layout: bool = False, artifact_type: str | None = None
    ) -> dict[str, object]:
        args = ["discover"]
        if layout:
            args.append("--oci-layout")
        elif plain_http:
            args.append("--plain-http")
        if artifact_type:
            args += ["--artifact-type", artifact_type]
        args += ["--format", "json"] if self.name == "oras13" else ["-o", "json"]
        out = self.run(*args, ref).stdout
        data: dict[str, object] = json.loads(out)
        return data

    def referrer_digests(self, ref: str, **kw: object) -> list[str]:
        """Digests of the direct referrers of `ref`, across the 1.2 and 1.3 JSON shapes."""
        data = self.discover_json(ref, **kw)  # type: ignore[arg-type]
        items = data.get("referrers") if self.name == "oras13" else data.get("manifests")
        return [str(m["digest"]) for m in (items or [])]  # type: ignore[union-attr,index]


@dataclass
class Cosign(Peer):
    """cosign 2.5 (`major=2`) or 3.x (`major=3`), always offline with a key, no tlog."""

    major: int = 3

    def _files(self) -> tuple[Path, Path]:
        sc, tr = self.home / "notlog.json", self.home / "empty-root.json"
        if not sc.exists():
            sc.write_text(json.dumps(NOTLOG_SIGNING_CONFIG))
            tr.write_text(json.dumps(EMPTY_TRUSTED_ROOT))
        return sc, tr

    def generate_key_pair(self, directory: Path, password: str = "test-pass") -> tuple[Path, Path]:
        """cosign generate-key-pair in `directory`; returns (cosign.key, cosign.pub)."""
        self.run("generate-key-pair", cwd=directory, env={"COSIGN_PASSWORD": password})
        return directory / "cosign.key", directory / "cosign.pub"

    def attest(
        self,
        ref: str,
        key: Path,
        predicate_type: str,
        predicate: Path,
        *,
        fmt: str = "legacy",
        password: str = "test-pass",
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Attest `ref` (a digest reference) in `legacy` (.att tag) or `bundle` (referrer) format."""
        sc, tr = self._files()
        args = ["attest", "--key", str(key), "--type", predicate_type, "--predicate", str(predicate), "-y"]
        if self.major == 2:
            args += ["--tlog-upload=false"] + (["--new-bundle-format"] if fmt == "bundle" else [])
        elif fmt == "bundle":
            args += ["--signing-config", str(sc), "--trusted-root", str(tr)]
        else:
            args += ["--use-signing-config=false", "--tlog-upload=false", "--new-bundle-format=false"]
        return self.run(*args, ref, env={"COSIGN_PASSWORD": password}, check=check)

    def verify_attestation(
        self, ref: str, pub: Path, predicate_type: str, *, fmt: str = "default", check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """verify-attestation offline. fmt: `default` (the version's default), or `bundle` for
        cosign 2.5 `--new-bundle-format`."""
        _, tr = self._files()
        args = ["verify-attestation", "--key", str(pub), "--type", predicate_type, "--insecure-ignore-tlog"]
        if self.major == 2 and fmt == "bundle":
            args += ["--new-bundle-format", "--trusted-root", str(tr)]
        return self.run(*args, ref, check=check)

    def attest_blob(
        self,
        blob: Path,
        key: Path,
        predicate_type: str,
        predicate: Path,
        out: Path,
        *,
        fmt: str = "bundle",
        password: str = "test-pass",
    ) -> subprocess.CompletedProcess[str]:
        """attest-blob offline: `bundle` writes a sigstore bundle, `envelope` a DSSE envelope (2.5)."""
        args = [
            "attest-blob",
            "--key",
            str(key),
            "--type",
            predicate_type,
            "--predicate",
            str(predicate),
            "-y",
        ]
        if self.major == 2:
            args += ["--tlog-upload=false"]
            args += (
                ["--new-bundle-format", "--bundle", str(out)]
                if fmt == "bundle"
                else ["--output-signature", str(out)]
            )
        else:
            args += ["--use-signing-config=false", "--tlog-upload=false", "--bundle", str(out)]
        return self.run(*args, str(blob), env={"COSIGN_PASSWORD": password})

    def verify_blob_attestation(
        self,
        blob: Path,
        pub: Path,
        predicate_type: str,
        *,
        bundle: Path | None = None,
        envelope: Path | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        _, tr = self._files()
        args = [
            "verify-blob-attestation",
            "--key",
            str(pub),
            "--type",
            predicate_type,
            "--insecure-ignore-tlog",
        ]
        if bundle is not None:
            args += ["--bundle", str(bundle)]
            if self.major == 2:
                args += ["--new-bundle-format", "--trusted-root", str(tr)]
        if envelope is not None:
            args += ["--signature", str(envelope)]
        return self.run(*args, str(blob), check=check)
