"""Level artifacts in OCI: pull a cartridge by reference, attach a level credential as a referrer
of the cartridge manifest (artifactType `application/vnd.acx.level-attestation.v1`, one
`application/vc` layer), write a cosign-verifiable level attestation (subject = the manifest
digest), and publish / fetch status lists (`application/vnd.acx.status-list.v1+json`, moving tag).
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from acxoci.artifact import pull_file
from acxoci.attest.canonical import jcs, jcs_digest, loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.keys import PrivateKey
from acxoci.attest.trust import TrustRegistry
from acxoci.attestation.attach import AttestResult, write_attestation
from acxoci.attestation.statements import oci_statement
from acxoci.errors import InvalidInput, NotFound
from acxoci.level.constants import CREDENTIAL_MEDIA_TYPE as MEDIA_TYPE
from acxoci.level.constants import LEVEL_ARTIFACT_TYPE as ARTIFACT_TYPE
from acxoci.level.constants import STATUS_MEDIA_TYPE, iso
from acxoci.oci.descriptor import (
    ANNOTATION_CREATED,
    ANNOTATION_TITLE,
    EMPTY_DATA,
    EMPTY_DIGEST,
    EMPTY_JSON,
    OCI_MANIFEST,
    Descriptor,
    descriptor_for,
    manifest_bytes,
)
from acxoci.oci.reference import parse_reference
from acxoci.oci.shapes import CARTRIDGE_ARTIFACT_TYPE, empty_config, referrer_manifest
from acxoci.oci.target import (
    RemoteOptions,
    Target,
    fetch_bytes,
    fetch_manifest,
    open_target,
    resolve_manifest,
)

LEVEL_PREDICATE_TYPE: Final = "https://acx.dev/attestation/level/v1"
STATUS_ARTIFACT_TYPE: Final = STATUS_MEDIA_TYPE
DEFAULT_STATUS_TAG: Final = "status"
MAX_VC_BYTES: Final = 16 * 1024 * 1024
ANNOTATION_LEVEL: Final = "vnd.acx.level"
ANNOTATION_ROM: Final = "vnd.acx.rom-manifest-hash"


def looks_like_reference(text: str) -> bool:
    """True for `oci-layout:…`, `oci://…` or `host[:port]/repo[:tag|@digest]` that is not a local file."""
    if text.startswith(("oci-layout:", "oci://")):
        return True
    if Path(text).exists():
        return False
    head = text.split("/", 1)[0]
    if head in (".", "..", "~"):
        return False  # ./lists/x.json is a (missing) file, not a host
    return "/" in text and ("." in head or ":" in head or head == "localhost")


def _ref_text(text: str) -> str:
    return text.removeprefix("oci://")


@dataclass(frozen=True)
class PulledCartridge:
    """A cartridge fetched from OCI: where it is, and the manifest it came from."""

    path: Path
    target: Target
    manifest: Descriptor
    repository: str


def pull_cartridge(ref: str, dest_dir: Path, *, now: datetime, registry: TrustRegistry | None = None,
                   options: RemoteOptions | None = None) -> PulledCartridge:
    """Resolve `ref`, check it is a cartridge manifest and pull its layer (digest-verified)."""
    target, parsed = open_target(_ref_text(ref), options, create=False)
    desc = target.resolve(parsed.reference or "latest")
    manifest = fetch_manifest(target, desc)
    if manifest.artifact_type != CARTRIDGE_ARTIFACT_TYPE:
        raise InvalidInput(f"{ref} is not a cartridge (artifactType {manifest.artifact_type or 'none'})")
    pulled = pull_file(target, desc.digest, dest_dir / "cartridge.acx", verify=False, registry=registry,
                       now=now)
    return PulledCartridge(pulled.path, target, desc.plain(), parsed.repo_string())


def attach_credential(target: Target, subject: Descriptor, credential: dict[str, Any], *,
                      now: datetime) -> Descriptor:
    """Push the credential as an `application/vc` layer of a referrer of `subject`."""
    data = jcs(credential)
    layer = descriptor_for(data, MEDIA_TYPE)
    result = credential.get("credentialSubject", {}).get("result", [{}])[0]
    ann = {ANNOTATION_LEVEL: str(result.get("acx:acxLevel", "")), ANNOTATION_ROM: str(result.get(
        "acx:cartridgeRomDigest", ""))}
    built = referrer_manifest(subject=subject.plain(), artifact_type=ARTIFACT_TYPE, file_digest=layer.digest,
                              file_size=layer.size, media_type=MEDIA_TYPE, title="level-credential.json",
                              created=iso(now), annotations=ann)
    _push_all(target, built.blobs[0], EMPTY_DATA)
    _push_all(target, layer, data)
    manifest = Descriptor(OCI_MANIFEST, built.descriptor.digest, built.descriptor.size)
    target.push(manifest, io.BytesIO(built.data))
    return manifest


def _push_all(target: Target, desc: Descriptor, data: bytes) -> None:
    if not target.exists(desc):
        target.push(desc, io.BytesIO(data))


def find_credentials(target: Target, subject: Descriptor) -> list[tuple[Descriptor, dict[str, Any]]]:
    """Every level credential attached to `subject` (referrer digest, parsed credential)."""
    out: list[tuple[Descriptor, dict[str, Any]]] = []
    for ref in target.referrers(subject.plain(), ARTIFACT_TYPE):
        manifest = fetch_manifest(target, ref)
        layers = [la for la in manifest.layers if la.media_type == MEDIA_TYPE]
        if len(layers) != 1:
            continue
        try:
            doc = loads_strict(fetch_bytes(target, layers[0], limit=MAX_VC_BYTES))
        except AttestError as exc:
            raise InvalidInput(f"level credential referrer {ref.digest}: {exc}") from exc
        if isinstance(doc, dict):
            out.append((ref, doc))
    return out


def level_predicate(credential: dict[str, Any]) -> dict[str, Any]:
    """The `https://acx.dev/attestation/level/v1` predicate: the credential's numbers and digest."""
    result = credential["credentialSubject"]["result"][0]
    issuer = credential.get("issuer")
    status = credential.get("credentialStatus", {})
    return {
        "credentialDigest": jcs_digest(credential),
        "issuer": issuer.get("id") if isinstance(issuer, dict) else issuer,
        "romDigest": result.get("acx:cartridgeRomDigest"),
        "acxLevel": result.get("acx:acxLevel"),
        "careerTier": result.get("acx:careerTier"),
        "ratingMu": result.get("acx:ratingMu"),
        "ratingSigma": result.get("acx:ratingSigma"),
        "gamesPlayed": result.get("acx:gamesPlayed"),
        "benchmark": f"{result.get('acx:benchmarkId')}@{result.get('acx:benchmarkVersion')}",
        "benchmarkDigest": result.get("acx:benchmarkDigest"),
        "statusListCredential": status.get("statusListCredential"),
        "statusListIndex": status.get("statusListIndex"),
        "validFrom": credential.get("validFrom"),
        "validUntil": credential.get("validUntil"),
    }


