"""Every caller of the one acceptance decision gives install's verdict (issue 28's done-when: "a
test feeds the suite's hostile corpus to every caller of the decision and asserts that each
caller's verdict equals install's").

The corpus is tests/harness/judgecorpus.py: trust cases, hostile layouts and re-signed ROM
documents. For each case, `acx install REF --policy P` is the reference verdict (accepted or
refused, with the failed check ids and kinds; or the typed error when nothing could be judged),
and each caller, asked as a user asks it, must say the same:

- `acx verify REF --policy P` (the host's question);
- the catalog (`acx exchange site oci-layout:…`'s judge, `catalog.judges.DecisionJudge`);
- the staffing of a workflow (`acx workflow ready --roster REF --policy P`), whose members are
  judged under the policy minus its attestation requirement (`judge.staffing_policy`);
- `acx activate` of what install accepted;
- `acx push FILE REF --policy P` against install of what it pushed, and its refusal before
  upload of a version tag that is not the signed version;
- `acx release run` (prepare, push, read-back) against install of what it released; a release
  refused in `prepare` writes nothing, and refuses for exactly install's failures among the
  checks decidable before a write (signature, trust, registry, version).

After install, the world changes (a key compromised, a credential revoked, a release withdrawn,
the policy tightened): `installed verify`, `activate`, the staffing of an installed team (`ready
--store`, install of the workflow) and `installed sync` all say what a fresh install says."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from acxoci.install.checks import CHECK_ORDER
from tests.harness.judgecorpus import CASES, Case, World, acx, make_world, ok, publish, write_policy

#: The checks `release`'s prepare decides before anything is written (release.interpreter.precheck).
PRECHECK = frozenset({"registry", "signature", "trust", "version", "policy-budget"})
#: What the staffing of a team drops from the policy for its members (judge.staffing_policy).
NOT_FOR_MEMBERS = frozenset({"attestations"})


@dataclass(frozen=True)
class Verdict:
    """A caller's answer: accepted, or the failed checks as (id, kind); or a typed error's kind."""

    accepted: bool
    failed: frozenset[tuple[str, str | None]] = frozenset()
    error: str | None = None

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(cid for cid, _ in self.failed)


def _of_checks(checks: list[dict[str, Any]]) -> Verdict:
    failed = frozenset((c["id"], c.get("kind")) for c in checks if c["status"] in ("fail", "unavailable"))
    return Verdict(not failed, failed)


def _of_output(code: int, out: Any) -> Verdict:
    """install / verify / push --policy output: 0 accepted, 8 refused (with checks), else an error."""
    if isinstance(out, dict) and "error" in out and "checks" not in out:
        assert code not in (0, 70), out
        return Verdict(False, error=out["error"]["kind"])
    checks = out["acceptance"]["checks"] if "acceptance" in out else out["checks"]
    verdict = _of_checks(checks)
    assert code == (0 if verdict.accepted else 8), out
    return verdict


def _install(ref: str, policy: Path, store: Path) -> Verdict:
    code, out = acx("install", ref, "--policy", str(policy), "--store", str(store))
    verdict = _of_output(code, out)
    if verdict.error is None:
        assert out["status"] == ("installed" if verdict.accepted else "refused"), out
    return verdict


# ---- each caller, asked as a user asks it -------------------------------------------------------


def _verify(case: Case) -> Verdict:
    return _of_output(*acx("verify", case.ref, "--policy", str(case.policy)))


def _catalog(case: Case) -> Verdict:
    """The verdict the catalog shows for the layout tag (`acx exchange site oci-layout:DIR --policy`
    judges each tag with DecisionJudge); a staffing failure is shown as a note there, and a
    reference that cannot be judged at all as one failed `judge` line."""
    from acxoci.catalog.judges import DecisionJudge
    from acxoci.catalog.model import Candidate
    from acxoci.install.vpolicy import load_policy

    now = datetime.now(UTC)
    judge = DecisionJudge(load_policy(case.policy, now=now), f"--policy {case.policy}", now,
                          case.folder / "site")
    shown = judge(Candidate("layout", case.ref, "agent" if case.kind == "cartridge" else "agent-graph"))
    failed = [c for c in shown.checks if c.status in ("fail", "unavailable")]
    if [c.id for c in failed] == ["judge"]:
        return Verdict(False, error=failed[0].reason)
    assert shown.verified is not bool(failed), shown
    return Verdict(shown.verified, frozenset((c.id, None) for c in failed))


MEMBER_REFUSAL = re.compile(r"(?:^|; )([a-z-]+) \[([^\]]*)\]: ")


def _member_refusal(text: str) -> frozenset[tuple[str, str | None]]:
    """The failed checks a staffing names for a refused member (`Judgement.reasons()` joined)."""
    reasons = text.partition("refused by the policy: ")[2]
    return frozenset((cid, None if kind == "None" else kind) for cid, kind in MEMBER_REFUSAL.findall(reasons)
                     if cid in CHECK_ORDER)


def _staffing(case: Case, world: World) -> Verdict:
    """`acx workflow ready TEAM --roster REF --policy P`: the roster member's verdict, read from
    what the staffing says of it: `refused by the policy: id [kind]: reason; …` (the decision's
    failed checks), or `not usable: KIND: …` when it could not even be pulled (error KIND)."""
    code, out = acx("workflow", "ready", str(world.workflow), "--roster", case.ref, "--policy",
                    str(case.policy))
    if set(out) == {"error"}:
        return Verdict(False, error=out["error"]["kind"])
    assert code == (0 if out["ok"] else 1), out
    mine = [r for r in out["rejectedCartridges"] if case.ref in r]
    if not mine:
        staffed = {p["alias"]: p["staffed"] for p in out["participants"]}
        assert staffed == {"reviewer": True}, out
        return Verdict(True)
    assert len(mine) == 1, mine
    if "refused by the policy: " not in mine[0]:
        unusable = re.search(r": not usable: ([a-z_]+): ", mine[0])
        assert unusable is not None, mine
        return Verdict(False, error=unusable.group(1))
    failed = _member_refusal(mine[0])
    assert failed, mine
    return Verdict(False, failed)


def _push(case: Case) -> tuple[Verdict | None, Verdict, Verdict]:
    """`acx push FILE REF --policy P` to a new layout: (its refusal before upload, when the tag is
    not the signed version; the verdict on the registry copy; install's verdict on that copy)."""
    assert case.file is not None
    ref = f"oci-layout:{case.folder / 'pushed'}:{case.tag}"
    before = None
    code, out = acx("push", str(case.file), ref, "--policy", str(case.policy))
    if set(out) == {"error"}:
        assert code == 8 and out["error"]["kind"] == "refused_by_policy", out
        assert not (case.folder / "pushed").exists(), "a refusal before upload pushed something"
        before = Verdict(False, frozenset({("version", "rollback")}))
        code, out = acx("push", str(case.file), ref, "--policy", str(case.policy), "--allow-tag-mismatch")
    pushed = _of_output(code, out)
    return before, pushed, _install(ref, case.policy, case.folder / "store-pushed")


def _release(case: Case, world: World) -> tuple[str, Verdict, Verdict]:
    """`acx release run PLAN` of the file to a new layout under the case's policy (attested with
    the publisher's key, the level credential attached when the case has one): (the effect that
    decided: done | prepare | verify, its verdict, install's verdict on the destination)."""
    assert case.file is not None
    dest = f"oci-layout:{case.folder / 'released'}"
    kind = {"cartridge": "cartridge", "agent-graph": "graph"}[case.kind]
    art: dict[str, Any] = {"input": "it", "to": [{"repository": dest, "tags": [case.tag]}]}
    inputs: dict[str, Any] = {"artifacts": {"it": {kind: str(case.file)}},
                              "keys": {"attestation": {"file": str(world.key)}}}
    if case.credential is not None:
        art["levelCredential"] = "level"
        inputs["level"] = {"credentials": {"level": str(case.credential)}}
    plan = case.folder / "release.json"
    plan.write_text(json.dumps({"schemaVersion": "acx.release-plan/1",
                                "goal": {"id": f"corpus-{case.name}", "artifacts": [art]},
                                "inputs": inputs, "acceptance": {"policy": str(case.policy)}}))
    code, out = acx("release", "run", str(plan))
    installed = _install(f"{dest}:{case.tag}", case.policy, case.folder / "store-released")
    if set(out) == {"error"}:
        return "error", Verdict(False, error=out["error"]["kind"]), installed
    if out["state"] == "done":
        assert code == 0, out
        return "done", Verdict(True), installed
    assert code == 9, out
    blocked = [e for e in out["effects"] if e["state"] == "blocked"]
    assert len(blocked) == 1 and blocked[0]["kind"] in ("prepare", "verify"), blocked
    failure = blocked[0]["failure"]
    assert failure["class"] == "validation_failed", failure
    if "checks" not in failure["details"]:  # the input itself does not verify (a typed refusal)
        return blocked[0]["kind"], Verdict(False, error=failure["details"]["kind"]), installed
    checks = failure["details"]["checks"]
    return blocked[0]["kind"], Verdict(False, frozenset((c["id"], c.get("kind")) for c in checks)), installed


# ---- the corpus test ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("world")
    with pytest.MonkeyPatch.context() as mp:  # nothing of the world's making lands in the user's folders
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("XDG_CACHE_HOME", str(root / "home" / ".cache"))
        mp.setenv("XDG_DATA_HOME", str(root / "home" / ".local" / "share"))
        return make_world(root / "files")


@pytest.fixture(autouse=True)
def _host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches, activations and release goals under this test's folder, never the user's."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / ".local" / "share"))
    monkeypatch.setenv("ACX_RELEASE_DIR", str(tmp_path / "releases"))


def _ids(v: Verdict) -> Any:
    return v.error or sorted(v.ids)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_caller_gives_installs_verdict(name: str, world: World, tmp_path: Path) -> None:
    case = CASES[name](world, tmp_path)
    base = _install(case.ref, case.policy, tmp_path / "store")
    if case.failing is not None:  # the corpus is what it says: install refuses exactly these
        assert base.error is None and base.ids == case.failing, (name, base)

    # the host's question, and the catalog's page: exactly install's checks
    assert _verify(case) == base, name
    shown = _catalog(case)
    if base.error is not None:
        assert shown.error is not None and not shown.accepted, (name, shown)
    else:
        assert shown.accepted == base.accepted, (name, shown)
        assert shown.ids - {"staffing"} == base.ids - {"staffing"}, (name, shown)

    # staffing: a team's member is judged as install judges it (under the policy minus attestations);
    # a member that cannot even be pulled is unusable for the reason install cannot judge it, or for
    # the content-digest failure install refuses it with. An Agent Graph staffs no team.
    if case.kind == "cartridge":
        member = _staffing(case, world)
        want = base.failed - {f for f in base.failed if f[0] in NOT_FOR_MEMBERS}
        if member.error is not None:
            content = {kind for cid, kind in base.failed if cid == "content-digest"}
            assert member.error in ({base.error} | content) - {None}, (name, member, base)
        else:
            assert base.error is None, (name, member, base)
            assert (member.accepted, member.failed) == (not want, want), (name, member, base)

    # activate: what install accepted is activated (nothing changed since)
    if base.accepted and case.kind == "cartridge":
        listed = ok("installed", "list", "--store", str(tmp_path / "store"))["items"]
        out = ok("activate", listed[0]["name"], "--skills-dir", str(tmp_path / "skills"), "--store",
                 str(tmp_path / "store"))
        assert out["skills"], out

    # publishing: push --policy and release judge what they published as install then does. A case
    # that exists only as a hostile registry copy (a layout's trait) has no file to publish.
    if case.file is None:
        return
    before, pushed, installed = _push(case)
    assert pushed == installed, (name, pushed, installed)
    if before is not None:  # refused before upload: exactly for the version check install makes
        assert "version" in base.ids and "version" in installed.ids, (name, base, installed)
    step, released, installed = _release(case, world)
    if pushed.ids & PRECHECK:  # what can be decided before a write is, so a doomed release writes nothing
        assert step == "prepare", (name, step, released, pushed)
    if step == "done":
        assert installed.accepted, (name, installed)
    elif step == "verify":  # the read-back: the whole decision on the published copy
        assert released.failed == installed.failed and not installed.accepted, (name, released, installed)
    elif step == "prepare":  # refused for install's failures decidable before a write; nothing written
        assert not installed.accepted and not (case.folder / "released").exists(), (name, installed)
        early = pushed.failed - {f for f in pushed.failed if f[0] not in PRECHECK}
        if released.error is not None:  # the input does not verify: one of those failures' kind
            assert released.error in {kind for _, kind in early}, (name, released, pushed)
        else:
            assert released.failed == early and early, (name, released, pushed)
    else:  # the release could not even start: the file is one push cannot take either
        assert pushed.error is not None, (name, released, pushed)


def test_the_corpus_covers_every_kind_of_verdict(world: World, tmp_path: Path) -> None:
    """The corpus is no list of easy cases: install accepts some, refuses others for each of the
    checks below, and cannot judge some at all (hostile layouts)."""
    refused: set[str] = set()
    accepted = errors = 0
    for name, build in sorted(CASES.items()):
        (tmp_path / name).mkdir()
        case = build(world, tmp_path / name)
        v = _install(case.ref, case.policy, tmp_path / name / "store")
        accepted += v.accepted
        errors += v.error is not None
        refused |= v.ids
    assert accepted >= 4 and errors >= 1, (accepted, errors)
    assert refused >= {"registry", "content-digest", "signature", "trust", "attestations", "level",
                       "revocation", "policy-budget", "version", "lifecycle"}, refused


# ---- after install: the world changes ----------------------------------------------------------


def _tighten(case: Case, world: World) -> None:
    doc = yaml.safe_load(case.policy.read_text())
    doc["level"]["minimum"] = "legend"
    case.policy.write_text(yaml.safe_dump(doc, sort_keys=False))


def _withdraw(case: Case, world: World) -> None:
    from acxoci.exchange.lifecycle import push_lifecycle
    from acxoci.oci.layout import LayoutStore
    from acxoci.oci.target import resolve_manifest

    target = LayoutStore(case.folder / "layout")
    push_lifecycle(target, resolve_manifest(target, case.tag), {
        "status": "withdrawn", "reason": "found bad", "recordedAt": datetime.now(UTC).isoformat()}, None)


CHANGES: dict[str, Callable[[Case, World], None]] = {
    "key-compromised": lambda c, w: ok(
        "key", "revoke", str(w.root / "publisher.pub.pem"), "--trust-registry", str(c.folder / "trust.json"),
        "--reason", "key-compromise", "--revoked-at", "2026-01-02T00:00:00Z"),
    "credential-revoked": lambda c, w: ok(
        "level", "revoke", str(w.credential), "--status-list", str(c.folder / "status.json"), "--issuer-key",
        str(w.verifier_key)),
    "withdrawn": _withdraw,
    "policy-tightened": _tighten,
}


def _installed_case(world: World, d: Path) -> Case:
    """The accepted case, with its own copies of the trust registry and the status list to change."""
    trust = Path(shutil.copy(world.trust, d / "trust.json"))
    status = Path(shutil.copy(world.status_list, d / "status.json"))
    ref, _ = publish(d, world.cartridge, "1.0.0", credential=world.credential)
    policy = write_policy(d, world, trust=trust, level={"minimum": world.level, "allowDemo": True},
                          status_list=status)
    return Case("installed", d, ref, policy, file=world.cartridge, credential=world.credential)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_after_install_every_use_gives_a_fresh_installs_verdict(change: str, world: World,
                                                               tmp_path: Path) -> None:
    case = _installed_case(world, tmp_path)
    store = str(tmp_path / "store")
    name = ok("install", case.ref, "--policy", str(case.policy), "--store", store)["name"]
    ok("activate", name, "--host", "claude", "--store", store)
    team = f"oci-layout:{tmp_path / 'teams'}:0.1.0"
    ok("push", str(world.workflow), team)
    out = ok("install", team, "--policy", str(case.policy), "--store", store)
    assert {c["id"]: c["status"] for c in out["checks"]}["staffing"] == "pass", out

    CHANGES[change](case, world)
    fresh = _install(case.ref, case.policy, tmp_path / "fresh-store")
    assert not fresh.accepted and fresh.error is None and fresh.failed, fresh

    code, out = acx("installed", "verify", "--store", store)
    assert code == 1, out
    items = {i["name"]: i for i in out["items"]}
    assert _of_checks(items[name]["checks"]) == fresh, (items[name], fresh)
    assert any("no longer passes" in p for p in items[name]["activationProblems"]), items[name]
    code, out = acx("activate", name, "--host", "codex", "--store", store)
    assert code == 8 and out["error"]["kind"] == "refused_by_policy", out
    assert _of_checks(out["error"]["details"]["checks"]) == fresh, (out, fresh)

    # the installed team: its member judged now, as a fresh install judges it
    member = fresh.failed - {f for f in fresh.failed if f[0] in NOT_FOR_MEMBERS}
    code, out = acx("workflow", "ready", str(world.workflow), "--policy", str(case.policy), "--store", store)
    assert code == 1 and not out["ok"], out
    (rejected,) = [r for r in out["rejectedCartridges"] if f"installed:{name}" in r]
    assert _member_refusal(rejected) == member, (rejected, fresh)
    code, out = acx("install", team, "--policy", str(case.policy), "--store", store)
    assert code == 8 and "staffing" in _of_checks(out["checks"]).ids, out
    team_item = next(i for n, i in items.items() if n != name)
    assert _of_checks(team_item["checks"]) == _of_checks(out["checks"]), (team_item, out)

    # the timer command deactivates exactly what no longer passes
    out = ok("installed", "sync", "--dry-run", "--store", store)
    assert [(s["name"], s["action"]) for s in out["steps"]] == [(name, "deactivate")], out
