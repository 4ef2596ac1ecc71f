"""The pure provenance check: a requirement passes only when one verified SLSA v1 attestation's
Fulcio certificate AND predicate both meet it and agree with each other; everything else (a key
signer, an unknown build type, a predicate the certificate contradicts, hostile predicates) fails
closed with a reason, never an exception."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.attestation.identity import FulcioFacts
from acxoci.attestation.provenance import (
    SLSA_PROVENANCE_V1,
    Requirement,
    VerifiedProvenance,
    check_provenance,
    github_provenance,
    signer_workflow_pattern,
)
from acxoci.errors import InvalidInput, UsageError
from acxoci.install.vpolicy import policy_from_json

REPO, REF, WF, SHA = "octo/agents", "refs/tags/v1.0.0", ".github/workflows/release.yml", "c0ffee" * 6 + "beef"
ENV = {"GITHUB_REPOSITORY": REPO, "GITHUB_REF": REF, "GITHUB_WORKFLOW_REF": f"{REPO}/{WF}@{REF}",
       "GITHUB_SHA": SHA, "GITHUB_RUN_ID": "99", "GITHUB_RUN_ATTEMPT": "2", "GITHUB_SERVER_URL": "https://github.com"}
CERT = FulcioFacts(issuer="https://token.actions.githubusercontent.com",
                   source_repository_uri=f"https://github.com/{REPO}", source_repository_ref=REF,
                   source_repository_digest=SHA, build_signer_uri=f"https://github.com/{REPO}/{WF}@{REF}",
                   build_config_uri=f"https://github.com/{REPO}/{WF}@{REF}")


def predicate() -> dict[str, Any]:
    stmt = github_provenance("sha256:" + "a" * 64, "reg/x", ENV)
    assert stmt.predicate_type == SLSA_PROVENANCE_V1 and stmt.subjects[0].digest == {"sha256": "a" * 64}
    return stmt.predicate


_REAL = object()


def item(pred: Any = _REAL, cert: FulcioFacts | None = CERT) -> VerifiedProvenance:
    return VerifiedProvenance("referrer sha256:x", predicate() if pred is _REAL else pred, cert)


@pytest.mark.parametrize("req", [
    Requirement(REPO), Requirement(f"https://github.com/{REPO}/"), Requirement(REPO, REF),
    Requirement(signer_workflow=f"{REPO}/{WF}"), Requirement(signer_workflow=f"github.com/{REPO}/{WF}@{REF}"),
    Requirement(REPO, REF, f"https://github.com/{REPO}/{WF}"),
])
def test_the_run_that_built_it_passes(req: Requirement) -> None:
    v = check_provenance(req, [item()])
    assert v.ok and v.matched == "referrer sha256:x", v.reasons


@pytest.mark.parametrize(("req", "why"), [
    (Requirement("octo/other"), "repository is"),
    (Requirement(REPO, "refs/heads/main"), "ref is"),
    (Requirement(signer_workflow=f"{REPO}/.github/workflows/nightly.yml"), "signer workflow is"),
    (Requirement(signer_workflow=f"{REPO}/{WF}@refs/heads/main"), "signer workflow is"),
])
def test_another_repository_ref_or_workflow_fails(req: Requirement, why: str) -> None:
    v = check_provenance(req, [item()])
    assert not v.ok and any(why in r for r in v.reasons), v.reasons


@pytest.mark.parametrize(("field", "value", "why"), [
    ("source_repository_uri", "https://github.com/octo/other", "repository: predicate"),
    ("source_repository_ref", "refs/heads/evil", "ref: predicate"),
    ("source_repository_digest", "0" * 40, "source commit"),
    ("build_signer_uri", f"https://github.com/{REPO}/.github/workflows/evil.yml@{REF}", "signer workflow is"),
    ("source_repository_uri", None, "repository: predicate"),
    ("build_config_uri", f"https://github.com/{REPO}/.github/workflows/evil.yml@{REF}",
     "workflow: predicate"),
    ("build_config_uri", None, "workflow: predicate"),
])
def test_a_predicate_the_certificate_contradicts_fails(field: str, value: str | None, why: str) -> None:
    """The build's claim alone is never enough: the CI identity Fulcio certified must agree."""
    cert = FulcioFacts(**{**CERT.__dict__, field: value})
    v = check_provenance(Requirement(REPO, REF, f"{REPO}/{WF}"), [item(cert=cert)])
    assert not v.ok and any(why in r for r in v.reasons), v.reasons


def test_a_lying_predicate_with_an_honest_certificate_fails() -> None:
    pred = predicate()
    pred["buildDefinition"]["externalParameters"]["workflow"]["repository"] = "https://github.com/octo/other"
    v = check_provenance(Requirement("octo/other"), [item(pred)])
    assert not v.ok


