#!/usr/bin/env python3
"""STAND-IN OIDC issuers for the loopback Sigstore stack (never a real identity provider).

One process serves two issuers, both of Fulcio's `github-workflow` type so that Fulcio writes
its GitHub extensions into the certificates it issues:

  http://127.0.0.1:PORT          the main issuer (SIGSTACK_ISSUER)
  http://127.0.0.1:PORT/second   a second issuer, for the "another issuer" refusal cases

Each has /.well-known/openid-configuration and /jwks (ES256, a fresh key per start). Tokens:

  GET /mint?issuer=main|second&repo=&ref=&workflow=&sha=      Authorization: Bearer <mint secret>
  GET /actions/token?audience=sigstore[&repo=&ref=&workflow=&sha=]
                                            Authorization: bearer <actions secret>
      a GitHub Actions runner's token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL): {"value": token}

Both secrets are read from files written by `scripts/sigstore-stack.sh up` (mode 0600). Stdlib
plus `cryptography`; exits after --ttl seconds.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

DEFAULT_CLAIMS = {"repo": "acx-example/agents", "ref": "refs/heads/main",
                  "workflow": ".github/workflows/release.yml", "sha": "1" * 40}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Issuer:
    """One issuer: its URL and signing key."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.kid = uuid.uuid4().hex[:16]
        n = self.key.public_key().public_numbers()
        self.jwk = {"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
                    "x": b64url(n.x.to_bytes(32, "big")), "y": b64url(n.y.to_bytes(32, "big"))}

    def discovery(self) -> dict[str, object]:
        return {"issuer": self.url, "jwks_uri": self.url + "/jwks",
                "authorization_endpoint": self.url + "/authorize", "token_endpoint": self.url + "/token",
                "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256"]}

    def token(self, repo: str, ref: str, workflow: str, sha: str, audience: str) -> str:
        """A GitHub Actions-shaped ID token (the claims Fulcio's github-workflow type requires)."""
        now = int(time.time())
        owner = repo.split("/", 1)[0]
        claims = {
            "iss": self.url, "aud": audience, "iat": now, "nbf": now - 5, "exp": now + 600,
            "jti": uuid.uuid4().hex, "sub": f"repo:{repo}:ref:{ref}",
            "repository": repo, "repository_owner": owner, "repository_id": "1001",
            "repository_owner_id": "2002", "repository_visibility": "public",
            "ref": ref, "ref_type": "branch" if ref.startswith("refs/heads/") else "tag",
            "sha": sha, "workflow": Path(workflow).stem,
            "workflow_ref": f"{repo}/{workflow}@{ref}", "workflow_sha": sha,
            "job_workflow_ref": f"{repo}/{workflow}@{ref}", "job_workflow_sha": sha,
            "event_name": "push", "run_id": "4242", "run_number": "7", "run_attempt": "1",
            "runner_environment": "github-hosted", "actor": "acx-bot", "actor_id": "3003",
        }
        head = {"alg": "ES256", "typ": "JWT", "kid": self.kid}
        signing_input = b64url(json.dumps(head).encode()) + "." + b64url(json.dumps(claims).encode())
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mint-secret-file", type=Path, required=True)
    ap.add_argument("--actions-secret-file", type=Path, required=True)
    ap.add_argument("--ttl", type=int, default=3600)
    a = ap.parse_args()
    base = f"http://127.0.0.1:{a.port}"
    issuers = {"main": Issuer(base), "second": Issuer(base + "/second")}
    by_prefix = {"": issuers["main"], "/second": issuers["second"]}
    mint_secret = a.mint_secret_file.read_text().strip()
    actions_secret = a.actions_secret_file.read_text().strip()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def send(self, code: int, body: object, ctype: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorized(self, secret: str) -> bool:
            got = self.headers.get("Authorization", "")
            scheme, _, value = got.partition(" ")
            return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), secret)

        def claims(self, q: dict[str, list[str]]) -> tuple[str, str, str, str]:
            pick = {k: q.get(k, [v])[0] for k, v in DEFAULT_CLAIMS.items()}
            return pick["repo"], pick["ref"], pick["workflow"], pick["sha"]

        def do_GET(self) -> None:
            u = urlparse(self.path)
            q = parse_qs(u.query)
            for prefix, iss in by_prefix.items():
                if u.path == prefix + "/.well-known/openid-configuration":
                    return self.send(200, iss.discovery())
                if u.path == prefix + "/jwks":
                    return self.send(200, {"keys": [iss.jwk]})
            if u.path == "/mint":
                if not self.authorized(mint_secret):
                    return self.send(401, {"error": "mint needs the stack's mint secret"})
                iss = issuers.get(q.get("issuer", ["main"])[0])
                if iss is None:
                    return self.send(400, {"error": "issuer must be main or second"})
                return self.send(200, iss.token(*self.claims(q), "sigstore").encode(), "text/plain")
            if u.path == "/actions/token":
                if not self.authorized(actions_secret):
                    return self.send(401, {"message": "bad ACTIONS_ID_TOKEN_REQUEST_TOKEN"})
                aud = q.get("audience", ["sigstore"])[0]
                return self.send(200, {"value": issuers["main"].token(*self.claims(q), aud)})
            return self.send(404, {"error": "not found"})

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    threading.Timer(a.ttl, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
