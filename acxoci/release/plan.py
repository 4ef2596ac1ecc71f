"""The release plan (`acx-release.yaml`, schema `acx.release-plan/1`): the goal (what is released, to
which repositories, under which tags, and its identity: vision, non-goals, authority sources), the
inputs (artifact files or build recipes, keys by file or env reference, level credentials and
status lists, registry credentials by env reference), the acceptance policy (an
`acx.verification-policy/1` file: what `acx install` will demand), what the release observes but
does not write (`observe`: mirrors and pull-through caches, status lists, approvals) and the
per-registry quota (`quota`).

The document is validated against its JSON Schema (messages name the field), then decoded once
into frozen typed models (`attest.typed.decode_as`), and only those models are read. Loading is
validation only: paths are resolved against the plan's folder, nothing is read but the plan
itself (inputs are read by the `prepare` effect, so a plan can be shown without them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import msgspec

from acxoci import jsonschemas
from acxoci.attest.canonical import jcs_digest, loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.keys import PrivateKey
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.errors import AuthError, InvalidInput, UsageError, parse_problem
from acxoci.fsutil import read_bytes
from acxoci.oci.reference import parse_reference
from acxoci.oci.settings import RemoteOptions, active_options
from acxoci.yamldoc import load_yaml

SCHEMA_VERSION = "acx.release-plan/1"
SCHEMA_FILE = "acx.release-plan-1.schema.json"
DEFAULT_FORMATS: tuple[str, ...] = ("legacy", "bundle")
SourceKind = Literal["cartridge", "workflow", "agent-graph", "build"]
Escalation = Literal["gate", "replan"]


def plain(model: Any) -> Any:
    """A typed model (or anything holding models) as plain JSON values: dicts, lists, str, numbers."""
    return msgspec.json.decode(msgspec.json.encode(model))


# ---- the document, as typed models (decoded once, after the schema check) ----------------------


class _Doc(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Base of the plan's document models: camelCase names, unknown fields refused."""


class KeylessDoc(_Doc, frozen=True, kw_only=True):
    trust_config: str | None = None
    identity_token_file: str | None = None
    tlog_upload: bool = True


class KeyDoc(_Doc, frozen=True, kw_only=True):
    file: str | None = None
    env: str | None = None
    password_env: str | None = None
    pkcs11: str | None = None
    keyless: KeylessDoc | None = None


class BuildDoc(_Doc, frozen=True, kw_only=True):
    package: str
    publisher: str
    key: KeyDoc
    created_at: str


class InputDoc(_Doc, frozen=True, kw_only=True):
    cartridge: str | None = None
    workflow: str | None = None
    graph: str | None = None
    build: BuildDoc | None = None


class KeysDoc(_Doc, frozen=True, kw_only=True):
    attestation: KeyDoc | None = None


class LevelDoc(_Doc, frozen=True, kw_only=True):
    credentials: dict[str, str] = {}
    status_lists: dict[str, str] = {}


class RegistryDoc(_Doc, frozen=True, kw_only=True):
    host: str
    username_env: str | None = None
    password_env: str | None = None
    plain_http: bool | None = None
    ca_file: str | None = None


class InputsDoc(_Doc, frozen=True, kw_only=True):
    artifacts: dict[str, InputDoc]
    keys: KeysDoc = KeysDoc()
    level: LevelDoc = LevelDoc()
    registries: tuple[RegistryDoc, ...] = ()


class DestinationDoc(_Doc, frozen=True, kw_only=True):
    repository: str
    tags: tuple[str, ...] = ()


class ArtifactDoc(_Doc, frozen=True, kw_only=True):
    input: str
    to: tuple[DestinationDoc, ...]
    level_credential: str | None = None


class AttestationsDoc(_Doc, frozen=True, kw_only=True):
    formats: tuple[Literal["legacy", "bundle"], ...] | None = None
    envelope: bool = True
    provenance: bool | None = None


class StatusListDoc(_Doc, frozen=True, kw_only=True):
    input: str
    repository: str
    tag: str = "status"


class AuthorityDoc(_Doc, frozen=True, kw_only=True):
    role: str
    source: str


class GoalDoc(_Doc, frozen=True, kw_only=True):
    id: str
    artifacts: tuple[ArtifactDoc, ...]
    attestations: AttestationsDoc = AttestationsDoc()
    status_list: StatusListDoc | None = None
    vision: str | None = None
    non_goals: tuple[str, ...] = ()
    authority: tuple[AuthorityDoc, ...] = ()


