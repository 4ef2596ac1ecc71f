"""Registry credentials and auth challenges: docker `config.json` (`auths`, `credHelpers`,
`credsStore` via `docker-credential-*`, honouring `DOCKER_CONFIG`, the same file oras uses),
and a strict parser for `WWW-Authenticate` (Basic / Bearer realm, service, scope)."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.fsutil import atomic_write
from acxoci.oci.errors import RegistryAuthError, RegistryProtocolError
from attest.canonical import loads_strict

DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class Credential:
    """Username + password, or an identity (refresh) token (`username` is then `<token>`)."""

    username: str = ""
    password: str = ""
    identity_token: str = ""

    @property
    def empty(self) -> bool:
        return not (self.username or self.password or self.identity_token)


@dataclass(frozen=True)
class Challenge:
    """One parsed `WWW-Authenticate` challenge: scheme (`basic`/`bearer`) and its parameters."""

    scheme: str
    params: dict[str, str]


_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_PARAM_RE = re.compile(rf"\s*({_TOKEN})\s*=\s*(\"(?:[^\"\\]|\\.)*\"|{_TOKEN})\s*(,|$)")


def parse_challenge(header: str) -> Challenge:
    """Parse `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`; RegistryProtocolError if
    the header is malformed or the scheme unknown (a lying registry must not crash us)."""
    text = header.strip()
    scheme, _, rest = text.partition(" ")
    scheme = scheme.lower()
    if scheme not in ("basic", "bearer"):
        raise RegistryProtocolError(
            f"unsupported or malformed WWW-Authenticate scheme {scheme[:40]!r}", where="WWW-Authenticate"
        )
    params: dict[str, str] = {}
    pos = 0
    rest = rest.strip()
    while pos < len(rest):
        m = _PARAM_RE.match(rest, pos)
        if not m or m.end() == pos:
            raise RegistryProtocolError(
                f"malformed WWW-Authenticate parameters: {rest[:120]!r}", where="WWW-Authenticate"
            )
        value = m.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[m.group(1).lower()] = value
        pos = m.end()
    if scheme == "bearer":
        realm = params.get("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise RegistryProtocolError(
                f"Bearer challenge without a usable realm: {realm[:120]!r}", where="WWW-Authenticate"
            )
    return Challenge(scheme, params)


def config_dir() -> Path:
    """`$DOCKER_CONFIG` or `~/.docker`."""
    env = os.environ.get("DOCKER_CONFIG")
    return Path(env) if env else Path.home() / ".docker"


def config_path(directory: str | None = None) -> Path:
    """The docker config file: `directory` may be a config directory or (like oras's
    `--registry-config`) the file itself (an existing file or a `*.json` path)."""
    if directory:
        p = Path(directory)
        if p.suffix == ".json" or p.is_file():
            return p
        return p / "config.json"
    return config_dir() / "config.json"


CONFIG_LIMIT = 4 * 1024 * 1024
"""A docker config is a few KiB; a larger file (or a device, a FIFO) is refused, never read whole."""
_HELPER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _read_config(path: Path) -> bytes | None:
    """The bytes of the config file (None if absent): a regular file of at most CONFIG_LIMIT
    bytes, opened without blocking (a FIFO must not hang the command)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RegistryAuthError(f"docker config cannot be read: {exc.strerror}", where=str(path)) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RegistryAuthError("docker config is not a regular file", where=str(path))
        if st.st_size > CONFIG_LIMIT:
            raise RegistryAuthError(f"docker config is larger than {CONFIG_LIMIT} bytes", where=str(path))
        data = fh.read(CONFIG_LIMIT + 1)
    if len(data) > CONFIG_LIMIT:
        raise RegistryAuthError(f"docker config is larger than {CONFIG_LIMIT} bytes", where=str(path))
    return data


