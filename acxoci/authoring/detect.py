"""Which agent roles a codebase calls for, and which Required Available Context (RAC) its team
needs, from a bounded listing (acxoci/authoring/walk.py). Pure: the rules below read file names,
folder names and declared dependency names; they never see file contents. The RAC items describe
kinds of knowledge (structure only) and never carry the code's own text, paths or names."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from acxoci.authoring.walk import Listing

#: The order roles take in the generated flow (build, then verify, then secure, then ship).
FLOW_ORDER = (
    "architect",
    "frontend_dev",
    "backend_dev",
    "fullstack_dev",
    "qa_engineer",
    "security_expert",
    "devops_engineer",
    "tech_writer",
)


@dataclass
class Finding:
    """A role the codebase calls for: its task types, stack and why (one reason per signal)."""

    role: str
    tasks: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def add(self, tasks: Iterable[str], stack: Iterable[str], reason: str) -> None:
        for t in tasks:
            if t not in self.tasks:
                self.tasks.append(t)
        for s in stack:
            if s not in self.stack:
                self.stack.append(s)
        if reason not in self.reasons:
            self.reasons.append(reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "capabilities": self.tasks,
            "techStack": self.stack,
            "reasons": self.reasons,
        }


@dataclass(frozen=True)
class Rac:
    """One RAC item of the generated workflow (`acx.cal/1` racItem)."""

    id: str
    kind: str
    description: str
    check: str
    hint: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "required": True,
            "description": self.description,
            "check": {"type": self.check, "hint": self.hint},
        }


@dataclass(frozen=True)
class Analysis:
    """The roles found (in flow order), the RAC, the ecosystems seen, and the walk's limits."""

    roles: tuple[Finding, ...]
    rac: tuple[Rac, ...]
    ecosystems: tuple[str, ...]
    files_seen: int
    truncated: str | None
    unreadable: tuple[str, ...]  # files and folders not read (a FIFO, a manifest too large or unparseable)

    def to_json(self) -> dict[str, Any]:
        return {
            "roles": [r.to_json() for r in self.roles],
            "rac": [r.to_json() for r in self.rac],
            "ecosystems": list(self.ecosystems),
            "filesSeen": self.files_seen,
            "truncated": self.truncated,
            "unreadable": len(self.unreadable),
            "unreadableFiles": list(self.unreadable),
        }