class AcceptanceDoc(_Doc, frozen=True, kw_only=True):
    policy: str
    criteria: tuple[str, ...] = ()


class BudgetDoc(_Doc, frozen=True, kw_only=True):
    attempts: int = 4
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 10.0
    transport_retries: int = 3


class LeaseDoc(_Doc, frozen=True, kw_only=True):
    ttl_seconds: float = 900.0


class MirrorDoc(_Doc, frozen=True, kw_only=True):
    repository: str
    of: str
    interval_seconds: float | None = None
    max_interval_seconds: float | None = None
    freshness_seconds: float | None = None
    escalate_after: int | None = None
    escalate: Escalation | None = None


class StatusWatchDoc(_Doc, frozen=True, kw_only=True):
    url: str
    valid_from: str | None = None
    digest: str | None = None
    interval_seconds: float | None = None
    max_interval_seconds: float | None = None
    freshness_seconds: float | None = None
    escalate_after: int | None = None
    escalate: Escalation | None = None


class ApprovalDoc(_Doc, frozen=True, kw_only=True):
    id: str
    blocks: tuple[str, ...]
    note: str | None = None


class ObserveDoc(_Doc, frozen=True, kw_only=True):
    mirrors: tuple[MirrorDoc, ...] = ()
    status_lists: tuple[StatusWatchDoc, ...] = ()
    approvals: tuple[ApprovalDoc, ...] = ()
    interval_seconds: float = 5.0
    max_interval_seconds: float = 300.0
    freshness_seconds: float = 600.0
    escalate_after: int = 10
    escalate: Escalation = "gate"
    wait_seconds: float = 60.0


class QuotaRegistryDoc(_Doc, frozen=True, kw_only=True):
    host: str
    requests: int | None = None
    bytes: int | None = None
    publishes: int | None = None
    window_seconds: float | None = None


class QuotaDoc(_Doc, frozen=True, kw_only=True):
    window_seconds: float = 3600.0
    registries: tuple[QuotaRegistryDoc, ...] = ()


class PlanDoc(_Doc, frozen=True, kw_only=True):
    schema_version: str
    goal: GoalDoc
    inputs: InputsDoc
    acceptance: AcceptanceDoc
    budget: BudgetDoc = BudgetDoc()
    lease: LeaseDoc = LeaseDoc()
    observe: ObserveDoc = ObserveDoc()
    quota: QuotaDoc = QuotaDoc()


# ---- the resolved plan ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KeylessRef:
    """Keyless signing (decision 0034): the identity token from the CI's ambient provider (or the
    file named), the Sigstore deployment of `trust_config` (default: public-good)."""

    trust_config: Path | None = None
    identity_token_file: Path | None = None
    tlog_upload: bool = True


@dataclass(frozen=True)
class KeyRef:
    """A signing key named by a file, an environment variable (PEM or cosign.key) or a PKCS#11 URI,
    or keyless signing; never inline."""

    file: Path | None = None
    env: str | None = None
    password_env: str | None = None
    pkcs11: str | None = None
    keyless: KeylessRef | None = None

    def describe(self) -> str:
        """Where the key comes from (safe to print: no secret; a PKCS#11 URI without its PIN)."""
        if self.keyless is not None:
            return "keyless (Sigstore)"
        if self.pkcs11 is not None:
            from acxoci.pkcs11key import parse_pkcs11_uri

            return parse_pkcs11_uri(self.pkcs11).describe()
        return f"file {self.file}" if self.file is not None else f"env ${self.env}"

    def load(self) -> PrivateKey:
        """Read and decrypt the key; a missing or unreadable key is an AuthError (a person must act)."""
        from acxoci.attest.cosignkey import WrongPassword, load_signing_key

        if self.keyless is not None:
            raise UsageError("keyless signing makes attestations, not publisher signatures",
                             where=self.describe())
        if self.pkcs11 is not None:
            from acxoci.pkcs11key import load_pkcs11_key

            return load_pkcs11_key(self.pkcs11)

        if self.file is not None:
            data = read_bytes(self.file, "signing key", limit=1 << 20)
        else:
            assert self.env is not None
            value = os.environ.get(self.env)
            if not value:
                raise AuthError(f"environment variable {self.env} (signing key) is not set",
                                where="inputs.keys")
            data = value.encode("utf-8")
        password: bytes | None = None
        if self.password_env is not None:
            pw = os.environ.get(self.password_env)
            if pw is None:
                raise AuthError(f"environment variable {self.password_env} (key password) is not set",
                                where=self.describe())
            password = pw.encode("utf-8")
        try:
            return load_signing_key(data, password)
        except WrongPassword as exc:
            raise AuthError(str(exc), where=self.describe()) from exc
        except AttestError as exc:
            raise InvalidInput(f"not a signing key: {exc}", where=self.describe()) from exc


