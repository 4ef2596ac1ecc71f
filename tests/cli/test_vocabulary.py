"""One vocabulary for the CLI (docs/cli.md, "Vocabulary"): the table lists every flag of every
command under its one name, read here from the click command objects every `acx … --help` is
rendered from, so a flag added anywhere without going through the table fails this test. Old
spellings are hidden from help, still work for one release with a deprecation warning on stderr,
and are exactly the page's old-spellings table. `--format json` is `--json`; `--oci-layout` is
oras's flag; `--fallback-tag` is only where referrers are written; help never cuts a flag name."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperOption

from acxoci.attest.keys import generate_ed25519
from acxoci.cli import common, groups, main
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO

GLOBAL = "(global)"
EVERY_REGISTRY_COMMAND = "every registry command"
CELL = re.compile(r"(?<!\\)\|")
TICKS = re.compile(r"`([^`]+)`")


def _commands() -> Iterator[tuple[str, Any]]:
    """(path, click command) of the root (GLOBAL) and every visible command, groups walked iteratively."""
    groups.register_all(main.app)
    todo: list[tuple[str, Any]] = [("", typer.main.get_command(main.app))]
    while todo:
        path, cmd = todo.pop()
        yield path or GLOBAL, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            if not getattr(sub, "hidden", False):
                todo.append(((path + " " + name).strip(), sub))


COMMANDS = dict(_commands())


def _names(param: Any) -> tuple[str, ...]:
    return (*param.opts, *param.secondary_opts)


def code_flags(*, hidden: bool) -> dict[str, set[str]]:
    """Flag name -> the commands that take it (visible flags, or with `hidden` the hidden ones)."""
    out: dict[str, set[str]] = {}
    for path, cmd in COMMANDS.items():
        for p in cmd.params:
            if isinstance(p, TyperOption) and bool(p.hidden) == hidden:
                for name in _names(p):
                    out.setdefault(name, set()).add(path)
    return out


def _table(marker: str) -> list[list[str]]:
    """The rows (cells) of the table right after `<!-- marker -->` in docs/cli.md."""
    lines = (REPO / "docs" / "cli.md").read_text("utf-8").splitlines()
    start = lines.index(f"<!-- {marker} -->") + 3  # the marker, the header, the rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in CELL.split(line.strip())[1:-1]])
    assert rows, f"no rows under <!-- {marker} -->"
    return rows


def registry_commands() -> set[str]:
    """The commands docs/cli.md's "Reaching registries" names (what EVERY_REGISTRY_COMMAND stands for)."""
    text = (REPO / "docs" / "cli.md").read_text("utf-8")
    start = text.index("Every command that talks to a registry")
    para = text[start:text.index("resolved once per registry host")]
    return set(TICKS.findall(para)) - {"https://"}


def _commands_cell(cell: str) -> set[str]:
    out = set(TICKS.findall(cell))
    if GLOBAL in cell:
        out.add(GLOBAL)
    if EVERY_REGISTRY_COMMAND in cell:
        out |= registry_commands()
    return out


def doc_flags() -> dict[str, set[str]]:
    """Flag name -> the commands docs/cli.md's vocabulary table lists it under (each name once)."""
    out: dict[str, set[str]] = {}
    for flags, _meaning, commands in _table("vocabulary"):
        names = [t.split()[0] for t in TICKS.findall(flags)]
        assert names and all(n.startswith("-") for n in names), flags
        for name in names:
            assert name not in out, f"{name} has two rows: one name is one row"
            out[name] = _commands_cell(commands)
    return out


def test_every_flag_of_every_command_is_in_the_table_under_its_one_name() -> None:
    code, doc = code_flags(hidden=False), doc_flags()
    assert len(COMMANDS) > 80 and len(code) > 140  # the walk saw the whole CLI
    missing = {f: sorted(c) for f, c in code.items() if f not in doc}
    assert not missing, f"add these flags to docs/cli.md's vocabulary table: {missing}"
    wrong = {f: {"code": sorted(code[f]), "table": sorted(doc[f])} for f in code if doc[f] != code[f]}
    assert not wrong, f"the table lists these flags under other commands than the code has: {wrong}"
    stale = sorted(set(doc) - set(code))
    assert not stale, f"the table lists flags no command has: {stale}"


def test_every_registry_command_is_the_transport_option_set() -> None:
    assert registry_commands() == code_flags(hidden=False)["--registries"]


def _old_table() -> set[tuple[str, str, str | None]]:
    out = set()
    for old, on, now in _table("old-spellings"):
        new = TICKS.findall(now)[0] if now.startswith("`") else None
        for path in TICKS.findall(on):
            out.add((path, TICKS.findall(old)[0], new))
    return out


def test_old_spellings_are_the_page_table_and_hidden_on_the_commands() -> None:
    code = {(path, old, new) for path in COMMANDS
            for old, (new, _why) in common.old_spellings(path).items()}
    assert code == _old_table()
    hidden = {(path, name) for name, paths in code_flags(hidden=True).items() for path in paths}
    assert hidden == {(path, old) for path, old, _ in code}
    assert len(code) > 40


