"""Transport setup, resolved once per registry host: which scheme, which CA bundle, whether TLS is
verified, where credentials come from. Inputs, strongest first: explicit options (CLI flags),
the registries file (`--registries FILE` or `ACX_REGISTRIES_FILE`), the environment
(`ACX_CA_FILE`, `SSL_CERT_FILE`, `DOCKER_CONFIG`), defaults. Pure apart from reading that file.

Loopback rule (docs/decisions/0011): with no explicit choice, `localhost`/`127.0.0.1`/`::1` are
tried over HTTPS first and fall back to plain HTTP only when the peer does not speak TLS at all
(like crane and cosign); every other host is HTTPS unless plain HTTP is chosen."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.errors import UsageError
from acxoci.fsutil import read_bytes

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
REGISTRIES_FILE_ENV = "ACX_REGISTRIES_FILE"
REGISTRIES_FILE_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class RemoteOptions:
    """How to reach registries, as the user asked: plain HTTP (None = automatic, see the loopback
    rule), a CA bundle, skip TLS verification, explicit credentials, the docker config dir,
    the registries file, retry bounds, per-request timeouts and deadlines, read caps."""

    plain_http: bool | None = None
    ca_file: str | None = None
    insecure_skip_verify: bool = False
    username: str | None = None
    password: str | None = None
    docker_config: str | None = None
    registries_file: str | None = None
    max_retries: int = 5
    max_retry_seconds: float = 60.0
    chunk_size: int = 64 * 1024 * 1024
    monolithic_limit: int = 32 * 1024 * 1024
    timeout: float = 30.0
    """Seconds for connecting and for each socket read."""
    deadline: float = 120.0
    """Overall seconds for one request (headers and a bounded body); large bodies add
    size / `min_rate` on top."""
    min_rate: int = 256 * 1024
    """Bytes per second a large transfer may not fall below on average."""
    max_referrers: int = 1000
    max_referrer_pages: int = 20
    max_tags: int = 100_000
    max_depth: int = 64
    """Deepest index nesting or referrer chain a graph walk follows."""
    fallback_index: bool = False
    """Also write the tag-schema fallback index when the registry serves the Referrers API."""


@dataclass(frozen=True)
class HostSettings:
    """The resolved transport for one host. `scheme` is `https`, `http` or `auto` (HTTPS, then
    HTTP if the loopback peer does not speak TLS). `verify` is what requests takes."""

    host: str
    scheme: str
    verify: bool | str
    docker_config: str | None
    plain_chosen: bool
    """True when the user chose plain HTTP for this host (flag or registries file)."""


def hostname_of(host: str) -> str:
    """`host[:port]` → host name (brackets kept for IPv6), lower-cased."""
    if host.startswith("["):
        return host.split("]", 1)[0].lower() + "]"
    return host.rsplit(":", 1)[0].lower() if host.count(":") == 1 else host.lower()


def is_loopback(host: str) -> bool:
    return hostname_of(host) in LOOPBACK_HOSTS


def _bool(entry: dict[str, Any], key: str, where: str) -> bool | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, bool):
        raise UsageError(f"`{key}` must be true or false", where=where)
    return value


def load_registries_file(path: str) -> dict[str, dict[str, Any]]:
    """`{"registries": {"HOST[:PORT]": {"plainHttp": bool, "caFile": str, "insecure": bool}}}`;
    a relative `caFile` is relative to the file. Any other shape is a usage error."""
    p = Path(path)
    try:
        doc = loads_strict(read_bytes(p, "registries file", limit=REGISTRIES_FILE_LIMIT))
    except MalformedError as exc:
        raise UsageError(f"registries file is not valid JSON: {exc}", where=path) from exc
    regs = doc.get("registries") if isinstance(doc, dict) else None
    if not isinstance(regs, dict) or set(doc) - {"registries"}:
        raise UsageError('registries file must be {"registries": {"HOST": {...}}}', where=path)
    out: dict[str, dict[str, Any]] = {}
    for host, entry in regs.items():
        where = f"{path}: registries.{host}"
        if not isinstance(entry, dict) or set(entry) - {"plainHttp", "caFile", "insecure"}:
            raise UsageError("entry takes only plainHttp, caFile, insecure", where=where)
        ca = entry.get("caFile")
        if ca is not None and (not isinstance(ca, str) or not ca):
            raise UsageError("`caFile` must be a path", where=where)
        out[host.lower()] = {
            "plainHttp": _bool(entry, "plainHttp", where),
            "insecure": _bool(entry, "insecure", where),
            "caFile": str((p.parent / ca) if ca and not Path(ca).is_absolute() else ca) if ca else None,
        }
    return out


def _ca_file(path: str, source: str) -> str:
    if not Path(path).is_file():
        raise UsageError(f"CA bundle {path} is not a regular file", where=source)
    return path


def resolve(host: str, options: RemoteOptions) -> HostSettings:
    """Settings for `host` from options, the registries file and the environment."""
    entry: dict[str, Any] = {}
    reg_file = options.registries_file or os.environ.get(REGISTRIES_FILE_ENV) or None
    if reg_file:
        entry = load_registries_file(reg_file).get(host.lower(), {})
    plain = options.plain_http if options.plain_http is not None else entry.get("plainHttp")
    if plain is True:
        scheme = "http"
    elif plain is False or not is_loopback(host):
        scheme = "https"
    else:
        scheme = "auto"
    insecure = options.insecure_skip_verify or bool(entry.get("insecure"))
    verify: bool | str = True
    if options.ca_file:
        verify = _ca_file(options.ca_file, "--ca-file")
    elif entry.get("caFile"):
        verify = _ca_file(str(entry["caFile"]), f"{reg_file}: registries.{host}.caFile")
    elif os.environ.get("ACX_CA_FILE"):
        verify = _ca_file(os.environ["ACX_CA_FILE"], "ACX_CA_FILE")
    elif os.environ.get("SSL_CERT_FILE"):
        verify = _ca_file(os.environ["SSL_CERT_FILE"], "SSL_CERT_FILE")
    if insecure:
        verify = False
    return HostSettings(
        host=host,
        scheme=scheme,
        verify=verify,
        docker_config=options.docker_config,
        plain_chosen=plain is True,
    )


_ACTIVE: ContextVar[RemoteOptions | None] = ContextVar("acx_remote_options", default=None)


def active_options() -> RemoteOptions:
    """The options of the running command (set by the CLI's transport flags), else defaults:
    code that opens a target without explicit options still gets the user's transport setup."""
    return _ACTIVE.get() or RemoteOptions()


@contextlib.contextmanager
def using(options: RemoteOptions) -> Iterator[RemoteOptions]:
    """Make `options` the active transport setup for this block (one command's run)."""
    token = _ACTIVE.set(options)
    try:
        yield options
    finally:
        _ACTIVE.reset(token)
