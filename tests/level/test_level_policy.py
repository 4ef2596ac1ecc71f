"""Level requirements (`--min-level`, workflow minLevel): parsing and the pass/fail decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.errors import UsageError
from acxoci.level import policy
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.binding import CartridgeBinding
from acxoci.level.credential import issue_credential
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.run import run_level
from acxoci.level.solver import ReferenceSolver
from tests.harness.trustdocs import registry_doc

T0 = datetime(2026, 8, 1, tzinfo=UTC)
ROM = "sha256:f763d225d5f79817876cfaa60183164471bf3ec5d8dbf711f3ae772916526d2f"
ISSUER = "did:web:verifier.example"
LIST = "https://status.example/p"


@pytest.mark.parametrize(("text", "level"), [("18", 18), ("senior", 15), ("Principal", 25), ("intern", 0)])
def test_parse_requirement(text: str, level: int) -> None:
    assert policy.parse_requirement(text) == level


def test_parse_requirement_rejects_nonsense() -> None:
    with pytest.raises(UsageError, match="tier"):
        policy.parse_requirement("guru")


Issued = tuple[PrivateKey, IssuerRegistry, Path, dict[str, Any], CartridgeBinding]


def _issued(tmp_path: Path, list_id: str, index: int) -> Issued:
    """A verifier key trusted as an issuer, a status list file, and a level credential for the
    rex ROM digest with status entry `list_id#index`."""
    key = generate_ed25519()
    issuers = IssuerRegistry.from_json(registry_doc(key.public(), "example.verifier"))
    lst = tmp_path / "sl.json"
    st.write_json_atomic(lst, st.create_status_list(list_id=list_id, issuer=ISSUER, key=key, now=T0))
    result = run_level(
        demo_suite(), cartridge=Path("rex.acx"), rom_digest=ROM, solver=ReferenceSolver(24), signer=key
    )
    vc = issue_credential(
        result,
        cartridge_id="io.github.calder-sec/rex",
        issuer=ISSUER,
        key=key,
        now=T0,
        status=StatusEntry(list_id, index, "revocation", f"{list_id}#{index}"),
    )
    binding = CartridgeBinding(
        Path("rex.acx"), ROM, "io.github.calder-sec/rex", None, "io.github.calder-sec", "portable"
    )
    return key, issuers, lst, vc, binding


def test_min_level_decision(tmp_path: Path) -> None:
    _key, issuers, lst, vc, binding = _issued(tmp_path, LIST, 3)
    at = T0 + timedelta(hours=1)
    check = policy.status_checker(str(lst), issuers=issuers, now=at, cache_dir=tmp_path / "c")
    senior = policy.check_documents(
        [("a", vc)],
        binding,
        issuers=issuers,
        now=at,
        status_check=check,
        allow_demo=True,
        required=policy.parse_requirement("senior"),
    )
    assert senior.ok and senior.best is not None and senior.best.level == 18
    assert "Lv18 senior" in senior.reason()
    staff = policy.check_documents(
        [("a", vc)],
        binding,
        issuers=issuers,
        now=at,
        status_check=check,
        allow_demo=True,
        required=policy.parse_requirement("staff"),
    )
    assert not staff.ok and "below the required 20" in staff.reason()
    unresolved = policy.check_documents([("a", vc)], binding, issuers=issuers, now=at, status_check=None,
                                        allow_demo=True)
    assert not unresolved.ok and "unresolved" in unresolved.reason()
    none = policy.check_documents([], binding, issuers=issuers, now=at, status_check=check)
    assert not none.ok and none.reason() == "no level credential attached"


def test_default_status_source_is_the_credentials_own_list(tmp_path: Path) -> None:
    """With no override, revocation is checked against the credential's statusListCredential
    (here a file path), so a flipped bit is seen; it is never silently skipped."""
    key, issuers, lst, vc, binding = _issued(tmp_path, str(tmp_path / "sl.json"), 5)
    at = T0 + timedelta(hours=1)
    check = policy.status_checker(None, issuers=issuers, now=at, cache_dir=tmp_path / "c")
    ok = policy.check_documents([("a", vc)], binding, issuers=issuers, now=at, status_check=check,
                                allow_demo=True)
    assert ok.ok, ok.reason()
    st.write_json_atomic(lst, st.set_status(st.read_list_file(lst), 5, key=key, now=T0))
    revoked = policy.check_documents([("a", vc)], binding, issuers=issuers, now=at, status_check=check,
                                     allow_demo=True)
    assert not revoked.ok and "revoked" in revoked.reason()


def test_a_demo_measurement_counts_only_when_allowed(tmp_path: Path) -> None:
    """The demo suite and solver make a demonstration: set aside (not ok, saying why) unless
    allow_demo, the flags form's level.allowDemo."""
    _key, issuers, lst, vc, binding = _issued(tmp_path, LIST, 3)
    at = T0 + timedelta(hours=1)
    check = policy.status_checker(str(lst), issuers=issuers, now=at, cache_dir=tmp_path / "c")
    demo = policy.check_documents([("a", vc)], binding, issuers=issuers, now=at, status_check=check,
                                  required=policy.parse_requirement("senior"))
    assert not demo.ok and "a demonstration" in demo.reason() and demo.demo[0][0] == "a"
    assert policy.check_documents([("a", vc)], binding, issuers=issuers, now=at, status_check=check,
                                  required=policy.parse_requirement("senior"), allow_demo=True).ok