def test_key_signed_unknown_build_type_and_none_fail_closed() -> None:
    assert not check_provenance(Requirement(REPO), []).ok
    key_signed = check_provenance(Requirement(REPO), [item(cert=None)])
    assert not key_signed.ok and "signed with a key" in key_signed.reasons[0]
    pred = predicate()
    pred["buildDefinition"]["buildType"] = "https://example.com/other-build/v1"
    assert not check_provenance(Requirement(REPO), [item(pred)]).ok


def test_one_good_attestation_among_bad_ones_passes() -> None:
    bad = item(cert=None)
    v = check_provenance(Requirement(REPO), [bad, item()])
    assert v.ok


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=20)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(JSON)
def test_hostile_predicates_fail_without_raising(junk: Any) -> None:
    v = check_provenance(Requirement(REPO), [item(junk)])
    assert not v.ok and v.reasons


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.sampled_from(["buildDefinition", "runDetails"]), JSON)
def test_a_mangled_part_of_a_real_predicate_fails_or_still_agrees(part: str, junk: Any) -> None:
    pred = copy.deepcopy(predicate())
    pred[part] = junk
    v = check_provenance(Requirement(REPO, REF, f"{REPO}/{WF}"), [item(pred)])
    assert not v.ok


def _policy_requirement(value: Any) -> Requirement:
    """A policy's `provenance` member read as every policy is: schema, model, requirement."""
    doc = {"schemaVersion": "acx.verification-policy/1", "provenance": value}
    req = policy_from_json(doc, base=Path("."), now=datetime.now(UTC), source="p").provenance
    assert isinstance(req, Requirement)
    return req


def test_policy_requirement_is_strict() -> None:
    assert _policy_requirement({"repository": REPO, "signerWorkflow": f"{REPO}/{WF}"}) == \
        Requirement(REPO, None, f"{REPO}/{WF}")
    for bad in ({}, {"repo": REPO}, {"repository": 1}, [REPO], None):
        with pytest.raises(InvalidInput):
            _policy_requirement(bad)


def test_provenance_needs_a_github_run() -> None:
    with pytest.raises(UsageError, match="GITHUB_SHA"):
        github_provenance("sha256:" + "a" * 64, "x", {k: v for k, v in ENV.items() if k != "GITHUB_SHA"})


@pytest.mark.parametrize("signer", [
    f"https://github.com/{REPO}/{WF}@x.yml@{REF}",   # another file of the repository: release.yml@x.yml
    f"https://github.com/{REPO}/{WF}@refs@{REF}",
    f"https://github.com/{REPO}/{WF}@v1.0.0",        # a ref that is not refs/…
    f"https://github.com/{REPO}/{WF}",
])
def test_the_signer_is_the_workflow_file_at_a_full_ref(signer: str) -> None:
    """F5: the signer is `<workflow URL>@refs/…` exactly; cutting it at the first `@` let a workflow
    file named `release.yml@x.yml` pass for release.yml."""
    cert = FulcioFacts(**{**CERT.__dict__, "build_signer_uri": signer})
    v = check_provenance(Requirement(signer_workflow=f"{REPO}/{WF}"), [item(cert=cert)])
    assert not v.ok and any("signer workflow is" in r for r in v.reasons), v.reasons
    pattern = signer_workflow_pattern(f"{REPO}/{WF}")  # the default identity of `verify --signer-workflow`
    assert re.fullmatch(pattern, signer) is None
    assert re.fullmatch(pattern, f"https://github.com/{REPO}/{WF}@{REF}") is not None


def test_a_reusable_workflow_is_named_by_its_signer() -> None:
    """A release run through a reusable workflow: the certificate's signer is the reusable workflow,
    its build config (and the predicate) the caller; --signer-workflow names the signer."""
    shared = "https://github.com/octo/shared/.github/workflows/release.yml@refs/heads/main"
    cert = FulcioFacts(**{**CERT.__dict__, "build_signer_uri": shared})
    assert check_provenance(Requirement(REPO, REF, "octo/shared/.github/workflows/release.yml"),
                            [item(cert=cert)]).ok
    caller = check_provenance(Requirement(signer_workflow=f"{REPO}/{WF}"), [item(cert=cert)])
    assert not caller.ok and any("signer workflow is" in r for r in caller.reasons)


@pytest.mark.parametrize("bad", [f"{REPO}/release.yml", f"{REPO}/.github/workflows/sub/x.yml",
                                 f"{REPO}/{WF}@main", f"{REPO}/{WF}@v1", "octo", f"{REPO}/{WF}@x.yml"])
def test_a_signer_workflow_that_names_no_workflow_file_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="signer workflow"):
        Requirement(signer_workflow=bad)
    with pytest.raises(InvalidInput, match="signer workflow"):
        _policy_requirement({"signerWorkflow": bad})
