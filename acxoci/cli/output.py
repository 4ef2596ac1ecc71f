"""Shared CLI state and rendering: global flags, JSON vs human output, and the one output model.

Every `--json` result is one of a few typed shapes (docs/decisions/0021-one-output-model.md),
each with a JSON Schema in `schemas/output/`:

- `error`: `{"error": {kind, message, exitCode, where?, hint?, details?}}`, for every failure;
- `verdict`: a judgement (`ok`, `verdict`, `summary?`, `reasons?`), for every verify/check command;
- `transfer`: bytes moved to or from a registry or layout (`reference`, `digest`, `mediaType?`, …);
- `install`: an install outcome (`status`, `reference`, `checks`; a refusal also carries `error`);
- `document`: anything else (inspect, list, show, plan…), still in the one field vocabulary.

Field names are one vocabulary everywhere (`keyId`, `publisherId`, `digest`, `reference`, …):
`canonical_fields` renames the few old spellings, outside documents embedded verbatim.

Human output has one rule (docs/decisions/0037-untrusted-text-in-human-output.md): a line is a
*template* of ours (a literal in the code: its markup and its line breaks are ours) filled with
*values*, and every value is shown escaped (`shown`): controls including newline, carriage
return and tab, Unicode format characters (bidi embeddings, overrides and isolates, zero-width
characters), line and paragraph separators and lone surrogates each become a visible `\\n`,
`\\xNN` or `\\uNNNN`, and rich markup in a value is shown as written. So a value from a registry,
a layout, a document, a file name or a certificate can neither add a line nor steer the
terminal. Commands print only through `say`/`info`/`warn`/`say_error` (template first,
a string literal), build tree labels and table cells with `cell(...)`, and mark markup of their own
kept in a variable with `Markup("literal")`; tests/cli/test_output_layer.py proves by the AST
that no command prints any other way. Both consoles also neutralise terminal controls as they
render (a second net). JSON output keeps every value exact and writes terminal controls as
JSON `\\u` escapes (`json_text`).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TextIO

from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.segment import Segment
from rich.table import Table as _Table
from rich.text import Text
from rich.tree import Tree as _Tree


@dataclass
class GlobalOptions:
    json: bool = False
    verbose: bool = False
    quiet: bool = False


OPTS = GlobalOptions()

#: Width when the stream is not a terminal: wide enough that no digest, reference or table cell
#: is ever cut or wrapped for a pipe, a file or CI (rich would otherwise assume 80 columns).
PIPE_WIDTH = 10_000


def _width(stream: TextIO) -> int | None:
    """None (rich measures the terminal) for a TTY, PIPE_WIDTH otherwise."""
    try:
        return None if stream.isatty() else PIPE_WIDTH
    except (AttributeError, ValueError):
        return PIPE_WIDTH


#: What may steer a terminal or reorder what it shows: C0 controls but tab and newline (ESC starts
#: CSI/OSC sequences; BEL ends OSC; CR and backspace overwrite), DEL, C1 controls (0x9b is CSI),
#: line/paragraph separators, and the bidi embeddings, overrides and isolates.
TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralise(text: str) -> str:
    """`text` with every terminal control (TERMINAL_UNSAFE) shown as a visible escape."""
    return TERMINAL_UNSAFE.sub(_visible, text)


#: What a value may not bring into a line: controls (C0 with tab, newline and CR; DEL; C1),
#: format characters (bidi embeddings, overrides, isolates and marks; zero-width characters;
#: soft hyphen; tag characters), line and paragraph separators, and lone surrogates (a file
#: name's undecodable bytes).
UNSHOWN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(c: str) -> str:
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def one_line(value: object) -> str:
    """`value` as one line of plain text: every UNSHOWN_CATEGORIES character a visible escape."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():  # the common case: nothing to look at character by character
        return text
    return "".join(_escape_char(c) if unicodedata.category(c) in UNSHOWN_CATEGORIES else c for c in text)


class Markup(str):
    """Markup of our own kept in a variable (a mark, a coloured word): put into a template as is.
    Built only from string literals (the AST test checks every call)."""

    __slots__ = ()


def shown(value: object) -> str:
    """A value as it goes into a template: `Markup` as is, a number as is, anything else as one
    line (`one_line`) with its rich markup escaped (shown as written, never interpreted)."""
    if isinstance(value, Markup):
        return value
    return _markup_escape(one_line(value))