#: Ecosystem by dependency-manifest file name: (ecosystem label, stack entry).
ECOSYSTEMS = {
    "package.json": ("Node.js (package.json)", "node"),
    "pyproject.toml": ("Python (pyproject.toml)", "python"),
    "setup.cfg": ("Python (setup.cfg)", "python"),
    "Pipfile": ("Python (Pipfile)", "python"),
    "requirements.txt": ("Python (requirements.txt)", "python"),
    "go.mod": ("Go modules (go.mod)", "go"),
    "Cargo.toml": ("Rust (Cargo.toml)", "rust"),
    "composer.json": ("PHP (composer.json)", "php"),
    "Gemfile": ("Ruby (Gemfile)", "ruby"),
    "pom.xml": ("Java (Maven pom.xml)", "java"),
    "build.gradle": ("JVM (Gradle)", "java"),
    "build.gradle.kts": ("JVM (Gradle Kotlin)", "kotlin"),
    "mix.exs": ("Elixir (mix.exs)", "elixir"),
}
#: Dependency names (exact, lowercased) that mark a frontend, a backend framework, a security
#: library, a test framework or a data pipeline.
FRONTEND = {
    "react",
    "react-dom",
    "vue",
    "svelte",
    "@angular/core",
    "next",
    "nuxt",
    "solid-js",
    "preact",
    "lit",
}
BACKEND = {
    "express",
    "fastify",
    "koa",
    "@nestjs/core",
    "hapi",
    "@hapi/hapi",
    "prisma",
    "typeorm",
    "drizzle-orm",
    "django",
    "flask",
    "fastapi",
    "starlette",
    "aiohttp",
    "tornado",
    "sqlalchemy",
    "celery",
    "github.com/gin-gonic/gin",
    "github.com/labstack/echo/v4",
    "github.com/gorilla/mux",
    "actix-web",
    "axum",
    "rocket",
    "rails",
    "sinatra",
    "laravel/framework",
    "symfony/framework-bundle",
    "spring-boot-starter-web",
    "phoenix",
}
SECURITY = {
    "passport",
    "jsonwebtoken",
    "helmet",
    "oauth",
    "oauthlib",
    "authlib",
    "pyjwt",
    "python-jose",
    "cryptography",
    "bcrypt",
    "argon2-cffi",
    "golang.org/x/crypto",
    "ring",
    "rustls",
    "devise",
    "spring-boot-starter-security",
    "bandit",
    "safety",
    "pip-audit",
}
TESTING = {
    "jest",
    "vitest",
    "mocha",
    "jasmine",
    "cypress",
    "playwright",
    "@playwright/test",
    "pytest",
    "hypothesis",
    "nose2",
    "tox",
    "nox",
    "github.com/stretchr/testify",
    "rspec",
    "phpunit/phpunit",
    "junit",
    "proptest",
}
DATA = {
    "apache-airflow",
    "airflow",
    "dbt-core",
    "dagster",
    "prefect",
    "luigi",
    "pyspark",
    "kedro",
    "great-expectations",
    "apache-beam",
    "pandas",
    "polars",
    "duckdb",
}
_TEST_FILE = re.compile(
    r"(^|/)(test_[^/]+\.py|[^/]+_test\.(py|go|rs|exs)|[^/]+\.(test|spec)\.[cm]?[jt]sx?|[^/]+Test\.(java|kt)"
    r"|[^/]+_spec\.rb)$"
)
_TEST_DIR = re.compile(r"(^|/)(tests?|__tests__|spec|testdata|e2e)$")
_CI_FILES = (
    ".github/workflows/*.yml",
    ".github/workflows/*.yaml",
    ".gitlab-ci.yml",
    "Jenkinsfile",
    ".circleci/config.yml",
    "azure-pipelines.yml",
    ".travis.yml",
    "bitbucket-pipelines.yml",
    ".buildkite/*.yml",
    ".woodpecker.yml",
    ".woodpecker/*.yml",
    ".forgejo/workflows/*.yml",
)
_CONTAINER = re.compile(
    r"(^|/)(Dockerfile([._-][^/]*)?|Containerfile|[^/]*\.dockerfile|docker-compose[^/]*\.ya?ml"
    r"|compose\.ya?ml)$"
)
_K8S = re.compile(r"(^|/)(Chart\.yaml|kustomization\.ya?ml|skaffold\.ya?ml)$")
_SECURITY_FILES = re.compile(
    r"(^|/)(SECURITY\.md|SECURITY\.rst|security\.txt|\.snyk|\.semgrep\.ya?ml|\.bandit|bandit\.ya?ml"
    r"|dependabot\.ya?ml|renovate\.json|codeql[^/]*\.ya?ml|\.trivyignore|\.gitleaks\.toml)$",
    re.IGNORECASE,
)
_DATA_MARKERS = re.compile(
    r"(^|/)(dbt_project\.yml|dags|airflow\.cfg|dagster\.yaml|workspace\.yaml|prefect\.yaml"
    r"|pipelines?)$"
)
_DOC_SITE = re.compile(
    r"(^|/)(mkdocs\.ya?ml|docs/conf\.py|docusaurus\.config\.[jt]s|book\.toml|antora\.yml"
    r"|zensical\.toml)$"
)
_API_SPEC = re.compile(
    r"(^|/)(openapi|swagger)[^/]*\.(ya?ml|json)$|\.proto$|(^|/)schema\.graphql$", re.IGNORECASE
)
_FRONTEND_FILES = re.compile(r"\.(tsx|jsx|vue|svelte)$")


def stack_name(dep: str) -> str:
    """A dependency name as a tech-stack entry: lowercase `[a-z0-9.+-]`, at most 40 characters."""
    return re.sub(r"[^a-z0-9.+-]+", "-", dep.lower().lstrip("@")).strip("-")[:40] or "unknown"


def _any(paths: Iterable[str], pattern: re.Pattern[str]) -> bool:
    return any(pattern.search(p) for p in paths)


def _globs(paths: Iterable[str], globs: Iterable[str]) -> bool:
    pats = tuple(globs)
    return any(fnmatch.fnmatchcase(p, g) for p in paths for g in pats)


