"""`acx workflow lint|sign|verify|digest|remix|inspect|ready`: author and consume CAL workflows."""

from __future__ import annotations

import dataclasses
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import typer

from acxoci.attest.trustdecision import Minimum
from acxoci.cli.apps import workflow_app
from acxoci.cli.common import REQUIRE_HELP, finish_lint, print_issues, required_trust, transport_options
from acxoci.cli.common import exit_with as _exit
from acxoci.cli.common import load_registry as _registry
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import Markup, emit, say
from acxoci.cli.signed_doc import finish_verify, sign_and_write
from acxoci.errors import InvalidInput, NotFound, Tampered, UsageError
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.policy import status_checker
from acxoci.level.status import DEFAULT_MAX_AGE
from acxoci.workflow.inspect import inspect_workflow, render_lines
from acxoci.workflow.level_resolver import VerifiedLevelResolver
from acxoci.workflow.lineage import RELATIONS, remix
from acxoci.workflow.lint import lint
from acxoci.workflow.model import Workflow, load_document
from acxoci.workflow.ready import assess, directory_roster, load_roster, rac_checklist
from acxoci.workflow.roster_oci import load_registry_roster
from acxoci.workflow.sign import default_signed_name, render, sign_workflow, workflow_digest, write_atomic
from acxoci.workflow.verify import verify_workflow


@workflow_app.command("lint")
def lint_cmd(
    file: Path = typer.Argument(..., help="The .cal.json workflow."),
    publish: bool = typer.Option(False, "--publish", help="Also apply the public profile and secret scrub."),
) -> None:
    """Check structure, conditions, graph rules and lineage (and with --publish the public profile)."""
    finish_lint(file, lint(load_document(file), publish=publish), publish)


@workflow_app.command("digest")
def digest_cmd(file: Path = typer.Argument(..., help="The .cal.json workflow.")) -> None:
    """Print the workflow digest: sha256 of the JCS form without `integrity`."""
    d = workflow_digest(load_document(file))
    emit({"file": str(file), "digest": d}, lambda: say("{}", d))


