"""OCI descriptors, media types and the strict parser for image manifests and indexes.

Descriptors are frozen; `raw` keeps the exact JSON object so entries written by other tools
survive a read-modify-write (referrers fallback index, layout index.json)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acxoci.attest.b64 import b64encode
from acxoci.attest.canonical import loads_strict, sha256_digest
from acxoci.attest.errors import MalformedError
from acxoci.oci.errors import MalformedManifest, ManifestTooLarge

MANIFEST_LIMIT = 4 * 1024 * 1024
"""Manifests and indexes larger than this are refused (distribution-spec guidance)."""

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
EMPTY_JSON = "application/vnd.oci.empty.v1+json"
EMPTY_DATA = b"{}"
EMPTY_DIGEST = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
MANIFEST_TYPES = frozenset({OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST})
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})

ANNOTATION_TITLE = "org.opencontainers.image.title"
ANNOTATION_CREATED = "org.opencontainers.image.created"
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"

_DIGEST_RE = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
_MEDIA_TYPE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")
"""The image-spec's mediaType pattern (RFC 6838 names): also what an artifactType must be."""
TITLE_MAX = 255
"""Most UTF-8 bytes in a title: one file name on every common filesystem."""


def is_media_type(value: str) -> bool:
    """True for a media type of the image-spec grammar (`type/subtype`, RFC 6838 characters)."""
    return bool(_MEDIA_TYPE_RE.fullmatch(value))


def check_media_type(value: object, where: str, what: str = "mediaType") -> str:
    """`value` if it is a media type of the image-spec grammar, else MalformedManifest: media types
    become HTTP headers, and are printed; nothing else may ride in them."""
    if not isinstance(value, str) or not is_media_type(value):
        raise MalformedManifest(f"{what} {str(value)[:80]!r} is not a media type (type/subtype)", where=where)
    return value


