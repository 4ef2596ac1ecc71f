"""Every promise of docs/cli.md is a test: the page is read, and what it states is done here
(completion shells, the global options, the exit code and kind of each error, the output shapes
of verdict, transfer and install commands, the hints, the signing-key rules, progress only on a
terminal) or, for the few that need a live registry or a full disk, named with the test that
does it (which must exist and name the kind). Where the CLI was right and the page wrong, the
page was fixed (--show-completion takes no shell; the verdict and install rows were short)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.cli import output
from acxoci.cli.output import COMMAND_KINDS
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO

PAGE = (REPO / "docs" / "cli.md").read_text("utf-8")
TICKS = re.compile(r"`([^`]+)`")


def _row(first_cell: str) -> list[str]:
    """The cells of the page's table row whose first cell is `first_cell`."""
    for line in PAGE.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"docs/cli.md has no row {first_cell!r}")


def _commands(cell: str) -> set[str]:
    """`workflow lint/verify/ready` -> the three commands; other ticks as they are."""
    out: set[str] = set()
    for tick in TICKS.findall(cell):
        head, _, tail = tick.rpartition(" ")
        out |= {f"{head} {t}".strip() for t in tail.split("/")} if "/" in tail else {tick}
    return out


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path) -> dict[str, Any]:
    """A signed cartridge pushed to a layout, its trust registry, and a registry trusting another key."""
    from tests.harness.installs import (
        PUBLISHER,
        make_cartridge,
        push_cartridge,
        registry_entry,
        trusting_policy,
        write_registry,
    )

    key: PrivateKey = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    push_cartridge(tmp_path / "layout", acx, "1.0.0")
    trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    other = write_registry(tmp_path / "other.json", [registry_entry(generate_ed25519(), PUBLISHER)])
    (tmp_path / "untrusting").mkdir()
    return {"tmp": tmp_path, "key": key, "acx": acx, "layout": tmp_path / "layout",
            "ref": f"oci-layout:{tmp_path / 'layout'}:1.0.0", "trust": trust, "other": other,
            "policy": trusting_policy(tmp_path, trust),
            "untrusting": trusting_policy(tmp_path / "untrusting", other)}


# ---- global options ------------------------------------------------------------------------------