@workflow_app.command("sign")
def sign_cmd(
    file: Path = typer.Argument(..., help="The unsigned (or re-signed) .cal.json workflow."),
    publisher: str = typer.Option(..., "--publisher", help="Reverse-DNS publisher id, e.g. io.github.you."),
    key: str | None = typer.Option(
        None, "--key", help="Ed25519 private key: a PKCS#8 PEM file, env://VAR or a pkcs11: URI (make a "
        "file with `acx key generate`)."
    ),
    out: Path | None = typer.Option(None, "-o", "--output", help="Output (default <name>.signed.cal.json)."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var holding the key password."),
    now: str | None = typer.Option(None, "--now", help="Signing time (RFC 3339; default: now)."),
) -> None:
    """Lint --publish, then sign: JCS digest, in-toto Statement, DSSE, acx.workflow-signature/1."""
    target = out or default_signed_name(file)
    sign_and_write(load_document(file), sign_workflow, target=target, publisher=publisher, key=key,
                   password_env=password_env, now=_now(now))


@workflow_app.command("verify")
def verify_cmd(
    file: Path = typer.Argument(..., help="The signed .cal.json workflow."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file: "
                                               "the signer must be trusted in it (see --require)."),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    now: str | None = typer.Option(None, "--now", help="Evaluate trust at this time (RFC 3339)."),
) -> None:
    """Verify every signature binding and the signer's trust; exit 0 only if signed, ok and publishable
    (8 when the signer is below --require).

    A file check: it does not look at a registry copy's attestations, level, revocation or
    lifecycle; `acx verify REF --policy FILE` judges a published workflow as `acx install` would."""
    minimum = required_trust(require, trust_registry)
    at = _now(now)
    doc = load_document(file)
    v = verify_workflow(doc, registry=_registry(trust_registry, at), now=at)
    finish_verify(file, v, lint(doc, publish=True), minimum=minimum)


@workflow_app.command("remix")
def remix_cmd(
    signed: Path = typer.Argument(..., help="The signed parent workflow."),
    out: Path = typer.Option(..., "-o", "--output", help="Where to write the unsigned draft."),
    relation: str = typer.Option("remix", "--relation", help="remix | fork | derived-from | supersedes."),
    new_id: str | None = typer.Option(None, "--id", help="New workflow id for the draft."),
    new_version: str | None = typer.Option(None, "--version", help="New SemVer for the draft."),
) -> None:
    """Turn a verified signed workflow into a draft with a digest-pinned lineage parent."""
    if relation not in RELATIONS:
        raise UsageError(f"--relation must be one of {', '.join(RELATIONS)}")
    doc = load_document(signed)
    at = datetime.now(UTC)
    v = verify_workflow(doc, registry=None, now=at)
    if not v.signed:
        raise InvalidInput("only a signed workflow can be remixed", where=str(signed))
    if not v.ok:
        raise Tampered("parent does not verify: " + "; ".join(v.issues), where=str(signed))
    draft = remix(doc, relation, new_id=new_id, new_version=new_version)
    write_atomic(out, render(draft))
    parent = draft["lineage"]["parents"][0]
    emit(
        {"file": str(out), "parent": parent},
        lambda: say("[bold green]DRAFT[/bold green] {} — {} of {}/{}@{} {} (unsigned; sign "
                    "it with `acx workflow sign`)",
                    str(out), relation, parent['publisherId'], parent['id'], parent.get('version', ''),
                    parent['digest']),
    )


@workflow_app.command("inspect")
def inspect_cmd(
    file: Path = typer.Argument(..., help="The .cal.json workflow."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
) -> None:
    """Participants, RAC checklist, nodes, flow and conditional transitions, limits, signature."""
    at = datetime.now(UTC)
    doc = load_document(file)
    structure = lint(doc)
    verdict = verify_workflow(doc, registry=_registry(trust_registry, at), now=at)
    view = inspect_workflow(Workflow.from_json(doc), lint_result=structure, verdict=verdict)

    def human() -> None:
        for line in render_lines(view):
            say("{}", line)
        say("")
        say("verdict: {}", 'VALID ✓' if structure.ok else 'INVALID')
        print_issues(structure)

    emit(view, human)


@workflow_app.command("ready")
@transport_options()
def ready_cmd(
    file: Path = typer.Argument(..., help="The .cal.json workflow."),
    cartridges: Path | None = typer.Option(
        None, "--cartridges", help="Directory scanned recursively for *.acx."
    ),
    roster: list[str] | None = typer.Option(
        None, "--roster", help="Cartridge reference or repository (every tag); repeat for more."
    ),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    issuers: Path | None = typer.Option(
        None, "--issuers", help="Level issuer trust registry: prove minLevel slots (else unverifiable)."
    ),
    max_status_age: int = typer.Option(
        int(DEFAULT_MAX_AGE.total_seconds()),
        "--max-status-age",
        help="Seconds after its validFrom that a status list is stale.",
    ),
    allow_offline: bool = typer.Option(False, "--allow-offline", help="Accept a cached/stale status list."),
    allow_demo: bool = typer.Option(False, "--allow-demo-level", help="Count a level measured by the "
                                    "demo solver or benchmark (a policy's level.allowDemo)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Status-list cache directory."),
    now: str | None = typer.Option(None, "--now", help="Evaluate trust at this time (RFC 3339)."),
    require: str | None = typer.Option(
        None, "--require", help="Least signer trust to staff: portable or trusted (default with "
        "--trust-registry: trusted; portable still needs the registry to tie each key to its publisher)."
    ),
    policy: Path | None = typer.Option(
        None, "--policy", help="Judge the workflow and every team member as `acx install` would under "
        "this verification policy (the one decision), instead of the narrower flags above."
    ),
    store: Path | None = typer.Option(None, "--store", help="With --policy: also staff from this install "
                                      "store's cartridges, each judged now."),
) -> None:
    """Staff every participant from verified cartridges and check each task; READY exits 0.

    With --policy the workflow and each team member are judged by the same decision as `acx install`
    (signature, trust, level, revocation, lifecycle), so READY here means `install` staffs it. With
    --issuers (no --policy) a minLevel slot is staffed only by a cartridge whose level credential
    (embedded or attached as a referrer) verifies against its ROM digest and is not revoked."""
    if cartridges is None and not roster and store is None:
        raise UsageError("give --cartridges DIR and/or --roster REF")
    if policy is not None:
        narrower = [trust_registry, issuers, cache_dir, require]
        if any(v is not None for v in narrower) or allow_offline or allow_demo:
            raise UsageError("--policy judges what the policy says; --trust-registry, --issuers, --require "
                             "and the status-list flags are the narrower check")
        _ready_under_policy(file, policy, cartridges, roster or [], store, _now(now))
        return
    if store is not None:
        raise UsageError("--store goes with --policy (installed cartridges are judged under a policy)")
    if cartridges is not None and not cartridges.is_dir():
        raise NotFound(f"no such roster directory: {cartridges}")
    if require not in (None, "portable", "trusted"):
        raise UsageError(f"--require must be portable or trusted, not {require!r}")
    if require is not None and trust_registry is None:
        raise UsageError("--require needs --trust-registry (nothing vouches for a key without one)")
    # a trust flag never passes silently: with a trust registry each signer must be trusted in it,
    # unless --require portable (a key the registry ties to its publisher, outside its window)
    minimum: Minimum = "portable" if require == "portable" else "trusted" if trust_registry else "none"
    if not file.exists():
        raise NotFound(f"workflow file not found: {file}",
                       hint="workflow ready takes the workflow FILE; for a published one, `acx pull REF -o "
                       "team.cal.json` first, or judge it with `acx verify REF --policy FILE` (which staffs "
                       "it as install would)")
    at = _now(now)
    registry = _registry(trust_registry, at)
    doc = load_document(file)
    wf = Workflow.from_json(doc)
    resolver = None
    if issuers is not None:
        level_issuers = IssuerRegistry.load(issuers, now=at)
        check = status_checker(
            None,
            issuers=level_issuers,
            now=at,
            max_age=timedelta(seconds=max_status_age),
            allow_offline=allow_offline,
            cache_dir=cache_dir,
        )
        resolver = VerifiedLevelResolver(level_issuers, at, check, allow_demo=allow_demo)
    entries = (
        [] if cartridges is None else load_roster(directory_roster(cartridges), registry=registry, now=at)
    )
    with tempfile.TemporaryDirectory(prefix="acx-roster-") as tmp:
        if roster:
            entries += load_registry_roster(roster, Path(tmp), registry=registry, now=at)
        entries = [dataclasses.replace(e, minimum=minimum) for e in entries]
        report = assess(
            wf,
            entries,
            lint_result=lint(doc),
            workflow_verdict=verify_workflow(doc, registry=registry, now=at),
            level_resolver=resolver,
        )
    view = inspect_workflow(wf)
    data: dict[str, Any] = {
        "file": str(file),
        **report.to_json(),
        "rac": rac_checklist(wf),
        "flow": view["flow"],
        "conditional": view["conditional"],
    }

    def human() -> None:
        if report.ready:
            say("[bold green]READY ✓[/bold green] — structure valid, team staffed, "
                "requirements covered")
        else:
            say("[bold red]NOT READY[/bold red] — {} reason(s)", len(report.reasons))
        for r in report.reasons:
            say("  - {}", r)
        for w in report.warnings:
            say("  [yellow]warning:[/yellow] {}", w)
        say("Team ({} cartridge(s) scanned):", report.roster_size)
        needs = {p.alias: _needs(p) for p in wf.participants}
        for s in report.participants:
            mark: str = Markup("[green]✓[/green]") if s.staffed else Markup("[red]✗[/red]")
            who = s.cartridge.label if s.cartridge else "—"
            say("  {} {:<12} {:<5} {}  ({})", mark, s.alias, s.bind, who, s.reason)
            if not s.staffed and needs.get(s.alias):
                say("      needs {}", needs[s.alias])
        if wf.rac:
            say("RAC checklist (□ required, · optional):")
            for item in wf.rac:
                mark = "□" if item.required else "·"
                say("  {} {} ({}) {}", mark, item.id, item.kind, item.description)
        lines = render_lines(view)  # the nodes, the flow and its conditions, as `workflow inspect` shows
        start = next(i for i, line in enumerate(lines) if line.startswith("Nodes ("))
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("Limits")), len(lines))
        for line in lines[start:end]:
            if line:
                say("{}", line)

    emit(data, human)
    _exit(0 if report.ready else 1)


