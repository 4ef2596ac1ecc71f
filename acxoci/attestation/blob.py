"""attest-blob / verify-blob, mirroring cosign: an in-toto statement about a file's sha256,
written as a DSSE envelope (`--output-signature`) or a sigstore bundle (`--bundle`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from acxoci.attest.bundle import ParsedBundle, parse_bundle
from acxoci.attest.errors import AttestError
from acxoci.attest.intoto import STATEMENT_V1, Statement, Subject
from acxoci.attest.keys import PrivateKey
from acxoci.attestation.judge import Judgement, Kind, Sigstore, Verdict, judge, judge_registry_key
from acxoci.attestation.keyless import KeylessSigner
from acxoci.attestation.signing import TrustedKey, bundle_bytes, envelope_bytes, sign_statement
from acxoci.attestation.sigstore_verify import verify_keyless, verify_with_key
from acxoci.errors import InvalidInput, UsageError
from acxoci.fsutil import read_bytes

DEFAULT_BLOB_PREDICATE_TYPE = "https://cosign.sigstore.dev/attestation/v1"


def file_sha256(path: Path) -> str:
    """Bare hex sha256 of a file (streamed)."""
    from acxoci.fsutil import open_regular

    h = hashlib.sha256()
    with open_regular(path, "file") as fh:
        try:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        except OSError as exc:
            raise InvalidInput(f"cannot read file: {exc}", where=str(path)) from exc
    return h.hexdigest()


def blob_statement(path: Path, predicate_type: str, predicate: dict[str, Any]) -> Statement:
    """Statement v1 whose subject is the file (name = basename, as cosign writes it)."""
    return Statement((Subject(path.name, {"sha256": file_sha256(path)}),), predicate_type, dict(predicate),
                     STATEMENT_V1)


def attest_blob(path: Path, key: PrivateKey | KeylessSigner, predicate_type: str,
                predicate: dict[str, Any], *, as_bundle: bool) -> bytes:
    """Sign a statement about `path`; return bundle JSON (as_bundle; always when keyless) or
    DSSE envelope JSON."""
    stmt = blob_statement(path, predicate_type, predicate)
    if isinstance(key, KeylessSigner):
        return key.sign(stmt).bundle
    if as_bundle:
        return bundle_bytes(sign_statement(stmt, key, keyid=None), key.public())
    return envelope_bytes(sign_statement(stmt, key, keyid=""))


@dataclass(frozen=True)
class BlobTarget:
    """What `verify-blob` checks a bundle against: a file, or only its digest (`sha256:HEX`)."""

    name: str
    sha256: str
    path: Path | None = None


def parse_blob_target(arg: str) -> BlobTarget:
    """`FILE` or `sha256:<64 hex>` (cosign's convention for a digest instead of the file)."""
    if arg.startswith("sha256:"):
        hexpart = arg.removeprefix("sha256:").lower()
        if len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
            raise UsageError(f"{arg!r} is not sha256:<64 hex digits>")
        return BlobTarget(arg, hexpart)
    path = Path(arg)
    return BlobTarget(str(path), file_sha256(path), path)


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
        out = {"ok": self.ok, "file": self.file, "digest": f"sha256:{self.sha256}", "format": self.kind,
               "verdict": j.verdict, "signerKeyId": j.signer_keyid, "predicateType": j.predicate_type,
               "reasons": list(j.reasons), "notes": list(j.notes)}
        if j.signer is not None:
            out["signer"] = j.signer.signer_json()
        return out


MAX_ED25519_BLOB = 64 * 1024 * 1024


def _judge_message(target: BlobTarget, document: bytes, bundle: ParsedBundle, keys: list[TrustedKey],
                   sigstore: Sigstore | None, now: datetime) -> Judgement:
    """A messageSignature bundle (cosign sign-blob), strictly decoded: keyless through the library,
    or with keys; either way the signature must be over the target's digest."""
    digest = bytes.fromhex(target.sha256)
    if bundle.keyless:
        if sigstore is None or not sigstore.rules:
            return Judgement("unverified", ("keyless bundle: give --certificate-identity[-regexp] and "
                                            "--certificate-oidc-issuer[-regexp]",))
        check = verify_keyless(document, sigstore.rules, sigstore.trust, digest=digest)
        verdict: Verdict = "verified" if check.ok and check.payload is None else "unverified"
        return Judgement(verdict, check.reasons, check.notes, f"keyless:{check.subject}", signer=check)
    if not keys:
        return Judgement("unverified", ("key-based bundle: no --key or --trust-registry was given",))
    trust = sigstore.trust if sigstore is not None else None
    reasons: list[str] = []
    for tk in keys:
        data = None
        if isinstance(tk.key.key, Ed25519PublicKey) and target.path is not None:
            data = read_bytes(target.path, "file", limit=MAX_ED25519_BLOB)
        check = verify_with_key(document, tk.key, trust, digest=digest, artifact=data)
        if check.ok:
            base = Judgement("verified", (), check.notes, tk.keyid, signer=check)
            # a registry key vouches only as the trust table says (no predicate: no claims)
            return base if tk.entry is None else judge_registry_key(base, tk.entry, {}, now=now)
        reasons.extend(check.reasons)
    return Judgement("unverified", tuple(reasons))


def verify_blob(target: BlobTarget | Path, document: bytes, kind: Kind, keys: list[TrustedKey], *,
                want_type: str | None, now: datetime, sigstore: Sigstore | None = None) -> BlobVerdict:
    """Verify an envelope or bundle about `target` (cosign verify-blob / verify-blob-attestation):
    key-based with `keys`, keyless with `sigstore` (identity rules + trusted root)."""
    if isinstance(target, Path):
        target = BlobTarget(str(target), file_sha256(target), target)
    digest = target.sha256
    if kind == "bundle":  # one strict decode routes it: a message signature, or a DSSE statement
        try:
            bundle = parse_bundle(document)
        except AttestError as exc:
            bad = Judgement("unverified", (f"malformed bundle: {exc}",))
            return BlobVerdict(False, target.name, digest, kind, bad)
    if kind == "bundle" and bundle.message_signature is not None:
        j = _judge_message(target, document, bundle, keys, sigstore, now)
        if want_type is not None and j.verdict == "verified":
            j = j.with_reasons("rejected", (f"a messageSignature bundle has no predicate type {want_type}",))
        return BlobVerdict(j.verdict == "verified", target.name, digest, kind, j)
    # a DSSE statement binds the file only through its subject, which `judge` checks
    j = judge(document, kind, keys, subject_sha256=digest, want_type=want_type, now=now, sigstore=sigstore)
    if j.verdict == "skipped" and want_type is not None:
        j = j.with_reasons("rejected", (f"none of the attestations matched the predicate type {want_type}",))
    if j.verdict == "rejected" and j.statement is not None and not any(
            s.digest.get("sha256") == digest for s in j.statement.subjects):
        j = j.with_reasons("rejected",
                           ("the file does not match the attested digest (tampered or wrong file)",))
    return BlobVerdict(j.verdict == "verified", target.name, digest, kind, j)
