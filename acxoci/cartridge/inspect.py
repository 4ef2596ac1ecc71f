"""A read-only summary of a cartridge: meta, ROM objects by kind, skills, capabilities, memory by zone,
signatures and attestations. Pure reading; it judges nothing (use verify for that)."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import msgspec

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.cartridge.constants import MAX_JSON_DOC_BYTES, META_ROM_MANIFEST_HASH
from acxoci.cartridge.manifest import compute_rom_manifest
from acxoci.cartridge.reader import Cartridge, open_cartridge
from acxoci.cartridge.sqlar import BadEntry
from acxoci.documents.capability import CapabilityDoc


def _json_doc(data: bytes, where: str, entry: str) -> Any:
    try:
        return loads_strict(data, max_bytes=MAX_JSON_DOC_BYTES)
    except MalformedError as exc:
        raise BadEntry(f"{entry}: {exc}", where=where, details={"entry": entry}) from exc


def inspect_open(cart: Cartridge) -> dict[str, Any]:
    """Summarise an open cartridge as a JSON-ready dict; raises BadEntry naming a malformed entry."""
    meta = cart.meta()
    objects = cart.objects()
    rom_objs = [o for o in objects if o.zone == "rom"]
    sqlar = cart.sqlar_infos()
    memory = cart.memory()
    manifest = compute_rom_manifest(cart)
    caps: list[dict[str, Any]] = []
    for cap in cart.capabilities():
        entry = f"capability:{cap.id}"
        try:
            rec = decode_as(_json_doc(cap.json, cart.label, entry), CapabilityDoc, document=entry)
        except DocumentTypeError as exc:
            details = {"entry": entry, "pointer": exc.pointer}
            raise BadEntry(str(exc), where=cart.label, details=details) from exc
        caps.append(
            {
                "id": cap.id,
                "taskType": rec.task_type,
                "domain": rec.domain,
                "stack": list(rec.stack),
                "proficiency": msgspec.to_builtins(rec.proficiency),
                "contentHash": cap.content_hash,
            }
        )
    sigs = [
        {
            "sigId": s.sig_id,
            "target": s.target,
            "keyid": s.keyid,
            "alg": s.alg,
            "manifestHash": s.manifest_hash,
            "createdAt": s.created_at,
            "publicKeyPresent": bool(s.public_key_pem),
        }
        for s in cart.signatures()
    ]
    atts = [
        {
            "attId": a.att_id,
            "type": a.type,
            "subjectOid": a.subject_oid,
            "mediaType": a.media_type,
            "statusUrl": a.status_url,
            "createdAt": a.created_at,
            "bytes": len(a.document),
        }
        for a in cart.attestations()
    ]
    skills = [
        {
            "path": s.sqlar_path,
            "name": s.name,
            "description": s.description,
            "version": s.skill_version,
            "license": s.license,
        }
        for s in cart.skills()
    ]
    header = cart.header.to_json() if cart.header is not None else None
    return {
        "file": cart.label,
        "header": header,
        "meta": dict(sorted(meta.items())),
        "romDigest": manifest.hash,
        "recordedRomManifestHash": meta.get(META_ROM_MANIFEST_HASH),
        "checksumHash": manifest.checksum_hash,
        "romObjects": {
            "count": len(rom_objs),
            "byKind": dict(sorted(Counter(o.kind for o in rom_objs).items())),
        },
        "saveObjects": sum(1 for o in objects if o.zone == "save"),
        "sqlar": {
            "rom": sum(1 for s in sqlar if s.name.startswith("rom/")),
            "save": sum(1 for s in sqlar if s.name.startswith("save/")),
            "bytes": sum(s.sz for s in sqlar),
        },
        "memory": dict(sorted(Counter(m.zone for m in memory).items())),
        "skills": skills,
        "capabilities": caps,
        "signatures": sigs,
        "attestations": atts,
        "consistency": {"mismatches": list(manifest.mismatches), "uncovered": list(manifest.uncovered)},
    }


def inspect_cartridge(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Open `path` read-only and summarise it."""
    with open_cartridge(path) as cart:
        return inspect_open(cart)