@dataclass(frozen=True)
class BuildRecipe:
    """Build and sign a cartridge from an agent package (reproducible: `created_at` is fixed)."""

    package: Path
    publisher: str
    key: KeyRef
    created_at: str


@dataclass(frozen=True)
class ArtifactInput:
    """One named input: a cartridge file, a workflow file, or a cartridge build recipe."""

    name: str
    kind: SourceKind
    path: Path | None = None
    build: BuildRecipe | None = None

    @property
    def artifact_kind(self) -> Literal["cartridge", "workflow", "agent-graph"]:
        if self.kind == "workflow" or self.kind == "agent-graph":
            return self.kind
        return "cartridge"


@dataclass(frozen=True)
class Destination:
    """A repository (`host/repo` or `oci-layout:PATH`) and the tags to point at the artifact."""

    repository: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Release:
    """One artifact of the goal and where it goes."""

    input: ArtifactInput
    to: tuple[Destination, ...]
    level_credential: Path | None = None


@dataclass(frozen=True)
class StatusListRelease:
    """A status list document to publish under a (moving) tag."""

    name: str
    path: Path
    repository: str
    tag: str = "status"


@dataclass(frozen=True)
class RegistryAuth:
    """Credentials (by env reference) and transport options for one registry host."""

    host: str
    username_env: str | None = None
    password_env: str | None = None
    plain_http: bool | None = None
    ca_file: Path | None = None


@dataclass(frozen=True)
class Budget:
    """Retry budget for retryable failures (host_failure, writeback_failed) of one effect."""

    attempts: int = 4
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 10.0
    transport_retries: int = 3

    def delay(self, attempt: int) -> float:
        """Backoff before try `attempt + 1` (attempt counts from 1)."""
        return float(min(self.max_backoff_seconds, self.backoff_seconds * (2 ** (attempt - 1))))


@dataclass(frozen=True)
class Cadence:
    """How a monitor observes: first interval, backoff cap, how old a satisfying observation may be
    at the terminal audit, and after how many unchanged observations of one target it escalates."""

    interval_seconds: float = 5.0
    max_interval_seconds: float = 300.0
    freshness_seconds: float = 600.0
    escalate_after: int = 10
    escalate: Escalation = "gate"


@dataclass(frozen=True)
class MirrorWatch:
    """A replica or pull-through cache the release does not push to, and the destination it serves."""

    repository: str
    of: str
    cadence: Cadence


@dataclass(frozen=True)
class StatusWatch:
    """A status list (https URL or OCI reference) that must show `validFrom` >= valid_from or have
    `digest`; with neither, the list this goal publishes (its validFrom)."""

    url: str
    valid_from: str | None
    digest: str | None
    cadence: Cadence


@dataclass(frozen=True)
class Approval:
    """An operator gate: the effects whose ids `blocks` selects wait for `acx release approve`."""

    id: str
    blocks: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class Observe:
    """What the release observes (and waits for) without writing it."""

    mirrors: tuple[MirrorWatch, ...] = ()
    status_lists: tuple[StatusWatch, ...] = ()
    approvals: tuple[Approval, ...] = ()
    wait_seconds: float = 60.0
    freshness_seconds: float = 600.0


@dataclass(frozen=True)
class RegistryQuota:
    """What one registry host may be asked per window: requests, bytes (sent and received), and
    publishes (effects that stored something). None means unlimited."""

    host: str
    requests: int | None
    bytes: int | None
    publishes: int | None
    window_seconds: float


@dataclass(frozen=True)
class Identity:
    """What the goal is (vision, acceptance criteria), what it must not do (non-goals), and which
    documents are authoritative for it beyond the plan and the policy (recorded at goal open)."""

    vision: str | None = None
    criteria: tuple[str, ...] = ()
    non_goals: tuple[str, ...] = ()
    authority: tuple[tuple[str, Path], ...] = ()


