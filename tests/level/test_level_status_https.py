"""Status lists fetched over real HTTPS (a local TLS server with a throwaway CA), cached, then
used offline once the server is gone."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.level import status as st
from acxoci.level.issuers import IssuerRegistry
from tests.harness.servers import self_signed_cert
from tests.harness.trustdocs import registry_doc

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
ISSUER = "did:web:verifier.example"


class _Handler(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        if self.path != "/status/1":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", st.MEDIA_TYPE)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def https_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ThreadingHTTPServer, str]]:
    cert, key = self_signed_cert(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # honoured by the one transport setup
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"https://127.0.0.1:{server.server_address[1]}/status/1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_https_status_list_then_offline_cache(
    tmp_path: Path, https_server: tuple[ThreadingHTTPServer, str]
) -> None:
    server, url = https_server
    issuer_key = generate_ed25519()
    pub = issuer_key.public()
    issuers = IssuerRegistry.from_json(
        registry_doc(pub, "example.verifier")
    )
    doc = st.create_status_list(list_id=url, issuer=ISSUER, key=issuer_key, now=T0)
    doc = st.set_status(doc, 5, key=issuer_key, now=T0)
    _Handler.body = json.dumps(doc).encode()
    cache = tmp_path / "cache"
    at = T0 + timedelta(minutes=10)

    def check(index: int, offline: bool = False) -> st.StatusOutcome:
        return st.check_status(
            StatusEntry(url, index, "revocation", None),
            source=url,
            issuers=issuers,
            vc_issuer=ISSUER,
            now=at,
            allow_offline=offline,
            cache_dir=cache,
        )

    assert check(4).state == "valid"
    assert check(5).state == "revoked"
    server.shutdown()
    server.server_close()
    down = check(4)
    assert down.state == "failed" and "unreachable" in down.reason
    cached = check(4, offline=True)
    assert cached.state == "valid" and cached.from_cache and "cached list" in cached.reason
    assert check(5, offline=True).state == "revoked"