def detect(listing: Listing) -> Analysis:
    """The roles and RAC a codebase calls for. Deterministic: the same listing, the same analysis."""
    found: dict[str, Finding] = {}

    def add(role: str, tasks: Iterable[str], stack: Iterable[str], reason: str) -> None:
        found.setdefault(role, Finding(role)).add(tasks, [stack_name(s) for s in stack], reason)

    rac: dict[str, Rac] = {}
    files, dirs = listing.files, listing.dirs
    names = {p.rsplit("/", 1)[-1] for p in files}
    deps: set[str] = set()
    ecosystems: list[str] = []
    stacks: list[str] = []
    for path, declared in listing.deps.items():
        base = path.rsplit("/", 1)[-1]
        label, stack = ECOSYSTEMS.get(base, ECOSYSTEMS["requirements.txt"])
        if label not in ecosystems:
            ecosystems.append(label)
        if stack not in stacks:
            stacks.append(stack)
        deps.update(declared)
    ecosystems.sort()
    stacks.sort()
    for label in ecosystems:
        stack = next(s for lab, s in ECOSYSTEMS.values() if lab == label)
        add("backend_dev", ["implement-feature"], [stack], f"dependency manifest: {label}")
    if deps & BACKEND:
        add(
            "backend_dev",
            ["design-api", "implement-feature"],
            sorted(deps & BACKEND)[:4],
            "backend framework dependency",
        )
    if deps & FRONTEND or _any(files, _FRONTEND_FILES):
        add(
            "frontend_dev",
            ["implement-feature"],
            sorted(deps & FRONTEND)[:4] or ["typescript"],
            "frontend framework dependency or component files",
        )
    tests = _any(files, _TEST_FILE) or _any(dirs, _TEST_DIR)
    if tests or deps & TESTING:
        add(
            "qa_engineer",
            ["test-authoring"],
            sorted(deps & TESTING)[:4] or stacks[:2],
            "test files or test folders",
        )
        rac["test-suite"] = Rac(
            "test-suite",
            "runbook",
            "How the test suite is laid out and run: frameworks, folders, the command that runs it and what "
            "counts as green (structure only, no test code).",
            "manual",
            "tests/ or the CI test job",
        )
    tf = [p for p in files if p.endswith((".tf", ".tf.json"))]
    if tf:
        add("devops_engineer", ["deploy", "harden-security"], ["terraform"], "Terraform files")
        rac["infra-arch"] = Rac(
            "infra-arch",
            "terraform",
            "The Terraform that describes the infrastructure: modules, environments and how state is kept "
            "(structure only, never values or secrets).",
            "file-glob",
            "**/*.tf",
        )
    if _any(files, _CONTAINER):
        add("devops_engineer", ["deploy"], ["docker"], "Dockerfile or compose file")
        rac["container-build"] = Rac(
            "container-build",
            "infra",
            "How the container images are built and composed: base images, build stages, published tags "
            "(structure only).",
            "file-glob",
            "**/Dockerfile*",
        )
    if _any(files, _K8S):
        add("devops_engineer", ["deploy"], ["kubernetes"], "Helm chart or Kubernetes manifests")
    if _globs(files, _CI_FILES):
        add("devops_engineer", ["deploy"], ["ci"], "CI pipeline files")
        rac["ci-pipeline"] = Rac(
            "ci-pipeline",
            "runbook",
            "The CI pipeline: jobs, triggers, required checks and how a release is cut (structure only).",
            "manual",
            "the repository's CI configuration",
        )
    if _any(files, _DATA_MARKERS) or _any(dirs, _DATA_MARKERS) or deps & DATA:
        add(
            "devops_engineer",
            ["build-dag"],
            sorted(deps & DATA)[:4] or ["data-pipeline"],
            "data-pipeline markers",
        )
        rac["data-flows"] = Rac(
            "data-flows",
            "dataset",
            "The data pipelines: sources, schedules, datasets produced and their owners (names and shapes "
            "only, never records).",
            "manual",
            "the pipeline definitions",
        )
    if _any(files, _SECURITY_FILES) or deps & SECURITY:
        add(
            "security_expert",
            ["harden-security"],
            sorted(deps & SECURITY)[:4] or ["security-policy"],
            "security policy files or security libraries",
        )
        rac["security-policy"] = Rac(
            "security-policy",
            "runbook",
            "The security policy: how vulnerabilities are reported, supported versions, the scanners that "
            "gate a change (structure only).",
            "file-glob",
            "SECURITY.md",
        )
    if _any(files, _API_SPEC):
        rac["api-contracts"] = Rac(
            "api-contracts",
            "api-spec",
            "The API contracts (OpenAPI, protobuf or GraphQL schemas) the services expose: operations and "
            "types by name (structure only).",
            "file-glob",
            "**/*.{yaml,json,proto,graphql}",
        )
    if _any(files, _DOC_SITE):
        add("tech_writer", ["write-docs"], ["markdown"], "documentation site configuration")
    if "docs" in {d.split("/", 1)[0] for d in dirs} or {"README.md", "README.rst", "README"} & names:
        rac["code-wiki"] = Rac(
            "code-wiki",
            "wiki",
            "An LLM-readable map of the codebase: modules, data flows and conventions, written for the "
            "team (structure only, never source text).",
            "mcp-resource",
            "wiki://project/overview",
        )
    if not found:
        add("fullstack_dev", ["implement-feature"], stacks[:2] or ["general"], "no strong signal (default)")
    roles = tuple(found[r] for r in FLOW_ORDER if r in found)
    return Analysis(
        roles,
        tuple(rac[k] for k in sorted(rac)),
        tuple(ecosystems),
        len(files),
        listing.truncated,
        listing.unreadable,
    )
