"""Entry point of `acx`: builds the typer app from the command-group modules and maps errors
to exit codes (docs/cli.md)."""

from __future__ import annotations

import os
import sys

import typer

from acxoci import __version__
from acxoci.attest.errors import MalformedError
from acxoci.cli import groups
from acxoci.cli.common import VocabularyGroup
from acxoci.cli.output import OPTS, ErrorResult, say, say_error, show_traceback, write_json
from acxoci.errors import DISK_SAID_NO, AcxError, InternalError, InvalidInput, UsageError, WriteBackFailed

try:  # typer >= 0.23 vendors click; older versions use the click package
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc  # type: ignore[no-redef,import-not-found,unused-ignore]

GLOBAL_FLAGS = {"--json": "json", "-v": "verbose", "--verbose": "verbose", "-q": "quiet", "--quiet": "quiet"}

app = typer.Typer(
    name="acx",
    cls=VocabularyGroup,  # every command also takes its old flag spellings (common.OLD_SPELLINGS)
    rich_markup_mode=None,  # click's plain help: rewrapped to the terminal, no option name ever cut
    help="acxoci: build, sign, verify, push, pull, attest, level and install ACX agent artifacts.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion, and _ACX_COMPLETE
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        if OPTS.json:
            write_json({"tool": "acx", "package": "acxoci", "version": __version__, "acxSpec": "0.1",
                        "containerWireFormat": "1.0"})
        else:
            say("acx (acxoci) {}\nACX spec 0.1, container wire format 1.0", __version__)
        raise typer.Exit(0)


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
    json_: bool = typer.Option(False, "--json", help="Machine-readable JSON output (any position)."),
    format_: str | None = typer.Option(None, "--format", help="Output format: json (the same as --json) or "
                                       "text (any position)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="More detail; tracebacks on errors."),
    quiet: bool = typer.Option(False, "-q", "--quiet",
                               help="Only errors, and the digest of a push, pull, cp or attach."),
) -> None:
    """Global options are accepted before or after the subcommand."""




OUTPUT_FORMATS = ("json", "text")
#: `push --format` / `attest --format` values of before `--attestation-format` (passed on to them).
OLD_ATTESTATION_FORMATS = ("legacy", "bundle", "both")


def _extract_global_flags(argv: list[str]) -> list[str]:
    """Pull global flags out of argv wherever they stand (before `--`), so `--json` works
    after any subcommand too; `--format json|text` is the output format (as oras's)."""
    out: list[str] = []
    passthrough = False
    rest = iter(argv)
    for arg in rest:
        if passthrough:
            out.append(arg)
            continue
        if arg == "--":
            passthrough = True
            out.append(arg)
            continue
        attr = GLOBAL_FLAGS.get(arg)
        if attr:
            setattr(OPTS, attr, True)
            continue
        if arg == "--format" or arg.startswith("--format="):
            value = arg.partition("=")[2] if "=" in arg else next(rest, "")
            if value in OUTPUT_FORMATS:
                OPTS.json = OPTS.json or value == "json"
                continue
            if value not in OLD_ATTESTATION_FORMATS:
                raise UsageError(f"--format takes json or text (the output format), not {value!r}",
                                 hint="an attestation's format is --attestation-format legacy|bundle|both")
            out.extend((arg,) if "=" in arg else (arg, value))
            continue
        out.append(arg)
    return out


def _print_error(err: AcxError) -> None:
    if OPTS.json:
        result = ErrorResult(err.kind, err.message, err.exit_code, err.where, err.hint, err.details)
        write_json(result.to_json())
    else:
        say_error("[bold red]error[/bold red] ({}): {}", err.kind, err.one_line())


def _stdout_closed() -> None:
    """stdout's reader went away (`acx tags R | head -1`): stop quietly, exit 141 like SIGPIPE."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass
    sys.exit(141)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the documented code; a closed stdout ends it quietly."""
    try:
        _main(argv)
    except SystemExit:
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click met EPIPE and exits 1
            _stdout_closed()
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_closed()
        raise
    except BrokenPipeError:
        _stdout_closed()


def _main(argv: list[str] | None = None) -> None:
    try:
        args = _extract_global_flags(list(sys.argv[1:] if argv is None else argv))
        groups.register(app, groups.modules_for(args))
        # In non-standalone mode click returns the code of `typer.Exit(code)` instead of exiting.
        rc = app(args=args, prog_name="acx", standalone_mode=False)
    except AcxError as err:
        if OPTS.verbose:
            show_traceback()
        _print_error(err)
        sys.exit(err.exit_code)
    except MalformedError as exc:  # a malformed document a command did not map itself: never "internal"
        merr = InvalidInput(str(exc))
        _print_error(merr)
        sys.exit(merr.exit_code)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except typer.Abort:
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        raise
    except click_exc.NoArgsIsHelpError:
        sys.exit(0)  # typer has already printed the help
    except click_exc.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "acx"  # the (sub)command that was wrong
        uerr = UsageError(exc.format_message(), hint=f"see `{where} --help`")
        _print_error(uerr)
        sys.exit(uerr.exit_code)
    except click_exc.ClickException as exc:
        cerr = UsageError(exc.format_message())
        _print_error(cerr)
        sys.exit(cerr.exit_code)
    except OSError as exc:
        if exc.errno not in DISK_SAID_NO:
            _internal(exc)
        derr = WriteBackFailed(f"cannot write: {exc.strerror or exc}", where=exc.filename,
                               hint="free disk space (or raise the file-size limit) and run it again")
        _print_error(derr)
        sys.exit(derr.exit_code)
    except Exception as exc:  # a real bug: one line, traceback only with -v
        if OPTS.verbose:
            show_traceback()
        ierr = InternalError(f"unexpected {type(exc).__name__}: {exc}", hint="rerun with -v and report it")
        _print_error(ierr)
        sys.exit(ierr.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)


def _internal(exc: BaseException) -> None:
    """Report an unexpected exception as InternalError (exit 70)."""
    if OPTS.verbose:
        show_traceback()
    ierr = InternalError(f"unexpected {type(exc).__name__}: {exc}", hint="rerun with -v and report it")
    _print_error(ierr)
    sys.exit(ierr.exit_code)
