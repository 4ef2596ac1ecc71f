"""The CLI shell: version, help, global flags in any position, one-line errors, JSON errors,
and the documented exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acxoci import __version__
from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from acxoci.errors import ALL_ERRORS, AcxError, InvalidInput, NotFound
from tests.harness.env import REPO


@pytest.fixture(autouse=True)
def reset_opts() -> None:
    OPTS.json = OPTS.verbose = OPTS.quiet = False


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ex:
        cli_main.main(args)
    out, err = capsys.readouterr()
    return int(ex.value.code or 0), out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and __version__ in out


def test_python_dash_m_and_console_script_agree() -> None:
    a = subprocess.run(
        [sys.executable, "-m", "acxoci", "--version"], capture_output=True, text=True, cwd=REPO
    )
    assert a.returncode == 0 and __version__ in a.stdout


def test_unknown_command_is_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["no-such-command"], capsys)
    assert code == 2
    assert "usage" in err and "no-such-command" in err
    assert "Traceback" not in err


def test_json_flag_after_subcommand_gives_json_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["no-such-command", "--json"], capsys)
    assert code == 2
    doc = json.loads(out)
    assert doc["error"]["kind"] == "usage" and doc["error"]["exitCode"] == 2


def test_global_flags_are_extracted_anywhere() -> None:
    OPTS.json = False
    rest = cli_main._extract_global_flags(["cartridge", "verify", "--json", "x.acx", "-v", "--", "--json"])
    assert rest == ["cartridge", "verify", "x.acx", "--", "--json"]
    assert OPTS.json and OPTS.verbose and not OPTS.quiet


def test_exit_codes_are_distinct_per_kind() -> None:
    by_kind = {cls.kind: cls.exit_code for cls in ALL_ERRORS}
    # tampered is a kind of verification failure and shares its exit code; all others differ
    codes = [c for k, c in by_kind.items() if k != "tampered"]
    assert len(codes) == len(set(codes)), by_kind
    for needed in (
        "usage",
        "invalid_input",
        "verification_failed",
        "not_found",
        "auth_failure",
        "host_failure",
        "writeback_failed",
        "refused_by_policy",
    ):
        assert needed in by_kind


def test_error_json_shape() -> None:
    err = NotFound("tag v9 not found", where="oci-layout:/x", hint="list tags with `acx tags`")
    doc = err.to_json()
    assert doc == {
        "kind": "not_found",
        "message": "tag v9 not found",
        "exitCode": 4,
        "where": "oci-layout:/x",
        "hint": "list tags with `acx tags`",
    }
    assert err.one_line().startswith("oci-layout:/x: tag v9 not found")


def test_docs_list_every_exit_code() -> None:
    text = (REPO / "docs" / "cli.md").read_text()
    for cls in ALL_ERRORS:
        assert f"`{cls.kind}`" in text, f"docs/cli.md does not document {cls.kind}"
        assert f"| {cls.exit_code} " in text


def test_acx_error_raised_in_command_prints_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    probe = typer.Typer()

    @probe.command()
    def boom() -> None:
        raise InvalidInput("bad header", where="x.acx")

    @probe.command()
    def other() -> None:
        """Second command so typer keeps subcommand names."""

    monkeypatch.setattr(cli_main, "app", probe)
    code, _, err = run(["boom"], capsys)
    assert code == InvalidInput.exit_code
    assert "x.acx: bad header" in err and "Traceback" not in err
    code, out, _ = run(["boom", "--json"], capsys)
    assert json.loads(out)["error"]["where"] == "x.acx"
    assert issubclass(InvalidInput, AcxError)


def test_typer_exit_code_is_propagated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verdict command that raises typer.Exit(1) must exit 1, not 0."""
    import typer

    probe = typer.Typer()

    @probe.command()
    def verdict() -> None:
        raise typer.Exit(1)

    @probe.command()
    def fine() -> None:
        """Second command so typer keeps subcommand names."""

    monkeypatch.setattr(cli_main, "app", probe)
    code, _, _ = run(["verdict"], capsys)
    assert code == 1
    code, _, _ = run(["fine"], capsys)
    assert code == 0
