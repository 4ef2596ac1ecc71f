"""The public Python API of acxoci: the same decisions as the `acx` command, without a subprocess.

Everything a host or a CI script needs is here; every other module is internal and may change.
Results share one verdict shape (`Verdict`: `ok`, `trust`, `reasons` with stable `code`s, and
the checks behind them); failures that are not verdicts raise `acxoci.errors.AcxError`
subclasses (each with a stable `kind` and exit code, as in docs/cli.md).

    from acxoci import api
    v = api.verify_cartridge("agent.acx", trust_registry="trust.json")
    if not v.ok: print(v.reasons)

See docs/api.md for runnable examples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.errors import AcxError

__all__ = [
    "AcxError",
    "Check",
    "Installed",
    "Reason",
    "Verdict",
    "activate",
    "install",
    "judge",
    "pull",
    "push",
    "staff_workflow",
    "verify_attestations",
    "verify_cartridge",
    "verify_workflow",
]

PathLike = str | Path


@dataclass(frozen=True)
class Reason:
    """Why a verdict is not accepting: a stable machine `code` and a sentence for people."""

    code: str
    message: str


@dataclass(frozen=True)
class Check:
    """One check of the acceptance decision, in its fixed order (docs/install.md)."""

    id: str
    status: str  # pass | skip | fail | unavailable
    reason: str
    kind: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The one verdict shape: `ok` (accepted), `trust` (trusted, portable, …, when a signature
    was judged), `reasons` (why not), `checks` (the decision's checks, when it ran them), and the
    command's own JSON (`details`, the same fields `acx --json` prints)."""

    ok: bool
    trust: str | None = None
    reasons: tuple[Reason, ...] = ()
    checks: tuple[Check, ...] = ()
    details: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Installed:
    """What `install` did: the verdict, and where the item is (None when refused)."""

    verdict: Verdict
    name: str | None
    digest: str | None
    path: Path | None
    status: str  # installed | already-installed | refused


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def _registry(path: PathLike | None, now: datetime) -> Any:
    if path is None:
        return None
    from acxoci.cartridge.trust_file import load_trust_registry

    return load_trust_registry(Path(path))


def _of_judgement(j: Any) -> Verdict:
    sig = j.gathered.signature if j.gathered is not None else None
    checks = tuple(Check(c.id, c.status, c.reason, c.kind) for c in j.checks)
    reasons = tuple(Reason(c.kind or c.status, f"{c.id}: {c.reason}") for c in j.failed)
    return Verdict(j.ok, sig.trust if sig is not None else None, reasons, checks, j.to_json())


def _of_signed(v: Any) -> Verdict:
    """A cartridge, workflow or graph verifier's verdict (not the acceptance decision)."""
    ok = not v.rejected if hasattr(v, "rejected") else bool(v.ok)
    reasons = () if ok else tuple(Reason(str(v.trust), str(i)) for i in (v.issues or [v.summary]))
    return Verdict(ok, str(v.trust), reasons, (), v.to_json())


def verify_cartridge(path: PathLike, *, trust_registry: PathLike | None = None,
                     now: datetime | None = None) -> Verdict:
    """The file's integrity and signature verdict (`acx cartridge verify`): `ok` unless tampered,
    unsigned or unverifiable; `trust` says whether a trust registry vouches for the signer."""
    from acxoci.cartridge.verify import verify_cartridge as verify

    at = _now(now)
    return _of_signed(verify(Path(path), registry=_registry(trust_registry, at), now=at))


def verify_workflow(path: PathLike, *, trust_registry: PathLike | None = None,
                    now: datetime | None = None) -> Verdict:
    """A workflow's or agent graph's signature verdict (`acx workflow verify` / `graph verify`)."""
    from acxoci.attest.canonical import loads_strict
    from acxoci.fsutil import read_bytes
    from acxoci.workflow.graph import is_graph, verify_graph
    from acxoci.workflow.verify import verify_workflow as verify

    at = _now(now)
    doc = loads_strict(read_bytes(Path(path), "workflow", limit=16 * 1024 * 1024))
    registry = _registry(trust_registry, at)
    if is_graph(doc):
        return _of_signed(verify_graph(doc, registry=registry, now=at))
    return _of_signed(verify(doc, registry=registry, now=at))


def judge(ref: str, *, policy: PathLike, host: PathLike | None = None, store: PathLike | None = None,
          now: datetime | None = None) -> Verdict:
    """May I trust this artifact under my policy? The one acceptance decision `acx install` makes
    (`acx verify REF --policy`), installing nothing. `ref`: `host/repo:tag`, `oci-layout:PATH:tag`."""
    from acxoci.install.hostfiles import judge_under  # the same gathering the command uses
    from acxoci.oci.settings import active_options

    return _of_judgement(judge_under(ref, Path(policy), host=Path(host) if host else None,
                                     store=Path(store) if store else None, now=_now(now),
                                     remote=active_options()))


