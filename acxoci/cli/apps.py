"""The command groups (`acx cartridge …`, `acx workflow …`, …) as shared typer sub-apps, so
several command modules can add commands to one group."""

from __future__ import annotations

import typer

from acxoci.cli.common import VocabularyGroup


def _group(help_text: str) -> typer.Typer:
    return typer.Typer(help=help_text, no_args_is_help=True, add_completion=False, cls=VocabularyGroup,
                       context_settings={"help_option_names": ["-h", "--help"]})


cartridge_app = _group("Build, sign, verify, inspect, strip and check cartridges (.acx).")
workflow_app = _group("Lint, sign, verify, inspect and staff workflows (.cal.json).")
key_app = _group("Generate and inspect signing keys.")
policy_app = _group("Loop + context policy checks and verification-policy files.")
harness_app = _group("Harness requirements and the boot handshake.")
level_app = _group("Provable levels: benchmarks, credentials, verification.")
status_list_app = _group("Bitstring status lists for credential revocation.")
manifest_app = _group("Raw OCI manifests.")
installed_app = _group("Inspect and re-verify installed artifacts.")
release_app = _group("Resumable release pipelines.")
graph_app = _group("Lint, sign, verify, inspect and digest Agent Graphs (.agent-graph.json).")

GROUPS: dict[str, typer.Typer] = {
    "cartridge": cartridge_app,
    "workflow": workflow_app,
    "key": key_app,
    "policy": policy_app,
    "harness": harness_app,
    "level": level_app,
    "status-list": status_list_app,
    "manifest": manifest_app,
    "installed": installed_app,
    "release": release_app,
    "graph": graph_app,
}
exchange_app = _group("The git-based Cartridge Exchange: verify, index and mirror into OCI registries.")
GROUPS["exchange"] = exchange_app