@dataclass(frozen=True)
class ReleasePlan:
    """A parsed plan; `digest` is the JCS digest of the document (the goal is bound to it)."""

    goal_id: str
    releases: tuple[Release, ...]
    formats: tuple[str, ...]
    envelope: bool
    attestation_key: KeyRef | None
    status_list: StatusListRelease | None
    registries: tuple[RegistryAuth, ...]
    policy: Path
    budget: Budget
    lease_seconds: float
    path: Path
    digest: str
    identity: Identity = Identity()
    observe: Observe = Observe()
    quotas: tuple[RegistryQuota, ...] = ()
    document: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    provenance: bool | None = None  # None: attach SLSA provenance when keyless in GitHub Actions

    def remote_options(self, repository: str) -> RemoteOptions:
        """Transport options for a repository: credentials from the env variables the plan names."""
        ref = parse_reference(repository)
        # the command's transport flags (settings.active_options) are the base; the plan's
        # registries entry overrides them for its host
        base = replace(active_options(), max_retries=self.budget.transport_retries, max_retry_seconds=30.0)
        for reg in self.registries:
            if ref.host and reg.host == ref.host:
                user = os.environ.get(reg.username_env) if reg.username_env else None
                pw = os.environ.get(reg.password_env) if reg.password_env else None
                if reg.username_env and user is None:
                    raise AuthError(f"environment variable {reg.username_env} is not set", where=reg.host)
                if reg.password_env and pw is None:
                    raise AuthError(f"environment variable {reg.password_env} is not set", where=reg.host)
                plain = reg.plain_http if reg.plain_http is not None else base.plain_http
                return replace(base, plain_http=plain, username=user, password=pw,
                               ca_file=str(reg.ca_file) if reg.ca_file else base.ca_file)
        return base

def check_goal_id(goal_id: str, where: str | None = None) -> str:
    """`goal_id` if it matches the plan schema's `goal.id` pattern (the one rule for a goal id,
    wherever it comes from: a plan, or a command-line argument naming a goal folder); a goal id
    names one folder under the state folder and never leads out of it. UsageError otherwise."""
    spec = jsonschemas.load_schema(SCHEMA_FILE)["properties"]["goal"]["properties"]["id"]
    if not isinstance(goal_id, str) or jsonschemas.schema_errors_of(spec, goal_id):
        raise UsageError(f"not a goal id: {goal_id!r} (a goal id matches {spec['pattern']})", where=where)
    return goal_id


def schema_errors(doc: Any) -> list[str]:
    """Every schema violation of a plan document, as `$.path: message` lines."""
    return jsonschemas.schema_errors(SCHEMA_FILE, doc)


def _key(k: KeyDoc, base: Path) -> KeyRef:
    keyless = None
    if k.keyless is not None:
        kl = k.keyless
        keyless = KeylessRef(base / kl.trust_config if kl.trust_config is not None else None,
                             base / kl.identity_token_file if kl.identity_token_file is not None else None,
                             kl.tlog_upload)
    return KeyRef(file=base / k.file if k.file is not None else None, env=k.env, password_env=k.password_env,
                  pkcs11=k.pkcs11, keyless=keyless)


def attestation_signer(ref: KeyRef) -> Any:
    """The attestation signer of a plan: its key, or a keyless signer (token and trust config as
    the plan names them; decision 0034). Failures to get either are AuthErrors (a person must act)."""
    if ref.keyless is None:
        return ref.load()
    from acxoci.attestation.keyless import KeylessSigner, identity_token, load_trust_config
    from acxoci.keyfiles import interactive

    k = ref.keyless
    trust = load_trust_config(k.trust_config)
    token, source = identity_token(k.identity_token_file, lambda: trust, interactive=interactive())
    return KeylessSigner(trust, token, source, tlog_upload=k.tlog_upload)


def _input(name: str, d: InputDoc, base: Path) -> ArtifactInput:
    if d.cartridge is not None:
        return ArtifactInput(name, "cartridge", base / d.cartridge)
    if d.workflow is not None:
        return ArtifactInput(name, "workflow", base / d.workflow)
    if d.graph is not None:
        return ArtifactInput(name, "agent-graph", base / d.graph)
    b = d.build
    assert b is not None  # the schema requires exactly one source
    recipe = BuildRecipe(base / b.package, b.publisher, _key(b.key, base), b.created_at)
    return ArtifactInput(name, "build", None, recipe)


def _check_repository(text: str, where: str) -> str:
    ref = parse_reference(text)
    if ref.tag or ref.digest:
        raise InvalidInput("repository must not carry a tag or digest (list tags under `tags`)", where=where)
    return text