def install(ref: str, *, policy: PathLike, store: PathLike | None = None, host: PathLike | None = None,
            activate_for: str | None = None, now: datetime | None = None) -> Installed:
    """Pull, judge and install `ref` atomically (`acx install`), or refuse and change nothing.
    `activate_for` ("claude", "codex", "cursor") also activates its skills: both or neither."""
    from acxoci.install.activate import skills_root
    from acxoci.install.hostfiles import host_inputs
    from acxoci.install.install import ActivateRequest
    from acxoci.install.install import install as do_install
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy
    from acxoci.oci.settings import active_options

    at = _now(now)
    request = None
    if activate_for is not None:
        request = ActivateRequest(skills_root(activate_for, home=Path.home()), activate_for)
    out = do_install(ref, policy=load_policy(Path(policy), now=at),
                     store=Store(Path(store) if store else None), now=at,
                     host=host_inputs(Path(host) if host else None, None, None), remote=active_options(),
                     activate=request)
    checks = tuple(Check(c.id, c.status, c.reason, c.kind) for c in out.checks)
    reasons = tuple(Reason(c.kind or c.status, f"{c.id}: {c.reason}") for c in out.failed)
    verdict = Verdict(out.status != "refused", None, reasons, checks, out.to_json())
    return Installed(verdict, out.name, out.digest, Path(out.path) if out.path else None, out.status)


def activate(name: str, *, host: str, store: PathLike | None = None, policy: PathLike | None = None,
             now: datetime | None = None) -> list[str]:
    """Write an installed cartridge's skills into `host`'s skills folder, judged now (`acx activate`);
    returns the files written."""
    from acxoci.install.activate import activate as do_activate
    from acxoci.install.activate import skills_root
    from acxoci.install.store import Store

    res = do_activate(Store(Path(store) if store else None), name, skills_root(host, home=Path.home()),
                      host=host, now=_now(now), policy_file=Path(policy) if policy else None)
    return [str(f["path"]) for f in res.files]


def pull(ref: str, out: PathLike, *, trust_registry: PathLike | None = None,
         now: datetime | None = None) -> str:
    """Pull an artifact to `out` (every blob digest-checked, the artifact verified); its digest."""
    from acxoci.artifact import pull_file
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.target import open_target

    at = _now(now)
    target, parsed = open_target(parse_reference(ref, require_ref=True), create=False)
    got = pull_file(target, parsed.reference or "", Path(out), verify=True,
                    registry=_registry(trust_registry, at), now=at)
    return str(got.manifest.digest)


def push(file: PathLike, ref: str, *, now: datetime | None = None) -> str:
    """Push a cartridge, workflow or graph as an OCI artifact under `ref`'s tag (a SemVer tag must be
    the signed version, as `acx push` requires); its manifest digest."""
    from acxoci.artifact import detect_kind, push_path
    from acxoci.errors import RefusedByPolicy
    from acxoci.install.judge import tag_decision
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.target import open_target

    path = Path(file)
    parsed = parse_reference(ref, require_ref=True)
    verdict = tag_decision(path, detect_kind(path), parsed.tag)
    if verdict.failed:
        raise RefusedByPolicy(f"{verdict.reason}; nothing was pushed", where=ref)
    target, parsed = open_target(parsed)
    desc, _facts, _built = push_path(target, path, parsed.tag, verify=True, registry=None, now=_now(now))
    return str(desc.digest)


def verify_attestations(ref: str, *, key: PathLike | None = None, trust_registry: PathLike | None = None,
                        now: datetime | None = None) -> Verdict:
    """The artifact's attestations (cosign legacy `.att` and sigstore bundles) and their binding to
    its content, with a public key or a trust registry (`acx verify REF --key|--trust-registry`)."""
    import tempfile

    from acxoci.attestation.signing import TrustedKey
    from acxoci.attestation.verify import verify_artifact
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.target import ReadView, open_target, resolve_manifest

    at = _now(now)
    keys: list[Any] = []
    if key is not None:
        from acxoci.attest.keys import load_public_pem
        from acxoci.fsutil import read_bytes

        keys.append(TrustedKey(load_public_pem(read_bytes(Path(key), "public key", limit=1 << 20)), str(key)))
    registry = _registry(trust_registry, at)
    if registry is not None:
        keys += [TrustedKey(k.public_key, f"registry {k.publisher_id}", k) for k in registry.keys]
    opened, parsed = open_target(parse_reference(ref, require_ref=True), create=False)
    target = ReadView(opened)
    subject = resolve_manifest(target, parsed.reference or "")
    with tempfile.TemporaryDirectory(prefix="acx-api-") as tmp:
        report = verify_artifact(target, subject, keys, reference=str(parsed), now=at, workdir=Path(tmp))
    reasons = tuple(Reason("attestation", r) for r in report.reasons) if not report.ok else ()
    return Verdict(report.ok, None, reasons, (), report.to_json())


def staff_workflow(path: PathLike, *, policy: PathLike, store: PathLike | None = None,
                   cartridges: PathLike | None = None, roster: Sequence[str] = (),
                   now: datetime | None = None) -> Verdict:
    """Can this workflow's team be staffed, each member judged now under the policy
    (`acx workflow ready --policy`)? From the store's cartridges, a folder and references."""
    import tempfile

    from acxoci.install.judge import Context, HostInputs, judge_file
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy
    from acxoci.oci.settings import active_options
    from acxoci.workflow.roster_oci import load_registry_roster

    at = _now(now)
    pol = load_policy(Path(policy), now=at)
    with tempfile.TemporaryDirectory(prefix="acx-api-roster-") as tmp:
        pulled = tuple(load_registry_roster(roster, Path(tmp), registry=pol.combined_registry(), now=at,
                                            options=active_options())) if roster else ()
        ctx = Context(pol, at, HostInputs(roster=Path(cartridges) if cartridges else None),
                      Store(Path(store)) if store is not None else None, remote=active_options(),
                      pulled=pulled)
        return _of_judgement(judge_file(Path(path), ctx))
