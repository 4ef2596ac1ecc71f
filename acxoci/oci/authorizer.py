"""Auth state for one registry: which `Authorization` value goes with which scopes (Basic, or
Bearer tokens cached per scope set), and fetching tokens from the challenge's realm.

Scoping rules (docs/decisions/0011): the registry's credentials and tokens are attached only to
requests for the registry's own origin (scheme, host, port) — the transport enforces that per
hop; the Basic credentials also go to the token realm, and only over HTTPS unless the registry
itself is plain HTTP by the user's choice (or a loopback registry that does not speak TLS, with
a loopback realm)."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlencode, urlsplit, urlunsplit

import requests

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.oci.auth import Challenge, Credential, load_credential
from acxoci.oci.errors import RegistryAuthError, RegistryProtocolError
from acxoci.oci.session import USER_AGENT, error_text, origin, read_capped, redact
from acxoci.oci.settings import HostSettings, RemoteOptions, is_loopback

TOKEN_LIMIT = 1024 * 1024
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""RFC 6750 b64token: what a token must be before it becomes an `Authorization: Bearer` header."""


class Sender(Protocol):
    """What the authorizer needs from the transport: one request with the per-hop origin rule."""

    scheme: str

    def follow(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        *,
        auth_value: str | None,
        auth_origin: tuple[str, str, int] | None,
    ) -> tuple[requests.Response, str]: ...


def scope_pairs(scopes: tuple[str, ...] | list[str]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for s in scopes:
        resource, _, actions = s.rpartition(":")
        for a in actions.split(","):
            out.add((resource, a))
    return out


def basic_value(cred: Credential) -> str:
    return "Basic " + base64.b64encode(f"{cred.username}:{cred.password}".encode()).decode()


class Authorizer:
    """Credentials and tokens of one registry host."""

    def __init__(self, host: str, settings: HostSettings, options: RemoteOptions, sender: Sender) -> None:
        self.host = host
        self.settings = settings
        self.options = options
        self.sender = sender
        self._cred: Credential | None = None
        self._basic: str | None = None
        self._tokens: list[tuple[set[tuple[str, str]], str]] = []
        self._lock = threading.Lock()
        self.loader: Callable[[str, str | None], Credential] = load_credential

    def credential(self) -> Credential:
        if self._cred is None:
            if self.options.username is not None or self.options.password is not None:
                self._cred = Credential(self.options.username or "", self.options.password or "")
            else:
                self._cred = self.loader(self.host, self.settings.docker_config)
        return self._cred

    def header(self, scopes: tuple[str, ...]) -> str | None:
        """The Authorization value for these scopes (a covering token, else Basic, else None)."""
        want = scope_pairs(scopes)
        with self._lock:
            for have, token in reversed(self._tokens):
                if want <= have:
                    return f"Bearer {token}"
        return self._basic

    def authenticate(self, challenge: Challenge, scopes: tuple[str, ...]) -> None:
        """Answer a challenge of the registry: remember Basic, or fetch a token for the scopes."""
        cred = self.credential()
        if challenge.scheme == "basic":
            if cred.empty or cred.identity_token:
                raise RegistryAuthError(
                    "the registry requires credentials (basic auth); run `acx login`", where=self.host
                )
            self._basic = basic_value(cred)
            return
        asked = [s for s in challenge.params.get("scope", "").split(" ") if s]
        all_scopes = list(dict.fromkeys([*scopes, *asked]))
        token = self._fetch_token(challenge, all_scopes, cred)
        with self._lock:
            self._tokens.append((scope_pairs(all_scopes), token))

    def _check_realm(self, realm: str) -> tuple[str, str, int]:
        ro = origin(realm)
        if ro[0] == "https":
            return ro
        if (
            ro[0] == "http"
            and self.sender.scheme == "http"
            and (self.settings.plain_chosen or is_loopback(urlsplit(realm).netloc))
        ):
            return ro
        raise RegistryAuthError(
            f"the token realm {redact(realm)} is not HTTPS; credentials are sent to it only over HTTPS",
            where=self.host,
            hint="plain HTTP to a token server is allowed only with --plain-http for that registry",
        )

    def _fetch_token(self, challenge: Challenge, scopes: list[str], cred: Credential) -> str:
        realm = challenge.params["realm"]
        realm_origin = self._check_realm(realm)
        service = challenge.params.get("service")
        where = redact(realm)
        if cred.identity_token:
            form = {
                "grant_type": "refresh_token",
                "refresh_token": cred.identity_token,
                "client_id": USER_AGENT,
                "scope": " ".join(scopes),
            }
            if service:
                form["service"] = service
            resp, _ = self.sender.follow(
                "POST",
                realm,
                {"Content-Type": "application/x-www-form-urlencoded"},
                urlencode(form).encode(),
                auth_value=None,
                auth_origin=None,
            )
        else:
            params: list[tuple[str, str]] = [("service", service)] if service else []
            params += [("scope", s) for s in scopes]
            parts = urlsplit(realm)
            query = "&".join(q for q in (parts.query, urlencode(params)) if q)
            url = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", query, ""))
            auth = basic_value(cred) if cred.username or cred.password else None
            resp, _ = self.sender.follow("GET", url, {}, None, auth_value=auth, auth_origin=realm_origin)
        with resp:
            if resp.status_code in (401, 403):
                resp.close()
                raise RegistryAuthError(
                    f"the token server refused the credentials (HTTP {resp.status_code})", where=where
                )
            if resp.status_code != 200:
                raise RegistryProtocolError(f"token server answered {error_text(resp)}", where=where)
            data = read_capped(resp, TOKEN_LIMIT, where, "token response")
        try:
            body = loads_strict(data)
        except MalformedError as exc:
            raise RegistryProtocolError("token server returned malformed JSON", where=where) from exc
        token = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
        if not isinstance(token, str) or not _B64TOKEN.fullmatch(token):
            raise RegistryProtocolError(
                "token server response has no usable token (a bearer token is RFC 6750 b64token: "
                "letters, digits, - . _ ~ + / and trailing =)", where=where)
        return token
