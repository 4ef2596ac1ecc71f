"""Mirroring many small artifacts: `acx cp -r --from-list FILE --concurrency N` against a shell loop
of `oras cp -r` over the same set, in the same run, between two loopback distribution registries.

Each artifact is the shared sample cartridge with a 2 MiB SAVE row (so every one is a different
blob), signed, with one attestation referrer (cosign bundle) attached. The target (issue 31) is
acx ≥ 1.5× the loop's speed; this script prints the ratio, it does not fail on it.
Run: `make bench` (or BENCH_ONLY=mirror make bench). ARTIFACTS and CONCURRENCY tune it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import env  # noqa: E402
from tests.harness.servers import start_distribution  # noqa: E402

ACX = [sys.executable, "-m", "acxoci"]
COUNT = int(os.environ.get("ARTIFACTS", "50"))
CONCURRENCY = os.environ.get("CONCURRENCY", "8")


def sh(*cmd: str, cwd: Path | None = None) -> None:
    subprocess.run(cmd, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def with_save_row(src: Path, dest: Path, n: int) -> None:
    """The sample cartridge plus one 2 MiB SAVE row of its own bytes (the SAVE zone is unsigned)."""
    shutil.copyfile(src, dest)
    with sqlite3.connect(dest) as db:
        db.execute("INSERT INTO sqlar(name, mode, mtime, sz, data) VALUES (?, 33188, 0, ?, ?)",
                   (f"save/blob-{n}.bin", 2 * 1024 * 1024, os.urandom(2 * 1024 * 1024)))


def main() -> int:
    oras_bin = str(env.peer("oras13"))
    registry_bin = env.peer("docker-registry")
    work = Path(tempfile.mkdtemp(prefix="acx-bench-mirror-"))
    src_reg = start_distribution(registry_bin, work / "src")
    dst_a = start_distribution(registry_bin, work / "dst-acx")
    dst_o = start_distribution(registry_bin, work / "dst-oras")
    try:
        key = work / "k.pem"
        sh(*ACX, "key", "generate", "-o", str(key))
        sample = env.VECTORS / "sample" / "sample.acx"
        pairs_acx, pairs_oras = [], []
        for i in range(COUNT):
            acx_file = work / f"a{i}.acx"
            with_save_row(sample, acx_file, i)
            ref = f"{src_reg.host}/bench/a{i}:v1"
            sh(*ACX, "push", "--no-verify", str(acx_file), ref, "--sign", "--key", str(key),
               "--format", "bundle")
            pairs_acx.append(f"{ref} {dst_a.host}/bench/a{i}:v1")
            pairs_oras.append((ref, f"{dst_o.host}/bench/a{i}:v1"))
        listing = work / "list.txt"
        listing.write_text("\n".join(pairs_acx) + "\n")
        t0 = time.perf_counter()
        sh(*ACX, "cp", "-r", "--from-list", str(listing), "--concurrency", CONCURRENCY)
        acx_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for src, dst in pairs_oras:
            sh(oras_bin, "cp", "-r", "--from-plain-http", "--to-plain-http", src, dst)
        oras_s = time.perf_counter() - t0
        print(f"mirror {COUNT} artifacts (sample + 2 MiB SAVE, signed, 1 referrer each):")
        print(f"  acx cp -r --from-list --concurrency {CONCURRENCY}: {acx_s:.2f} s")
        print(f"  shell loop of oras cp -r:                  {oras_s:.2f} s")
        print(f"  speed, acx vs the loop: {oras_s / acx_s:.2f}x (target >= 1.5x)")
        return 0
    finally:
        for r in (src_reg, dst_a, dst_o):
            r.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
