"""The trust-decision table of docs/trust-decisions.md, read from the page and walked row by row:
through the pure `attest.trustdecision` functions, and through every command that decides trust
(`cartridge verify`, `verify`, `install`, `workflow ready`, `level verify`, `release`), asserting
the exit code and the reason."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.attest.trust import TrustRegistry, format_rfc3339
from acxoci.attest.trustdecision import COMMANDS, Command, Minimum, decide, signer_facts, standing
from acxoci.attestation.attach import attest_artifact
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.credential import issue_credential
from acxoci.level.run import run_level
from acxoci.level.solver import ReferenceSolver
from acxoci.oci.layout import LayoutStore
from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.installs import (
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    rom_digest,
    write_policy,
)
from tests.harness.workflows import pinned_workflow

DOC = REPO / "docs" / "trust-decisions.md"
OTHER = "io.github.someone-else"
NOW = datetime.now(UTC).replace(microsecond=0)  # CLI commands without --now use the clock
SIGNED = NOW - timedelta(days=1)
ISSUER = "did:web:verifier.example"
ISSUER_PUB, ISSUER_OTHER = "example.verifier", "example.other"
LIST_ID = "https://verifier.example/status/7"
ADA = "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"


def _table(marker: str) -> list[dict[str, str]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"<!-- table:{marker} -->") + 1
    rows: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r, strict=True)) for r in body]


STANDING = _table("standing")
EXITS = {r["standing"]: r for r in _table("exits")}


def test_the_tables_cover_every_status_command_and_minimum() -> None:
    assert {r["key status"] for r in STANDING} == {"active", "expired", "superseded", "retired", "revoked",
                                                   "compromised", "unknown"}
    cols = [c for c in next(iter(EXITS.values())) if c != "standing"]
    assert {c.rsplit(" ", 1)[0] for c in cols} == set(COMMANDS)
    assert set(EXITS) == {"trusted", "portable", "unvouched", "rejected"}


def entry_for(status: str, key: PrivateKey, publisher: str) -> dict[str, Any]:
    """The registry entry that gives `key` the table's key status for a signature made at SIGNED."""
    before = format_rfc3339(NOW - timedelta(hours=1))  # after SIGNED
    extra: dict[str, Any] = {
        "active": {},
        "expired": {"status": "expired", "notAfter": before},
        "superseded": {"status": "revoked", "revocationReason": "superseded", "revokedAt": before},
        "retired": {"status": "revoked", "revocationReason": "retired", "revokedAt": before},
        "revoked": {"status": "revoked"},
        "compromised": {"status": "revoked", "revocationReason": "key-compromise", "revokedAt": before},
    }[status]
    return registry_entry(key, publisher, **extra)


def registry_for(row: dict[str, str], key: PrivateKey, *, match: str = PUBLISHER,
                 other: str = OTHER) -> dict[str, Any]:
    if row["key status"] == "unknown":
        entries = [registry_entry(generate_ed25519(), other)]  # non-empty, but not this key
    else:
        entries = [entry_for(row["key status"], key, match if row["publisher"] == "match" else other)]
    return {"schemaVersion": "acx.trust-registry/1", "keys": entries}


ROW_IDS = [f"{r['key status']}-{r['publisher']}" for r in STANDING]


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_standing_row(row: dict[str, str]) -> None:
    key = generate_ed25519()
    reg = TrustRegistry.from_json(registry_for(row, key))
    facts = signer_facts(reg.get(key.public().keyid()), claimed_publisher=PUBLISHER, signed_at=SIGNED,
                         signed_at_text=format_rfc3339(SIGNED), now=NOW)
    assert facts.status == row["key status"]
    got, reason = standing(facts)
    assert (got, reason[: len(row["reason (starts with)"])]) == (row["standing"], row["reason (starts with)"])


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_exit_row_through_decide(row: dict[str, str]) -> None:
    key = generate_ed25519()
    reg = TrustRegistry.from_json(registry_for(row, key))
    facts = signer_facts(reg.get(key.public().keyid()), claimed_publisher=PUBLISHER, signed_at=SIGNED,
                         signed_at_text=format_rfc3339(SIGNED), now=NOW)
    for col, want in EXITS[row["standing"]].items():
        if col == "standing":
            continue
        command, minimum = col.rsplit(" ", 1)
        d = decide(facts, minimum=minimum, command=command)  # type: ignore[arg-type]
        assert d.exit_code == int(want), (col, d)
        assert d.accepted == (want == "0") and d.reason.startswith(row["reason (starts with)"])