def test_completion_for_every_shell_the_page_names(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shells = re.search(r"shell completion for the shell acx runs in \(([^)]*)\)", PAGE)
    assert shells is not None
    names = [s.strip().lower() for s in shells[1].replace(" and ", ", ").split(",")]
    assert names == ["bash", "zsh", "fish", "powershell"]
    marks = {"bash": "complete -o default -F _acx_completion acx", "zsh": "#compdef acx",
             "fish": "complete --command acx", "powershell": "Register-ArgumentCompleter"}
    for shell in names:
        assert f"`{shell}`" in PAGE  # the `_ACX_COMPLETE=source_SHELL` list names it too
        monkeypatch.setenv("_ACX_COMPLETE", f"source_{shell}")
        r = run_acx(capsys)
        assert r.returncode == 0 and marks[shell] in r.stdout, (shell, r.stdout[:200], r.stderr)
    monkeypatch.delenv("_ACX_COMPLETE")


def test_version_is_json_under_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = acx_json(capsys, "--version")
    assert code == 0 and out["tool"] == "acx" and out["version"]
    human = run_acx(capsys, "--version").stdout
    assert human.startswith("acx (acxoci) ")


def test_quiet_prints_the_digest_of_each_transfer_and_pull_to_stdout_only_bytes(
        world: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    row = _row("`-q`, `--quiet`")
    assert _commands(row[1]) >= {"push", "pull", "cp", "attach", "status-list publish", "pull -o -"}
    digest = r"sha256:[0-9a-f]{64}\n"
    r = run_acx(capsys, "-q", "push", str(world["acx"]), f"oci-layout:{tmp_path / 'q'}:1.0.0")
    assert r.returncode == 0 and re.fullmatch(digest, r.stdout), r.stdout
    pushed = f"oci-layout:{tmp_path / 'q'}:1.0.0"
    r = run_acx(capsys, "-q", "pull", pushed, "-o", str(tmp_path / "q.acx"))
    assert r.returncode == 0 and r.stdout == run_acx(capsys, "-q", "push", str(world["acx"]), pushed).stdout
    copied = run_acx(capsys, "-q", "cp", pushed, f"oci-layout:{tmp_path / 'q2'}:1.0.0")
    assert copied.returncode == 0 and copied.stdout == r.stdout
    note = tmp_path / "note.txt"
    note.write_text("a note")
    r = run_acx(capsys, "-q", "attach", world["ref"], str(note), "--artifact-type", "text/plain")
    assert r.returncode == 0 and re.fullmatch(digest, r.stdout)
    listed = _status_list(capsys, tmp_path)
    r = run_acx(capsys, "-q", "status-list", "publish", str(listed), f"oci-layout:{tmp_path / 's'}:status")
    assert r.returncode == 0 and re.fullmatch(digest, r.stdout), r.stdout + r.stderr
    # `pull -o -` under -q prints only the bytes: a pipe of bytes is run as a user runs it
    habits = (REPO / "tests" / "interop" / "test_cli_habits.py").read_text()
    assert "def test_pull_to_stdout_writes_the_verified_bytes" in habits


def _status_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    key = generate_ed25519()
    (tmp_path / "issuer.pem").write_bytes(key.pkcs8_pem())
    listed = tmp_path / "status.json"
    r = run_acx(capsys, "status-list", "create", "--id", "https://status.example/list", "--issuer",
                "did:web:status.example", "--issuer-key", str(tmp_path / "issuer.pem"), "-o", str(listed))
    assert r.returncode == 0, r.stderr
    return listed


def test_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """"Progress bars appear only when stderr is a terminal": every progress helper of the output
    layer is silent for a pipe, and draws on a terminal (unless --json or -q)."""
    helpers: list[Callable[[], Any]] = [lambda: output.status_line("x"),
                                        lambda: output.transfer_progress("done"),
                                        lambda: output.count_progress("x", 3)]
    for make in helpers:
        with make() as shown:
            assert shown is None  # pytest's stderr is no terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    for make in helpers:
        with make() as shown:
            assert shown is not None
    monkeypatch.setattr(output.OPTS, "json", True)
    for make in helpers:
        with make() as shown:
            assert shown is None


# ---- the output model -------------------------------------------------------------------------


def test_the_shape_rows_name_the_commands_of_each_kind() -> None:
    for kind in ("verdict", "transfer", "install"):
        listed = _commands(_row(f"`{kind}`")[1])
        coded = {c.removeprefix("acx ") for c, k in COMMAND_KINDS.items() if k == kind}
        coded -= {"harness check"}  # the deprecated, hidden old name of `harness lint`
        explicit = {"verdict": {"check", "harness lint"}}.get(kind, set())  # emit(kind="verdict")
        assert listed == coded | explicit, kind


def test_verdict_transfer_install_and_error_shapes(world: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path, vectors_dir: Path) -> None:
    pinned = re.compile(r"^.+@sha256:[0-9a-f]{64}$")
    # transfer: reference is REPO[:tag]@digest, and carries the digest
    listed = str(_status_list(capsys, tmp_path))
    for args in (("push", str(world["acx"]), f"oci-layout:{tmp_path / 'p'}:1.0.0"),
                 ("pull", world["ref"], "-o", str(tmp_path / "p.acx")),
                 ("cp", world["ref"], f"oci-layout:{tmp_path / 'c'}:1.0.0"),
                 ("attach", world["ref"], str(world["acx"]), "--artifact-type", "application/x.example"),
                 ("status-list", "publish", listed, f"oci-layout:{tmp_path / 's'}")):
        code, out = acx_json(capsys, *args)
        assert code == 0 and pinned.match(out["reference"]) and out["reference"].endswith(out["digest"]), out
    # verdict: ok and verdict, whatever the command
    for args in (("cartridge", "verify", str(world["acx"])),
                 ("verify", world["ref"], "--policy", str(world["policy"])),
                 ("policy", "check", str(world["acx"])), ("harness", "lint", str(world["acx"])),
                 ("check", str(world["acx"]), "--all-tools"),
                 ("workflow", "lint", str(REPO / "examples" / "workflow" / "review-team.cal.json")),
                 ("installed", "verify", "--store", str(tmp_path / "empty-store"))):
        code, out = acx_json(capsys, *args)
        assert isinstance(out.get("ok"), bool) and isinstance(out.get("verdict"), str), (args, out)
        assert out["ok"] is (code == 0), (args, code, out)
    # install: status, reference, checks; a refusal also has error (refused_by_policy, exit 8)
    code, out = acx_json(capsys, "install", world["ref"], "--policy", str(world["untrusting"]), "--store",
                         str(tmp_path / "store"))
    assert code == 8 and out["status"] == "refused" and out["checks"] and out["reference"], out
    assert out["error"]["kind"] == "refused_by_policy" and out["error"]["exitCode"] == 8
    code, out = acx_json(capsys, "install", world["ref"], "--policy", str(world["policy"]), "--store",
                         str(tmp_path / "store"))
    assert code == 0 and out["status"] == "installed" and out["checks"], out
    code, out = acx_json(capsys, "install", world["ref"], "--policy", str(world["policy"]), "--store",
                         str(tmp_path / "store"))
    assert code == 0 and out["status"] == "already-installed", out
    # error: {"error": {kind, message, exitCode, where?, hint?}}
    code, out = acx_json(capsys, "frobnicate")
    assert code == 2 and set(out) == {"error"} and {"kind", "message", "exitCode"} <= set(out["error"])


# ---- exit codes: every row of the table -------------------------------------------------------

#: Kinds whose test needs a live registry, a full disk or a second runner: the test that shows
#: the CLI exits with the row's code and kind (it must exist and name the kind).
ELSEWHERE: dict[str, str] = {
    "verification_failed": "tests/cli/test_cli_basics.py",
    "tampered": "tests/interop/test_oci_interop.py",
    "size_mismatch": "tests/oci/test_verifying_reader_copy.py",
    "truncated_body": "tests/oci/test_verifying_reader_copy.py",
    "wrong_scheme": "tests/interop/test_oci_tls_loopback.py",
    "unsupported": "tests/attestation/test_keyless_oci.py",
    "manifest_too_large": "tests/oci/test_hostile_layout.py",
    "limit_exceeded": "tests/oci/test_oci_bounds.py",
    "registry_protocol": "tests/oci/test_hostile_registry.py",
    "tls_failure": "tests/interop/test_oci_tls_loopback.py",
    "host_failure": "tests/interop/test_release_registries.py",
    "lease_held": "tests/release/test_concurrency.py",
    "lease_lost": "tests/release/test_lease_owner.py",
    "writeback_failed": "tests/release/test_disk_full.py",
    "blocked": "tests/install/test_one_judge.py",
}


def _exit_rows() -> list[tuple[int, str]]:
    rows = []
    for line in PAGE[PAGE.index("## Exit codes"):PAGE.index("## Transfers")].splitlines():
        m = re.match(r"^\| (\d+) \| (`[a-z_]+`|—) \|", line)
        if m:
            rows.append((int(m[1]), m[2].strip("`")))
    return rows


def _provoke(world: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[int, Any]]:
    """(exit code, JSON) of a command that ends in each kind this test can reach by itself."""
    got: dict[str, tuple[int, Any]] = {}
    got["usage"] = acx_json(capsys, "frobnicate")
    got["bad_reference"] = acx_json(capsys, "verify", "oci-layout:")
    (tmp_path / "garbage.pem").write_text("not a key")
    got["invalid_input"] = acx_json(capsys, "key", "inspect", str(tmp_path / "garbage.pem"))
    got["not_found"] = acx_json(capsys, "tags", f"oci-layout:{tmp_path / 'nowhere'}")
    got["refused_by_policy"] = acx_json(capsys, "pull", world["ref"], "-o", str(tmp_path / "x.acx"),
                                        "--trust-registry", str(world["other"]))
    key = generate_ed25519()
    (tmp_path / "enc.pem").write_bytes(key.pkcs8_pem(b"right"))
    monkeypatch.setenv("WRONG_PW", "wrong")
    got["auth_failure"] = acx_json(capsys, "key", "inspect", str(tmp_path / "enc.pem"), "--password-env",
                                   "WRONG_PW")
    got["harness_refused"] = _harness_refused(capsys, tmp_path, key)
    got["malformed_manifest"] = acx_json(capsys, "manifest", "get", _malformed_layout(tmp_path))
    got["digest_mismatch"] = acx_json(capsys, "pull", _corrupt_layer(world, tmp_path), "-o",
                                      str(tmp_path / "y.acx"))
    from acxoci.cli import cmd_key

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cmd_key, "read_bytes", boom)
    got["internal"] = acx_json(capsys, "key", "inspect", str(tmp_path / "garbage.pem"))

    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd_key, "read_bytes", interrupted)
    got["interrupted"] = acx_json(capsys, "key", "inspect", str(tmp_path / "garbage.pem"))
    return got


