"""The `acx install` / `installed` / `uninstall` / `policy init` commands as a user runs them
(subprocesses), and SIGKILL at every install stage: nothing half-installed is ever listed, and a
retry completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from acxoci.install.install import install
from acxoci.install.reverify import verify_item
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy, schema_errors
from tests.harness.env import REPO
from tests.harness.installs import NOW, push_cartridge, tree_hash, trusting_policy

pytestmark = pytest.mark.interop

STAGES = ("locked", "resolved", "checked", "staged", "renamed")


def acx(
    *args: str, env: dict[str, str] | None = None, check: int | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ACX_TEST_")}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "acxoci", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO,
        timeout=120,
    )
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)


@pytest.fixture
def sample(tmp_path: Path, vectors_dir: Path) -> dict[str, Path | str]:
    layout = tmp_path / "layout"
    push_cartridge(layout, vectors_dir / "sample" / "sample.acx", "v1")
    policy = trusting_policy(tmp_path, vectors_dir / "sample" / "trust-active.json")
    return {"ref": f"oci-layout:{layout}:v1", "policy": policy, "store": tmp_path / "store", "tmp": tmp_path}


def test_policy_init_writes_a_valid_commented_starter(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    acx("policy", "init", "-o", str(out), check=0)
    text = out.read_text()
    assert text.count("\n#") > 10
    assert schema_errors(yaml.safe_load(text)) == []
    pol = load_policy(out, now=NOW)
    assert pol.publishers == () and pol.minimum_trust == "trusted" and pol.budget_above_host == "refuse"
    assert acx("policy", "init", "-o", str(out)).returncode == 2  # no overwrite without --force
    acx("policy", "init", "-o", str(out), "--force", check=0)


def test_install_list_show_verify_uninstall(sample: dict[str, Any]) -> None:
    store = str(sample["store"])
    res = as_json(
        acx("install", sample["ref"], "--policy", str(sample["policy"]), "--store", store, "--json", check=0)
    )
    assert res["status"] == "installed"
    name = res["name"]
    listed = as_json(acx("installed", "list", "--store", store, "--json", check=0))
    assert [i["name"] for i in listed["items"]] == [name]
    shown = as_json(acx("installed", "show", name, "--store", store, "--json", check=0))
    assert shown["record"]["digest"] == res["digest"]
    ver = as_json(acx("installed", "verify", "--store", store, "--json", check=0))
    assert ver["ok"] is True and ver["items"][0]["revocation"] == "not-applicable"
    human = acx("install", sample["ref"], "--policy", str(sample["policy"]), "--store", store, check=0)
    assert "ALREADY INSTALLED" in human.stdout
    gone = as_json(acx("uninstall", name, "--store", store, "--json", check=0))
    assert gone["digests"] == [res["digest"]]
    assert Store(Path(store)).list() == []


def test_refusal_exit_code_and_every_failed_check(sample: dict[str, Any], vectors_dir: Path) -> None:
    store = sample["store"]
    other = sample["tmp"] / "other"
    push_cartridge(other, vectors_dir / "sample" / "sample.stripped.acx", "v1")
    acx(
        "install",
        f"oci-layout:{other}:v1",
        "--policy",
        str(sample["policy"]),
        "--store",
        str(store),
        "--name",
        "keep/me",
        check=0,
    )
    before = tree_hash(store)
    strict = trusting_policy(
        sample["tmp"], vectors_dir / "sample" / "trust-expired.json", attestations={"formats": ["legacy"]}
    )
    proc = acx("install", sample["ref"], "--policy", str(strict), "--store", str(store), "--json", check=8)
    out = as_json(proc)
    assert out["status"] == "refused"
    kinds = {c["id"]: c["kind"] for c in out["refusal"]["failed"]}
    assert kinds == {"trust": "trust_too_low", "attestations": "missing_attestation"}
    assert tree_hash(store) == before
    human = acx("install", sample["ref"], "--policy", str(strict), "--store", str(store), check=8)
    assert human.stdout.startswith("REFUSED")
    assert "[trust_too_low]" in human.stdout and "[missing_attestation]" in human.stdout
    assert tree_hash(store) == before


def test_bad_host_file_is_invalid_input(sample: dict[str, Any]) -> None:
    bad = sample["tmp"] / "host.json"
    bad.write_text('{"schemaVersion": "acx.host.v1"}')
    proc = acx(
        "install",
        sample["ref"],
        "--policy",
        str(sample["policy"]),
        "--store",
        str(sample["store"]),
        "--host",
        str(bad),
        "--json",
    )
    assert proc.returncode == 3 and as_json(proc)["error"]["kind"] == "invalid_input"
    assert not Path(sample["store"]).exists()


@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_never_leaves_a_half_installed_item(sample: dict[str, Any], stage: str) -> None:
    store = Path(sample["store"])
    marker = sample["tmp"] / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.harness.install_child", sample["ref"], str(sample["policy"]),
         str(store), stage, str(marker)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, f"install exited ({proc.returncode}) before reaching {stage}"
            assert time.monotonic() < deadline, f"never reached {stage}"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    listed = as_json(acx("installed", "list", "--store", str(store), "--json", check=0))["items"]
    st = Store(store)  # the remaining checks run in-process (fast)
    items = st.list()
    assert [i["digest"] for i in listed] == [i.digest for i in items]
    if stage == "renamed":  # the rename happened: the item is complete and verifies
        assert len(items) == 1
        assert verify_item(items[0], load_policy(None, now=NOW), NOW).files_ok
    else:
        assert items == []
    policy = load_policy(Path(sample["policy"]), now=NOW)
    retry = install(sample["ref"], policy=policy, store=st, now=NOW)
    assert retry.status == ("already-installed" if stage == "renamed" else "installed")
    items = st.list()
    assert len(items) == 1 and items[0].digest == retry.digest
    assert all(verify_item(i, policy, NOW).ok for i in st.all_items())
    staging = store / "staging"
    assert stage == "renamed" or not staging.exists() or not any(staging.iterdir())


def test_concurrent_installs_are_serialized(sample: dict[str, Any], vectors_dir: Path) -> None:
    store = Path(sample["store"])
    other = sample["tmp"] / "other"
    push_cartridge(other, vectors_dir / "sample" / "sample.stripped.acx", "v1")
    marker = sample["tmp"] / "first-holds-lock"
    base = [
        sys.executable,
        "-m",
        "acxoci",
        "install",
        "--policy",
        str(sample["policy"]),
        "--store",
        str(store),
    ]
    env = dict(os.environ)
    first = subprocess.Popen([sys.executable, "-m", "tests.harness.install_child", sample["ref"],
                              str(sample["policy"]), str(store), "checked", str(marker), "first/one", "2"],
                             cwd=REPO)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    start = time.monotonic()
    second = subprocess.run(
        [*base, f"oci-layout:{other}:v1", "--name", "second/one"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.wait(timeout=60) == 0
    assert second.returncode == 0, second.stderr
    assert time.monotonic() - start > 0.5  # the second waited for the first one's lock
    st = Store(store)
    assert [i.name for i in st.list()] == ["first/one", "second/one"]
    assert [i.record["seq"] for i in st.list()] == [1, 2]


@pytest.mark.parametrize("stage", ["checked", "staged", "renamed"])
def test_sigkill_during_upgrade_keeps_the_previous_digest_current(
    sample: dict[str, Any], vectors_dir: Path, stage: str
) -> None:
    store = Path(sample["store"])
    st = Store(store)
    policy = load_policy(Path(sample["policy"]), now=NOW)
    old = install(sample["ref"], policy=policy, store=st, now=NOW, name="agent/x")
    assert old.status == "installed"
    newer = sample["tmp"] / "newer"
    push_cartridge(newer, vectors_dir / "sample" / "sample.stripped.acx", "v2")
    marker = sample["tmp"] / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.harness.install_child", f"oci-layout:{newer}:v2", str(sample["policy"]),
         str(store), stage, str(marker), "agent/x"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    current = st.require("agent/x")
    if stage == "renamed":
        assert current.digest != old.digest and len(st.all_items()) == 2  # superseded folder left behind
    else:
        assert current.digest == old.digest
    assert verify_item(current, policy, NOW).files_ok
    retry = install(f"oci-layout:{newer}:v2", policy=policy, store=st, now=NOW, name="agent/x")
    assert retry.status in ("installed", "already-installed")
    assert [i.digest for i in st.all_items()] == [retry.digest]
