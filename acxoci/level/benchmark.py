"""Benchmark suites (`acx.benchmark/1`): a versioned task list with a public slice and a sealed
held-out slice whose task list is AES-256-GCM encrypted at rest under a verifier-held key.

Digests follow ACX brief §10 exactly, so the demo suite reproduces the reference's golden digests.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from acxoci.attest.canonical import jcs, jcs_digest, loads_strict
from acxoci.attest.errors import AttestError
from acxoci.errors import InvalidInput, Tampered, VerificationFailed
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.jsonschemas import schema_errors

SCHEMA_VERSION: Final = "acx.benchmark/1"
SCHEMA_FILE: Final = "acx.benchmark-1.schema.json"
SEAL_ALG: Final = "A256GCM"
MAX_BENCH_BYTES: Final = 32 * 1024 * 1024

DEMO_ID: Final = "acx-bench-dag-de"
DEMO_VERSION: Final = "2026.07.1"
DEMO_NAME: Final = "Data-Engineering DAG Construction (Airflow+Snowflake)"
DEMO_SEAL: Final = "held-out-sealed-key-7f3a"
DEMO_FRACTION: Final = 0.6


def _sha_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Task:
    """One benchmark task: its id, its difficulty (the task opponent's μ) and its spec text."""

    id: str
    difficulty: float
    spec: str

    def to_json(self) -> dict[str, Any]:
        """`{id, difficulty, spec}`: the form that goes into the benchmark digest."""
        diff: float | int = int(self.difficulty) if float(self.difficulty).is_integer() else self.difficulty
        return {"id": self.id, "difficulty": diff, "spec": self.spec}

    @classmethod
    def from_json(cls, doc: Any, where: str = "task") -> Task:
        """Parse `{id, difficulty, spec}`; raises InvalidInput naming `where`."""
        if not isinstance(doc, dict):
            raise InvalidInput(f"{where} is not an object")
        tid, diff, spec = doc.get("id"), doc.get("difficulty"), doc.get("spec")
        if not isinstance(tid, str) or not tid:
            raise InvalidInput(f"{where}.id is missing")
        if isinstance(diff, bool) or not isinstance(diff, int | float) or not math.isfinite(diff):
            raise InvalidInput(f"{where}.difficulty is not a number")
        if not isinstance(spec, str):
            raise InvalidInput(f"{where}.spec is not a string")
        return cls(tid, diff, spec)


@dataclass(frozen=True)
class BenchmarkSuite:
    """The whole suite as the verifier sees it (all tasks and the seal). Never published as is."""

    id: str
    version: str
    name: str
    tasks: tuple[Task, ...]
    held_out_fraction: float
    seal: str

    def sorted_tasks(self) -> list[Task]:
        """Tasks sorted by id (code point order, as the reference's default sort does for ASCII ids)."""
        return sorted(self.tasks, key=lambda t: t.id)

    def digest(self) -> str:
        """sha256 of JCS({id, version, tasks: sorted by id})."""
        return jcs_digest({"id": self.id, "version": self.version,
                           "tasks": [t.to_json() for t in self.sorted_tasks()]})

    def held_out(self) -> list[Task]:
        """The first floor(n·fraction) tasks ranked by hex(sha256(seal|id)), returned sorted by id."""
        ordered = self.sorted_tasks()
        n_held = math.floor(len(ordered) * self.held_out_fraction)
        ranked = sorted(ordered, key=lambda t: _sha_hex(f"{self.seal}|{t.id}"))
        return sorted(ranked[:n_held], key=lambda t: t.id)

    def held_out_digest(self) -> str:
        """sha256 of JCS(sorted held-out ids)."""
        return jcs_digest([t.id for t in self.held_out()])

    def public_slice(self) -> list[Task]:
        """The tasks that are not held out, sorted by id."""
        held = {t.id for t in self.held_out()}
        return [t for t in self.sorted_tasks() if t.id not in held]


def demo_suite() -> BenchmarkSuite:
    """The reference's demo suite `acx-bench-dag-de@2026.07.1` (160 tasks, 96 held out)."""
    tasks = tuple(Task(f"dag-task-{i:03d}", 15 + i % 34,
                       f"build+backfill a partitioned Airflow DAG, variant {i}") for i in range(160))
    return BenchmarkSuite(DEMO_ID, DEMO_VERSION, DEMO_NAME, tasks, DEMO_FRACTION, DEMO_SEAL)


@functools.cache
def demo_suite_digest() -> str:
    """The demo suite's digest: a level measured on it is a demonstration, not a measurement."""
    return demo_suite().digest()


def new_key() -> bytes:
    """A fresh 256-bit AES-GCM key for sealing a held-out slice."""
    return AESGCM.generate_key(bit_length=256)


def key_id(key: bytes) -> str:
    """A non-secret identifier of a sealing key (so a wrong key is reported as such)."""
    return "sha256:" + hashlib.sha256(b"acx-bench-seal-key|" + key).hexdigest()


def _aad(doc: dict[str, Any]) -> bytes:
    return jcs({"schemaVersion": doc["schemaVersion"], "id": doc["id"], "version": doc["version"],
                "digest": doc["digest"], "heldOutSliceDigest": doc["heldOutSliceDigest"]})


def seal_suite(suite: BenchmarkSuite, key: bytes) -> dict[str, Any]:
    """The public `acx.benchmark/1` document: public slice in clear, held-out slice + seal encrypted."""
    if len(key) != 32:
        raise InvalidInput("benchmark sealing key must be 32 bytes (AES-256)")
    ids = [t.id for t in suite.tasks]
    if len(set(ids)) != len(ids):
        raise InvalidInput(f"benchmark {suite.id}: duplicate task ids")
    doc: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "id": suite.id,
        "version": suite.version,
        "name": suite.name,
        "taskCount": len(suite.tasks),
        "heldOutFraction": suite.held_out_fraction,
        "digest": suite.digest(),
        "heldOutSliceDigest": suite.held_out_digest(),
        "publicSlice": [t.to_json() for t in suite.public_slice()],
    }
    nonce = secrets.token_bytes(12)
    plaintext = jcs({"seal": suite.seal, "heldOut": [t.to_json() for t in suite.held_out()]})
    ciphertext = AESGCM(key).encrypt(nonce, plaintext, _aad(doc))
    doc["sealed"] = {"alg": SEAL_ALG, "keyId": key_id(key),
                     "nonce": base64.b64encode(nonce).decode("ascii"),
                     "ciphertext": base64.b64encode(ciphertext).decode("ascii")}
    return doc


