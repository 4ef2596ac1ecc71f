"""Terminal controls in strings from registries and documents (an OSC title change, a screen
clear, an 8-bit CSI, a bidi override, BEL, CR, backspace) never reach a terminal from a human
renderer: the one console neutralises them as it renders. `--json` keeps every value exact,
with those characters written as JSON escapes."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from rich.control import Control

from acxoci.cli import main as cli_main
from acxoci.cli.output import _Console, escape_json_controls, json_text, neutralise
from acxoci.errors import InvalidInput
from tests.harness.cli import acx_json, run_acx
from tests.harness.evilregistry import EMPTY, EMPTY_DIGEST, OCI_MANIFEST, Reply, Request
from tests.harness.memregistry import MemRegistry

EVIL = ["\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "\u202e", "\r", "\x08", "\u2066"]
FORBIDDEN = ["\x1b", "\x07", "\x9b", "\u202e", "\r", "\x08", "\u2066"]
TYPE = "application/vnd.evil+json" + "".join(EVIL)  # outside the media-type grammar: a stray
NOTE = "look " + " ".join(EVIL) + " here"


def _clean(text: str) -> None:
    for ch in FORBIDDEN:
        assert ch not in text, f"{ch!r} reached the terminal: {text!r}"


@pytest.fixture
def reg() -> Iterator[MemRegistry]:
    r = MemRegistry().start()
    r.add_blob(EMPTY)
    config = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
    subject = r.add_manifest({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                              "artifactType": "application/x.s", "config": config, "layers": [config]},
                             tag="v1")
    ref_to = {"mediaType": OCI_MANIFEST, "digest": subject[0], "size": subject[1]}
    r.add_manifest({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/x.note",
                    "config": config, "layers": [config], "annotations": {"org.example.note": NOTE},
                    "subject": ref_to})
    r.add_manifest({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": TYPE,
                    "config": config, "layers": [config], "subject": ref_to})  # listed with TYPE too
    yield r
    r.stop()


def test_discover_human_output_carries_no_terminal_controls(
    reg: MemRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_acx(capsys, "discover", "--plain-http", f"{reg.host}/acx/demo:v1")
    assert r.returncode == 0, r.stderr
    _clean(r.stdout + r.stderr)
    assert "application/x.note" in r.stdout
    assert "1 listed entry left out" in r.stderr  # the artifactType outside the grammar


def test_discover_json_keeps_the_exact_values_escaped(
    reg: MemRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_acx(capsys, "--json", "discover", "--plain-http", f"{reg.host}/acx/demo:v1")
    assert r.returncode == 0, r.stderr
    _clean(r.stdout)  # as JSON escapes, not raw
    res = json.loads(r.stdout)
    (node,) = res["referrers"]
    assert node["annotations"] == {"org.example.note": NOTE}
    (stray,) = res["strays"]
    assert stray["kind"] == "malformed_manifest" and "artifactType" in stray["reason"]


def test_tags_and_registry_errors_carry_no_terminal_controls(
    reg: MemRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    reg.tags["ok" + "".join(EVIL)] = next(iter(reg.manifests))
    r = run_acx(capsys, "tags", "--plain-http", f"{reg.host}/acx/demo")
    assert r.returncode not in (0, 70)
    _clean(r.stdout + r.stderr)
    code, res = acx_json(capsys, "tags", "--plain-http", f"{reg.host}/acx/demo")
    assert code == r.returncode and res["error"]["kind"] == "registry_protocol"


def test_an_error_message_is_neutralised_for_people_and_exact_in_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    probe = typer.Typer()

    @probe.command()
    def boom() -> None:
        raise InvalidInput(f"bad title {NOTE}", where="x" + "".join(EVIL))

    @probe.command()
    def other() -> None:
        """Second command so typer keeps subcommand names."""

    monkeypatch.setattr(cli_main, "app", probe)
    r = run_acx(capsys, "boom")
    assert r.returncode == InvalidInput.exit_code
    _clean(r.stdout + r.stderr)
    assert "bad title look" in r.stderr
    r = run_acx(capsys, "--json", "boom")
    _clean(r.stdout)
    err = json.loads(r.stdout)["error"]
    assert err["message"] == f"bad title {NOTE}" and err["where"] == "x" + "".join(EVIL)


def test_the_console_neutralises_on_a_terminal_and_keeps_its_own_controls() -> None:
    buf = io.StringIO()
    con = _Console(file=buf, force_terminal=True, color_system=None, width=200)
    con.print(f"tag {NOTE}")
    con.control(Control.move_to_column(0))  # rich's own cursor control, as a progress bar uses
    out = buf.getvalue()
    assert "\x1b[1G" in out  # the console's own control survives...
    _clean(out.replace("\x1b[1G", ""))  # ...and nothing from the text does
    assert neutralise("a\tb\nc") == "a\tb\nc"  # the console's net leaves layout to the templates


def test_json_text_round_trips_every_control() -> None:
    value = {"k" + "".join(EVIL): NOTE, "plain": "héllo ✓"}
    text = json_text(value)
    _clean(text)
    assert json.loads(text) == value
    assert "héllo ✓" in text  # other non-ASCII stays readable
    assert json.loads(escape_json_controls(json.dumps(value, ensure_ascii=False))) == value



def test_emoji_codes_in_foreign_strings_are_shown_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    # rich turns `:name:` into a glyph by default: a registry's string would not read back as
    # what it says
    from acxoci.cli import output

    for real in (output.console, output.err_console):
        with real.capture() as captured:  # the console's own stream is left as it was
            real.print("ship it :thumbs_up: :warning:")
        assert captured.get().strip() == "ship it :thumbs_up: :warning:"
    r = MemRegistry().start()
    try:
        r.add_blob(EMPTY)
        config = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
        subject = r.add_manifest({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                                  "artifactType": "application/x.s", "config": config, "layers": [config]},
                                 tag="v1")
        del subject
        r.tags["ok"] = next(iter(r.manifests))
        server = r.server
        assert server is not None
        inner = server.script

        def script(req: Request) -> Reply:  # the tag list refused with a message of the registry's
            if req.path.startswith("/v2/acx/demo/tags/list"):
                return Reply(400, {"Content-Type": "application/json"},
                             b'{"errors":[{"code":"DENIED","message":"look :smile: here"}]}')
            return inner(req)

        server.script = script
        got = run_acx(capsys, "tags", "--plain-http", f"{r.host}/acx/demo")
    finally:
        r.stop()
    assert got.returncode not in (0, 70), got.stderr
    assert ":smile:" in got.stderr and "\U0001f604" not in got.stderr
