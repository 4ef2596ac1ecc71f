#!/usr/bin/env python3
"""STAND-IN certificate transparency log for the loopback Sigstore stack (not a real CT log).

Fulcio submits each precertificate to a CT log and embeds the signed certificate timestamp (SCT)
it gets back; clients check that SCT against the trusted root's `ctlogs` key. This stand-in
answers RFC 6962 `POST <prefix>/ct/v1/add-pre-chain` (and `add-chain`) with an SCT signed by a
fresh P-256 key, and keeps no Merkle tree: nothing is logged. It writes the key's public PEM to
--pubkey-out. Stdlib plus `cryptography`; exits after --ttl seconds.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

MAX_BODY = 1 << 20
POISON_OID = bytes.fromhex("060a2b06010401d679020403")  # 1.3.6.1.4.1.11129.2.4.3 (CT precert poison)


def der_items(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """The DER elements laid end to end in `data`: (tag, whole element, contents)."""
    out, i = [], 0
    while i < len(data):
        tag, first = data[i], data[i + 1]
        head, size = 2, first
        if first & 0x80:
            width = first & 0x7F
            head, size = 2 + width, int.from_bytes(data[i + 2:i + 2 + width], "big")
        out.append((tag, data[i:i + head + size], data[i + head:i + head + size]))
        i += head + size
    return out


def der(tag: int, contents: bytes) -> bytes:
    n = len(contents)
    if n < 0x80:
        return bytes([tag, n]) + contents
    width = (n.bit_length() + 7) // 8
    return bytes([tag, 0x80 | width]) + n.to_bytes(width, "big") + contents


def precert_tbs(cert_der: bytes) -> bytes:
    """RFC 6962 s3.2: the precertificate's TBSCertificate without the poison extension."""
    tbs = der_items(der_items(cert_der)[0][2])[0][2]
    fields = []
    for tag, whole, contents in der_items(tbs):
        if tag == 0xA3:  # [3] extensions: SEQUENCE OF Extension, minus the poison
            kept = [w for _, w, c in der_items(der_items(contents)[0][2]) if not c.startswith(POISON_OID)]
            whole = der(0xA3, der(0x30, b"".join(kept)))
        fields.append(whole)
    return der(0x30, b"".join(fields))


def spki(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def uint24(data: bytes) -> bytes:
    return struct.pack(">I", len(data))[1:] + data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pubkey-out", type=Path, required=True)
    ap.add_argument("--ttl", type=int, default=3600)
    a = ap.parse_args()
    key = ec.generate_private_key(ec.SECP256R1())
    log_id = hashlib.sha256(spki(key.public_key())).digest()
    a.pubkey_out.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))

    def sct(entry_type: int, entry: bytes) -> dict[str, object]:
        """RFC 6962 s3.2: sign (version, certificate_timestamp, time, entry type, entry, no extensions)."""
        ms = int(time.time() * 1000)
        signed = struct.pack(">BBQH", 0, 0, ms, entry_type) + entry + struct.pack(">H", 0)
        sig = key.sign(signed, ec.ECDSA(hashes.SHA256()))
        signature = base64.b64encode(struct.pack(">BBH", 4, 3, len(sig)) + sig).decode()
        return {"sct_version": 0, "id": base64.b64encode(log_id).decode(), "timestamp": ms,
                "extensions": "", "signature": signature}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def send(self, code: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            try:
                n = int(self.headers.get("Content-Length", "0"))
                if not 0 < n <= MAX_BODY:
                    return self.send(400, {"error": "body size"})
                chain = [base64.b64decode(c) for c in json.loads(self.rfile.read(n))["chain"]]
                if self.path.endswith("/ct/v1/add-pre-chain"):
                    issuer = x509.load_der_x509_certificate(chain[1])
                    issuer_key_hash = hashlib.sha256(spki(issuer.public_key())).digest()  # type: ignore[arg-type]
                    return self.send(200, sct(1, issuer_key_hash + uint24(precert_tbs(chain[0]))))
                if self.path.endswith("/ct/v1/add-chain"):
                    return self.send(200, sct(0, uint24(chain[0])))
                return self.send(404, {"error": "not found"})
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                return self.send(400, {"error": str(exc)})

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    threading.Timer(a.ttl, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