def _cadence(o: ObserveDoc, e: MirrorDoc | StatusWatchDoc) -> Cadence:
    def pick(mine: Any, default: Any) -> Any:
        return default if mine is None else mine

    return Cadence(pick(e.interval_seconds, o.interval_seconds),
                   pick(e.max_interval_seconds, o.max_interval_seconds),
                   pick(e.freshness_seconds, o.freshness_seconds),
                   pick(e.escalate_after, o.escalate_after), pick(e.escalate, o.escalate))


def _rfc3339(text: str, where: str) -> None:
    from acxoci.attest.trust import parse_rfc3339

    try:
        parse_rfc3339(text, where=where)
    except AttestError as exc:
        raise InvalidInput(f"not an RFC 3339 time: {text!r}", where=where) from exc


def _observe(d: PlanDoc, releases: list[Release], path: Path) -> Observe:
    o = d.observe
    dests = {dest.repository for rel in releases for dest in rel.to}
    mirrors: list[MirrorWatch] = []
    for i, m in enumerate(o.mirrors):
        where = f"{path}: observe.mirrors[{i}]"
        repo = _check_repository(m.repository, where)
        _check_repository(m.of, where)
        if m.of not in dests:
            raise InvalidInput(f"mirror of {m.of!r}, which is not a destination of goal.artifacts",
                               where=where)
        if repo in dests:
            raise InvalidInput(f"{repo} is a destination: a mirror is a replica the release does not "
                               "push to", where=where)
        if any(x.repository == repo and x.of == m.of for x in mirrors):
            raise InvalidInput(f"mirror {repo} of {m.of} is listed twice", where=where)
        mirrors.append(MirrorWatch(repo, m.of, _cadence(o, m)))
    lists: list[StatusWatch] = []
    for i, s in enumerate(o.status_lists):
        if s.valid_from is None and s.digest is None and d.goal.status_list is None:
            raise InvalidInput("a status list watch needs validFrom or digest (or goal.statusList, whose "
                               "validFrom it then waits for)", where=f"{path}: observe.statusLists[{i}]")
        if s.valid_from is not None:
            _rfc3339(s.valid_from, f"{path}: observe.statusLists[{i}].validFrom")
        if any(x.url == s.url for x in lists):
            raise InvalidInput(f"status list {s.url} is watched twice",
                               where=f"{path}: observe.statusLists[{i}]")
        lists.append(StatusWatch(s.url, s.valid_from, s.digest, _cadence(o, s)))
    approvals: list[Approval] = []
    for i, a in enumerate(o.approvals):
        if any(x.id == a.id for x in approvals):
            raise InvalidInput(f"approval {a.id!r} is listed twice", where=f"{path}: observe.approvals[{i}]")
        approvals.append(Approval(a.id, a.blocks, a.note))
    return Observe(tuple(mirrors), tuple(lists), tuple(approvals), o.wait_seconds, o.freshness_seconds)


def _quotas(d: PlanDoc, path: Path) -> tuple[RegistryQuota, ...]:
    out: list[RegistryQuota] = []
    for i, q in enumerate(d.quota.registries):
        if any(x.host == q.host for x in out):
            raise InvalidInput(f"quota for {q.host} is listed twice", where=f"{path}: quota.registries[{i}]")
        seconds = q.window_seconds if q.window_seconds is not None else d.quota.window_seconds
        out.append(RegistryQuota(q.host, q.requests, q.bytes, q.publishes, seconds))
    return tuple(out)


