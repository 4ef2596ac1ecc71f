"""Terminal prompts, driven through a real pseudo-terminal (tmux): `acx login -u USER` asks for the
password, and a signing command asks for an encrypted key's passphrase, only when a person is at a
terminal; with stdin not a terminal nothing waits for input and the error says what to pass.

tmux runs on a private socket in the test's folder, so no user session is touched. tmux missing
skips on a developer machine and fails in CI (`make peers` installs it)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import env
from tests.harness.servers import Registry, start_distribution

pytestmark = pytest.mark.interop

REPO = env.REPO
USER, PASSWORD = "alice", "correct horse battery"


class Tmux:
    """One detached tmux server (private socket) running one command in a 200x50 terminal."""

    def __init__(self, folder: Path) -> None:
        found = shutil.which("tmux")
        if not found:
            env.missing("tmux is not installed (make peers installs it)")
        self.bin = str(found)
        self.socket = str(folder / "tmux.sock")

    def _tmux(self, *args: str) -> str:
        return subprocess.run([self.bin, "-S", self.socket, *args], check=True, capture_output=True,
                              text=True, timeout=30).stdout

    def start(self, command: str, cwd: Path, extra_env: dict[str, str]) -> None:
        env_args = [a for k, v in extra_env.items() for a in ("-e", f"{k}={v}")]
        self._tmux("new-session", "-d", "-x", "200", "-y", "50", "-c", str(cwd), *env_args,
                   f"{command}; echo ACX-EXIT=$?; sleep 60")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J")

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.2)
        pytest.fail(f"the terminal never showed {text!r}; it shows:\n{self.screen()}")

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-l", text)
        self._tmux("send-keys", "Enter")

    def stop(self) -> None:
        subprocess.run([self.bin, "-S", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path)
    yield t
    t.stop()


@pytest.fixture
def private_registry(tmp_path: Path) -> Iterator[Registry]:
    reg = start_distribution(env.peer("docker-registry"), tmp_path / "registry", basic_auth=(USER, PASSWORD))
    yield reg
    reg.stop()


def _acx_cmd() -> str:
    return f"{sys.executable} -m acxoci"


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "DOCKER_CONFIG": str(home / ".docker"), "PYTHONPATH": str(REPO),
            "ACX_KEY_PASSWORD": "", "NO_COLOR": "1"}


def test_login_prompts_for_the_password_on_a_terminal(
    tmp_path: Path, tmux: Tmux, private_registry: Registry
) -> None:
    tmux.start(f"env -u ACX_KEY_PASSWORD -u COSIGN_PASSWORD {_acx_cmd()} login {private_registry.host} "
               f"-u {USER}", tmp_path, _env(tmp_path))
    tmux.wait_for(f"Password for {USER}@{private_registry.host}:")
    tmux.type(PASSWORD)
    shown = tmux.wait_for("ACX-EXIT=")
    assert "Login Succeeded" in shown and "ACX-EXIT=0" in shown, shown
    assert PASSWORD not in shown  # typed without echo
    stored = json.loads((tmp_path / "home" / ".docker" / "config.json").read_text())
    auth = stored["auths"][private_registry.host]["auth"]
    assert base64.b64decode(auth).decode() == f"{USER}:{PASSWORD}"  # what was typed, checked by the registry


def test_encrypted_key_prompts_for_its_passphrase_on_a_terminal(tmp_path: Path, tmux: Tmux) -> None:
    key = tmp_path / "enc.pem"
    subprocess.run([sys.executable, "-m", "acxoci", "key", "generate", "-o", str(key),
                    "--password-env", "PW"], check=True, capture_output=True,
                   env={**os.environ, "PW": "s3cret"}, cwd=REPO)
    flow = REPO / "examples" / "workflow" / "review-team.cal.json"
    tmux.start(f"env -u ACX_KEY_PASSWORD -u COSIGN_PASSWORD {_acx_cmd()} workflow sign {flow} "
               f"--publisher dev.example.tty --key {key} -o {tmp_path / 'signed.cal.json'}",
               tmp_path, _env(tmp_path))
    tmux.wait_for(f"Passphrase for {key}:")
    tmux.type("s3cret")
    shown = tmux.wait_for("ACX-EXIT=")
    assert "SIGNED" in shown and "ACX-EXIT=0" in shown, shown
    assert "s3cret" not in shown
    assert (tmp_path / "signed.cal.json").is_file()


def test_no_prompt_when_stdin_is_not_a_terminal(tmp_path: Path, private_registry: Registry) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("ACX_KEY_PASSWORD", "COSIGN_PASSWORD")}
    run_env = {**base, "HOME": str(tmp_path), "DOCKER_CONFIG": str(tmp_path / ".docker")}
    login = subprocess.run([sys.executable, "-m", "acxoci", "login", private_registry.host, "-u", USER],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, env=run_env, timeout=60,
                           cwd=REPO)
    assert login.returncode == 2 and "--password-stdin" in login.stderr
    key = tmp_path / "enc.pem"
    subprocess.run([sys.executable, "-m", "acxoci", "key", "generate", "-o", str(key),
                    "--password-env", "PW"], check=True, capture_output=True,
                   env={**run_env, "PW": "x"}, cwd=REPO)
    sign = subprocess.run([sys.executable, "-m", "acxoci", "workflow", "sign",
                           str(REPO / "examples" / "workflow" / "review-team.cal.json"), "--publisher",
                           "dev.example.tty", "--key", str(key), "-o", str(tmp_path / "s.json")],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=run_env, timeout=60,
                          cwd=REPO)
    assert sign.returncode == 5 and "no password was given" in sign.stderr
    assert "Passphrase" not in sign.stderr
