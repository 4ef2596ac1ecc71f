"""SLSA Provenance v1 for what a CI release publishes, and the pure check of a provenance
requirement (decision 0036).

Building: `github_provenance` writes GitHub Actions' build type (as GitHub's own artifact
attestations do) from the runner's environment: builder id, build type, external parameters
(repository, ref, workflow path), the source commit as the resolved dependency, and the run.

Checking: `check_provenance` is a pure function over verified provenance attestations, each with
the facts Fulcio wrote into its signing certificate (`FulcioFacts`), and a requirement (`--repo`,
`--source-ref`, `--signer-workflow` as `gh attestation verify` names them; an install policy's
`provenance: {repository, ref, signerWorkflow}`). A requirement is met only when one attestation's
certificate AND its predicate both say so and agree with each other (the source commit too):
the certificate is what the CI's OIDC provider vouched for, the predicate is what the build
claims, and a mismatch between them is a refusal (the predicate's workflow is the certificate's
Build Config URI, the workflow the run started from; `--signer-workflow` names the Build Signer
URI, which is a reusable workflow when the caller used one). A key-signed or unknown-build-type
provenance meets no requirement. Fail closed: no provenance, no pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acxoci.attest.errors import MalformedError
from acxoci.attest.intoto import STATEMENT_V1, Statement, Subject
from acxoci.attest.typed import Struct, decode_as, opt
from acxoci.attestation.identity import FulcioFacts
from acxoci.documents.verification_policy import VerificationPolicyDocProvenance
from acxoci.errors import UsageError

SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"
GITHUB_BUILD_TYPE = "https://actions.github.io/buildtypes/workflow/v1"
GITHUB = "https://github.com"


@dataclass(frozen=True)
class Requirement:
    """What a consumer demands of the provenance (None: not demanded). Values as `gh` takes them:
    `repository` OWNER/REPO or a URL, `ref` a git ref, `signer_workflow` OWNER/REPO/PATH (or a URL,
    optionally with `@REF`)."""

    repository: str | None = None
    ref: str | None = None
    signer_workflow: str | None = None

    def __post_init__(self) -> None:
        if self.signer_workflow is not None:
            signer_workflow_pattern(self.signer_workflow)  # a usage error when it names no workflow file

    @property
    def empty(self) -> bool:
        return self.repository is None and self.ref is None and self.signer_workflow is None

    def to_json(self) -> dict[str, str]:
        out = {"repository": self.repository, "ref": self.ref, "signerWorkflow": self.signer_workflow}
        return {k: v for k, v in out.items() if v is not None}


def requirement_from_policy(value: VerificationPolicyDocProvenance, *, where: str) -> Requirement:
    """An install policy's `provenance: {repository, ref, signerWorkflow}` (at least one)."""
    from acxoci.errors import InvalidInput

    try:
        req = Requirement(opt(value.repository), opt(value.ref), opt(value.signer_workflow))
    except UsageError as exc:
        raise InvalidInput(exc.message, where=where) from exc
    if req.empty:
        raise InvalidInput("provenance needs at least one of repository, ref, signerWorkflow", where=where)
    return req


# --- the predicate, typed ---------------------------------------------------------------------


class _Workflow(Struct, frozen=True):
    ref: str
    repository: str
    path: str


class _External(Struct, frozen=True):
    workflow: _Workflow


class _Dependency(Struct, frozen=True):
    uri: str
    digest: dict[str, str]


class _BuildDefinition(Struct, frozen=True):
    buildType: str
    externalParameters: _External
    resolvedDependencies: list[_Dependency] = []  # noqa: RUF012 (msgspec copies defaults)


class _Builder(Struct, frozen=True):
    id: str


class _RunDetails(Struct, frozen=True):
    builder: _Builder


class _Provenance(Struct, frozen=True):
    buildDefinition: _BuildDefinition
    runDetails: _RunDetails


# --- building ---------------------------------------------------------------------------------


def github_provenance(subject_digest: str, name: str, env: Mapping[str, str]) -> Statement:
    """The SLSA v1 statement for `subject_digest` from a GitHub Actions runner's environment;
    a usage error naming the variables when it is not such a run."""
    need = ("GITHUB_REPOSITORY", "GITHUB_REF", "GITHUB_WORKFLOW_REF", "GITHUB_SHA", "GITHUB_RUN_ID")
    missing = [v for v in need if not env.get(v)]
    if missing:
        raise UsageError(f"provenance needs a GitHub Actions run: {', '.join(missing)} not set")
    server = env.get("GITHUB_SERVER_URL") or GITHUB
    repo, ref, sha = env["GITHUB_REPOSITORY"], env["GITHUB_REF"], env["GITHUB_SHA"]
    workflow_ref = env["GITHUB_WORKFLOW_REF"]  # OWNER/REPO/PATH@REF
    path = workflow_ref.split("@", 1)[0].removeprefix(repo + "/")
    attempt = env.get("GITHUB_RUN_ATTEMPT") or "1"
    run = f"{server}/{repo}/actions/runs/{env['GITHUB_RUN_ID']}/attempts/{attempt}"
    predicate = {
        "buildDefinition": {
            "buildType": GITHUB_BUILD_TYPE,
            "externalParameters": {"workflow": {"ref": ref, "repository": f"{server}/{repo}", "path": path}},
            "internalParameters": {"github": {
                "event_name": env.get("GITHUB_EVENT_NAME", ""),
                "repository_id": env.get("GITHUB_REPOSITORY_ID", ""),
                "repository_owner_id": env.get("GITHUB_REPOSITORY_OWNER_ID", ""),
                "runner_environment": env.get("RUNNER_ENVIRONMENT", "")}},
            "resolvedDependencies": [{"uri": f"git+{server}/{repo}@{ref}", "digest": {"gitCommit": sha}}],
        },
        "runDetails": {
            "builder": {"id": f"{server}/{workflow_ref}"},
            "metadata": {"invocationId": run},
        },
    }
    digest = subject_digest.split(":", 1)
    return Statement((Subject(name, {digest[0]: digest[1]}),), SLSA_PROVENANCE_V1, predicate, STATEMENT_V1)