def valid_title(value: str) -> bool:
    """True for a title that can be one plain file name: 1-255 UTF-8 bytes, not `.` or `..`, no
    path separator, and no control, format or line/paragraph-separator character (Unicode Cc,
    Cf, Zl, Zp: nothing that steers a terminal or hides in a listing)."""
    if not value or value in (".", "..") or len(value.encode("utf-8", "surrogatepass")) > TITLE_MAX:
        return False
    return not any(c in "/\\" or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") for c in value)


def check_title(value: str, where: str) -> str:
    """`value` if it is a valid title (see `valid_title`), else MalformedManifest naming it."""
    if not valid_title(value):
        raise MalformedManifest(f"title {value[:80]!r} is not a plain file name", where=where)
    return value


def is_digest(value: str) -> bool:
    """True for a well-formed `sha256:<64hex>` or `sha512:<128hex>` digest."""
    return bool(_DIGEST_RE.fullmatch(value))


def check_digest(value: object, where: str) -> str:
    """Return `value` if it is a supported, well-formed digest, else raise MalformedManifest."""
    if not isinstance(value, str) or not is_digest(value):
        raise MalformedManifest(f"invalid digest {value!r}", where=where)
    return value


def _annotations(obj: dict[str, Any], where: str) -> dict[str, str]:
    ann = obj.get("annotations")
    if ann is None:
        return {}
    if not isinstance(ann, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in ann.items()
    ):
        raise MalformedManifest("annotations must map strings to strings", where=where)
    return ann


def _digest_of(data: bytes, like: str) -> str:
    """`data`'s digest in the algorithm of the (checked) digest `like`: embedded data is used in
    place of a fetch, so it is proven whatever the algorithm (sha256 or sha512)."""
    alg = like.split(":", 1)[0]
    return f"{alg}:" + hashlib.new(alg, data).hexdigest()


@dataclass(frozen=True)
class Descriptor:
    """An OCI content descriptor: what, how big, which hash; optional artifactType/annotations."""

    media_type: str
    digest: str
    size: int
    artifact_type: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    data: bytes | None = field(default=None, compare=False, hash=False)
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """JSON object for a manifest/index (raw form if it came from one, so no field is lost)."""
        if self.raw is not None:
            return dict(self.raw)
        out: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.data is not None:
            out["data"] = b64encode(self.data)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.artifact_type:
            out["artifactType"] = self.artifact_type
        return out

    def plain(self) -> Descriptor:
        """The same descriptor without raw/annotations/data (for subjects and comparisons)."""
        return Descriptor(self.media_type, self.digest, self.size)

    @property
    def is_manifest(self) -> bool:
        return self.media_type in MANIFEST_TYPES

    @classmethod
    def from_json(cls, obj: object, where: str) -> Descriptor:
        """Parse a descriptor object strictly; `where` names it in errors."""
        if not isinstance(obj, dict):
            raise MalformedManifest("descriptor is not an object", where=where)
        mt = check_media_type(obj.get("mediaType"), where)
        digest = check_digest(obj.get("digest"), where + ".digest")
        size = obj.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise MalformedManifest(f"descriptor size {size!r} is not a non-negative integer", where=where)
        at = obj.get("artifactType")
        if at is not None:
            check_media_type(at, where, "artifactType")
        ann = _annotations(obj, where)
        data: bytes | None = None
        if "data" in obj:
            import base64
            import binascii

            try:
                data = base64.b64decode(str(obj["data"]), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise MalformedManifest("descriptor data is not base64", where=where) from exc
            if len(data) != size or _digest_of(data, digest) != digest:
                raise MalformedManifest("embedded data does not match the descriptor", where=where)
        return cls(mt, digest, size, at, dict(ann), data, dict(obj))


@dataclass(frozen=True)
class Manifest:
    """A parsed image manifest or index (both kinds: check `is_index`)."""

    media_type: str
    raw: Mapping[str, Any]
    config: Descriptor | None
    layers: tuple[Descriptor, ...]
    manifests: tuple[Descriptor, ...]
    subject: Descriptor | None
    artifact_type: str | None
    annotations: Mapping[str, str]

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES

    def children(self) -> tuple[Descriptor, ...]:
        """Everything this manifest points at (not the subject): config + layers, or manifests."""
        if self.is_index:
            return self.manifests
        return ((self.config,) if self.config else ()) + self.layers

    def effective_artifact_type(self) -> str | None:
        """artifactType, else the config media type (image-spec rule for referrers listings)."""
        if self.artifact_type:
            return self.artifact_type
        return self.config.media_type if self.config else None


def parse_manifest(data: bytes, *, media_type: str | None = None, where: str = "manifest") -> Manifest:
    """Strictly parse manifest/index bytes (≤ 4 MiB, no duplicate keys, valid descriptors)."""
    if len(data) > MANIFEST_LIMIT:
        raise ManifestTooLarge(f"manifest of {len(data)} bytes exceeds the 4 MiB limit", where=where)
    try:
        obj = loads_strict(data, max_bytes=MANIFEST_LIMIT)
    except MalformedError as exc:
        raise MalformedManifest(str(exc), where=where) from exc
    if not isinstance(obj, dict):
        raise MalformedManifest("manifest is not a JSON object", where=where)
    if obj.get("schemaVersion") != 2:
        raise MalformedManifest(f"schemaVersion {obj.get('schemaVersion')!r} is not 2", where=where)
    mt = obj.get("mediaType")
    if mt is None:
        mt = media_type or (OCI_INDEX if "manifests" in obj else OCI_MANIFEST)
    if not isinstance(mt, str) or mt not in MANIFEST_TYPES:
        raise MalformedManifest(f"unsupported manifest mediaType {mt!r}", where=where)
    if media_type and media_type in MANIFEST_TYPES and media_type != mt:
        raise MalformedManifest(f"mediaType {mt!r} differs from the descriptor's {media_type!r}", where=where)
    at = obj.get("artifactType")
    if at is not None:
        check_media_type(at, where, "artifactType")
    ann = _annotations(obj, where)
    subject = None
    if obj.get("subject") is not None:
        subject = Descriptor.from_json(obj["subject"], where + ".subject")
    config: Descriptor | None = None
    layers: tuple[Descriptor, ...] = ()
    manifests: tuple[Descriptor, ...] = ()
    if mt in INDEX_TYPES:
        items = obj.get("manifests")
        if not isinstance(items, list):
            raise MalformedManifest("index has no manifests list", where=where)
        manifests = tuple(Descriptor.from_json(m, f"{where}.manifests[{i}]") for i, m in enumerate(items))
    else:
        config = Descriptor.from_json(obj.get("config"), where + ".config")
        items = obj.get("layers")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise MalformedManifest("layers is not a list", where=where)
        layers = tuple(Descriptor.from_json(m, f"{where}.layers[{i}]") for i, m in enumerate(items))
    return Manifest(mt, obj, config, layers, manifests, subject, at, dict(ann))


def manifest_bytes(obj: Mapping[str, Any]) -> bytes:
    """Serialise a manifest/index the way oras does (compact JSON, insertion order, UTF-8)."""
    import json

    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def descriptor_for(
    data: bytes,
    media_type: str,
    *,
    artifact_type: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Descriptor:
    """Descriptor of in-memory bytes (small blobs and manifests)."""
    return Descriptor(media_type, sha256_digest(data), len(data), artifact_type, dict(annotations or {}))


def referrer_entry(manifest_desc: Descriptor, manifest: Manifest) -> Descriptor:
    """The index entry that lists `manifest` as a referrer (artifactType + annotations, like oras)."""
    obj: dict[str, Any] = {
        "mediaType": manifest_desc.media_type,
        "digest": manifest_desc.digest,
        "size": manifest_desc.size,
    }
    if manifest.annotations:
        obj["annotations"] = dict(manifest.annotations)
    at = manifest.effective_artifact_type()
    if at:
        obj["artifactType"] = at
    return Descriptor(
        manifest_desc.media_type,
        manifest_desc.digest,
        manifest_desc.size,
        at,
        dict(manifest.annotations),
        None,
        obj,
    )