def validate_document(doc: Any, where: str = "benchmark") -> dict[str, Any]:
    """Validate a public benchmark document against acx.benchmark-1.schema.json."""
    errors = schema_errors(SCHEMA_FILE, doc)
    if errors:
        raise InvalidInput(f"{where}: schema violation at {errors[0]}")
    assert isinstance(doc, dict)
    return doc


def load_document(path: Path) -> dict[str, Any]:
    """Read and schema-check a public benchmark document."""
    data = read_bytes(path, "benchmark file", limit=MAX_BENCH_BYTES + 1)
    try:
        doc = loads_strict(data, max_bytes=MAX_BENCH_BYTES)
    except AttestError as exc:
        raise InvalidInput(f"{path}: {exc}") from exc
    return validate_document(doc, str(path))


def open_suite(doc: dict[str, Any], key: bytes, where: str = "benchmark") -> BenchmarkSuite:
    """Decrypt the held-out slice and check every public digest against the recomputed suite."""
    validate_document(doc, where)
    sealed = doc["sealed"]
    if sealed["keyId"] != key_id(key):
        raise VerificationFailed(f"{where}: the sealing key does not match keyId {sealed['keyId']}")
    try:
        nonce = base64.b64decode(sealed["nonce"], validate=True)
        ciphertext = base64.b64decode(sealed["ciphertext"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"{where}: sealed slice is not base64: {exc}") from exc
    try:
        plaintext = AESGCM(key).decrypt(nonce, ciphertext, _aad(doc))
    except InvalidTag as exc:
        raise Tampered(f"{where}: sealed held-out slice fails authentication "
                       "(tampered or wrong key)") from exc
    inner = loads_strict(plaintext)
    held = [Task.from_json(t, f"{where}.sealed.heldOut[{i}]") for i, t in enumerate(inner["heldOut"])]
    public = [Task.from_json(t, f"{where}.publicSlice[{i}]") for i, t in enumerate(doc["publicSlice"])]
    suite = BenchmarkSuite(doc["id"], doc["version"], doc["name"], tuple(public + held),
                           float(doc["heldOutFraction"]), str(inner["seal"]))
    if len(suite.tasks) != doc["taskCount"]:
        raise Tampered(f"{where}: taskCount {doc['taskCount']} but {len(suite.tasks)} tasks")
    if suite.digest() != doc["digest"]:
        raise Tampered(f"{where}: benchmark digest {doc['digest']} does not match its tasks "
                       f"({suite.digest()})")
    if suite.held_out_digest() != doc["heldOutSliceDigest"]:
        raise Tampered(f"{where}: heldOutSliceDigest {doc['heldOutSliceDigest']} does not match the seal")
    if [t.id for t in suite.held_out()] != sorted(t.id for t in held):
        raise Tampered(f"{where}: sealed slice is not the seal's held-out selection")
    return suite


def write_key(path: Path, key: bytes) -> None:
    """Write a sealing key as hex, mode 0600, atomically."""
    atomic_write(path, (key.hex() + "\n").encode("ascii"), mode=0o600)


def read_key(path: Path) -> bytes:
    """Read a hex sealing key written by write_key."""
    try:
        text = read_bytes(path, "benchmark key", limit=4096).decode("ascii").strip()
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: benchmark key is not hex text") from exc
    try:
        key = bytes.fromhex(text)
    except ValueError as exc:
        raise InvalidInput(f"{path}: benchmark key is not hex") from exc
    if len(key) != 32:
        raise InvalidInput(f"{path}: benchmark key must be 32 bytes, got {len(key)}")
    return key


def suite_from_source(doc: Any, where: str = "tasks") -> BenchmarkSuite:
    """Build a suite from a verifier's source file `{id, version, name, heldOutFraction, tasks, seal?}`."""
    if not isinstance(doc, dict):
        raise InvalidInput(f"{where}: not a JSON object")
    for name in ("id", "version", "name"):
        if not isinstance(doc.get(name), str) or not doc[name]:
            raise InvalidInput(f"{where}.{name} is missing")
    frac = doc.get("heldOutFraction", DEMO_FRACTION)
    if isinstance(frac, bool) or not isinstance(frac, int | float) or not 0 < frac < 1:
        raise InvalidInput(f"{where}.heldOutFraction must be a number in (0, 1)")
    raw = doc.get("tasks")
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(f"{where}.tasks must be a non-empty array")
    tasks = tuple(Task.from_json(t, f"{where}.tasks[{i}]") for i, t in enumerate(raw))
    seal = doc.get("seal")
    if seal is None:
        seal = secrets.token_hex(16)
    if not isinstance(seal, str) or not seal:
        raise InvalidInput(f"{where}.seal must be a string")
    return BenchmarkSuite(doc["id"], doc["version"], doc["name"], tasks, float(frac), seal)
