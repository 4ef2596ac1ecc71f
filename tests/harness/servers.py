"""Real registries started as child processes on 127.0.0.1 and stopped by their PID.

- distribution 2.8 (`docker-registry`): filesystem storage in a temp dir; variants with
  htpasswd basic auth and with TLS from a throwaway CA, and as a pull-through cache of another;
- `acx-refreg`: go-containerregistry's registry with the OCI 1.1 Referrers API;
- `crane registry serve`: go-containerregistry's registry without it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


@dataclass
class Registry:
    """A running registry: `host` is `127.0.0.1:PORT`, as used in references."""

    kind: str  # distribution | refreg | crane
    host: str
    proc: subprocess.Popen[bytes]
    root: Path
    scheme: str = "http"
    username: str | None = None
    password: str | None = None
    ca_path: Path | None = None
    log_path: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}"

    @property
    def has_referrers_api(self) -> bool:
        return self.kind == "refreg"

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child we started, by its PID: SIGTERM, then SIGKILL after a grace period."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, *, verify: str | bool = True,
               timeout: float = 20.0) -> None:
    """Poll GET /v2/ until the registry answers (any HTTP status counts)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"registry exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            requests.get(f"{url}/v2/", timeout=1, verify=verify)
            return
        except requests.RequestException as exc:
            last = exc
            time.sleep(0.05)
    raise RuntimeError(f"registry at {url} not ready after {timeout}s: {last}")


def _spawn(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    fh = log.open("wb")
    return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})}, start_new_session=True)


def make_ca_and_cert(directory: Path) -> tuple[Path, Path, Path]:
    """Write a throwaway CA and a server certificate for 127.0.0.1/localhost; return
    (ca.pem, server.pem, server.key)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "acxoci test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(LOOPBACK))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_pem, crt_pem, key_pem = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    crt_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    key_pem.chmod(0o600)
    return ca_pem, crt_pem, key_pem


def self_signed_cert(tmp: Path) -> tuple[Path, Path]:
    """Write a self-signed certificate (its own CA) for 127.0.0.1 and its key; return (cert.pem, key.pem)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def _ready_or_stopped(reg: Registry, verify: str | bool = True) -> Registry:
    """Wait until `reg` answers; if it never does, stop its process before raising."""
    try:
        wait_ready(reg.url, reg.proc, reg.log_path or reg.root / "server.log", verify=verify)
    except Exception:
        stop_process(reg.proc)
        raise
    return reg


def start_distribution(binary: Path, root: Path, *, basic_auth: tuple[str, str] | None = None,
                       tls: bool = False) -> Registry:
    """Start distribution 2.8 with filesystem storage under `root`."""
    import bcrypt

    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    lines = [
        "version: 0.1",
        "log:", "  level: warn", "  accesslog:", "    disabled: true",
        "storage:", "  filesystem:", f"    rootdirectory: {root / 'data'}", "  delete:", "    enabled: true",
        "  maintenance:", "    uploadpurging:", "      enabled: false",
        "http:", f"  addr: {LOOPBACK}:{port}", "  secret: acxoci-test-secret",
    ]
    ca_path = None
    if tls:
        ca_path, crt, key = make_ca_and_cert(root)
        lines += ["  tls:", f"    certificate: {crt}", f"    key: {key}"]
    if basic_auth:
        user, pw = basic_auth
        htp = root / "htpasswd"
        htp.write_bytes(user.encode() + b":" + bcrypt.hashpw(pw.encode(), bcrypt.gensalt(rounds=5)) + b"\n")
        lines += ["auth:", "  htpasswd:", "    realm: acxoci-test", f"    path: {htp}"]
    cfg = root / "config.yml"
    cfg.write_text("\n".join(lines) + "\n")
    log = root / "registry.log"
    proc = _spawn([str(binary), "serve", str(cfg)], log)
    scheme = "https" if tls else "http"
    reg = Registry("distribution", f"{LOOPBACK}:{port}", proc, root, scheme=scheme,
                   username=basic_auth[0] if basic_auth else None,
                   password=basic_auth[1] if basic_auth else None, ca_path=ca_path, log_path=log)
    return _ready_or_stopped(reg, verify=str(ca_path) if ca_path else True)


def start_pull_through_cache(binary: Path, root: Path, upstream: str) -> Registry:
    """Start distribution 2.8 as a pull-through cache (`proxy.remoteurl`) of the registry at
    `upstream` (`http://127.0.0.1:PORT`): read-only; a tag is looked up upstream on every request
    and served from the cache's own storage when upstream has no answer."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    lines = [
        "version: 0.1",
        "log:", "  level: warn", "  accesslog:", "    disabled: true",
        "storage:", "  filesystem:", f"    rootdirectory: {root / 'data'}",
        "  maintenance:", "    uploadpurging:", "      enabled: false",
        "http:", f"  addr: {LOOPBACK}:{port}", "  secret: acxoci-test-secret",
        "proxy:", f"  remoteurl: {upstream}",
    ]
    cfg = root / "config.yml"
    cfg.write_text("\n".join(lines) + "\n")
    log = root / "cache.log"
    proc = _spawn([str(binary), "serve", str(cfg)], log)
    return _ready_or_stopped(Registry("distribution", f"{LOOPBACK}:{port}", proc, root, log_path=log,
                                      extra={"upstream": upstream}))


def start_refreg(binary: Path, root: Path) -> Registry:
    """Start acx-refreg (ggcr registry with the Referrers API) with disk blobs under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = root / "refreg.log"
    proc = _spawn([str(binary), "--address", f"{LOOPBACK}:{port}", "--disk", str(root / "blobs")], log)
    return _ready_or_stopped(Registry("refreg", f"{LOOPBACK}:{port}", proc, root, log_path=log))


def start_crane(binary: Path, root: Path) -> Registry:
    """Start `crane registry serve` (no Referrers API) with disk blobs under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (root / "blobs").mkdir(exist_ok=True)
    log = root / "crane.log"
    proc = _spawn([str(binary), "registry", "serve", "--address", f"{LOOPBACK}:{port}",
                   "--disk", str(root / "blobs")], log)
    return _ready_or_stopped(Registry("crane", f"{LOOPBACK}:{port}", proc, root, log_path=log))


@contextlib.contextmanager
def running(reg: Registry) -> Iterator[Registry]:
    try:
        yield reg
    finally:
        reg.stop()
