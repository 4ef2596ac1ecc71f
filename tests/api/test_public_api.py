"""The public Python API: only `acxoci.api.__all__` is public, every name there exists and says
what it does, results share one verdict shape, and the API never goes through the CLI."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from acxoci import api
from tests.harness.env import REPO, VECTORS


def test_every_public_name_exists_and_is_documented() -> None:
    assert sorted(api.__all__) == sorted(set(api.__all__))
    for name in api.__all__:
        obj = getattr(api, name)
        assert inspect.getdoc(obj), f"acxoci.api.{name} has no docstring"


def test_the_api_does_not_import_the_cli_or_typer() -> None:
    tree = ast.parse((REPO / "acxoci" / "api.py").read_text())
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {n for n in names if n.startswith(("acxoci.cli", "typer", "rich"))}, names


def test_one_verdict_shape_for_files_and_for_the_decision(tmp_path: Path) -> None:
    sample = VECTORS / "sample" / "sample.acx"
    good = api.verify_cartridge(sample, trust_registry=VECTORS / "sample" / "trust-active.json")
    assert isinstance(good, api.Verdict) and good.ok and good.trust == "trusted" and good.reasons == ()
    compromised = api.verify_cartridge(sample, trust_registry=VECTORS / "sample" / "trust-compromised.json")
    assert not compromised.ok and compromised.reasons
    assert all(isinstance(r, api.Reason) for r in compromised.reasons)
    (tmp_path / "policy.yaml").write_text(
        "schemaVersion: acx.verification-policy/1\n"
        "publishers: [{id: io.github.example-acx, trustRegistries: ["
        f"{VECTORS / 'sample' / 'trust-active.json'}]}}]\n")
    api.push(sample, f"oci-layout:{tmp_path / 'store'}:sample")
    judged = api.judge(f"oci-layout:{tmp_path / 'store'}:sample", policy=tmp_path / "policy.yaml",
                       store=tmp_path / "installed")
    assert judged.ok and judged.trust == "trusted"
    assert [c.id for c in judged.checks][:4] == ["registry", "content-digest", "signature", "trust"]
    assert all(isinstance(c, api.Check) for c in judged.checks)