def attest_level(target: Target, subject: Descriptor, repository: str, credential: dict[str, Any],
                 key: PrivateKey, *, now: datetime) -> AttestResult:
    """Sign a level Statement about the cartridge manifest (cosign legacy `.att` tag + bundle referrer)."""
    stmt = oci_statement(subject.digest, repository, LEVEL_PREDICATE_TYPE, level_predicate(credential))
    return write_attestation(target, subject.plain(), stmt, key, formats="both", now=now)


def publish_status_list(ref: str, document: dict[str, Any], *, now: datetime,
                        options: RemoteOptions | None = None) -> tuple[Descriptor, str]:
    """Push a status list as an OCI artifact and move its tag (default `:status`); returns the
    immutable manifest descriptor and the tag."""
    target, parsed = open_target(_ref_text(ref), options)
    tag = parsed.tag or DEFAULT_STATUS_TAG
    if parsed.digest:
        raise InvalidInput(f"{ref}: publish to a tag, not a digest")
    data = jcs(document)
    layer = descriptor_for(data, STATUS_MEDIA_TYPE)
    body = manifest_bytes({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": STATUS_ARTIFACT_TYPE,
        "config": empty_config(),
        "layers": [{"mediaType": STATUS_MEDIA_TYPE, "digest": layer.digest, "size": layer.size,
                    "annotations": {ANNOTATION_TITLE: "status-list.json"}}],
        "annotations": {ANNOTATION_CREATED: iso(now)},
    })
    _push_all(target, Descriptor(EMPTY_JSON, EMPTY_DIGEST, 2), EMPTY_DATA)
    _push_all(target, layer, data)
    manifest = descriptor_for(body, OCI_MANIFEST).plain()
    target.push(manifest, io.BytesIO(body))
    target.tag(manifest, tag)
    return manifest, tag


def published_reference(ref: str, tag: str, digest: str) -> str:
    """Where `publish_status_list(ref)` put the list: `REPO:tag@digest` (`oci://` dropped)."""
    parsed = parse_reference(_ref_text(ref), require_ref=False)
    return str(dataclasses.replace(parsed, tag=tag, digest=digest))


def fetch_status_list(ref: str, *, options: RemoteOptions | None = None) -> dict[str, Any]:
    """Resolve a status list reference (tag or digest) and return the list document."""
    target, parsed = open_target(_ref_text(ref), options, create=False)
    desc = resolve_manifest(target, parsed.reference or DEFAULT_STATUS_TAG)  # one GET (read next)
    manifest = fetch_manifest(target, desc)
    if manifest.artifact_type != STATUS_ARTIFACT_TYPE:
        raise InvalidInput(f"{ref} is not a status list (artifactType {manifest.artifact_type or 'none'})")
    layers = [la for la in manifest.layers if la.media_type == STATUS_MEDIA_TYPE]
    if len(layers) != 1:
        raise NotFound(f"{ref}: status list manifest has no {STATUS_MEDIA_TYPE} layer")
    try:
        doc = loads_strict(fetch_bytes(target, layers[0], limit=MAX_VC_BYTES))
    except AttestError as exc:
        raise InvalidInput(f"status list {ref}: {exc}") from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"status list {ref} is not a JSON object")
    return doc