def _needs(p: Any) -> str:
    """What a participant asks of the cartridge that fills it, in words (role, level, capabilities)."""
    if p.slot is None:
        return f"the cartridge with ROM digest {p.rom_digest}" if p.rom_digest else ""
    parts = [f"role {p.slot.role}"] if p.slot.role else []
    lvl = p.slot.min_level
    if lvl is not None:
        parts.append("level " + " / ".join(str(x) for x in (lvl.acx_level, lvl.career_tier) if x is not None))
    parts += [f"capability {c.task_type}" + (f" ({', '.join(c.stack)})" if c.stack else "")
              for c in p.slot.capabilities]
    return ", ".join(parts)


def _ready_under_policy(file: Path, policy: Path, cartridges: Path | None, roster: list[str],
                        store: Path | None, at: datetime) -> None:
    """`workflow ready --policy`: the workflow judged as `install` would, its team staffed from
    members each judged now (the store's, a folder's, and pulled references)."""
    from acxoci.install.judge import Context, HostInputs, judge_file
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy
    from acxoci.oci.settings import active_options

    pol = load_policy(policy, now=at)
    doc = load_document(file)
    wf = Workflow.from_json(doc)
    with tempfile.TemporaryDirectory(prefix="acx-roster-") as tmp:
        pulled = tuple(load_registry_roster(roster, Path(tmp), registry=pol.combined_registry(), now=at,
                                            options=active_options())) if roster else ()
        ctx = Context(pol, at, HostInputs(roster=cartridges), Store(store) if store is not None else None,
                      remote=active_options(), pulled=pulled)
        j = judge_file(file, ctx)
    staffing = dict(j.gathered.staffing or {}) if j.gathered is not None else {}
    others = [r for r in j.reasons() if not r.startswith("staffing ")]
    ready = j.ok
    data: dict[str, Any] = {"file": str(file), **staffing, "ready": ready,
                            "verdict": "READY" if ready else "NOT READY",
                            "reasons": [*others, *staffing.get("reasons", [])],
                            "checks": [c.to_json() for c in j.checks], "policy": str(policy),
                            "rac": rac_checklist(wf)}

    def human() -> None:
        head = (Markup("[bold green]READY ✓[/bold green]") if ready
                else Markup("[bold red]NOT READY[/bold red]"))
        say("{} — judged under {} as `acx install` would", head, str(policy))
        for r in data["reasons"]:
            say("  - {}", str(r))
        say("Team ({} cartridge(s) judged):", staffing.get('rosterSize', 0))
        for s in staffing.get("participants", []):
            mark = Markup("[green]✓[/green]") if s.get("staffed") else Markup("[red]✗[/red]")
            cart = s.get("cartridge") or {}
            who = cart.get("agentName") or cart.get("source") or "—"
            say("  {} {:<12} {!s:<5} {}  ({})",
                mark, str(s.get('alias')), s.get('bind'), str(who), str(s.get('reason')))

    emit(data, human)
    _exit(0 if ready else 1)


def register(app: typer.Typer) -> None:
    """Commands are added to the shared `workflow` group at import time; `acx cal` is `workflow ready`."""
    app.command("cal", help="Alias of `acx workflow ready`: staff a workflow's team and check each task.")(
        ready_cmd
    )
