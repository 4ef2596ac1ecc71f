"""CLI habits people expect, each run as a user runs it (a subprocess with pipes, not a TTY):
shell completion, `key inspect`, `-q push` prints the digest, `pull -o -` streams to stdout, a
push needs an explicit tag, `manifest get` defaults to `:latest` as `install` does, `cp` keeps the
tag, `--valid-days` below 1 is refused, `--json --version` is JSON, no line is cut at 80 columns
in a pipe, and no library text or Python repr reaches a message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.env import REPO

pytestmark = pytest.mark.interop


def acx(
    *args: str, cwd: Path, env: dict[str, str] | None = None, code: int | None = 0
) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if k not in ("ACX_KEY_PASSWORD", "COSIGN_PASSWORD")}
    proc = subprocess.run([sys.executable, "-m", "acxoci", *args], cwd=cwd, capture_output=True,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})}, stdin=subprocess.DEVNULL,
                          timeout=120)
    if code is not None:
        assert proc.returncode == code, (args, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc


def js(proc: subprocess.CompletedProcess[bytes]) -> Any:
    return json.loads(proc.stdout)


@pytest.fixture
def pushed(tmp_path: Path) -> dict[str, Any]:
    """A signed cartridge in an OCI layout whose path is long (well over 80 columns)."""
    deep = tmp_path / ("a-long-folder-name-for-the-layout-store-" * 3) / "store"
    acx("key", "generate", "-o", "me.pem", cwd=tmp_path)
    acx("key", "trust", "me.pub.pem", "--publisher", "dev.example.habits", "--trust-registry", "trust.json",
        "--not-before", "2026-01-01T00:00:00Z", cwd=tmp_path)
    acx("cartridge", "build", str(REPO / "examples" / "agent-package"), "-o", "agent.acx", "--publisher",
        "dev.example.habits", "--key", "me.pem", cwd=tmp_path)
    out = acx("-q", "push", "agent.acx", f"oci-layout:{deep}:1.0.0", "--sign", "--key", "me.pem",
              cwd=tmp_path)
    digest = out.stdout.decode().strip()
    return {"dir": tmp_path, "layout": deep, "digest": digest, "ref": f"oci-layout:{deep}:1.0.0"}


def test_quiet_push_prints_the_digest_and_nothing_else(pushed: dict[str, Any]) -> None:
    assert pushed["digest"].startswith("sha256:") and len(pushed["digest"]) == 71


def test_quiet_prints_just_the_digest_on_every_transfer_command(pushed: dict[str, Any]) -> None:
    """`-q` gives a script the one result it needs on pull, cp and attach too, as on push."""
    d, digest = pushed["dir"], pushed["digest"]
    assert acx("-q", "pull", pushed["ref"], "-o", "q.acx", cwd=d).stdout.decode() == digest + "\n"
    mirror = f"oci-layout:{d / 'q-mirror'}"
    assert acx("-q", "cp", pushed["ref"], mirror, cwd=d).stdout.decode() == digest + "\n"
    (d / "note.json").write_text('{"note": 1}\n')
    att = acx("-q", "attach", pushed["ref"], "note.json", "--artifact-type", "application/vnd.example+json",
              cwd=d).stdout.decode()
    assert att.startswith("sha256:") and len(att) == 72 and att.strip() != digest


def test_push_without_a_tag_is_refused(pushed: dict[str, Any]) -> None:
    proc = acx("--json", "push", "agent.acx", f"oci-layout:{pushed['layout']}", cwd=pushed["dir"], code=2)
    err = js(proc)["error"]
    assert err["kind"] == "usage" and ":tag" in err["message"]
    tags = js(acx("--json", "tags", f"oci-layout:{pushed['layout']}", cwd=pushed["dir"]))
    assert "latest" not in json.dumps(tags)


def test_pull_to_stdout_writes_the_verified_bytes(pushed: dict[str, Any]) -> None:
    d = pushed["dir"]
    proc = acx("pull", pushed["ref"], "-o", "-", cwd=d)
    assert proc.stdout == (d / "agent.acx").read_bytes()
    assert not (d / "-").exists()
    assert b"to stdout" in proc.stderr
    acx("--json", "pull", pushed["ref"], "-o", "-", cwd=d, code=2)


def test_pull_verdict_names_the_file_written_not_a_temp_file(pushed: dict[str, Any]) -> None:
    d = pushed["dir"]
    out = js(acx("--json", "pull", pushed["ref"], "-o", "copy.acx", cwd=d))
    assert out["path"].endswith("copy.acx")
    assert out["verdict"] is None or out["verdict"].get("file", out["path"]) == out["path"]


def test_manifest_get_defaults_to_latest_like_install(pushed: dict[str, Any]) -> None:
    d, layout = pushed["dir"], pushed["layout"]
    acx("cp", pushed["ref"], f"oci-layout:{layout}:latest", cwd=d)
    got = js(acx("--json", "manifest", "get", f"oci-layout:{layout}", cwd=d))
    assert got["descriptor"]["digest"] == pushed["digest"]


def test_cp_keeps_the_tag_in_destination(pushed: dict[str, Any]) -> None:
    d = pushed["dir"]
    out = js(acx("--json", "cp", pushed["ref"], f"oci-layout:{d / 'mirror'}", cwd=d))
    assert out["destination"] == f"oci-layout:{d / 'mirror'}:1.0.0@{pushed['digest']}"


def test_nothing_is_cut_at_80_columns_in_a_pipe(pushed: dict[str, Any]) -> None:
    d = pushed["dir"]
    tree = acx("discover", pushed["ref"], cwd=d).stdout.decode()
    assert str(pushed["layout"]) in tree and "…" not in tree
    digests = [line for line in tree.splitlines() if "sha256:" in line]
    assert digests and all(len(line.split("sha256:")[1].split()[0].rstrip(")")) >= 64 for line in digests)


def test_show_completion_prints_a_bash_script(tmp_path: Path) -> None:
    script = acx("--show-completion", "bash", cwd=tmp_path).stdout.decode()
    assert "_ACX_COMPLETE=complete_bash" in script and "complete " in script
    words = acx("cart", cwd=tmp_path, env={"_ACX_COMPLETE": "complete_bash", "COMP_WORDS": "acx cart",
                                          "COMP_CWORD": "1"}).stdout.decode()
    assert words.split() == ["cartridge"]
    sub = acx(cwd=tmp_path, env={"_ACX_COMPLETE": "complete_bash", "COMP_WORDS": "acx key ",
                                 "COMP_CWORD": "2"}).stdout.decode()
    assert {"generate", "trust", "inspect"} <= set(sub.split())


def test_key_inspect_public_private_encrypted(tmp_path: Path) -> None:
    acx("key", "generate", "-o", "p.pem", "--type", "p256", cwd=tmp_path)
    acx("key", "generate", "-o", "e.pem", "--password-env", "PW", cwd=tmp_path, env={"PW": "pw"})
    priv = js(acx("--json", "key", "inspect", "p.pem", cwd=tmp_path))
    pub = js(acx("--json", "key", "inspect", "p.pub.pem", cwd=tmp_path))
    assert priv["kind"] == "private" and pub["kind"] == "public" and priv["keyId"] == pub["keyId"]
    assert priv["encrypted"] is False and "PRIVATE" not in json.dumps(priv)
    enc = js(acx("--json", "key", "inspect", "e.pem", "--password-env", "PW", cwd=tmp_path, env={"PW": "pw"}))
    assert enc["encrypted"] is True and enc["keyId"].startswith("ed25519:")
    locked = js(acx("--json", "key", "inspect", "e.pem", cwd=tmp_path, code=5))["error"]
    assert locked["kind"] == "auth_failure"


@pytest.mark.parametrize("content", [
    b"junk\n", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"])
def test_bad_key_files_say_so_without_library_text(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "bad.pem").write_bytes(content)
    err = js(acx("--json", "key", "inspect", "bad.pem", cwd=tmp_path, code=3))["error"]
    assert "cryptography.io" not in err["message"] and "MalformedFraming" not in err["message"]
    assert "not a PEM public key" in err["message"]


@pytest.mark.parametrize("days", ["0", "-1"])
def test_valid_days_below_one_is_refused(tmp_path: Path, days: str) -> None:
    acx("key", "generate", "-o", "k.pem", cwd=tmp_path)
    err = js(acx("--json", "key", "trust", "k.pub.pem", "--publisher", "dev.example.x",
                 "--trust-registry", "t.json",
                 "--valid-days", days, cwd=tmp_path, code=2))["error"]
    assert "--valid-days" in err["message"]
    assert not (tmp_path / "t.json").exists()


def test_json_version_is_json(tmp_path: Path) -> None:
    for args in (["--json", "--version"], ["--version", "--json"]):
        out = js(acx(*args, cwd=tmp_path))
        assert out["tool"] == "acx" and out["version"]


def test_the_registry_own_error_detail_is_kept(tmp_path: Path, distribution_registry: Any) -> None:
    err = js(acx("--json", "manifest", "get", f"{distribution_registry.host}/no/such:1", cwd=tmp_path,
                 code=4))["error"]
    assert err["kind"] == "not_found" and "HTTP 404: MANIFEST_UNKNOWN" in err["message"], err


def test_a_usage_error_points_at_the_help_of_the_command_that_was_wrong(tmp_path: Path) -> None:
    """`acx verify` without its argument says `see acx verify --help`, not the top-level help."""
    err = js(acx("--json", "verify", cwd=tmp_path, code=2))["error"]
    assert err["kind"] == "usage" and err["hint"] == "see `acx verify --help`"
    err = js(acx("--json", "key", "generat", cwd=tmp_path, code=2))["error"]
    assert "generate" in err["message"] and err["hint"] == "see `acx key --help`"
    assert js(acx("--json", "frobnicate", cwd=tmp_path, code=2))["error"]["hint"] == "see `acx --help`"


def test_key_trust_names_the_bad_key_file_and_bounds_its_read(tmp_path: Path) -> None:
    """A file that is not a key is blamed on the key file (not the registry); an endless file
    (/dev/zero) is refused before a byte is read: a key file must be a regular file."""
    (tmp_path / "junk.pem").write_bytes(b"not a key\n")
    err = js(acx("--json", "key", "trust", "junk.pem", "--publisher", "dev.example.x",
                 "--trust-registry", "t.json",
                 cwd=tmp_path, code=3))["error"]
    assert err["kind"] == "invalid_input" and err["where"] == "junk.pem", err
    assert not (tmp_path / "t.json").exists()
    for args in (["key", "trust", "/dev/zero", "--publisher", "dev.example.x", "--trust-registry", "t.json"],
                 ["key", "inspect", "/dev/zero"]):
        err = js(acx("--json", *args, cwd=tmp_path, code=3))["error"]
        assert err["kind"] == "invalid_input" and "not a regular file" in err["message"], err


def test_login_with_an_empty_stdin_says_stdin_was_empty(tmp_path: Path) -> None:
    """`--password-stdin` with nothing on stdin must not tell the user to pass --password-stdin."""
    proc = acx("--json", "login", "127.0.0.1:1", "-u", "me", "--password-stdin", cwd=tmp_path, code=2)
    err = js(proc)["error"]
    assert "empty" in err["message"] and "use --password-stdin" not in err["message"], err


def test_a_missing_file_to_push_or_attach_is_not_found(pushed: dict[str, Any]) -> None:
    """Exit 4 `not_found` as docs/cli.md says for a missing file, not 3 (malformed)."""
    d = pushed["dir"]
    for args in (["push", "missing.acx", f"oci-layout:{d / 'x'}:1"],
                 ["attach", pushed["ref"], "missing.json", "--artifact-type", "application/vnd.example+json"],
                 ):
        err = js(acx("--json", *args, cwd=d, code=4))["error"]
        assert err["kind"] == "not_found" and "missing." in err["where"], err
    err = js(acx("--json", "push", ".", f"oci-layout:{d / 'x'}:1", cwd=d, code=3))["error"]
    assert err["kind"] == "invalid_input"


def test_a_closed_stdout_exits_141_for_human_output_too(pushed: dict[str, Any]) -> None:
    """`acx tags R | head -1` exits 141 (docs/cli.md), whether JSON or rich wrote the output:
    rich's own broken-pipe handler exited 1, which reads as "verification failed"."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before acx writes
    try:
        for args in (["tags", f"oci-layout:{pushed['layout']}"], ["discover", pushed["ref"]],
                     ["--json", "tags", f"oci-layout:{pushed['layout']}"]):
            proc = subprocess.run([sys.executable, "-m", "acxoci", *args], cwd=pushed["dir"],
                                  stdout=write_end, stderr=subprocess.PIPE,
                                  env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
            assert proc.returncode == 141 and proc.stderr == b"", (args, proc.returncode, proc.stderr)
    finally:
        os.close(write_end)
