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

Strings from registries and documents (artifact types, annotations, tags, error text, workflow
fields) may carry terminal controls: ESC/CSI/OSC sequences, BEL, C1 controls, CR, backspace,
Unicode bidi overrides. Both consoles neutralise them in one place, as they render (`neutralise`:
each becomes a visible `\\xNN`/`\\uNNNN`), so no human renderer has to escape anything; JSON
output keeps every value exact and writes those characters as JSON `\\u` escapes (`json_text`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from rich.console import Console
from rich.segment import Segment


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


def escape_json_controls(text: str) -> str:
    """JSON text with every terminal control inside its strings written as a `\\uNNNN` escape:
    the same JSON value, nothing a terminal acts on (these characters never occur outside
    strings in JSON, and a raw C0 control cannot occur in valid JSON at all)."""
    return TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
#: tests/unit/test_output_model.py requires every registered command to be listed.
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
            sys.stdout.write(neutralise(quiet_line) + "\n")
        return
    if human is not None:
        human()
    else:
        console.print_json(data=data)


def info(message: str) -> None:
    """A human progress/status line on stderr (silent under --json or -q)."""
    if not OPTS.json and not OPTS.quiet:
        err_console.print(message)


def debug(message: str) -> None:
    if OPTS.verbose and not OPTS.json:
        err_console.print(f"[dim]{message}[/dim]")
