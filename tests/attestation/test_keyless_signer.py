"""Where a keyless signature's identity token may come from (decision 0034), the usage errors of
the keyless flags, and the `sigstore` private hooks acx relies on (signing and verifying): every
one still exists in the pinned library, so an upgrade that drops or renames one fails here."""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from acxoci.attestation import keyless, sigstore_verify
from acxoci.attestation.keyless import identity_token
from acxoci.errors import AuthError, UsageError
from tests.harness.cli import acx_json


def jwt(**claims: object) -> str:
    """An unsigned-looking JWT with the claims the library reads (it verifies nothing; Fulcio does)."""
    now = int(time.time())
    body = {"iss": "https://issuer.example", "sub": "someone", "aud": "sigstore", "iat": now,
            "exp": now + 300, **claims}
    enc = [base64.urlsafe_b64encode(json.dumps(p).encode()).rstrip(b"=").decode()
           for p in ({"alg": "ES256", "typ": "JWT"}, body)]
    return ".".join([*enc, "c2ln"])


def no_trust() -> object:
    raise AssertionError("the trust config is not needed for this token source")


@pytest.fixture
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
                "GITLAB_CI", "BUILDKITE", "CIRCLECI", "GOOGLE_SERVICE_ACCOUNT_NAME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("id._internal.oidc.ambient._GCP_PRODUCT_NAME_FILE", "/nonexistent/acx-test")


def test_token_file_wins_and_a_bad_one_is_an_auth_error(tmp_path: Path, no_ci: None) -> None:
    f = tmp_path / "token"
    f.write_text(jwt() + "\n")
    token, source = identity_token(f, no_trust, interactive=False)
    assert source == "file" and token.identity == "someone"
    f.write_text("not a token")
    with pytest.raises(AuthError):
        identity_token(f, no_trust, interactive=False)
    f.write_text(jwt(aud="not-sigstore"))
    with pytest.raises(AuthError):
        identity_token(f, no_trust, interactive=False)


def test_no_source_off_a_terminal_is_a_usage_error(no_ci: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGSTORE_ID_TOKEN", jwt())  # an environment variable is not a token source
    with pytest.raises(UsageError, match="identity token"):
        identity_token(None, no_trust, interactive=False)


@pytest.mark.parametrize("ci", ["GITLAB_CI", "BUILDKITE", "CIRCLECI"])
def test_no_ci_but_github_actions_hands_acx_a_token(ci: str, no_ci: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Decision 0034: GitLab CI's token is an environment variable (`SIGSTORE_ID_TOKEN` under
    `id_tokens:`), which the `id` library's `detect_credential` returns; acx asks only GitHub
    Actions' endpoint, so these are a usage error that says to use a file."""
    monkeypatch.setenv(ci, "true")
    monkeypatch.setenv("SIGSTORE_ID_TOKEN", jwt(sub="planted"))
    with pytest.raises(UsageError) as err:
        identity_token(None, no_trust, interactive=False)
    assert "environment variable" in (err.value.hint or "")


@pytest.fixture
def actions_endpoint() -> Iterator[tuple[str, list[str]]]:
    """STAND-IN for a GitHub Actions runner's OIDC token endpoint (bearer request token)."""
    seen: list[str] = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            ok = self.headers.get("Authorization") == "bearer req-token"
            value = {"value": jwt(sub="repo:octo/agents:ref:refs/heads/main")}
            body = json.dumps(value if ok else {}).encode()
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/token?x=1", seen
    srv.shutdown()


def test_github_actions_ambient_token(actions_endpoint: tuple[str, list[str]], no_ci: None,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    url, seen = actions_endpoint
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_URL", url)
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "req-token")
    token, source = identity_token(None, no_trust, interactive=False)
    assert source == "ambient" and token.identity == "repo:octo/agents:ref:refs/heads/main"
    assert "audience=sigstore" in seen[0] and "x=1" in seen[0]
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "wrong")
    with pytest.raises(AuthError, match="ambient"):
        identity_token(None, no_trust, interactive=False)
    monkeypatch.delenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN")  # no `id-token: write` permission
    with pytest.raises(AuthError, match="permissions"):
        identity_token(None, no_trust, interactive=False)


def test_keyless_flag_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_ci: None) -> None:
    key = tmp_path / "k.pem"
    assert acx_json(capsys, "key", "generate", "-o", str(key))[0] == 0
    f = tmp_path / "f.txt"
    f.write_text("x")
    tok = tmp_path / "t"
    tok.write_text(jwt())
    base = ["attest-blob", str(f), "--predicate", str(tmp_path / "k.pub.pem")]
    cases = [
        [*base, "--bundle", str(tmp_path / "b"), "--key", str(key), "--identity-token-file", str(tok)],
        [*base, "--bundle", str(tmp_path / "b"), "--key", str(key), "--tlog-upload=false"],
        [*base, "--bundle", str(tmp_path / "b"), "--tlog-upload=maybe"],
        [*base, "--output-signature", str(tmp_path / "e"), "--identity-token-file", str(tok)],
        ["verify-blob", str(f), "--bundle", str(f), "--trust-config", str(f), "--trusted-root", str(f),
         "--certificate-identity", "a", "--certificate-oidc-issuer", "b"],
        ["verify-blob", str(f), "--bundle", str(f), "--trust-config", str(f), "--staging",
         "--certificate-identity", "a", "--certificate-oidc-issuer", "b"],
        ["verify", "oci-layout:" + str(tmp_path / "l") + ":v1", "--source-ref", "refs/heads/main"],
    ]
    for args in cases:
        code, out = acx_json(capsys, *args)
        assert code == 2 and out["error"]["kind"] == "usage", (args, out)
    assert not (tmp_path / "b").exists() and not (tmp_path / "e").exists()


def _resolve(dotted: str) -> object:
    try:
        return importlib.import_module(dotted)  # a module (id._internal.oidc.ambient)
    except ModuleNotFoundError:
        module, _, attr = dotted.rpartition(".")
        return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize(("owner", "name"), [*keyless.PRIVATE_HOOKS, *sigstore_verify.PRIVATE_HOOKS])
def test_every_private_hook_still_exists(owner: str, name: str) -> None:
    obj = _resolve(owner)
    if hasattr(obj, name):
        return
    init = getattr(obj, "__init__", None)
    assigned = re.compile(rf"self\.{re.escape(name)}\s*(:[^=\n]*)?=")
    assert init is not None and assigned.search(inspect.getsource(init)), f"{owner}.{name} is gone"


def test_overridden_verifier_methods_keep_their_signatures() -> None:
    from sigstore.verify import Verifier

    for name in sigstore_verify.OVERRIDDEN:
        ours = inspect.signature(getattr(sigstore_verify._Verifier, name))
        theirs = inspect.signature(getattr(Verifier, name))
        assert list(ours.parameters) == list(theirs.parameters), name