# ---- the real commands -----------------------------------------------------------------------


@dataclass
class Published:
    tmp: Path
    key: PrivateKey
    acx: Path
    layout: Path
    rom: str


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> Published:
    """One cartridge signed at SIGNED, pushed to a layout and attested (cartridge predicate) by its key."""
    tmp = tmp_path_factory.mktemp("trust-table")
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp / "agent.acx", key, signed_at=SIGNED)
    layout = tmp / "layout"
    desc = push_cartridge(layout, acx, "v1")
    attest_artifact(LayoutStore(layout), desc, "agents/agent", key, now=SIGNED)
    roster = tmp / "roster"
    roster.mkdir()
    (roster / "agent.acx").write_bytes(acx.read_bytes())
    return Published(tmp, key, acx, layout, rom_digest(acx))


def _expect(row: dict[str, str], command: Command, minimum: Minimum) -> int:
    return int(EXITS[row["standing"]][f"{command} {minimum}"])


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_row_through_cartridge_verify(row: dict[str, str], published: Published, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    reg = _write(tmp_path / "trust.json", registry_for(row, published.key))
    for minimum in ("none", "portable", "trusted"):
        req = [] if minimum == "none" else ["--require", minimum]
        code, out = acx_json(capsys, "cartridge", "verify", str(published.acx), "--trust-registry", str(reg),
                             *req)
        assert code == _expect(row, "cartridge verify", minimum), (minimum, out)  # type: ignore[arg-type]
        if row["standing"] != "trusted":
            assert out["issues"][0].startswith(row["reason (starts with)"]), out


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_row_through_verify(row: dict[str, str], published: Published, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    reg = _write(tmp_path / "trust.json", registry_for(row, published.key))
    code, out = acx_json(capsys, "verify", f"oci-layout:{published.layout}:v1", "--trust-registry", str(reg))
    assert code == _expect(row, "verify", "trusted"), out
    counted = [a for a in out["attestations"] if a["format"] != "envelope"]
    assert counted, out
    if row["standing"] == "trusted":
        assert all(a["verdict"] == "verified" for a in counted), out
    else:
        assert all(a["verdict"] in ("rejected", "unverified") for a in counted), out
        assert all(any(r.startswith(row["reason (starts with)"]) for r in a["reasons"]) for a in counted), out


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_row_through_install(row: dict[str, str], published: Published, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    reg = _write(tmp_path / "trust.json", registry_for(row, published.key))
    for minimum in ("portable", "trusted"):
        pol = write_policy(tmp_path / f"p-{minimum}.yaml", {
            "publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]},
                           {"id": OTHER, "trustRegistries": [str(reg)]}],
            "minimumTrust": minimum})
        store = tmp_path / f"store-{minimum}"
        code, out = acx_json(capsys, "install", f"oci-layout:{published.layout}:v1", "--policy", str(pol),
                             "--store", str(store))
        assert code == _expect(row, "install", minimum), (minimum, out)  # type: ignore[arg-type]
        trust = next(c for c in out["checks"] if c["id"] == "trust")
        assert row["reason (starts with)"] in trust["reason"], trust
        assert (trust["status"] == "pass") == (code == 0)


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_row_through_workflow_ready(row: dict[str, str], published: Published, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    reg = _write(tmp_path / "trust.json", registry_for(row, published.key))
    wf = _write(tmp_path / "team.cal.json", pinned_workflow(published.rom))
    for minimum in ("portable", "trusted"):
        code, out = acx_json(capsys, "workflow", "ready", str(wf), "--cartridges",
                             str(published.tmp / "roster"),
                             "--trust-registry", str(reg), "--require", minimum)
        assert code == _expect(row, "workflow ready", minimum), (minimum, out)  # type: ignore[arg-type]
        part = out["participants"][0]
        assert part["staffed"] == (code == 0)
        if code:
            assert row["reason (starts with)"] in part["reason"], part
    code, out = acx_json(capsys, "workflow", "ready", str(wf), "--cartridges", str(published.tmp / "roster"))
    assert code == 0, out  # minimum none: no registry, nothing to vouch (the unvouched row's `none` column)


@dataclass
class Issued:
    key: PrivateKey
    credential: Path
    status_list: Path


@pytest.fixture(scope="module")
def issued(tmp_path_factory: pytest.TempPathFactory) -> Issued:
    """A level credential for ADA and its status list, both signed by one issuer key at SIGNED."""
    tmp = tmp_path_factory.mktemp("trust-table-level")
    key = generate_ed25519()
    result = run_level(demo_suite(), cartridge=Path("ada.acx"), rom_digest=ADA, solver=ReferenceSolver(33),
                       signer=key)
    cred = issue_credential(result, cartridge_id="c", issuer=ISSUER, key=key, now=SIGNED,
                            status=StatusEntry(LIST_ID, 4, "revocation", None))
    lst = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=SIGNED)
    return Issued(key, _write(tmp / "cred.json", cred), _write(tmp / "list.json", lst))


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
def test_row_through_level_verify(row: dict[str, str], issued: Issued, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The issuer's key status decides the same way (its `publisher` is the issuer DID's)."""
    doc = registry_for(row, issued.key, match=ISSUER_PUB, other=ISSUER_OTHER)
    reg = _write(tmp_path / "issuers.json", doc)
    code, out = acx_json(capsys, "level", "verify", str(issued.credential), "--rom-digest", ADA, "--issuers",
                         str(reg), "--status-list", str(issued.status_list), "--max-status-age", "172800",
                         "--now", format_rfc3339(NOW))
    assert code == _expect(row, "level verify", "trusted"), out
    if code:
        assert any(row["reason (starts with)"] in r for r in out["reasons"]), out


@pytest.mark.parametrize("row", STANDING, ids=ROW_IDS)
@pytest.mark.parametrize("minimum", ["portable", "trusted"])
def test_row_through_release(row: dict[str, str], minimum: str, tmp_path: Path, vectors_dir: Path) -> None:
    """`acx release`: the input precheck and the acceptance read-back are install's trust check."""
    import yaml

    from acxoci.attest.keys import load_public_pem
    from acxoci.release.interpreter import run_goal
    from acxoci.release.plan import load_plan
    from tests.harness.releases import make_world

    layout = tmp_path / "layout"
    w = make_world(tmp_path, vectors_dir, [f"oci-layout:{layout}"])
    sample = load_public_pem((vectors_dir / "sample" / "sample.pub.pem").read_bytes())
    if row["key status"] == "unknown":
        entries = [registry_entry(generate_ed25519(), OTHER)]
    else:
        entries = [entry_for(row["key status"], _PublicOnly(sample),
                             PUBLISHER if row["publisher"] == "match" else OTHER)]
    reg = _write(tmp_path / "trust.json", {"schemaVersion": "acx.trust-registry/1", "keys": entries})
    pol = yaml.safe_load(w.policy.read_text())
    pol["publishers"] = [{"id": PUBLISHER, "trustRegistries": [str(reg)]},
                         {"id": OTHER, "trustRegistries": [str(reg)]}]
    pol["minimumTrust"] = minimum
    w.policy.write_text(yaml.safe_dump(pol))
    report = run_goal(load_plan(w.plan), root=w.state)
    assert report.exit_code() == _expect(row, "release", minimum), report.to_json()  # type: ignore[arg-type]
    if report.exit_code():
        prep = report.status.effect("prepare:agent")
        assert prep.failure is not None and prep.failure.cls == "validation_failed"
        assert row["reason (starts with)"] in prep.failure.message, prep.failure.message
        assert not layout.exists()


class _PublicOnly:
    """Stands in for a private key where only `.public()` is needed (the vectors ship no private key)."""

    def __init__(self, pub: Any) -> None:
        self._pub = pub

    def public(self) -> Any:
        return self._pub
