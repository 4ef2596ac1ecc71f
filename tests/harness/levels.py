"""Level-credential builders shared by the level tests (no tests here): an issuer with an issuer
registry, a status list on disk and a credential over a run of ada-ridge's ROM, and signed
evidence statements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from acxoci.attest import dsse
from acxoci.attest.canonical import jcs, sha256_hex
from acxoci.attest.keys import PrivateKey, PublicKey
from acxoci.attest.statuslist import StatusEntry
from acxoci.level import status as st
from acxoci.level.credential import LevelVerdict, issue_credential, verify_credential
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.run import TRAJECTORY_PREDICATE, RunResult

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
ADA = "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
REX = "sha256:f763d225d5f79817876cfaa60183164471bf3ec5d8dbf711f3ae772916526d2f"
ISSUER = "did:web:verifier.example"
LIST_ID = "https://status.example/lists/1"


def issuers_doc(
    *keys: tuple[PublicKey, str], status: str = "active", reason: str | None = None
) -> dict[str, Any]:
    """An issuer registry (trust-registry shape) holding each (key, publisher) with the given status."""
    entries = []
    for pub, publisher in keys:
        e: dict[str, Any] = {
            "keyid": pub.keyid(),
            "publisherId": publisher,
            "algorithm": "ed25519",
            "publicKeyPem": pub.spki_pem(),
            "status": status,
            "notBefore": "2026-01-01T00:00:00Z",
            "notAfter": "2028-01-01T00:00:00Z",
            "namespaceProof": {
                "method": "dns-txt",
                "txtRecord": "_acx-challenge." + ".".join(reversed(publisher.split("."))),
                "verifiedAt": "2026-01-01T00:00:00Z",
            },
        }
        if reason:
            e["revocationReason"] = reason
            e["revokedAt"] = "2026-02-01T00:00:00Z"
        entries.append(e)
    return {"schemaVersion": "acx.trust-registry/1", "keys": entries}


class World:
    """An issuer with a registry, a status list on disk and a run of ada-ridge's ROM."""

    def __init__(self, tmp: Path, key: PrivateKey, result: RunResult) -> None:
        self.tmp, self.key, self.result = tmp, key, result
        self.issuers = IssuerRegistry.from_json(issuers_doc((key.public(), "example.verifier")))
        self.list_path = tmp / "status.json"
        st.write_json_atomic(
            self.list_path, st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0)
        )
        self.cache = tmp / "cache"
        self.entry = StatusEntry(LIST_ID, 42, "revocation", f"{LIST_ID}#42")
        self.vc = issue_credential(
            result,
            cartridge_id="io.github.ridgeworks/ada-ridge@x",
            issuer=ISSUER,
            key=key,
            now=T0,
            status=self.entry,
            validity=timedelta(days=30),
        )

    def verify(
        self,
        doc: Any = None,
        *,
        rom: str = ADA,
        now: datetime = T0 + timedelta(hours=1),
        source: str | None = None,
        max_age: timedelta = timedelta(days=1),
        offline: bool = False,
        issuers: IssuerRegistry | None = None,
        **kw: Any,
    ) -> LevelVerdict:
        reg = issuers or self.issuers
        src = source or str(self.list_path)

        def check(entry: StatusEntry, vc_issuer: str) -> st.StatusOutcome:
            return st.check_status(
                entry,
                source=src,
                issuers=reg,
                vc_issuer=vc_issuer,
                now=now,
                max_age=max_age,
                allow_offline=offline,
                cache_dir=self.cache,
            )

        return verify_credential(
            self.vc if doc is None else doc,
            issuers=reg,
            expected_rom_digest=rom,
            now=now,
            status_check=check,
            **kw,
        )

    def revoke(self, index: int = 42, at: datetime = T0 + timedelta(minutes=30)) -> None:
        doc = st.read_list_file(self.list_path)
        st.write_json_atomic(self.list_path, st.set_status(doc, index, key=self.key, now=at))


def statement_env(world: World, i: int, *, predicate_type: str | None = None, trajectory: Any = None,
                   subject_digest: str | None = None, key: PrivateKey | None = None) -> dict[str, Any]:
    """A DSSE envelope of the in-toto statement over game `i`'s trajectory, signed by the issuer
    (or `key`); each keyword replaces one part so a test can forge exactly that part."""
    traj = world.result.games[i].trajectory if trajectory is None else trajectory
    stmt = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "t", "digest": {"sha256": subject_digest or sha256_hex(jcs(traj))}}],
        "predicateType": predicate_type or TRAJECTORY_PREDICATE,
        "predicate": {"trajectory": traj},
    }
    signer = key or world.key
    return dsse.sign(dsse.INTOTO_PAYLOAD_TYPE, jcs(stmt), signer, signer.public().keyid()).to_json()
