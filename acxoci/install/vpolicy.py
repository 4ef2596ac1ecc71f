"""The verification policy (`acx.verification-policy/1`): what a host demands before `acx install`
may install an artifact. Loading reads the policy and the files it names (trust registries, keys);
the decisions that use it live in `checks.py`. Every absent field takes a secure default."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from msgspec import UnsetType

from acxoci.attest.canonical import jcs_digest, loads_strict, sha256_digest
from acxoci.attest.errors import AttestError
from acxoci.attest.keys import load_public_pem
from acxoci.attest.trust import PUBLISHER_RE, TrustKey, TrustRegistry, github_owner, merge_keys
from acxoci.attest.trustdecision import publisher_covers
from acxoci.attest.typed import decode_as, given, opt, seq
from acxoci.documents.verification_policy import (
    VerificationPolicyDoc,
    VerificationPolicyDocAttestations,
    VerificationPolicyDocAttestationsKeysItem,
    VerificationPolicyDocHarness,
    VerificationPolicyDocLevel,
    VerificationPolicyDocLimits,
    VerificationPolicyDocPublishersItem,
    VerificationPolicyDocPublishersItemKeysItem,
    VerificationPolicyDocRegistries,
    VerificationPolicyDocRevocation,
)
from acxoci.errors import InvalidInput, parse_problem
from acxoci.fsutil import read_bytes

SCHEMA_VERSION = "acx.verification-policy/1"
SCHEMA_FILE = "acx.verification-policy-1.schema.json"
BUILTIN = "builtin-default"
TIERS: tuple[str, ...] = ("intern", "junior", "mid", "senior", "staff", "principal", "distinguished",
                          "legend")
TIER_FLOOR: dict[str, int] = {"intern": 0, "junior": 5, "mid": 10, "senior": 15, "staff": 20, "principal": 25,
                              "distinguished": 30, "legend": 35}
DEFAULT_MAX_STATUS_LIST_AGE = 24 * 3600
_PIN_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PIN_END = datetime(9999, 12, 31, tzinfo=UTC)


@dataclass(frozen=True)
class FileInput:
    """A file the policy named, with the digest of the bytes that were read (for the install record)."""

    path: str
    digest: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "digest": self.digest}


@dataclass(frozen=True)
class TrustedPublisher:
    """A publisher the host trusts, and the keys (from registries or pinned) that may sign for it."""

    id: str
    registry: TrustRegistry
    sources: tuple[FileInput, ...] = ()
    pinned_keyids: tuple[str, ...] = ()
    listed: tuple[TrustKey, ...] = ()  # every entry of its registries, any publisher (conflict check)

    def covers(self, publisher_id: str | None) -> bool:
        """True if `publisher_id` is this publisher or a `/sub` namespace of it."""
        return publisher_id is not None and publisher_covers(self.id, publisher_id)


@dataclass(frozen=True)
class VerificationPolicy:
    """A loaded policy: `model` is the document decoded (what every decision reads), `document`
    the policy as written (recorded verbatim in install records), `digest` its JCS digest."""

    publishers: tuple[TrustedPublisher, ...] = ()
    minimum_trust: Literal["trusted", "portable"] = "trusted"
    attestation_formats: tuple[str, ...] = ()
    predicate_types: tuple[str, ...] = ()
    attestation_keys: tuple[str, ...] = ()
    provenance: Any = None  # an acxoci.attestation.provenance.Requirement, or None (not required)
    level_minimum: int | str | None = None
    level_issuers: tuple[str, ...] = ()
    level_allow_demo: bool = False
    level_verifiers: tuple[str, ...] = ()
    issuer_registry: TrustRegistry | None = None
    issuer_sources: tuple[FileInput, ...] = ()
    max_status_list_age: int = DEFAULT_MAX_STATUS_LIST_AGE
    allow_offline_cached: bool = False
    status_list_cache: str | None = None
    status_list_sources: dict[str, str] = field(default_factory=dict)
    allowed_registries: tuple[str, ...] = ("*",)
    require_host: bool = False
    budget_above_host: Literal["refuse", "cap"] = "refuse"
    require_host_limits: bool = False
    source: str = BUILTIN
    document: dict[str, Any] = field(default_factory=lambda: {"schemaVersion": SCHEMA_VERSION})
    digest: str = ""
    model: VerificationPolicyDoc = field(default_factory=lambda: VerificationPolicyDoc(
        schema_version=SCHEMA_VERSION))

    @property
    def level_floor(self) -> int | None:
        """The required level as a number (a tier name maps to its floor), or None."""
        if self.level_minimum is None:
            return None
        if isinstance(self.level_minimum, int):
            return self.level_minimum
        return TIER_FLOOR[self.level_minimum]

    def registry_allowed(self, repo: str) -> bool:
        """True if the repository string (`host/repo` or `oci-layout:PATH`) matches an allowed pattern."""
        return any(fnmatch.fnmatchcase(repo, pat) for pat in self.allowed_registries)

    def publisher_for(self, publisher_id: str | None) -> TrustedPublisher | None:
        """The trusted publisher entry covering `publisher_id`, if any."""
        for p in self.publishers:
            if p.covers(publisher_id):
                return p
        return None

    def combined_registry(self) -> TrustRegistry:
        """One registry of every key the policy trusts (first entry wins on a duplicate keyid)."""
        seen: dict[str, TrustKey] = {}
        for p in self.publishers:
            for k in p.registry.keys:
                seen.setdefault(k.keyid, k)
        return TrustRegistry(keys=tuple(seen.values()), registry_id="acx.verification-policy")

    def summary(self) -> dict[str, Any]:
        """What the install record says about the policy: its source, digest and the files it read."""
        files = [f.to_json() for p in self.publishers for f in p.sources]
        files += [f.to_json() for f in self.issuer_sources]
        return {"source": self.source, "digest": self.digest, "files": files, "document": self.document}


def schema_errors(doc: Any) -> list[str]:
    """Every schema violation of a policy document, as `$.path: message` lines."""
    from acxoci import jsonschemas

    return jsonschemas.schema_errors(SCHEMA_FILE, doc)


def _pinned_entry(publisher_id: str, pem: str, keyid: str | None, where: str) -> TrustKey:
    """A pinned policy key as an always-valid, active registry entry: the host vouches for it."""
    from acxoci.attest.trust import NamespaceProof

    try:
        pub = load_public_pem(pem.encode("utf-8"))
    except (AttestError, ValueError) as exc:
        raise InvalidInput(f"not a public key PEM: {exc}", where=where) from exc
    if keyid is not None and keyid != pub.keyid():
        raise InvalidInput(f"keyid {keyid} does not match the key ({pub.keyid()})", where=where)
    owner = github_owner(publisher_id)
    if owner is not None:
        proof = NamespaceProof("github-oidc", _PIN_EPOCH, oidc_subject=f"repo:{owner}/pinned",
                               oidc_issuer="https://token.actions.githubusercontent.com")
    else:
        from acxoci.attest.trust import expected_txt_record
        proof = NamespaceProof("dns-txt", _PIN_EPOCH, txt_record=expected_txt_record(publisher_id))
    return TrustKey(keyid=pub.keyid(), publisher_id=publisher_id, algorithm=pub.algorithm, public_key_pem=pem,
                    public_key=pub, status="active", not_before=_PIN_EPOCH, not_after=_PIN_END,
                    namespace_proof=proof)


def _load_registry(path: Path, proofs_by: datetime | None, where: str) -> tuple[TrustRegistry, FileInput]:
    """A registry file; with `proofs_by`, a namespace proof verified after it voids the file (issuer
    registries, whose keys no decision re-judges); a trust registry's dates are judged per key."""
    data = read_bytes(path, "trust registry")
    try:
        reg = TrustRegistry.from_json(loads_strict(data), now=proofs_by)
    except AttestError as exc:
        raise InvalidInput(f"trust registry is invalid: {exc}", where=f"{where} ({path})") from exc
    return reg, FileInput(str(path), sha256_digest(data))


