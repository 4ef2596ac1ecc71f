"""The release plan (`acx-release.yaml`, schema `acx.release-plan/1`): the goal (what is released, to
which repositories, under which tags), the inputs (artifact files or build recipes, keys by file or
env reference, level credentials and status lists, registry credentials by env reference) and the
acceptance policy (an `acx.verification-policy/1` file: what `acx install` will demand).

Loading is validation only: paths are resolved against the plan's folder, nothing is read but the
plan itself (inputs are read by the `prepare` effect, so a plan can be shown without them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from acxoci import jsonschemas
from acxoci.errors import AuthError, InvalidInput, NotFound, UsageError, parse_problem
from acxoci.oci.reference import parse_reference
from acxoci.oci.settings import RemoteOptions, active_options
from attest.canonical import jcs_digest, loads_strict
from attest.errors import AttestError
from attest.keys import PrivateKey

SCHEMA_VERSION = "acx.release-plan/1"
SCHEMA_FILE = "acx.release-plan-1.schema.json"
DEFAULT_FORMATS: tuple[str, ...] = ("legacy", "bundle")
SourceKind = Literal["cartridge", "workflow", "agent-graph", "build"]


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
        from attest.cosignkey import WrongPassword, load_signing_key

        if self.keyless is not None:
            raise UsageError("keyless signing makes attestations, not publisher signatures",
                             where=self.describe())
        if self.pkcs11 is not None:
            from acxoci.pkcs11key import load_pkcs11_key

            return load_pkcs11_key(self.pkcs11)
        if self.file is not None:
            try:
                data = self.file.read_bytes()
            except OSError as exc:
                raise AuthError(f"signing key unreadable: {exc}", where=str(self.file)) from exc
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
    document: dict[str, Any] = field(compare=False, repr=False)
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


def schema_errors(doc: Any) -> list[str]:
    """Every schema violation of a plan document, as `$.path: message` lines."""
    return jsonschemas.schema_errors(SCHEMA_FILE, doc)


def _key(obj: dict[str, Any], base: Path) -> KeyRef:
    keyless = None
    if "keyless" in obj:
        k = obj["keyless"]
        keyless = KeylessRef(base / k["trustConfig"] if "trustConfig" in k else None,
                             base / k["identityTokenFile"] if "identityTokenFile" in k else None,
                             bool(k.get("tlogUpload", True)))
    return KeyRef(file=base / obj["file"] if "file" in obj else None, env=obj.get("env"),
                  password_env=obj.get("passwordEnv"), pkcs11=obj.get("pkcs11"), keyless=keyless)


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


def _input(name: str, obj: dict[str, Any], base: Path) -> ArtifactInput:
    if "cartridge" in obj:
        return ArtifactInput(name, "cartridge", base / obj["cartridge"])
    if "workflow" in obj:
        return ArtifactInput(name, "workflow", base / obj["workflow"])
    if "graph" in obj:
        return ArtifactInput(name, "agent-graph", base / obj["graph"])
    b = obj["build"]
    recipe = BuildRecipe(base / b["package"], b["publisher"], _key(b["key"], base), b["createdAt"])
    return ArtifactInput(name, "build", None, recipe)


def _check_repository(text: str, where: str) -> str:
    ref = parse_reference(text)
    if ref.tag or ref.digest:
        raise InvalidInput("repository must not carry a tag or digest (list tags under `tags`)", where=where)
    return text


def plan_from_json(doc: Any, *, path: Path) -> ReleasePlan:
    """Validate a plan document (schema + cross references) and resolve its paths against `path`'s folder."""
    errors = schema_errors(doc)
    if errors:
        raise InvalidInput("release plan is invalid: " + "; ".join(errors), where=str(path),
                           details={"issues": errors})
    assert isinstance(doc, dict)
    base = path.parent
    inputs = doc["inputs"]
    arts = {n: _input(n, o, base) for n, o in inputs["artifacts"].items()}
    level = inputs.get("level", {})
    creds = {n: base / p for n, p in level.get("credentials", {}).items()}
    releases: list[Release] = []
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(doc["goal"]["artifacts"]):
        where = f"{path}: goal.artifacts[{i}]"
        if r["input"] not in arts:
            raise InvalidInput(f"input {r['input']!r} is not in inputs.artifacts", where=where)
        art = arts[r["input"]]
        dests = []
        for j, d in enumerate(r["to"]):
            repo = _check_repository(d["repository"], f"{where}.to[{j}]")
            if (art.name, repo) in seen:
                raise InvalidInput(f"{art.name} is released to {repo} twice", where=where)
            seen.add((art.name, repo))
            dests.append(Destination(repo, tuple(d.get("tags", ()))))
        cred: Path | None = None
        if "levelCredential" in r:
            if r["levelCredential"] not in creds:
                raise InvalidInput(f"level credential {r['levelCredential']!r} is not in "
                                   "inputs.level.credentials", where=where)
            if art.artifact_kind != "cartridge":
                raise InvalidInput("a level credential belongs to a cartridge, not a workflow", where=where)
            cred = creds[r["levelCredential"]]
        releases.append(Release(art, tuple(dests), cred))
    status: StatusListRelease | None = None
    if "statusList" in doc["goal"]:
        s = doc["goal"]["statusList"]
        lists = level.get("statusLists", {})
        if s["input"] not in lists:
            raise InvalidInput(f"status list {s['input']!r} is not in inputs.level.statusLists",
                               where=f"{path}: goal.statusList")
        status = StatusListRelease(s["input"], base / lists[s["input"]],
                                   _check_repository(s["repository"], f"{path}: goal.statusList"),
                                   s.get("tag", "status"))
    att = doc["goal"].get("attestations", {})
    keys = inputs.get("keys", {})
    akey = _key(keys["attestation"], base) if "attestation" in keys else None
    keyless = akey is not None and akey.keyless is not None
    formats = tuple(att.get("formats", ("bundle",) if keyless else DEFAULT_FORMATS))
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
    regs = tuple(RegistryAuth(r["host"], r.get("usernameEnv"), r.get("passwordEnv"), r.get("plainHttp"),
                              base / r["caFile"] if "caFile" in r else None)
                 for r in inputs.get("registries", []))
    b = doc.get("budget", {})
    budget = Budget(int(b.get("attempts", 4)), float(b.get("backoffSeconds", 0.5)),
                    float(b.get("maxBackoffSeconds", 10.0)), int(b.get("transportRetries", 3)))
    return ReleasePlan(
        goal_id=doc["goal"]["id"], releases=tuple(releases), formats=formats,
        envelope=bool(att.get("envelope", True)), provenance=att.get("provenance"),
        attestation_key=akey, status_list=status, registries=regs, policy=base / doc["acceptance"]["policy"],
        budget=budget, lease_seconds=float(doc.get("lease", {}).get("ttlSeconds", 900)), path=path,
        digest=jcs_digest(doc), document=doc)


def load_plan(path: Path) -> ReleasePlan:
    """Read `acx-release.yaml` (YAML, or strict JSON for `.json`) and validate it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFound("release plan not found", where=str(path)) from exc
    except OSError as exc:
        raise UsageError(f"cannot read the release plan: {exc}", where=str(path)) from exc
    try:
        doc = loads_strict(data) if path.suffix.lower() == ".json" else yaml.safe_load(data.decode("utf-8"))
    except (AttestError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"release plan is not valid YAML/JSON: {parse_problem(exc)}",
                           where=str(path)) from exc
    return plan_from_json(doc, path=path.resolve())
