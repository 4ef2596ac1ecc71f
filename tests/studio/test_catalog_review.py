"""Review findings on `acx exchange site`, each built at test time: a cartridge whose signature
was never checked (no public key, a key id nobody knows, a zero signature) is not verified and
shows nothing it says about itself, under a trust registry and under a policy; `--out` cannot be
the folder the command runs in (or one holding it); one file that breaks a check is that file's
rejection, and every other artifact of the folder is still judged."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.exchange import index as exchange_index
from acxoci.workflow.sign import sign_workflow
from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    registry_entry,
    tree_hash,
    trusting_policy,
    write_registry,
)

AT = "2026-12-06T00:00:00Z"
MARK = "Official reviewer FORGED-7c1e"
AGENT_REL = f"cartridges/{PUBLISHER}/pr-reviewer/1.0.0/cartridge.acx"
FLOW_REL = f"cals/{PUBLISHER}/review-team/0.1.0.cal.json"


def forged_cartridge(tmp: Path, out: Path) -> None:
    """A cartridge claiming PUBLISHER, signed by an attacker's key, then stripped of that public key,
    given a key id nobody knows and a signature of zeros (what no checker can verify)."""
    pkg = tmp / "forged-package"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    manifest = json.loads((pkg / "manifest.json").read_text())
    manifest.update(name=MARK, description=f"{MARK}: install me")
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2))
    out.parent.mkdir(parents=True, exist_ok=True)
    build_cartridge(pkg, out, publisher=PUBLISHER, key=generate_ed25519(),
                    created_at="2026-11-15T00:00:00.000Z")
    fake = "ed25519:" + hashlib.sha256(b"a key nobody holds").hexdigest()
    with sqlite3.connect(out) as db:
        sig_id, envelope = db.execute("SELECT sig_id, envelope FROM signatures").fetchone()
        env = json.loads(envelope)
        env["signatures"][0].update(keyid=fake, sig=base64.b64encode(bytes(64)).decode())
        db.execute("UPDATE signatures SET envelope = ?, keyid = ?, public_key_pem = NULL WHERE sig_id = ?",
                   (json.dumps(env, separators=(",", ":")), fake, sig_id))


@pytest.fixture
def folder(tmp_path: Path) -> tuple[Path, Path, Path, PrivateKey]:
    """(Exchange folder, trust registry, policy, the trusted publisher's key): a forged cartridge and
    a workflow the trusted publisher signed."""
    key = generate_ed25519()
    ex = tmp_path / "ex"
    forged_cartridge(tmp_path, ex / AGENT_REL)
    doc = json.loads((REPO / "examples" / "workflow" / "review-team.cal.json").read_text())
    (ex / FLOW_REL).parent.mkdir(parents=True)
    (ex / FLOW_REL).write_text(json.dumps(sign_workflow(doc, publisher_id=PUBLISHER, key=key, now=NOW)))
    trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    return ex, trust, trusting_policy(tmp_path, trust), key


def built(capsys: pytest.CaptureFixture[str], ex: Path, out: Path, *opts: str) -> dict[str, Any]:
    code, report = acx_json(capsys, "exchange", "site", str(ex), "--out", str(out), "--now", AT, *opts)
    assert code == 0, report
    doc: dict[str, Any] = json.loads((out / "catalog.json").read_text())
    return {a["location"]: a for a in doc["artifacts"]}


def test_an_unchecked_signature_is_never_verified_and_shows_no_claims(
    folder: tuple[Path, Path, Path, PrivateKey], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ex, trust, policy, _ = folder
    _, cli = acx_json(capsys, "cartridge", "verify", str(ex / AGENT_REL), "--trust-registry", str(trust))
    assert cli["trust"] == "unverified"  # the premise: acx itself could check nothing
    cases = ((("--trust-registry", str(trust)), "unverified"), (("--policy", str(policy)), "refused"))
    for opts, word in cases:
        out = tmp_path / f"site-{word}"
        arts = built(capsys, ex, out, *opts)
        forged = arts[AGENT_REL]
        assert not forged["verified"] and forged["verdict"] == word, forged
        for claim in ("publisherId", "keyId", "level", "name", "install"):
            assert forged[claim] is None, (word, claim, forged)
        assert arts[FLOW_REL]["verified"] and arts[FLOW_REL]["publisherId"] == PUBLISHER  # the honest one
        everything = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
        assert MARK not in everything, word
        page = (out / forged["page"]).read_text()
        assert "Not verified." in page and "Use it" not in page
        assert "acx load" not in page.split("Judged as")[0]
        assert f"<dd>{PUBLISHER}</dd>" not in page  # the signer row does not repeat the claim


def test_out_is_never_the_folder_the_command_runs_in(
    folder: tuple[Path, Path, Path, PrivateKey], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    ex, trust, _, _ = folder
    site = tmp_path / "work" / "site"
    built(capsys, ex, site, "--trust-registry", str(trust))
    before = tree_hash(tmp_path / "work")
    monkeypatch.chdir(site)
    for out in (".", "..", str(site), str(site.parent), "./"):
        code, err = acx_json(capsys, "exchange", "site", str(ex), "--out", out,
                             "--trust-registry", str(trust))
        assert code == 3 and err["error"]["kind"] == "invalid_input", (out, err)
        assert "current folder" in err["error"]["message"]
    assert tree_hash(tmp_path / "work") == before  # nothing replaced, no stray .old or .tmp folder
    monkeypatch.chdir(tmp_path / "work")
    built(capsys, ex, Path("site"), "--trust-registry", str(trust))  # from outside it, it is replaced


@pytest.mark.parametrize("fault", ["a-wrong-type", "a-checker-bug"])
def test_one_broken_file_is_that_files_rejection(
    folder: tuple[Path, Path, Path, PrivateKey], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """A workflow whose variable type is an array (a real input that crashed lint), or a stand-in
    checker that fails on one file (named so: it stands for any bug a hostile file may reach)."""
    ex, trust, _, _ = folder
    broken = f"cals/{PUBLISHER}/broken/1.0.0.cal.json"
    (ex / broken).parent.mkdir(parents=True)
    doc = {"schemaVersion": "acx.cal/1", "id": "broken", "version": "1.0.0",
           "variables": [{"name": "v", "type": []}]}
    (ex / broken).write_text(json.dumps(doc))
    if fault == "a-checker-bug":
        real = exchange_index.summarize_workflow

        def summarize_with_a_bug(path: Path, rel: str, *args: Any) -> Any:
            if rel == broken:
                raise RuntimeError("a stand-in checker bug")
            return real(path, rel, *args)

        monkeypatch.setattr(exchange_index, "summarize_workflow", summarize_with_a_bug)
    for command in ("verify", "index"):
        code, out = acx_json(capsys, "exchange", command, str(ex), "--now", AT)
        assert code == 1, out  # a finding, not exit 70
        assert [r["path"] for r in out["rejected"]] == [broken], out
    arts = built(capsys, ex, tmp_path / "site", "--trust-registry", str(trust))
    assert arts[broken]["verdict"] == "rejected" and not arts[broken]["verified"]
    assert arts[FLOW_REL]["verified"], arts[FLOW_REL]  # the rest of the folder is still judged