def _harness_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, key: PrivateKey) -> tuple[int, Any]:
    from tests.harness import env
    from tests.harness.installs import make_cartridge

    bad = make_cartridge(env.vectors(), tmp_path / "hr.acx", key, harness={"schemaVersion": "nope"})
    return acx_json(capsys, "check", str(bad), "--all-tools")


def _malformed_layout(tmp_path: Path) -> str:
    """A layout whose tagged manifest is valid JSON with the right digest but not an OCI manifest."""
    import hashlib

    layout = tmp_path / "malformed"
    body = b'{"schemaVersion": 2, "layers": "not a list"}'
    digest = hashlib.sha256(body).hexdigest()
    (layout / "blobs" / "sha256").mkdir(parents=True)
    (layout / "blobs" / "sha256" / digest).write_bytes(body)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": f"sha256:{digest}",
        "size": len(body), "annotations": {"org.opencontainers.image.ref.name": "bad"}}]}))
    return f"oci-layout:{layout}:bad"


def _corrupt_layer(world: dict[str, Any], tmp_path: Path) -> str:
    """A copy of the layout whose cartridge layer's bytes no longer hash to their digest."""
    import shutil

    from tests.harness.installs import blob_path

    copy = tmp_path / "corrupt"
    shutil.copytree(world["layout"], copy)
    index = json.loads((copy / "index.json").read_text())
    manifest = json.loads(blob_path(copy, index["manifests"][0]["digest"]).read_text())
    layer = blob_path(copy, manifest["layers"][0]["digest"])
    data = bytearray(layer.read_bytes())
    data[-1] ^= 1
    layer.write_bytes(bytes(data))
    return f"oci-layout:{copy}:1.0.0"