def _pem_of(key: VerificationPolicyDocPublishersItemKeysItem | VerificationPolicyDocAttestationsKeysItem,
            base: Path, where: str) -> str:
    pem = opt(key.public_key_pem)
    if pem is not None:
        return pem
    data = read_bytes(base / given(key.public_key_file, ""), f"{where}.publicKeyFile")
    return data.decode("utf-8", "replace")


def _publisher(pub: VerificationPolicyDocPublishersItem, base: Path, now: datetime,
               where: str) -> TrustedPublisher:
    pid = pub.id
    if not PUBLISHER_RE.fullmatch(pid):
        raise InvalidInput(f"publisher id {pid!r} is not a reverse-DNS publisher id", where=f"{where}.id")
    keys: dict[str, TrustKey] = {}
    sources: list[FileInput] = []
    groups: list[tuple[str, tuple[TrustKey, ...]]] = []
    for i, rel in enumerate(seq(pub.trust_registries)):
        reg, src = _load_registry(base / rel, None, f"{where}.trustRegistries[{i}]")
        sources.append(src)
        groups.append((f"{where}.trustRegistries[{i}] ({base / rel})", reg.keys))
    listed = _merged(groups, where)
    for k in listed:  # only this publisher's keys count for it
        if publisher_covers(pid, k.publisher_id):
            keys.setdefault(k.keyid, k)
    pinned: list[str] = []
    for i, key in enumerate(seq(pub.keys)):
        w = f"{where}.keys[{i}]"
        entry = _pinned_entry(pid, _pem_of(key, base, w), opt(key.keyid), w)
        keys.setdefault(entry.keyid, entry)
        pinned.append(entry.keyid)
    return TrustedPublisher(pid, TrustRegistry(keys=tuple(keys.values()), registry_id=pid), tuple(sources),
                            tuple(pinned), listed)


