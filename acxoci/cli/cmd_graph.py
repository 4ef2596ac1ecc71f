"""`acx graph lint|digest|sign|verify|inspect`: author and check Agent Graphs (`acx.agent-graph/1`)."""

from __future__ import annotations

from pathlib import Path

import typer

from acxoci.cli.apps import graph_app
from acxoci.cli.common import REQUIRE_HELP, finish_lint, required_trust
from acxoci.cli.common import load_registry as _registry
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import emit, say
from acxoci.cli.signed_doc import finish_verify, sign_and_write
from acxoci.workflow.graph import (
    architecture,
    default_signed_graph_name,
    graph_digest,
    inspect_graph,
    lint_graph,
    load_graph,
    sign_graph,
    verify_graph,
)


@graph_app.command("lint")
def lint_cmd(
    file: Path = typer.Argument(..., help="The .agent-graph.json file."),
    publish: bool = typer.Option(False, "--publish", help="Also apply the public profile and secret scrub."),
) -> None:
    """Check structure, references, return routes, mandatory direction and convergence."""
    doc = load_graph(file)
    finish_lint(file, lint_graph(doc, publish=publish), publish,
                lambda: say("architecture: {}", architecture(doc)))


@graph_app.command("digest")
def digest_cmd(file: Path = typer.Argument(..., help="The .agent-graph.json file.")) -> None:
    """Print the graph digest: sha256 of the JCS form without `integrity`."""
    d = graph_digest(load_graph(file))
    emit({"file": str(file), "digest": d}, lambda: say("{}", d))


@graph_app.command("sign")
def sign_cmd(
    file: Path = typer.Argument(..., help="The unsigned (or re-signed) .agent-graph.json file."),
    publisher: str = typer.Option(..., "--publisher", help="Reverse-DNS publisher id, e.g. io.github.you."),
    key: str | None = typer.Option(
        None, "--key", help="Ed25519 private key: a PKCS#8 PEM file, env://VAR or a pkcs11: URI (make a "
        "file with `acx key generate`)."
    ),
    out: Path | None = typer.Option(
        None, "-o", "--output", help="Output (default <name>.signed.agent-graph.json)."
    ),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var holding the key password."),
    now: str | None = typer.Option(None, "--now", help="Signing time (RFC 3339; default: now)."),
) -> None:
    """Lint --publish, then sign: JCS digest, in-toto Statement, DSSE, acx.agent-graph-signature/1."""
    target = out or default_signed_graph_name(file)
    sign_and_write(load_graph(file), sign_graph, target=target, publisher=publisher, key=key,
                   password_env=password_env, now=_now(now))


@graph_app.command("verify")
def verify_cmd(
    file: Path = typer.Argument(..., help="The signed .agent-graph.json file."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file: "
                                               "the signer must be trusted in it (see --require)."),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    now: str | None = typer.Option(None, "--now", help="Evaluate trust at this time (RFC 3339)."),
) -> None:
    """Verify every signature binding and the signer's trust; exit 0 only if signed, ok and publishable
    (8 when the signer is below --require).

    A file check: it does not look at a registry copy's attestations, revocation or lifecycle;
    `acx verify REF --policy FILE` judges a published graph as `acx install` would."""
    minimum = required_trust(require, trust_registry)
    at = _now(now)
    doc = load_graph(file)
    v = verify_graph(doc, registry=_registry(trust_registry, at), now=at)
    finish_verify(file, v, lint_graph(doc, publish=True), ("architecture", architecture(doc)),
                  minimum=minimum)


@graph_app.command("inspect")
def inspect_cmd(
    file: Path = typer.Argument(..., help="The .agent-graph.json file."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    now: str | None = typer.Option(None, "--now", help="Evaluate trust at this time (RFC 3339)."),
) -> None:
    """Actors, knowledge modules, routes, loops, convergence points and the signature verdict."""
    at = _now(now)
    doc = load_graph(file)
    verdict = verify_graph(doc, registry=_registry(trust_registry, at), now=at)
    view = inspect_graph(doc, verdict)

    def human() -> None:
        say("{}  ({}@{})", str(view['name']), str(view['id']), str(view['version']))
        say("architecture: {}", architecture(doc))
        for a in view["actors"]:
            say("  \\[actor] {} ({})", str(a['id']), str(a['kind']))
        for k in view["knowledge"]:
            say("  \\[knowledge] {} ({})", str(k['id']), str(k['kind']))
        for r in view["routes"]:
            to = ", ".join(r["to"])
            say("  \\[route] {} —{}→ {}  ({})", str(r['from']), str(r['intent']), to, str(r['obligation']))
        for lp in view["loops"]:
            ref = lp["workflowRef"] or {}
            pin = f"  {ref.get('publisherId')}/{ref.get('id')}@{ref.get('version')}" if ref else ""
            say("  \\[loop] {} ({}){}", str(lp['id']), str(lp['kind']), pin)
        for c in view["convergence"]:
            say("  \\[convergence] {} steward {}", str(c['id']), str(c['steward']))
        say("digest: {}", view['digest'])
        say("signature: {} ({})", verdict.trust, verdict.status)

    emit(view, human)


def register(app: typer.Typer) -> None:
    """Commands are added to the shared `graph` group at import time."""