def plan_from_json(doc: Any, *, path: Path) -> ReleasePlan:
    """Validate a plan document (schema + cross references) and resolve its paths against `path`'s folder."""
    errors = schema_errors(doc)
    if errors:
        raise InvalidInput("release plan is invalid: " + "; ".join(errors), where=str(path),
                           details={"issues": errors})
    try:
        d = decode_as(doc, PlanDoc, document="release plan")
    except DocumentTypeError as exc:  # the schema and the models disagree: still a bad plan
        raise InvalidInput(str(exc), where=str(path)) from exc
    base = path.parent
    arts = {n: _input(n, o, base) for n, o in d.inputs.artifacts.items()}
    creds = {n: base / p for n, p in d.inputs.level.credentials.items()}
    releases: list[Release] = []
    seen: set[tuple[str, str]] = set()
    tagged: dict[tuple[str, str], str] = {}  # (repository, tag) -> the artifact it names
    for i, r in enumerate(d.goal.artifacts):
        where = f"{path}: goal.artifacts[{i}]"
        if r.input not in arts:
            raise InvalidInput(f"input {r.input!r} is not in inputs.artifacts", where=where)
        art = arts[r.input]
        dests = []
        for j, dest in enumerate(r.to):
            repo = _check_repository(dest.repository, f"{where}.to[{j}]")
            if (art.name, repo) in seen:
                raise InvalidInput(f"{art.name} is released to {repo} twice", where=where)
            seen.add((art.name, repo))
            for tag in dest.tags:  # one tag names one artifact: two would leave one of them unreleased
                other = tagged.setdefault((repo, tag), art.name)
                if other != art.name:
                    raise InvalidInput(f"{repo}:{tag} is the tag of both {other} and {art.name}; a tag "
                                       "names one artifact", where=f"{where}.to[{j}].tags")
            dests.append(Destination(repo, dest.tags))
        cred: Path | None = None
        if r.level_credential is not None:
            if r.level_credential not in creds:
                raise InvalidInput(f"level credential {r.level_credential!r} is not in "
                                   "inputs.level.credentials", where=where)
            if art.artifact_kind != "cartridge":
                raise InvalidInput("a level credential belongs to a cartridge, not a workflow", where=where)
            cred = creds[r.level_credential]
        releases.append(Release(art, tuple(dests), cred))
    status: StatusListRelease | None = None
    if d.goal.status_list is not None:
        s = d.goal.status_list
        lists = d.inputs.level.status_lists
        if s.input not in lists:
            raise InvalidInput(f"status list {s.input!r} is not in inputs.level.statusLists",
                               where=f"{path}: goal.statusList")
        status = StatusListRelease(s.input, base / lists[s.input],
                                   _check_repository(s.repository, f"{path}: goal.statusList"), s.tag)
        if (status.repository, status.tag) in tagged:
            raise InvalidInput(f"{status.repository}:{status.tag} is the tag of artifact "
                               f"{tagged[(status.repository, status.tag)]} and of the status list",
                               where=f"{path}: goal.statusList")
    att = d.goal.attestations
    akey = _key(d.inputs.keys.attestation, base) if d.inputs.keys.attestation is not None else None
    keyless = akey is not None and akey.keyless is not None
    formats: tuple[str, ...] = (tuple(att.formats) if att.formats is not None
                                else ("bundle",) if keyless else DEFAULT_FORMATS)
    if keyless and "legacy" in formats:
        raise InvalidInput("keyless release attestations are sigstore bundles (cosign 3); the legacy .att "
                           "format needs a key", where=f"{path}: goal.attestations.formats")
    for name, art in arts.items():
        if art.build is not None and art.build.key.keyless is not None:
            raise InvalidInput("a cartridge's publisher signature needs a key (Ed25519), not keyless",
                               where=f"{path}: inputs.artifacts.{name}.build.key")
    if formats and akey is None:
        raise InvalidInput("attestations are requested but inputs.keys.attestation is missing",
                           where=str(path))
    regs = tuple(RegistryAuth(r.host, r.username_env, r.password_env, r.plain_http,
                              base / r.ca_file if r.ca_file is not None else None)
                 for r in d.inputs.registries)
    b = d.budget
    identity = Identity(d.goal.vision, d.acceptance.criteria, d.goal.non_goals,
                        tuple((a.role, base / a.source) for a in d.goal.authority))
    return ReleasePlan(
        goal_id=d.goal.id, releases=tuple(releases), formats=formats, envelope=att.envelope,
        provenance=att.provenance,
        attestation_key=akey, status_list=status, registries=regs, policy=base / d.acceptance.policy,
        budget=Budget(b.attempts, b.backoff_seconds, b.max_backoff_seconds, b.transport_retries),
        lease_seconds=d.lease.ttl_seconds, path=path, digest=jcs_digest(doc), identity=identity,
        observe=_observe(d, releases, path), quotas=_quotas(d, path), document=doc)


def load_plan(path: Path) -> ReleasePlan:
    """Read `acx-release.yaml` (YAML, or strict JSON for `.json`) and validate it."""
    data = read_bytes(path, "release plan", limit=1 << 22)
    try:
        doc = loads_strict(data) if path.suffix.lower() == ".json" else load_yaml(
            data.decode("utf-8"), what="release plan", where=str(path))
    except (AttestError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"release plan is not valid YAML/JSON: {parse_problem(exc)}",
                           where=str(path)) from exc
    return plan_from_json(doc, path=path.resolve())