def _merged(groups: list[tuple[str, tuple[TrustKey, ...]]], where: str) -> tuple[TrustKey, ...]:
    """The registries' keys as one list; a keyid they describe differently refuses the policy."""
    try:
        return merge_keys(groups)
    except AttestError as exc:
        raise InvalidInput(str(exc), where=where) from exc


def _source(value: str, base: Path) -> str:
    """A status-list source, read against the policy's folder whatever the current one: an https
    URL or `oci://REF` as is; `oci-layout:PATH[:tag]` with PATH resolved against the folder; a file
    that exists there; else a registry reference (`host/repo:tag`) when it looks like one."""
    from acxoci.oci.reference import LAYOUT_PREFIX

    if value.startswith(("https://", "oci://")):
        return value
    if value.startswith(LAYOUT_PREFIX):
        rest = value[len(LAYOUT_PREFIX):]
        return rest and LAYOUT_PREFIX + (rest if rest.startswith("/") else str(base / rest))
    if (base / value).exists():
        return str(base / value)
    head = value.split("/", 1)[0]
    if "/" in value and ("." in head or ":" in head or head == "localhost") and head not in (".", ".."):
        return value
    return str(base / value)


def policy_from_json(doc: Any, *, base: Path, now: datetime, source: str) -> VerificationPolicy:
    """Validate a policy document, decode it into its model and load what it names (paths are
    relative to `base`)."""
    errors = schema_errors(doc)
    if errors:
        raise InvalidInput("verification policy is invalid: " + "; ".join(errors), where=source,
                           details={"issues": errors})
    try:
        m = decode_as(doc, VerificationPolicyDoc, document="verification policy")
    except AttestError as exc:
        raise InvalidInput(str(exc), where=source) from exc
    pubs = tuple(_publisher(p, base, now, f"publishers[{i}]") for i, p in enumerate(seq(m.publishers)))
    _merged([(f"publishers[{i}] ({p.id})", p.listed) for i, p in enumerate(pubs)], "publishers")
    att = given(m.attestations, VerificationPolicyDocAttestations())
    lvl = given(m.level, VerificationPolicyDocLevel())
    rev = given(m.revocation, VerificationPolicyDocRevocation())
    limits = given(m.limits, VerificationPolicyDocLimits())
    att_keys = tuple(_pem_of(k, base, f"attestations.keys[{i}]") for i, k in enumerate(seq(att.keys)))
    issuer_reg: TrustRegistry | None = None
    issuer_src: list[FileInput] = []
    if seq(lvl.issuer_registries):
        igroups: list[tuple[str, tuple[TrustKey, ...]]] = []
        for i, rel in enumerate(seq(lvl.issuer_registries)):
            reg, src = _load_registry(base / rel, now, f"level.issuerRegistries[{i}]")
            issuer_src.append(src)
            igroups.append((f"level.issuerRegistries[{i}] ({base / rel})", reg.keys))
        issuer_reg = TrustRegistry(keys=_merged(igroups, "level.issuerRegistries"),
                                   registry_id="level-issuers")
    cache_dir = opt(rev.status_list_cache)
    required = None
    if not isinstance(m.provenance, UnsetType):
        from acxoci.attestation.provenance import requirement_from_policy

        required = requirement_from_policy(m.provenance, where=f"{source}: provenance")
    return VerificationPolicy(
        publishers=pubs,
        minimum_trust="portable" if m.minimum_trust == "portable" else "trusted",
        attestation_formats=seq(att.formats),
        predicate_types=seq(att.predicate_types),
        attestation_keys=att_keys,
        provenance=required,
        level_minimum=None if isinstance(lvl.minimum, UnsetType) else lvl.minimum,
        level_issuers=seq(lvl.issuers),
        level_allow_demo=given(lvl.allow_demo, False),
        level_verifiers=seq(lvl.verifiers),
        issuer_registry=issuer_reg,
        issuer_sources=tuple(issuer_src),
        max_status_list_age=given(rev.max_status_list_age_seconds, DEFAULT_MAX_STATUS_LIST_AGE),
        allow_offline_cached=given(rev.allow_offline_cached, False),
        status_list_cache=str(base / cache_dir) if cache_dir else None,
        status_list_sources={k: _source(v, base) for k, v in given(rev.status_lists, {}).items()},
        allowed_registries=given(given(m.registries, VerificationPolicyDocRegistries()).allowed, ("*",)),
        require_host=given(given(m.harness, VerificationPolicyDocHarness()).require_host, False),
        budget_above_host="cap" if limits.budget_above_host == "cap" else "refuse",
        require_host_limits=given(limits.require_host_limits, False),
        source=source,
        document=doc,
        digest=jcs_digest(doc),
        model=m,
    )


