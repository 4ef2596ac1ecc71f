"""attest-blob / verify-blob, mirroring cosign: an in-toto statement about a file's sha256,
written as a DSSE envelope (`--output-signature`) or a sigstore bundle (`--bundle`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attestation.judge import Judgement, Kind, judge
from acxoci.attestation.signing import TrustedKey, bundle_bytes, envelope_bytes, sign_statement
from acxoci.errors import InvalidInput, NotFound
from attest.intoto import STATEMENT_V1, Statement, Subject
from attest.keys import PrivateKey

DEFAULT_BLOB_PREDICATE_TYPE = "https://cosign.sigstore.dev/attestation/v1"


def file_sha256(path: Path) -> str:
    """Bare hex sha256 of a file (streamed)."""
    h = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError as exc:
        raise NotFound("file not found", where=str(path)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read file: {exc}", where=str(path)) from exc
    return h.hexdigest()


def blob_statement(path: Path, predicate_type: str, predicate: dict[str, Any]) -> Statement:
    """Statement v1 whose subject is the file (name = basename, as cosign writes it)."""
    return Statement((Subject(path.name, {"sha256": file_sha256(path)}),), predicate_type, dict(predicate),
                     STATEMENT_V1)


def attest_blob(path: Path, key: PrivateKey, predicate_type: str, predicate: dict[str, Any], *,
                as_bundle: bool) -> bytes:
    """Sign a statement about `path`; return bundle JSON (as_bundle) or DSSE envelope JSON."""
    stmt = blob_statement(path, predicate_type, predicate)
    if as_bundle:
        return bundle_bytes(sign_statement(stmt, key, keyid=None), key.public())
    return envelope_bytes(sign_statement(stmt, key, keyid=""))


@dataclass(frozen=True)
class BlobVerdict:
    """verify-blob outcome: ok, the file digest, and the attestation judgement."""

    ok: bool
    file: str
    sha256: str
    kind: Kind
    judgement: Judgement

    def to_json(self) -> dict[str, Any]:
        j = self.judgement
        return {"ok": self.ok, "file": self.file, "digest": f"sha256:{self.sha256}", "format": self.kind,
                "verdict": j.verdict, "signerKeyId": j.signer_keyid, "predicateType": j.predicate_type,
                "reasons": list(j.reasons), "notes": list(j.notes)}


def verify_blob(path: Path, document: bytes, kind: Kind, keys: list[TrustedKey], *,
                want_type: str | None, now: datetime) -> BlobVerdict:
    """Verify an envelope or bundle about `path` with `keys` (cosign verify-blob-attestation)."""
    digest = file_sha256(path)
    j = judge(document, kind, keys, subject_sha256=digest, want_type=want_type, now=now)
    if j.verdict == "skipped" and want_type is not None:
        j = j.with_reasons("rejected", (f"none of the attestations matched the predicate type {want_type}",))
    if j.verdict == "rejected" and j.statement is not None and not any(
            s.digest.get("sha256") == digest for s in j.statement.subjects):
        j = j.with_reasons("rejected",
                           ("the file does not match the attested digest (tampered or wrong file)",))
    return BlobVerdict(j.verdict == "verified", str(path), digest, kind, j)
