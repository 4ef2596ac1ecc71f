"""The verifying-relay floor `scripts/bench_oci.py` times next to `acx cp` and `oras cp`:
the fastest a Python copy that hashes every blob it relays can be on this machine. Standard
library only, so its start-up is an interpreter's and nothing more.

    python scripts/relay_floor.py SRC_HOST DST_HOST LAYERS_JSON   # repository bench/multi -> bench/floor
"""

from __future__ import annotations

import hashlib
import http.client
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def relay_floor(src_host: str, dst_host: str, layers: list[dict[str, object]], concurrency: int) -> float:
    """The fastest a verifying Python copy can be on this machine: bare http.client, each blob
    streamed GET -> PUT through one reused 256 KiB buffer and hashed on the way (as acx does,
    unlike oras cp), `concurrency` blobs at a time. Returns the seconds taken."""
    def one(layer: dict[str, object]) -> None:
        digest, size = str(layer["digest"]), int(str(layer["size"]))
        sh, sp = src_host.rsplit(":", 1)
        dh, dp = dst_host.rsplit(":", 1)
        get = http.client.HTTPConnection(sh, int(sp), timeout=60)
        get.request("GET", f"/v2/bench/multi/blobs/{digest}")
        body = get.getresponse()
        put = http.client.HTTPConnection(dh, int(dp), timeout=60)
        put.request("POST", "/v2/bench/floor/blobs/uploads/", headers={"Content-Length": "0"})
        started = put.getresponse()
        started.read()
        loc = started.getheader("Location") or ""
        put.putrequest("PUT", f"{loc}{'&' if '?' in loc else '?'}digest={digest}")
        put.putheader("Content-Length", str(size))
        put.putheader("Content-Type", "application/octet-stream")
        put.endheaders()
        h, buf, left = hashlib.sha256(), bytearray(256 * 1024), size
        view = memoryview(buf)
        while left:
            n = body.readinto(view[: min(len(buf), left)])
            if not n:
                raise SystemExit("floor relay: source ended early")
            h.update(view[:n])
            put.sock.sendall(view[:n])
            left -= n
        done = put.getresponse()
        done.read()
        if done.status != 201 or "sha256:" + h.hexdigest() != digest:
            raise SystemExit(f"floor relay: {digest} answered {done.status}")
        get.close()
        put.close()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, layers))
    return time.perf_counter() - t0


if __name__ == "__main__":
    relay_floor(sys.argv[1], sys.argv[2], json.loads(Path(sys.argv[3]).read_text()), 3)
