"""`make soak`: runs of `release run`, `pull`, `cp -r` and `install` against a real distribution
registry on 127.0.0.1 through the fault proxy (tests/harness/faultproxy.py), each followed by a
check of what is really in the registry or on disk.

Faults: connection resets, 5xx, 429 with Retry-After, truncated and corrupted bodies, a slow drip,
and a full disk (RLIMIT_FSIZE in the child: writes past the limit fail with EFBIG). Each run is
one `acx` command in a forked child (time-bounded), then classified:

  completed   exit 0 and the check passed
  refused     a typed refusal (exit 1-9) that left nothing half-done
  resumed     a release refused with a typed reason, then `release resume` (faults off) completed
  corrupt     exit 0 (or a file left behind) but the bytes differ from the artifact
  partial     an install or pull refused but left an incomplete item or file behind
  lost        a release or copy said done, yet a tag or referrer is missing
  duplicated  a referrer or index entry is there twice
  unclassified  exit 70, a crash, a hang, or an exit code outside the documented ones

Ends with exactly `soak: <runs> runs, <corrupt> corrupt, <lost> lost, <duplicated> duplicated,
<unclassified> unclassified`, and exits 1 when any of corrupt/partial/lost/duplicated/unclassified
is not zero. Loopback only; bounded by --runs and --max-seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import requests  # noqa: E402

from tests.harness import env  # noqa: E402
from tests.harness.faultproxy import FaultProxy, Rule  # noqa: E402
from tests.harness.releases import make_world  # noqa: E402
from tests.harness.servers import Registry, start_distribution  # noqa: E402

OPS = ("release", "pull", "cp", "install")
FAULTS = ("none", "reset", "5xx", "429", "truncate", "corrupt", "drip", "disk_full")
PATHS = (r"/blobs/sha256:", r"/manifests/", r"/blobs/uploads/", r"/v2/", r"/manifests/sha256-")
TYPED = set(range(1, 10))
OUTCOMES = ("completed", "refused", "resumed", "corrupt", "partial", "lost", "duplicated", "unclassified")
CHILD_TIMEOUT = 120.0
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


def sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


class Soak:
    """One registry, one proxy, one published base artifact; `run(i)` does and checks one run."""

    def __init__(self, tmp: Path, seed: int) -> None:
        self.tmp = tmp
        self.rng = random.Random(seed)
        self.vectors = env.vectors()
        self.reg: Registry = start_distribution(env.peer("docker-registry"), tmp / "registry")
        self.proxy = FaultProxy(self.reg.host).start()
        self.sample_digest = sha256_file(self.vectors / "sample" / "sample.acx")
        self.sample_size = (self.vectors / "sample" / "sample.acx").stat().st_size
        base = make_world(tmp / "base", self.vectors, [f"{self.proxy.host}/acx/base"], goal="base")
        rc, out = self.child(["--json", "release", "run", str(base.plan), "--state-dir", str(base.state)])
        if rc != 0:
            raise SystemExit(f"soak: could not publish the base artifact: {out[-2000:]}")
        self.policy = base.policy
        self.subject = self._tag_digest("acx/base", "v1")
        if self.subject is None:
            raise SystemExit("soak: the base artifact has no v1 tag")
        self.base_referrers = self._referrers("acx/base", self.subject)
        self.src = f"{self.proxy.host}/acx/base:v1"
        self.trust = str(self.vectors / "sample" / "trust-active.json")

    def close(self) -> None:
        self.proxy.stop()
        self.reg.stop()

    # -- children -------------------------------------------------------------------------------
    def child(self, argv: list[str], *, fsize: int | None = None) -> tuple[int, str]:
        """`acx ARGV` in a forked child (stdout+stderr to a file); returns (exit code, output).
        A child past CHILD_TIMEOUT is killed and reported as -9."""
        out = self.tmp / "child.out"
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 99
            try:
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                if fsize is not None:
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
                from acxoci.cli.main import main

                try:
                    main(argv)
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 99
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + CHILD_TIMEOUT
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return -9, "hung: killed after the child timeout"
            time.sleep(0.01)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        return code, out.read_text(errors="replace")

    # -- registry truth (straight to the registry, not through the proxy) ---------------------------
    def _tag_digest(self, repo: str, tag: str) -> str | None:
        r = requests.head(f"{self.reg.url}/v2/{repo}/manifests/{tag}", headers={"Accept": OCI_MANIFEST},
                          timeout=10)
        return r.headers.get("Docker-Content-Digest") if r.status_code == 200 else None

    def _referrers(self, repo: str, subject: str) -> list[str]:
        tag = subject.replace(":", "-")
        r = requests.get(f"{self.reg.url}/v2/{repo}/manifests/{tag}", headers={"Accept": OCI_INDEX},
                         timeout=10)
        if r.status_code != 200:
            return []
        return [m["digest"] for m in r.json().get("manifests", [])]

    def _tags(self, repo: str) -> list[str]:
        r = requests.get(f"{self.reg.url}/v2/{repo}/tags/list", timeout=10)
        return list(r.json().get("tags") or []) if r.status_code == 200 else []

    def check_publication(self, repo: str, tags: tuple[str, ...]) -> str:
        """completed / lost / duplicated / corrupt for an artifact that should be at `repo`."""
        digests = {t: self._tag_digest(repo, t) for t in tags}
        if any(d is None for d in digests.values()):
            return "lost"
        if set(digests.values()) != {self.subject}:
            return "corrupt"
        refs = self._referrers(repo, self.subject)
        if len(refs) != len(set(refs)):
            return "duplicated"
        if len(refs) != len(self.base_referrers):  # each release signs with its own key: count, not digests
            return "lost" if len(refs) < len(self.base_referrers) else "duplicated"
        att = f"sha256-{self.subject.split(':')[1]}.att"
        if att not in self._tags(repo):
            return "lost"
        return "completed"

    def no_duplicates(self, repo: str) -> bool:
        if self._tag_digest(repo, "v1") is None:
            return True
        refs = self._referrers(repo, self.subject)
        return len(refs) == len(set(refs))

    # -- one run --------------------------------------------------------------------------------
    def rules(self, fault: str) -> list[Rule]:
        rng = self.rng
        path = rng.choice(PATHS)
        if fault == "reset":
            return [Rule("*", path, "reset_body", times=rng.randint(1, 2))]
        if fault == "5xx":
            return [Rule("*", path, "status", times=rng.randint(1, 4), status=rng.choice((500, 502, 503)))]
        if fault == "429":
            return [Rule("*", path, "status", times=rng.randint(1, 3), status=429,
                         retry_after=rng.choice(("0", "1")))]
        if fault in ("truncate", "corrupt"):
            return [Rule("GET", path, fault, times=rng.randint(1, 2))]
        if fault == "drip":
            return [Rule("GET", path, "drip", times=rng.randint(1, 3), delay=0.01)]
        return []

    def run(self, i: int, op: str, fault: str) -> tuple[str, str]:
        """Do one run; returns (outcome, detail)."""
        with self.proxy._lock:
            self.proxy.rules = self.rules(fault)
            self.proxy.log.entries.clear()
        fsize = self.sample_size // 2 if fault == "disk_full" else None
        work = self.tmp / f"run{i}"
        work.mkdir()
        try:
            return getattr(self, f"_{op}")(i, work, fsize)
        finally:
            with self.proxy._lock:
                self.proxy.rules = []
            shutil.rmtree(work, ignore_errors=True)

    def _classify_exit(self, rc: int, out: str) -> str | None:
        if rc in TYPED:
            return None
        return f"exit {rc}: {out[-1500:]}"

    def _release(self, i: int, work: Path, fsize: int | None) -> tuple[str, str]:
        repo = f"acx/rel{i}"
        w = make_world(work, self.vectors, [f"{self.proxy.host}/{repo}"], goal=f"g{i}")
        cmd = ["--json", "release", "run", str(w.plan), "--state-dir", str(w.state)]
        rc, out = self.child(cmd, fsize=fsize)
        if rc == 0:
            return self.check_publication(repo, ("v1", "latest")), out[-300:]
        bad = self._classify_exit(rc, out)
        if bad:
            return "unclassified", bad
        if not self.no_duplicates(repo):
            return "duplicated", out[-300:]
        with self.proxy._lock:
            self.proxy.rules = []
        rc2, out2 = self.child(["--json", "release", "resume", f"g{i}", "--state-dir", str(w.state)])
        if rc2 == 0:
            got = self.check_publication(repo, ("v1", "latest"))
            return ("resumed" if got == "completed" else got), out2[-300:]
        bad = self._classify_exit(rc2, out2)
        return ("unclassified", bad) if bad else ("refused", f"first {rc}, resume {rc2}: {out2[-300:]}")

    def _pull(self, i: int, work: Path, fsize: int | None) -> tuple[str, str]:
        dest = work / "sample.acx"
        rc, out = self.child(["--json", "pull", self.src, "-o", str(dest), "--trust-registry", self.trust],
                             fsize=fsize)
        if rc == 0:
            ok = dest.exists() and sha256_file(dest) == self.sample_digest
            return ("completed" if ok else "corrupt"), out[-300:]
        bad = self._classify_exit(rc, out)
        if bad:
            return "unclassified", bad
        left = [p.name for p in work.iterdir()]
        return ("partial", f"left behind: {left}") if left else ("refused", out[-300:])

    def _cp(self, i: int, work: Path, fsize: int | None) -> tuple[str, str]:
        repo = f"acx/cp{i}"
        rc, out = self.child(["--json", "cp", "-r", self.src, f"{self.proxy.host}/{repo}:v1"], fsize=fsize)
        if rc == 0:
            return self.check_publication_cp(repo), out[-300:]
        bad = self._classify_exit(rc, out)
        if bad:
            return "unclassified", bad
        got = self._tag_digest(repo, "v1")
        if got is not None and got != self.subject:
            return "corrupt", f"v1 points at {got}"
        if not self.no_duplicates(repo):
            return "duplicated", out[-300:]
        return "refused", out[-300:]

    def check_publication_cp(self, repo: str) -> str:
        got = self._tag_digest(repo, "v1")
        if got is None:
            return "lost"
        if got != self.subject:
            return "corrupt"
        refs = self._referrers(repo, self.subject)
        if len(refs) != len(set(refs)):
            return "duplicated"
        return "completed" if sorted(refs) == sorted(self.base_referrers) else "lost"

    def _install(self, i: int, work: Path, fsize: int | None) -> tuple[str, str]:
        store = work / "store"
        cmd = ["--json", "install", self.src, "--policy", str(self.policy), "--store", str(store),
               "--name", "agent"]
        rc, out = self.child(cmd, fsize=fsize)
        records = list(store.rglob("record.json")) if store.exists() else []
        if rc == 0:
            rc2, out2 = self.child(["--json", "installed", "verify", "--store", str(store)])
            files = [p for p in store.rglob("*.acx") if "staging" not in p.parts]
            intact = len(records) == 1 and files and all(sha256_file(f) == self.sample_digest for f in files)
            return ("completed" if rc2 == 0 and intact else "corrupt"), out2[-300:]
        bad = self._classify_exit(rc, out)
        if bad:
            return "unclassified", bad
        leftovers = [str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()
                     and p.name not in (".lock", "store.lock")] if store.exists() else []
        if records or leftovers:
            return "partial", f"left behind: {leftovers[:5]}"
        return "refused", out[-300:]


def _table(counts: Counter[str], by: dict[tuple[str, str], Counter[str]]) -> str:
    head = ["op", "fault", "runs", *OUTCOMES]
    rows = [head]
    for (op, fault), c in sorted(by.items()):
        rows.append([op, fault, str(sum(c.values())), *(str(c.get(o, 0)) for o in OUTCOMES)])
    rows.append(["all", "", str(sum(counts.values())), *(str(counts.get(o, 0)) for o in OUTCOMES)])
    widths = [max(len(r[j]) for r in rows) for j in range(len(head))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(v.ljust(widths[j]) if j < 2 else v.rjust(widths[j]) for j, v in enumerate(r)))
        if n == 0 or n == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=int(os.environ.get("SOAK_RUNS") or 1000))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED") or 0))
    ap.add_argument("--max-seconds", type=float, default=float(os.environ.get("SOAK_MAX_SECONDS") or 3600))
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of " + ",".join(OPS))
    ap.add_argument("--faults", default=",".join(FAULTS), help="subset of " + ",".join(FAULTS))
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o in OPS]
    faults = [f for f in args.faults.split(",") if f in FAULTS]
    seed = args.seed or int(time.time()) % 1_000_000
    tmp = Path(tempfile.mkdtemp(prefix="acx-soak-"))
    started = time.monotonic()
    soak = Soak(tmp, seed)
    counts: Counter[str] = Counter()
    by: dict[tuple[str, str], Counter[str]] = {}
    bad: list[str] = []
    notes: list[str] = []  # refused / resumed runs: why (kept in the report)
    print(f"soak: seed {seed}, up to {args.runs} runs, registry {soak.reg.host} "
          f"behind proxy {soak.proxy.host}", flush=True)
    try:
        for i in range(args.runs):
            if time.monotonic() - started > args.max_seconds:
                print(f"soak: time bound of {args.max_seconds:g} s reached after {i} runs", flush=True)
                break
            op = ops[i % len(ops)]
            fault = faults[(i // len(ops)) % len(faults)]
            outcome, detail = soak.run(i, op, fault)
            counts[outcome] += 1
            by.setdefault((op, fault), Counter())[outcome] += 1
            if outcome not in ("completed", "refused", "resumed"):
                bad.append(f"run {i} {op}/{fault}: {outcome}: {detail}")
            elif outcome != "completed" and len(notes) < 200:
                notes.append(f"run {i} {op}/{fault}: {outcome}: {detail[-600:]}")
            if (i + 1) % 50 == 0:
                print(f"  {i + 1} runs: {dict(counts)}", flush=True)
    finally:
        soak.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(_table(counts, by))
    for line in bad[:20]:
        print("\n" + line)
    report = REPO / ".soak" / "report.json"
    report.parent.mkdir(exist_ok=True)
    report.write_text(json.dumps({"seed": seed, "counts": counts, "bad": bad, "notes": notes,
                                  "seconds": round(time.monotonic() - started, 1)}, indent=1))
    runs = sum(counts.values())
    print(f"\nsoak: {runs} runs in {time.monotonic() - started:.0f} s; partial {counts['partial']}; "
          "report: .soak/report.json")
    print(f"soak: {runs} runs, {counts['corrupt']} corrupt, {counts['lost']} lost, {counts['duplicated']} "
          f"duplicated, {counts['unclassified']} unclassified")
    failed = sum(counts[o] for o in ("corrupt", "partial", "lost", "duplicated", "unclassified"))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
