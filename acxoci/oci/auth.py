"""Registry credentials and auth challenges: docker `config.json` (`auths`, `credHelpers`,
`credsStore` via `docker-credential-*`, honouring `DOCKER_CONFIG`, the same file oras uses),
and a strict parser for `WWW-Authenticate` (Basic / Bearer realm, service, scope)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
import selectors
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.fsutil import atomic_write
from acxoci.oci.errors import RegistryAuthError, RegistryProtocolError

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


HELPER_OUTPUT_LIMIT = 64 * 1024
"""Most bytes read from a credential helper's stdout, and from its stderr: a credential is a few
hundred bytes; past this the helper is killed and refused (its output is never held whole)."""
HELPER_TIMEOUT = 30.0
"""Seconds a credential helper may take, all its output included."""
_READ = 64 * 1024


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the helper we started and anything it started (its own process group, whose id is
    the helper's pid), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _run_helper(exe: str, action: str, payload: bytes) -> tuple[int, bytes, bytes]:
    """Run `exe action` with `payload` on stdin: (exit status, stdout, stderr), each output at most
    HELPER_OUTPUT_LIMIT bytes, read as it comes, all within HELPER_TIMEOUT; RegistryAuthError
    (naming the helper) past either, the helper and its children killed."""
    try:
        proc = subprocess.Popen(
            [exe, action], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:  # not found, not executable, NUL in the name
        raise RegistryAuthError(f"credential helper {exe} not found on PATH", where=exe) from exc
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + HELPER_TIMEOUT
    out_fd, err_fd, in_fd = proc.stdout.fileno(), proc.stderr.fileno(), proc.stdin.fileno()
    outputs = {out_fd: bytearray(), err_fd: bytearray()}
    done = False
    pending = memoryview(payload)
    sel = selectors.DefaultSelector()
    try:
        for fh in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(fh.fileno(), False)
        if pending:
            sel.register(in_fd, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        for fd in outputs:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise RegistryAuthError(f"credential helper {exe} timed out after {HELPER_TIMEOUT:g} s",
                                        where=exe)
            for key, _ in sel.select(min(left, 1.0)):
                fd = int(key.fd)
                if fd == in_fd:
                    try:
                        pending = pending[os.write(fd, pending[:_READ]):]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # the helper does not read its input: its answer decides
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(fd)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(fd, _READ)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fd)
                    continue
                outputs[fd] += chunk
                if len(outputs[fd]) > HELPER_OUTPUT_LIMIT:
                    raise RegistryAuthError(
                        f"credential helper {exe} wrote more than {HELPER_OUTPUT_LIMIT // 1024} KiB",
                        where=exe)
        try:
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RegistryAuthError(f"credential helper {exe} timed out after {HELPER_TIMEOUT:g} s",
                                    where=exe) from None
        done = True
    finally:
        sel.close()
        if not done:
            _kill_group(proc)
        for fh in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                fh.close()
    return code, bytes(outputs[out_fd]), bytes(outputs[err_fd])


def _helper(name: str, action: str, payload: str) -> str:
    if not _HELPER_NAME.fullmatch(name):
        # the program is looked up on PATH by name; a slash would run a file relative to cwd
        raise RegistryAuthError(
            f"credential helper name {name[:64]!r} is not a plain name", where="docker config"
        )
    exe = f"docker-credential-{name}"
    code, out_b, err_b = _run_helper(exe, action, payload.encode("utf-8"))
    out, err = out_b.decode("utf-8", "replace"), err_b.decode("utf-8", "replace")
    if code != 0:
        if "credentials not found" in (out + err).lower():
            return ""
        raise RegistryAuthError(
            f"credential helper {exe} {action} failed: {err.strip()[:200]}", where=exe
        )
    return out


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