def _load(path: Path) -> dict[str, Any]:
    data = _read_config(path)
    if data is None:
        return {}
    try:
        obj = loads_strict(data or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise RegistryAuthError(f"docker config is not valid JSON: {exc}", where=str(path)) from exc
    if not isinstance(obj, dict):
        raise RegistryAuthError("docker config is not a JSON object", where=str(path))
    return obj


def _keys_for(host: str) -> list[str]:
    if host in DOCKER_HUB_KEYS:
        return list(DOCKER_HUB_KEYS)
    return [host, f"https://{host}", f"http://{host}", f"https://{host}/v1/", f"https://{host}/v2/"]


def _helper(name: str, action: str, payload: str) -> str:
    if not _HELPER_NAME.fullmatch(name):
        # the program is looked up on PATH by name; a slash would run a file relative to cwd
        raise RegistryAuthError(
            f"credential helper name {name[:64]!r} is not a plain name", where="docker config"
        )
    exe = f"docker-credential-{name}"
    try:
        proc = subprocess.run(
            [exe, action], input=payload, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, ValueError) as exc:  # not found, not executable, NUL in the name
        raise RegistryAuthError(f"credential helper {exe} not found on PATH", where=exe) from exc
    except subprocess.TimeoutExpired as exc:
        raise RegistryAuthError(f"credential helper {exe} timed out", where=exe) from exc
    if proc.returncode != 0:
        if "credentials not found" in (proc.stdout + proc.stderr).lower():
            return ""
        raise RegistryAuthError(
            f"credential helper {exe} {action} failed: {proc.stderr.strip()[:200]}", where=exe
        )
    return proc.stdout


def _from_helper(name: str, host: str) -> Credential:
    out = _helper(name, "get", host)
    if not out.strip():
        return Credential()
    try:
        obj = loads_strict(out)
    except ValueError as exc:
        raise RegistryAuthError(f"credential helper {name} returned invalid JSON", where=name) from exc
    user, secret = (obj.get(k, "") if isinstance(obj, dict) else None for k in ("Username", "Secret"))
    if not isinstance(user, str) or not isinstance(secret, str):
        raise RegistryAuthError(f"credential helper {name} returned no string Username/Secret", where=name)
    if user == "<token>":
        return Credential(identity_token=secret)
    return Credential(user, secret)


def _helpers(cfg: dict[str, Any], path: Path) -> tuple[dict[str, Any], str | None]:
    """`credHelpers` (host -> helper name) and `credsStore`, each of the right type or a typed error."""
    helpers = cfg.get("credHelpers") or {}
    store = cfg.get("credsStore") or None
    if not isinstance(helpers, dict) or not all(isinstance(v, str) for v in helpers.values()):
        raise RegistryAuthError("`credHelpers` in the docker config is not a map of names", where=str(path))
    if store is not None and not isinstance(store, str):
        raise RegistryAuthError("`credsStore` in the docker config is not a name", where=str(path))
    return helpers, store


def load_credential(host: str, directory: str | None = None) -> Credential:
    """Credentials for `host` from the docker config: credHelpers, then auths, then credsStore."""
    cfg = _load(config_path(directory))
    helpers, store = _helpers(cfg, config_path(directory))
    for key in _keys_for(host):
        if key in helpers:
            return _from_helper(helpers[key], host)
    auths = cfg.get("auths") or {}
    if isinstance(auths, dict):
        for key in _keys_for(host):
            entry = auths.get(key)
            if not isinstance(entry, dict):
                continue
            if entry.get("identitytoken"):
                return Credential(identity_token=str(entry["identitytoken"]))
            if entry.get("auth"):
                try:
                    user, _, pw = base64.b64decode(str(entry["auth"])).decode("utf-8").partition(":")
                except (binascii.Error, ValueError) as exc:  # also non-ASCII text and bad UTF-8
                    raise RegistryAuthError(
                        "auths entry is not base64(user:password)", where=f"{config_path(directory)}:{key}"
                    ) from exc
                return Credential(user, pw)
            if entry.get("username"):
                return Credential(str(entry["username"]), str(entry.get("password", "")))
    if store:
        return _from_helper(store, host)
    return Credential()


def _write(path: Path, cfg: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, (json.dumps(cfg, indent="\t") + "\n").encode("utf-8"), mode=0o600)


def store_credential(host: str, cred: Credential, directory: str | None = None) -> Path:
    """Save credentials like `oras login`/`docker login`: a helper if configured, else `auths`."""
    path = config_path(directory)
    cfg = _load(path)
    helpers, store = _helpers(cfg, path)
    helper = helpers.get(host) or store
    if helper:
        user = "<token>" if cred.identity_token else cred.username
        secret = cred.identity_token or cred.password
        _helper(str(helper), "store", json.dumps({"ServerURL": host, "Username": user, "Secret": secret}))
        return path
    auths = cfg.setdefault("auths", {})
    if not isinstance(auths, dict):
        raise RegistryAuthError("`auths` in the docker config is not an object", where=str(path))
    if cred.identity_token:
        auths[host] = {"identitytoken": cred.identity_token}
    else:
        auths[host] = {"auth": base64.b64encode(f"{cred.username}:{cred.password}".encode()).decode()}
    _write(path, cfg)
    return path


def remove_credential(host: str, directory: str | None = None) -> bool:
    """Forget credentials for `host` (helper erase or `auths` removal); True if something was removed."""
    path = config_path(directory)
    cfg = _load(path)
    helpers, store = _helpers(cfg, path)
    helper = helpers.get(host) or store
    removed = False
    auths = cfg.get("auths")
    if isinstance(auths, dict) and host in auths:
        del auths[host]
        _write(path, cfg)
        removed = True
    if helper:
        _helper(str(helper), "erase", host)
        removed = True
    return removed