def test_help_hides_old_spellings_and_cuts_no_flag_name(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns (a narrow terminal) every flag name of a command's help is printed whole."""
    monkeypatch.setenv("COLUMNS", "80")
    for path in ("verify", "cp", "key trust", "push", "policy init"):
        out = run_acx(capsys, *path.split(), "--help").stdout
        cmd = COMMANDS[path]
        for p in cmd.params:
            if isinstance(p, TyperOption):
                for name in _names(p):
                    shown = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", out) is not None
                    assert shown != bool(p.hidden), (path, name)


@pytest.fixture
def key_files(tmp_path: Path) -> Path:
    key = generate_ed25519()
    (tmp_path / "k.pub.pem").write_text(key.public().spki_pem())
    return tmp_path


def test_an_old_spelling_works_with_a_warning_and_once(capsys: pytest.CaptureFixture[str],
                                                       key_files: Path) -> None:
    out = key_files / "old.pem"
    r = run_acx(capsys, "key", "generate", "--out", str(out), "--type", "p256")
    assert r.returncode == 0 and out.is_file(), r.stderr
    assert "--out is the old spelling of --output" in r.stderr
    assert "--type is the old spelling of --algorithm" in r.stderr
    assert "P-256" in out.read_text() or "PRIVATE KEY" in out.read_text()
    reg = key_files / "trust.json"
    r = run_acx(capsys, "key", "trust", str(key_files / "k.pub.pem"), "--publisher", "com.example.team",
                "-r", str(reg))
    assert r.returncode == 0 and json.loads(reg.read_text())["keys"], r.stderr
    assert "-r is the old spelling of --trust-registry on `acx key trust`" in r.stderr
    # the old and the new spelling of one flag: a usage error, not a silent choice
    r = run_acx(capsys, "key", "trust", str(key_files / "k.pub.pem"), "--publisher", "com.example.team",
                "--registry", str(reg), "--trust-registry", str(reg))
    assert r.returncode == 2 and "give it once" in r.stderr
    # a required flag is still required under either spelling
    r = run_acx(capsys, "key", "generate")
    assert r.returncode == 2 and "--output" in r.stderr


def test_a_retired_flag_does_nothing_and_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r = run_acx(capsys, "tags", f"oci-layout:{tmp_path / 'none'}", "--fallback-tag")
    assert r.returncode == 4  # the command ran (and found no layout)
    assert "--fallback-tag does nothing on `acx tags` (it writes no referrers)" in r.stderr


def test_format_json_is_json_and_format_text_is_human(capsys: pytest.CaptureFixture[str],
                                                     key_files: Path) -> None:
    pub = str(key_files / "k.pub.pem")
    as_json = run_acx(capsys, "--json", "key", "inspect", pub).stdout
    for spelling in (("--format", "json"), ("--format=json",)):
        assert run_acx(capsys, "key", "inspect", pub, *spelling).stdout == as_json
        assert run_acx(capsys, *spelling, "key", "inspect", pub).stdout == as_json
    human = run_acx(capsys, "key", "inspect", pub, "--format", "text").stdout
    assert human.startswith("public key") and not human.startswith("{")
    r = run_acx(capsys, "key", "inspect", pub, "--format", "yaml")
    assert r.returncode == 2 and "--format takes json or text" in r.stderr


def test_oci_layout_flag_is_the_layout_prefix(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             vectors_dir: Path) -> None:
    from tests.harness.installs import make_cartridge, push_cartridge

    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", generate_ed25519())
    push_cartridge(tmp_path / "layout", acx, "1.0.0")
    code, by_prefix = acx_json(capsys, "tags", f"oci-layout:{tmp_path / 'layout'}")
    code2, by_flag = acx_json(capsys, "tags", "--oci-layout", str(tmp_path / "layout"))
    assert code == code2 == 0 and by_flag == by_prefix and "1.0.0" in by_flag["tags"]
    code, pulled = acx_json(capsys, "pull", "--oci-layout", f"{tmp_path / 'layout'}:1.0.0", "-o",
                            str(tmp_path / "out.acx"))
    assert code == 0 and (tmp_path / "out.acx").read_bytes() == acx.read_bytes(), pulled
    code, copied = acx_json(capsys, "cp", "--from-oci-layout", "--to-oci-layout",
                            f"{tmp_path / 'layout'}:1.0.0", f"{tmp_path / 'copy'}:1.0.0")
    assert code == 0 and copied["digest"] == pulled["digest"], copied
    assert (tmp_path / "copy" / "index.json").is_file()


def test_fallback_tag_only_where_referrers_are_written() -> None:
    writers = code_flags(hidden=False)["--fallback-tag"]
    assert writers == {"attach", "attest", "cp", "exchange mirror", "level issue", "push", "release resume",
                       "release run"}


def test_push_format_legacy_is_still_the_attestation_format(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, vectors_dir: Path) -> None:
    """`push --sign --format legacy` (the old spelling) attests in the legacy format, with a warning;
    `--format json` on the same command is the output format."""
    import os

    from tests.harness.installs import make_cartridge

    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    (tmp_path / "k.pem").write_bytes(key.pkcs8_pem())
    os.chmod(tmp_path / "k.pem", 0o600)
    r = run_acx(capsys, "push", str(acx), f"oci-layout:{tmp_path / 'l'}:1.0.0", "--sign", "--key",
                str(tmp_path / "k.pem"), "--format", "legacy", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "--format is the old spelling of --attestation-format on `acx push`" in r.stderr
    out = json.loads(r.stdout)
    assert out["attestation"]["legacy"]["tag"] and out["attestation"]["bundleReferrer"] is None, out