def _value(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value  # keeps format specs such as {:3d}
    return shown(value)


def render(template: str, /, *args: object, **values: object) -> str:
    """The markup of `template` (ours: its markup and line breaks are kept) with each `{}` field
    filled by the escaped value (`shown`); format specs and conversions work as in str.format."""
    return template.format(*(_value(a) for a in args), **{k: _value(v) for k, v in values.items()})


def cell(template: str, /, *args: object, **values: object) -> Text:
    """A rich Text of `render(template, ...)`: a tree label or a table cell."""
    return Text.from_markup(render(template, *args, **values), emoji=False)


def _cell(value: object) -> Text:
    return value if isinstance(value, Text) else Text(one_line(value))


def say(template: str, /, *args: object, **values: object) -> None:
    """Print a line (or lines: the template's own) on stdout; values are escaped (`render`)."""
    console.print(render(template, *args, **values))


def say_error(template: str, /, *args: object, **values: object) -> None:
    """Print a line on stderr whatever the flags (an error, before the process ends)."""
    err_console.print(render(template, *args, **values))


@contextlib.contextmanager
def status_line(label: str) -> Iterator[Callable[[str], None] | None]:
    """A one-line status on a terminal (stderr) that long work updates with what it is doing now
    (names and digests escaped like any value); None under --json, -q or when stderr is no terminal."""
    if OPTS.json or OPTS.quiet or not sys.stderr.isatty():
        yield None
        return
    with err_console.status(render("{}…", label)) as status:

        def note(what: str) -> None:
            status.update(render("{}: {}", label, what))

        yield note


class Tree:
    """A tree for people (discover): every label a `cell(...)` or a plain value (escaped)."""

    def __init__(self, label: Text | str, _node: _Tree | None = None) -> None:
        self._node = _node if _node is not None else _Tree(_cell(label))

    def add(self, label: Text | str) -> Tree:
        return Tree(label, self._node.add(_cell(label)))

    def show(self) -> None:
        console.print(self._node)


def show_table(columns: Iterable[str], rows: Iterable[Iterable[object]]) -> None:
    """A borderless table with a bold header; every cell a `cell(...)` or a plain value (escaped)."""
    table = _Table(show_header=True, header_style="bold", box=None)
    for col in columns:
        table.add_column(one_line(col))
    for row in rows:
        table.add_row(*(_cell(c) for c in row))
    console.print(table)


def show_lines(block: str) -> None:
    """A block of text to copy (a PEM key we encoded, a pull-request body we wrote): each of its
    lines printed as a value, so a line keeps no control and no markup acts."""
    for line in block.splitlines():
        console.print(shown(line))


def show_traceback() -> None:
    """The exception being handled, for -v: each line of the traceback shown as a value (the
    exception's message may carry a registry's or a document's text)."""
    import traceback

    for line in traceback.format_exc().splitlines():
        err_console.print(shown(line))


def write_artifact(fh: IO[bytes]) -> None:
    """Artifact bytes to stdout (`pull -o -`): data for a pipe, not text for a person."""
    shutil.copyfileobj(fh, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def write_document(data: bytes) -> None:
    """A document's exact text (`manifest get`): on a terminal with its controls \\u-escaped, which
    is the same JSON value (a strictly parsed JSON document has controls only inside strings)."""
    text = data.decode("utf-8")
    if sys.stdout.isatty():
        text = escape_json_controls(text)
    sys.stdout.write(text + "\n")


def escape_json_controls(text: str) -> str:
    """JSON text with every terminal control and every UNSHOWN_CATEGORIES character inside its
    strings written as a `\\uNNNN` escape: the same JSON value, nothing a terminal acts on or
    hides (these characters never occur outside strings in JSON, and a raw C0 control cannot
    occur in valid JSON at all, so the layout's newlines and indentation stay)."""
    text = TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    if text.isascii():
        return text
    return "".join(_json_escape(c) if ord(c) > 0x7F and unicodedata.category(c) in UNSHOWN_CATEGORIES
                   else c for c in text)


def _json_escape(c: str) -> str:
    """`c` as JSON `\\u` escapes (a surrogate pair past the BMP)."""
    code = ord(c)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """`value` as JSON text with exact values: non-ASCII kept as is, but every terminal control
    written as a `\\uNNNN` escape (json escapes C0 itself; C1 and bidi controls it would not)."""
    return escape_json_controls(json.dumps(value, indent=indent, sort_keys=False, ensure_ascii=False))


class _Console(Console):
    """The one console class of acx. rich exits 1 when the reader of its stream goes away; acx
    exits 141 as SIGPIPE does (docs/cli.md), so this hands the BrokenPipeError to
    `acxoci.cli.main`. Every text segment is neutralised as it is rendered (rich itself drops
    only BEL, backspace, VT, FF and CR from `Text`, not ESC, C1 or bidi controls); rich's own
    control segments (cursor moves of a live progress bar) are left as they are. Emoji codes are
    off: a `:name:` in a registry's or document's string is shown as written, not as a glyph."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        safe = (seg if seg.control else Segment(neutralise(seg.text), seg.style) for seg in buffer)
        return super()._render_buffer(safe)


console = _Console(highlight=False, emoji=False, soft_wrap=True, width=_width(sys.stdout))
err_console = _Console(stderr=True, highlight=False, emoji=False, soft_wrap=True, width=_width(sys.stderr))


# ---- the output model ---------------------------------------------------------------------

ResultKind = Literal["verdict", "transfer", "install", "document"]

#: Old spellings of one field, and the one name the output model uses for it.
FIELD_ALIASES: Mapping[str, str] = {"keyid": "keyId", "signerKeyId": "keyId", "key_id": "keyId",
                                    "publisher_id": "publisherId"}
#: Keys whose values are documents in their own formats (install records, manifests, trust
#: registries, credentials, statements…): shown verbatim, never renamed.
EMBEDDED: frozenset[str] = frozenset({
    "record", "manifest", "document", "content", "statement", "predicate", "raw", "credential",
    "envelope", "dsseEnvelope", "registry", "entry", "integrity", "doc", "bundle", "evidence", "receipt"})

#: The result kind of each command (`acx` + its words). A command not listed emits `document`;
#: tests/interop/test_output_model.py requires every registered command to be listed.
COMMAND_KINDS: dict[str, ResultKind] = {
    "acx cartridge verify": "verdict", "acx verify": "verdict", "acx verify-blob": "verdict",
    "acx workflow verify": "verdict", "acx workflow ready": "verdict", "acx workflow lint": "verdict",
    "acx level verify": "verdict", "acx installed verify": "verdict", "acx policy check": "verdict",
    "acx harness check": "verdict", "acx cal": "verdict", "acx graph verify": "verdict",
    "acx graph lint": "verdict", "acx exchange verify": "verdict",
    "acx push": "transfer", "acx pull": "transfer", "acx cp": "transfer", "acx attach": "transfer",
    "acx status-list publish": "transfer",
    "acx install": "install", "acx load": "install",
}


def canonical_fields(value: Any) -> Any:
    """`value` with every old field spelling renamed (FIELD_ALIASES), recursing into results but
    not into embedded documents (EMBEDDED), whose formats are not ours to rename."""
    if isinstance(value, list):
        return [canonical_fields(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = FIELD_ALIASES.get(key, key) if isinstance(key, str) else key
        if name in out and name != key:
            continue  # the canonical spelling is already there; drop the alias
        out[name] = item if key in EMBEDDED else canonical_fields(item)
    return out


@dataclass(frozen=True)
class ErrorResult:
    """A failure: the `{"error": …}` shape every command prints under --json."""

    kind: str
    message: str
    exit_code: int
    where: str | None = None
    hint: str | None = None
    details: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"kind": self.kind, "message": self.message, "exitCode": self.exit_code}
        if self.where:
            err["where"] = self.where
        if self.hint:
            err["hint"] = self.hint
        if self.details:
            err["details"] = canonical_fields(dict(self.details))
        return {"error": err}


@dataclass(frozen=True)
class Result:
    """A typed success result: its kind, and its fields in the one vocabulary."""

    kind: ResultKind
    fields: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


def _verdict_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A verdict always says `ok` (the command's judgement passed) and `verdict` (its word)."""
    out = dict(data)
    if "ok" not in out:
        for alias in ("ready", "valid"):
            if isinstance(out.get(alias), bool):
                out["ok"] = out.pop(alias)
                break
        else:
            code = out.get("exitCode")
            out["ok"] = code == 0 if isinstance(code, int) else out.get("status") in ("verified", "ok")
    if "verdict" not in out and isinstance(out.get("status"), str):
        out["verdict"] = out["status"]
    if "verdict" not in out:
        out["verdict"] = "ok" if out["ok"] else "failed"
    return {"ok": out.pop("ok"), "verdict": out.pop("verdict"), **out}


def _install_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A refused install also carries the documented `error` (refused_by_policy, exit 8)."""
    out = dict(data)
    refusal = out.get("refusal")
    if out.get("status") == "refused" and isinstance(refusal, dict) and "error" not in out:
        failed = refusal.get("failed", [])
        out["error"] = ErrorResult(
            str(refusal.get("kind", "refused_by_policy")),
            f"install refused: {len(failed)} check(s) failed ("
            + ", ".join(f"{c.get('id')}: {c.get('kind')}" for c in failed if isinstance(c, dict)) + ")",
            int(refusal.get("exitCode", 8)), where=str(out.get("reference")), details={"failed": failed},
        ).to_json()["error"]
    return out


def current_command() -> str | None:
    """`acx …` words of the command being run (None outside a click context)."""
    try:  # typer >= 0.23 vendors click; older versions use the click package
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover
        from click import get_current_context  # type: ignore[no-redef,import-not-found,unused-ignore]
    ctx = get_current_context(silent=True)
    path = getattr(ctx, "command_path", None)
    return path if isinstance(path, str) else None


def make_result(data: Any, kind: ResultKind | None = None) -> Result:
    """The typed result for `data` of the running command (or of `kind`)."""
    chosen = kind or COMMAND_KINDS.get(current_command() or "", "document")
    fields = canonical_fields(data)
    if not isinstance(fields, dict):
        return Result("document", {"result": fields})
    if chosen == "verdict":
        fields = _verdict_fields(fields)
    elif chosen == "install":
        fields = _install_fields(fields)
    return Result(chosen, fields)


def emit(data: Any, human: Callable[[], None] | None = None, *, quiet_line: str | None = None,
         kind: ResultKind | None = None) -> None:
    """Print `data` as JSON under --json (as its typed result: one vocabulary, one shape per
    kind), else call `human` (or pretty-print data). Under -q only `quiet_line` is printed: the
    one result a script needs (a transfer prints its digest, as docker -q)."""
    if OPTS.json:
        out = data.to_json() if isinstance(data, Result | ErrorResult) else make_result(data, kind).to_json()
        sys.stdout.write(json_text(out) + "\n")
        return
    if OPTS.quiet:
        if quiet_line is not None:
            sys.stdout.write(one_line(quiet_line) + "\n")
        return
    if human is not None:
        human()
    else:
        write_json(data)


def write_json(data: Any) -> None:
    """`data` as indented JSON on stdout (exact values, terminal controls as JSON escapes)."""
    sys.stdout.write(json_text(data) + "\n")


def info(template: str, /, *args: object, **values: object) -> None:
    """A human progress/status line on stderr (silent under --json or -q); values escaped."""
    if not OPTS.json and not OPTS.quiet:
        err_console.print(render(template, *args, **values))


def warn(template: str, /, *args: object, **values: object) -> None:
    """`warning: ...` on stderr (silent under --json or -q); values escaped."""
    info("[yellow]warning[/yellow]: " + template, *args, **values)


# ---- progress on a terminal ---------------------------------------------------------------

TransferFn = Callable[[str, str, int, int], None]
"""(key, label, total, bytes just moved)."""


@contextlib.contextmanager
def transfer_progress(after: str) -> Iterator[TransferFn | None]:
    """Labelled byte bars on a TTY (stderr), one per key; a full bar then reads `label: after`.
    None (nothing shown) when stderr is not a terminal or under --json/-q."""
    if OPTS.json or OPTS.quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), console=err_console, transient=True) as bar:
        tasks: dict[str, Any] = {}
        moved: dict[str, int] = {}
        lock = threading.Lock()  # blobs move on several threads (--concurrency)

        def update(key: str, label: str, total: int, n: int) -> None:
            with lock:
                task = tasks.get(key)
                if task is None:
                    task = tasks[key] = bar.add_task(shown(label), total=total)
                    moved[key] = 0
                moved[key] += n
                bar.update(task, advance=n)
                if moved[key] >= total:
                    bar.update(task, description=shown(f"{label}: {after}"))

        yield update


@contextlib.contextmanager
def count_progress(label: str, total: int) -> Iterator[Callable[[int, int], None] | None]:
    """A counting bar (`label` done/total, elapsed) on a TTY (stderr), fed `(done, total)`; None
    (nothing shown) when stderr is not a terminal or under --json/-q."""
    if OPTS.json or OPTS.quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]" + shown(label)), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as prog:
        task = prog.add_task(shown(label), total=total)
        yield lambda done, of: prog.update(task, completed=done, total=of)