def default_policy() -> VerificationPolicy:
    """The built-in policy: trusts no publisher (so every install is refused until a policy names one)."""
    doc = {"schemaVersion": SCHEMA_VERSION}
    return VerificationPolicy(document=doc, digest=jcs_digest(doc))


def load_policy(path: Path | None, *, now: datetime) -> VerificationPolicy:
    """Read a policy file (YAML or JSON; JSON is parsed strictly), or the built-in default for None."""
    if path is None:
        return default_policy()
    from acxoci.yamldoc import load_yaml

    data = read_bytes(path, "verification policy")
    try:
        doc = loads_strict(data) if path.suffix.lower() == ".json" else load_yaml(
            data.decode("utf-8"), what="verification policy", where=str(path))
    except (AttestError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"verification policy is not valid JSON/YAML: {parse_problem(exc)}",
                           where=str(path)) from exc
    return policy_from_json(doc, base=path.parent, now=now, source=str(path.resolve()))


STARTER_TEMPLATE = """\
# acx verification policy (acx.verification-policy/1): what `acx install` demands before it
# installs anything. Every field is optional; an absent field takes the secure default shown.
# Relative paths are resolved against this file's folder. Check order: docs/install.md.
schemaVersion: acx.verification-policy/1

# Publishers you trust. The signer's publisherId must be one of these (or a /sub namespace),
# and its key must come from the listed trust registries (acx.trust-registry/1 files) or be
# pinned here. Default: [] -- nobody is trusted and every install is refused.
publishers: []
#  - id: io.github.example-acx
#    trustRegistries: [trust-registry.json]
#    keys:                                 # pinned keys, treated as active
#      - publicKeyFile: publisher.pub.pem

# The least trust the signature verdict may have: trusted (a registry vouches) or portable
# (the signature verifies but nobody vouches for the key). Default: trusted.
minimumTrust: trusted

# Attestations that must be attached to the artifact and verify. Formats: legacy (cosign
# .att tag) and bundle (sigstore bundle referrer). Default: none required.
attestations:
  formats: []
  predicateTypes: []
#  keys: [{publicKeyFile: attester.pub.pem}]   # default: the publisher's keys

# A proven level (number, or tier: intern junior mid senior staff principal distinguished
# legend), issued by one of these DIDs with a key from these registries. Default: none.
level: {}
#  minimum: senior
#  issuers: [did:web:verifier.acx.dev]
#  issuerRegistries: [issuers.json]
#  verifiers: [did:web:verifier.acx.dev]    # who must have run the benchmark (acx:verifier)
#  allowDemo: false                         # a level from the demo solver or benchmark counts

# Revocation (W3C Bitstring Status List): how old a status list may be, and whether a cached
# copy may be used when the list cannot be fetched. Default: 86400 s, no offline use.
revocation:
  maxStatusListAgeSeconds: 86400
  allowOfflineCached: false
#  statusListCache: status-cache/
#  statusLists:                       # fetch a list from a mirror or file instead of its id
#    https://acx.dev/status/1: status/1.json

# Where artifacts may come from: glob patterns over `host/repo` or `oci-layout:PATH`.
# Default: anywhere (the signature, not the location, is what is trusted).
registries:
  allowed: ["*"]

# Harness: refuse when no host descriptor (--host HOST.json) is given. Default: false (the
# check is skipped and the record says so).
harness:
  requireHost: false

# Resource limits: when the cartridge's policy budget asks for more than the host's
# resource-limits.yaml allows, refuse (default) or cap it to the host's values.
limits:
  budgetAboveHost: refuse
  requireHostLimits: false
"""


def starter_template() -> str:
    """The commented starter file `acx policy init` writes (it validates as the default policy)."""
    return STARTER_TEMPLATE
