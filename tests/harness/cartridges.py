"""Helpers for the cartridge tests (no tests here): copy a vector, mutate it with SQL, re-sign it
with a key generated at run time, and run `acx` in a measured child (CPU seconds, peak RSS) with
the verdict contract every hostile file must meet; examples/agent-package built at test time and
edits of it that only the package checks refuse."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.attest.b64 import b64decode_lenient
from acxoci.attest.canonical import jcs
from acxoci.attest.dsse import sign
from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.sign import resign_file
from tests.harness.env import REPO

NOW = datetime(2026, 11, 30, tzinfo=UTC)
SAMPLE = "sample/sample.acx"
EXAMPLE_CREATED = "2026-05-04T09:00:00.000Z"
EXAMPLE_PUBLISHER = "io.github.example-acx"
SAMPLE_KEYID = "ed25519:aed99efff8f08c8458bb412b28a6feba684701c9563692507eb2fe0767d56fbe"


def copy_vector(vectors: Path, rel: str, dest: Path) -> Path:
    """Copy a vector to `dest` (writable) and return the copy's path."""
    shutil.copyfile(vectors / rel, dest)
    dest.chmod(0o644)
    return dest


def sql(path: Path, *statements: str, params: tuple[Any, ...] = ()) -> None:
    """Run write statements on a copy (never on a vector)."""
    conn = sqlite3.connect(str(path))
    try:
        for st in statements:
            conn.execute(st, params) if params else conn.execute(st)
        conn.commit()
    finally:
        conn.close()


def read_statement(path: Path) -> dict[str, Any]:
    """The signed in-toto Statement of a cartridge (unverified)."""
    conn = sqlite3.connect(str(path))
    try:
        env = json.loads(conn.execute("SELECT envelope FROM signatures").fetchone()[0])
    finally:
        conn.close()
    doc: dict[str, Any] = json.loads(b64decode_lenient(env["payload"]))
    return doc


def resign(
    path: Path,
    statement: dict[str, Any],
    *,
    key: PrivateKey | None = None,
    payload_type: str = "application/vnd.in-toto+json",
    payload: bytes | None = None,
) -> PrivateKey:
    """Replace the cartridge's signature with one over `statement`, by a fresh key (stored as
    `public_key_pem`, keyid = sha256(SPKI)). Returns the key used."""
    key = key or generate_ed25519()
    pub = key.public()
    env = sign(payload_type, payload if payload is not None else jcs(statement), key, pub.keyid())
    sql(
        path,
        "UPDATE signatures SET envelope = ?, keyid = ?, public_key_pem = ?",
        params=(json.dumps(env.to_json()), pub.keyid(), pub.spki_pem()),
    )
    return key


def rom_digest_hex(path: Path) -> str:
    """The recorded manifest hash (bare hex) of a cartridge."""
    conn = sqlite3.connect(str(path))
    try:
        value: str = conn.execute("SELECT manifest_hash FROM signatures").fetchone()[0]
    finally:
        conn.close()
    return value.removeprefix("sha256:")


MAX_SECONDS = 5.0
MAX_RSS_KIB = 150 * 1024


def sample_registry(vectors: Path) -> Path:
    return vectors / "sample" / "trust-active.json"


def file_snapshot(path: Path) -> dict[str, tuple[bytes, int] | None]:
    out: dict[str, tuple[bytes, int] | None] = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        out[suffix] = (p.read_bytes(), p.stat().st_mtime_ns) if p.exists() else None
    return out


_CHILD = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as fh:
        hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    with open(os.environ["ACX_TEST_PEAK_FILE"], "w") as out:
        out.write(hwm)
atexit.register(_peak)
sys.argv = ["acx", *sys.argv[1:]]
runpy.run_module("acxoci", run_name="__main__", alter_sys=True)
"""


def measured_acx(*args: str) -> tuple[int, Any, float, int]:
    """Run `acx --json ARGS` in a child; (exit code, parsed stdout or stderr text, CPU seconds, peak RSS KiB).

    The peak is the child's own VmHWM (ru_maxrss of a vforked child includes the parent's peak).
    """
    fd, peak_file = tempfile.mkstemp(prefix="acx-peak-")
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=str(REPO), ACX_TEST_PEAK_FILE=peak_file)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "--json", *args], capture_output=True, env=env, timeout=120
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the child (user + system): the bound holds on a loaded machine too
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        peak = int(Path(peak_file).read_text() or "0")
    finally:
        os.unlink(peak_file)
    assert peak > 0, proc.stderr
    out, err = proc.stdout, proc.stderr
    text = out.decode() if out.strip() else err.decode()
    try:
        doc: Any = json.loads(text)
    except ValueError:
        doc = text
    return proc.returncode, doc, seconds, peak


def assert_refused_verify(path: Path, vectors: Path) -> Any:
    """The verdict contract every hostile file must meet (tests/cartridge/test_hostile_cartridges.py):
    never exit 0 or 70, never trusted/portable/local, under MAX_SECONDS and MAX_RSS_KIB, the file and
    its sidecars unchanged."""
    before = file_snapshot(path)
    code, doc, seconds, rss = measured_acx(
        "cartridge", "verify", str(path), "--trust-registry", str(sample_registry(vectors))
    )
    assert code not in (0, 70), (code, doc)
    if isinstance(doc, dict) and "trust" in doc:
        assert doc["trust"] not in ("trusted", "portable", "local"), doc
    else:
        assert isinstance(doc, dict) and doc.get("error", doc).get("kind") in ("invalid_input", "tampered"), (
            doc
        )
    assert seconds < MAX_SECONDS, seconds
    assert rss < MAX_RSS_KIB, rss
    assert file_snapshot(path) == before, "verification changed the file or a sidecar"
    return doc


def build_example(tmp: Path, key: PrivateKey, harness: dict[str, Any] | None = None,
                  name: str = "a.acx") -> Path:
    """examples/agent-package built and signed by `key` (its harness requirements replaced if given)."""
    pkg = tmp / f"pkg-{name}"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    if harness is not None:
        (pkg / "harness-requirements.json").write_text(json.dumps(harness, indent=2))
    out = tmp / name
    build_cartridge(pkg, out, publisher=EXAMPLE_PUBLISHER, key=key, created_at=EXAMPLE_CREATED)
    return out


def skill_table_disagrees(src: Path, tmp: Path) -> Path:
    """A copy of `src` whose (unsigned) skill table disagrees with its SKILL.md: the signature still holds."""
    out = tmp / "skill.acx"
    shutil.copyfile(src, out)
    with sqlite3.connect(out) as db:  # acx_skill is unsigned: no re-signing needed
        db.execute("UPDATE acx_skill SET content_sha256 = '00' || substr(content_sha256, 3)")
    return out


def policy_unknown_schema(src: Path, tmp: Path, key: PrivateKey) -> Path:
    """A copy of `src` whose signed loop-context policy names an unknown schemaVersion, re-signed by `key`."""
    out = tmp / "policy.acx"
    shutil.copyfile(src, out)
    name = "rom/policy/loop-context-policy.json"
    with sqlite3.connect(out) as db:
        (data,) = db.execute("SELECT data FROM sqlar WHERE name = ?", (name,)).fetchone()
        doc = json.loads(data)
        doc["schemaVersion"] = "acx.loop-context-policy/9"
        new = json.dumps(doc, indent=2).encode()
        db.execute("UPDATE sqlar SET data = ?, sz = ? WHERE name = ?", (new, len(new), name))
    resign_file(out, key, signed_at="2026-05-04T10:00:00.000Z", refresh=True)
    return out
