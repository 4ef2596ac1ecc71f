"""A Bearer token server for auth tests, and distribution 2.8 started with `auth: token:`.

The token server checks Basic credentials and issues ES256 JWTs (x5c header with a throwaway
certificate; distribution verifies it against `rootcertbundle`) granting the requested
repository scopes. It runs in a thread on 127.0.0.1; the registry is a real child process.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

from tests.harness import env
from tests.harness.servers import LOOPBACK, Registry, _spawn, free_port, stop_process, wait_ready

SERVICE = "acxoci-test-registry"
ISSUER = "acxoci-test-issuer"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class TokenServer:
    """Issues tokens at `realm` for `user`/`password`; `requests` records the scopes asked for."""

    user: str
    password: str
    cert_path: Path
    realm: str = ""
    requests: list[list[str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def __post_init__(self) -> None:
        now = dt.datetime.now(dt.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "acxoci token issuer")])
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self._x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()

    def token(self, scopes: list[str]) -> str:
        access = []
        for scope in scopes:
            typ, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": typ, "name": name, "actions": [a for a in actions.split(",") if a]})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "ES256", "x5c": [self._x5c]}
        claims = {
            "iss": ISSUER,
            "sub": self.user,
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        der = self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def start(self) -> TokenServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                scopes = [x for s in query.get("scope", []) for x in s.split(" ") if x]
                server.requests.append(scopes)
                auth = self.headers.get("Authorization", "")
                want = "Basic " + base64.b64encode(f"{server.user}:{server.password}".encode()).decode()
                if auth != want:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                tok = server.token(scopes)
                body = json.dumps({"token": tok, "access_token": tok, "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.realm = f"http://{LOOPBACK}:{self._server.server_address[1]}/token"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def start_distribution_token(
    root: Path, user: str = "acx", password: str = "acx-secret"
) -> tuple[Registry, TokenServer]:
    """distribution 2.8 with `auth: token:` pointing at a fresh TokenServer."""
    root.mkdir(parents=True, exist_ok=True)
    tokens = TokenServer(user, password, root / "token-cert.pem").start()
    port = free_port()
    lines = [
        "version: 0.1",
        "log:",
        "  level: warn",
        "  accesslog:",
        "    disabled: true",
        "storage:",
        "  filesystem:",
        f"    rootdirectory: {root / 'data'}",
        "  delete:",
        "    enabled: true",
        "http:",
        f"  addr: {LOOPBACK}:{port}",
        "  secret: acxoci-test-secret",
        "auth:",
        "  token:",
        f"    realm: {tokens.realm}",
        f"    service: {SERVICE}",
        f"    issuer: {ISSUER}",
        f"    rootcertbundle: {tokens.cert_path}",
    ]
    cfg = root / "config.yml"
    cfg.write_text("\n".join(lines) + "\n")
    log = root / "registry.log"
    proc = _spawn([str(env.peer("docker-registry")), "serve", str(cfg)], log)
    reg = Registry(
        "distribution", f"{LOOPBACK}:{port}", proc, root, username=user, password=password, log_path=log
    )
    try:
        wait_ready(reg.url, proc, log)
    except Exception:
        stop_process(proc)
        tokens.stop()
        raise
    return reg, tokens