# --- checking (pure) --------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifiedProvenance:
    """One provenance attestation whose signature verified: where it is, its predicate, and the
    signing certificate's facts (None when it was signed with a key)."""

    location: str
    predicate: Mapping[str, Any]
    fulcio: FulcioFacts | None


@dataclass(frozen=True)
class ProvenanceVerdict:
    """Pass or fail, the attestation that passed, and every reason another did not."""

    ok: bool
    reasons: tuple[str, ...]
    matched: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "matched": self.matched, "reasons": list(self.reasons)}


def url(value: str) -> str:
    """OWNER/REPO[/…] or github.com/… or a URL, as a URL without a trailing slash."""
    v = value.strip().rstrip("/")
    if "://" in v:
        return v
    if v.startswith("github.com/"):
        return "https://" + v
    return f"{GITHUB}/{v}"


_WORKFLOW_FILE = re.compile(r"[a-z][a-z0-9+.-]*://[^/@]+/[^/@]+/[^/@]+/\.github/workflows/[^/@]+")


def signer_workflow_pattern(signer_workflow: str) -> str:
    """The regular expression (matched against the whole value) that a certificate's signer
    (Fulcio's Build Signer URI; a GitHub workflow's SAN) must match to be `signer_workflow`
    (OWNER/REPO/.github/workflows/FILE[@REF] or its URL): `<workflow URL>@<ref>` with the ref
    starting `refs/`, or exactly the `@refs/…` the requirement names. Workflow files sit directly
    in `.github/workflows/`, so no file name contains `/` and none can pass for a ref
    (`release.yml@x.yml` is another file, not release.yml at ref x.yml)."""
    want = url(signer_workflow)
    base, sep, _ = want.partition("@refs/")
    if _WORKFLOW_FILE.fullmatch(base) is None:
        raise UsageError(f"signer workflow {signer_workflow!r} is not OWNER/REPO/.github/workflows/FILE"
                         "[@refs/…]: the file sits directly in .github/workflows, and a ref after @ is a "
                         "full ref (refs/heads/…, refs/tags/…)")
    return re.escape(want) if sep else re.escape(want) + "@refs/.+"


def _problems(req: Requirement, item: VerifiedProvenance) -> list[str]:
    """Why one attestation does not meet `req` (empty: it does)."""
    f = item.fulcio
    if f is None:
        return ["signed with a key, not by a CI identity (no Fulcio certificate to vouch for the run)"]
    try:
        pred = decode_as(item.predicate, _Provenance, document="SLSA provenance predicate")
    except MalformedError as exc:
        return [f"predicate: {exc}"]
    bd = pred.buildDefinition
    if bd.buildType != GITHUB_BUILD_TYPE:
        return [f"build type {bd.buildType} is not one acx can check ({GITHUB_BUILD_TYPE})"]
    wf = bd.externalParameters.workflow
    out: list[str] = []
    commits = [d.digest.get("gitCommit") for d in bd.resolvedDependencies if "gitCommit" in d.digest]
    if not commits or f.source_repository_digest is None or commits[0] != f.source_repository_digest:
        out.append(f"source commit: predicate {commits[0] if commits else None}, certificate "
                   f"{f.source_repository_digest}")
    if (f.source_repository_uri or "").rstrip("/") != url(wf.repository):
        out.append(f"repository: predicate {wf.repository}, certificate {f.source_repository_uri}")
    if f.source_repository_ref != wf.ref:
        out.append(f"ref: predicate {wf.ref}, certificate {f.source_repository_ref}")
    claimed = f"{url(wf.repository)}/{wf.path}"
    config = (f.build_config_uri or "").partition("@refs/")[0]  # the workflow the run started from
    if claimed != config:
        out.append(f"workflow: predicate {claimed}, certificate {f.build_config_uri}")
    signer = f.build_signer_uri or ""
    if req.repository is not None and url(req.repository) != url(wf.repository):
        out.append(f"repository is {wf.repository}, not {req.repository}")
    if req.ref is not None and req.ref != wf.ref:
        out.append(f"ref is {wf.ref}, not {req.ref}")
    if req.signer_workflow is not None:  # the certificate's signer: a reusable workflow, if one ran
        want = url(req.signer_workflow)
        if re.fullmatch(signer_workflow_pattern(req.signer_workflow), signer) is None:
            at = "" if "@refs/" in want else "@refs/…"
            out.append(f"signer workflow is {signer or None}, not {want}{at}")
    return out


def check_provenance(req: Requirement, items: Sequence[VerifiedProvenance]) -> ProvenanceVerdict:
    """Pass when one verified provenance attestation meets `req` in certificate and predicate."""
    if not items:
        return ProvenanceVerdict(False, ("no verified SLSA provenance attestation "
                                         f"({SLSA_PROVENANCE_V1}) for the artifact",))
    reasons: list[str] = []
    for item in items:
        problems = _problems(req, item)
        if not problems:
            return ProvenanceVerdict(True, (), item.location)
        reasons.extend(f"{item.location}: {p}" for p in problems)
    return ProvenanceVerdict(False, tuple(reasons))