def test_every_row_of_the_exit_code_table(world: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _exit_rows()
    assert len(rows) > 25
    got = _provoke(world, capsys, tmp_path, monkeypatch)
    for code, kind in rows:
        if kind == "—":
            continue
        if kind in got:
            exit_code, out = got[kind]
            assert exit_code == code and out["error"]["kind"] == kind, (kind, exit_code, out)
            assert out["error"]["exitCode"] == code
        else:
            where = REPO / ELSEWHERE[kind]
            assert f'"{kind}"' in where.read_text("utf-8"), f"{where} does not test {kind}"
    documented = {k for _, k in rows}
    assert set(got) - {"interrupted"} <= documented and set(ELSEWHERE) <= documented
    # the three rows without a kind: success, interrupted, a closed stdout
    assert (0, "—") in rows and (130, "—") in rows and (141, "—") in rows
    assert got["interrupted"][0] == 130
    assert "exit 141" in (REPO / "tests" / "cli" / "test_cli_closed_stdout.py").read_text() or \
        "141" in (REPO / "tests" / "cli" / "test_cli_closed_stdout.py").read_text()
    # the hints the page promises
    assert got["internal"][1]["error"]["hint"] == "rerun with -v and report it"
    assert got["usage"][1]["error"]["hint"] == "see `acx --help`"


# ---- signing keys -------------------------------------------------------------------------------


def test_signing_key_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A KMS scheme acx does not speak is a usage error (2); a key others may read gets a warning."""
    target = tmp_path / "f.txt"
    target.write_text("x")
    (tmp_path / "pred.json").write_text("{}")
    r = run_acx(capsys, "attest-blob", str(target), "--key", "awskms://alias/x", "--predicate",
                str(tmp_path / "pred.json"), "--bundle", str(tmp_path / "b.json"))
    assert r.returncode == 2 and "usage" in r.stderr, r.stderr
    key = tmp_path / "open.pem"
    key.write_bytes(generate_ed25519().pkcs8_pem())
    os.chmod(key, 0o644)
    r = run_acx(capsys, "attest-blob", str(target), "--key", str(key), "--predicate",
                str(tmp_path / "pred.json"), "--bundle", str(tmp_path / "b.json"))
    assert r.returncode == 0 and "readable by group or others" in r.stderr, r.stderr


def test_concurrency_is_one_to_sixty_four(world: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    assert "`--concurrency N` (1 to 64)" in PAGE
    for n in ("0", "65"):
        r = run_acx(capsys, "push", str(world["acx"]), f"oci-layout:{tmp_path / 'n'}:1.0.0",
                    "--concurrency", n)
        assert r.returncode == 2, (n, r.stderr)
    assert run_acx(capsys, "push", str(world["acx"]), f"oci-layout:{tmp_path / 'n'}:1.0.0",
                   "--concurrency", "64").returncode == 0
