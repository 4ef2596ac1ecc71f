"""The host's files (`--host HOST.json`, `--host-limits LIMITS.yaml`, `--roster DIR`) read into
`HostInputs`: a bad file is invalid_input or not_found, never a refusal."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from acxoci.attest.canonical import loads_strict, sha256_digest
from acxoci.attest.errors import AttestError
from acxoci.errors import InvalidInput, NotFound
from acxoci.fsutil import read_bytes
from acxoci.install.judge import HostInputs, Judgement
from acxoci.oci.target import RemoteOptions


def host_inputs(host: Path | None, host_limits: Path | None, roster: Path | None) -> HostInputs:
    """Read the host descriptor and resource limits, each with its resolved path and digest."""
    descriptor = d_digest = l_digest = None
    limits = None
    if host is not None:
        if not host.exists():
            from acxoci.install.hosts import HOSTS

            hint = (f"to activate its skills for {host}, pass --activate {host}" if str(host) in HOSTS
                    else "pass the host descriptor's file (acx.host.v1 JSON)")
            raise NotFound(f"host descriptor not found: {host}", hint=hint)
        data = read_bytes(host, "host descriptor", limit=1 << 20)
        try:
            descriptor = loads_strict(data)
        except AttestError as exc:
            raise InvalidInput(f"host descriptor is not valid JSON: {exc}", where=str(host)) from exc
        if not isinstance(descriptor, dict):
            raise InvalidInput("host descriptor is not a JSON object", where=str(host))
        from acxoci.policy.harness import parse_host

        parse_host(descriptor, where=str(host))
        d_digest = sha256_digest(data)
    if host_limits is not None:
        from acxoci.policy.limits import load_host_limits

        limits = load_host_limits(host_limits)
        l_digest = sha256_digest(read_bytes(host_limits, "host limits", limit=1 << 20))
    return HostInputs(descriptor, str(host.resolve()) if host else None, d_digest, limits,
                      str(host_limits.resolve()) if host_limits else None, l_digest, roster)


def judge_under(ref: str, policy: Path, *, host: Path | None = None, host_limits: Path | None = None,
                store: Path | None = None, roster: Path | None = None, now: datetime,
                remote: RemoteOptions | None = None) -> Judgement:
    """`ref` judged under the policy file as `acx install` would judge it into `store` (default: the
    store install uses; read only, for a workflow's staffing and the version check), writing
    nothing (a scratch folder aside): `acx verify REF --policy`, `push --policy`, the Python API."""
    from acxoci.install.judge import Context, judge_reference
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy

    ctx = Context(load_policy(policy, now=now), now, host_inputs(host, host_limits, roster), Store(store),
                  remote=remote)
    return judge_reference(ref, ctx)
