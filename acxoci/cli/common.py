"""Small helpers shared by the command modules: `--now` parsing, trust-registry loading,
signing-key loading, ending a verdict-style command with its exit code, and the one set of
transport options every registry-touching command takes (`transport_options`)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import typer
from typer.core import TyperGroup

from acxoci.attest.errors import MalformedError
from acxoci.cli.output import info, say_error, warn
from acxoci.errors import UsageError

if TYPE_CHECKING:
    from acxoci.attest.keys import PrivateKey
    from acxoci.attest.trust import TrustRegistry
    from acxoci.oci.settings import RemoteOptions
    from acxoci.workflow.lint import LintResult

# The trust-registry, key-file, time-parsing and transport-settings modules (and the libraries under
# them) are imported by the helpers that need them, not here: every command imports this module,
# and a registry copy should not pay for the crypto stack, nor a cartridge verify for the transport.


def parse_now(value: str | None) -> datetime:
    """The `--now` option: an RFC 3339 time, or the clock when absent."""
    if value is None:
        return datetime.now(UTC)
    from acxoci.attest.trust import parse_rfc3339

    try:
        return parse_rfc3339(value, where="--now")
    except MalformedError as exc:
        raise UsageError(str(exc)) from exc


def load_registry(path: Path | None, now: datetime) -> TrustRegistry | None:
    """A trust registry from `--trust-registry`, or None when the option is absent."""
    if path is None:
        return None
    from acxoci.cartridge.trust_file import load_trust_registry

    return load_trust_registry(path)


# -- a trust flag never passes silently --------------------------------------------------------
REQUIRE_HELP = ("Least signer trust: portable or trusted (default with --trust-registry: trusted, as "
                "`acx cartridge verify --require trusted`).")


def required_trust(require: str | None, trust_registry: Path | None, *,
                   no_verify: bool = False) -> str | None:
    """The signer trust a command given `--require` / `--trust-registry` demands: `--require`, else
    trusted when a trust registry is given (a trust flag never passes silently), else none."""
    if require not in (None, "portable", "trusted"):
        raise UsageError(f"--require must be portable or trusted, not {require!r}")
    if no_verify and (require is not None or trust_registry is not None):
        raise UsageError("--no-verify checks nothing, so --trust-registry and --require would not be "
                         "enforced", hint="drop --no-verify, or drop the trust flags")
    return require or ("trusted" if trust_registry is not None else None)


def refuse_below(trust: str, minimum: str | None, where: str, summary: str = "") -> None:
    """RefusedByPolicy (exit 8) when `trust` is below `minimum` (artifact.require_trust's rule)."""
    from acxoci.artifact import require_trust

    require_trust({"trust": trust, "summary": summary}, minimum, where)


#: The command that takes a local file, for each command that takes a reference.
FILE_COMMANDS = {
    "install": "to install a local cartridge: acx load FILE",
    "verify": "to verify a local file: acx cartridge verify FILE (workflow/graph verify for documents)",
    "pull": "a local file needs no pull: acx cartridge verify FILE checks it, acx push FILE REF publishes it",
    "tags": "a local file has no tags: acx push FILE REF publishes it under one",
    "manifest get": "a local file has no manifest: acx cartridge inspect FILE shows what it holds",
    "discover": "a local file has no referrers: acx cartridge inspect FILE lists its own attestations",
    "cp": "to publish a local file: acx push FILE REF (cp copies between registries and layouts)",
    "attest": "to attest a local file: acx attest-blob FILE (or push it first: acx push FILE REF)",
    "attach": "to attach to an artifact, name its reference; a local file: acx attest-blob FILE",
}


def refuse_local_file(ref: str, command: str) -> None:
    """A reference that names an existing local file is a mistake, not a registry name: refuse it
    (exit 2) before any network request, naming the command that takes a file."""
    if ref.startswith("oci-layout:") or ref.startswith("oci://"):
        return
    if Path(ref).is_file():
        raise UsageError(
            f"{ref} is a local file; `acx {command}` takes a registry reference (host/repo:tag) "
            "or oci-layout:PATH",
            hint=FILE_COMMANDS[command],
        )


def exit_with(code: int) -> NoReturn:
    """End a verdict-style command with `code` (after its output was emitted)."""
    raise SystemExit(code)


def load_signing_key(ref: str | Path, password_env: str | None = None) -> PrivateKey:
    """`--key K [--password-env VAR]` for every signing command: a key file (cosign.key or PEM,
    with a warning when group or others may read it), `env://VAR` or a `pkcs11:` URI."""
    from acxoci.keyfiles import key_reference_kind, load_key_reference, readable_by_others

    text = str(ref)
    if key_reference_kind(text) == "file" and readable_by_others(Path(text)):
        warn("{} is readable by group or others (chmod 600 it)", text)
    return load_key_reference(text, password_env)


KEY_HELP = "Signing key: a key file (cosign.key or PKCS#8 PEM), env://VAR or a pkcs11: URI."
KEYLESS_KEY_HELP = KEY_HELP + " Without it, sign keylessly (Sigstore: Fulcio certificate + log/timestamp)."
TOKEN_HELP = ("Keyless: read the OIDC identity token from this file (default: the CI's ambient provider, "
              "else sign in at a terminal).")
TRUST_CONFIG_HELP = ("Sigstore ClientTrustConfig JSON (trusted root + signing config) of the deployment "
                     "to use (default: the public-good instance).")
TLOG_HELP = "Keyless: record the signature in the transparency log (false: timestamps only; needs a TSA)."


def parse_bool_flag(value: str, flag: str) -> bool:
    """cosign's `--flag=true|false` spelling."""
    low = value.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise UsageError(f"{flag} must be true or false, not {value!r}")


def attestation_signer(key: str | None, password_env: str | None, identity_token_file: Path | None,
                       trust_config: Path | None, tlog_upload: str = "true") -> Any:
    """What signs an attestation: the `--key` reference, or (no `--key`) a keyless signer with the
    identity token and trust config the flags name. Usage errors before anything is signed."""
    upload = parse_bool_flag(tlog_upload, "--tlog-upload")
    if key is not None:
        if identity_token_file is not None or trust_config is not None or not upload:
            raise UsageError("--identity-token-file, --trust-config and --tlog-upload are for keyless "
                             "signing; drop them or drop --key")
        return load_signing_key(key, password_env)
    from acxoci.attestation.keyless import KeylessSigner, identity_token, load_trust_config
    from acxoci.keyfiles import interactive

    loaded: list[Any] = [load_trust_config(trust_config)] if trust_config is not None else []

    def trust() -> Any:  # the public-good config is fetched (TUF) only once a token is in hand
        if not loaded:
            loaded.append(load_trust_config(None))
        return loaded[0]

    token, source = identity_token(identity_token_file, trust, interactive=interactive())
    signer = KeylessSigner(trust(), token, source, tlog_upload=upload)
    info("signing keylessly with a token (from {}) whose identity is {}; the certificate Fulcio issues "
         "names the signer", source, token.identity)
    return signer


# -- the one transport option set --------------------------------------------------------------
PLAIN_HELP = "Plain HTTP to the registry (default: HTTPS; loopback falls back to HTTP if not TLS)."
_SIDE_WORDS = {"from": "source", "to": "destination"}


def _transport_params(side: str | None, referrers: bool = False,
                      layout: bool = False) -> list[inspect.Parameter]:
    """typer parameters of one option set: unprefixed, or `--from-*` / `--to-*` for one side."""
    pre = f"{side}_" if side else ""
    flag = f"{side}-" if side else ""
    of = f" (for the {_SIDE_WORDS[side]})" if side else ""
    plain = (f"--{flag}plain-http/--no-{flag}plain-http")
    opts: list[tuple[str, Any, Any]] = [
        (f"{pre}plain_http", bool | None, typer.Option(None, plain, help=PLAIN_HELP + of)),
        (f"{pre}ca_file", Path | None, typer.Option(
            None, f"--{flag}ca-file", help="CA bundle to verify the registry's TLS certificate" + of + ".")),
        (f"{pre}insecure", bool, typer.Option(
            False, f"--{flag}insecure", help="Do not verify TLS certificates" + of + ".")),
        (f"{pre}registry_config", Path | None, typer.Option(
            None, f"--{flag}registry-config",
            help="Docker config file with registry credentials "
            "(default: $DOCKER_CONFIG/config.json)" + of + ".")),
    ]
    if layout:
        what = f"the {_SIDE_WORDS[side]}" if side else "the reference"
        opts.append((f"{pre}oci_layout", bool, typer.Option(
            False, f"--{flag}oci-layout", help=f"Read {what} as an OCI image layout folder, "
            "PATH[:tag|@digest] (as oras; the same as writing oci-layout:PATH…).")))
    if not side:
        opts.append(("registries", Path | None, typer.Option(
            None, "--registries", help="Registries file: per-host plainHttp / caFile / insecure "
            "(default: $ACX_REGISTRIES_FILE).")))
    if not side and referrers:
        opts.append(("fallback_tag", bool, typer.Option(
            False, "--fallback-tag", help="Also keep the sha256-<hex> referrers tag where the registry "
            "serves the Referrers API (survives caches, mirrors).")))
    return [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=t) for n, t, d in opts]


LAYOUT_PREFIX = "oci-layout:"


def _as_layout(kw: dict[str, Any], flag: str, arg: str | None) -> None:
    """`--oci-layout`: the reference argument `arg` names a layout folder (oras's flag)."""
    if kw.pop(flag, False) and arg is not None and isinstance(kw.get(arg), str) \
            and not kw[arg].startswith(LAYOUT_PREFIX):
        kw[arg] = LAYOUT_PREFIX + kw[arg]


def _remote(kw: dict[str, Any], side: str | None, base: RemoteOptions | None) -> RemoteOptions:
    from acxoci.oci.settings import RemoteOptions

    pre = f"{side}_" if side else ""
    plain = kw.pop(f"{pre}plain_http")
    ca = kw.pop(f"{pre}ca_file")
    insecure = kw.pop(f"{pre}insecure")
    cfg = kw.pop(f"{pre}registry_config")
    if base is None:
        reg = kw.pop("registries", None)
        return RemoteOptions(
            plain_http=plain, ca_file=str(ca) if ca else None, insecure_skip_verify=insecure,
            docker_config=str(cfg) if cfg else None, registries_file=str(reg) if reg else None,
            fallback_index=bool(kw.pop("fallback_tag", False)),
        )
    return dataclasses.replace(
        base,
        plain_http=plain if plain is not None else base.plain_http,
        ca_file=str(ca) if ca else base.ca_file,
        insecure_skip_verify=insecure or base.insecure_skip_verify,
        docker_config=str(cfg) if cfg else base.docker_config,
    )


F = TypeVar("F", bound=Callable[..., Any])


def transport_options(*, sides: bool = False, referrers: bool = False,
                      layout: str | tuple[str, str] | None = None) -> Callable[[F], F]:
    """Add the shared transport flags (`--plain-http/--no-plain-http`, `--ca-file`, `--insecure`,
    `--registry-config`, `--registries`) to a command and pass the result as `remote:
    RemoteOptions`; with `sides=True` (cp) also `--from-*` / `--to-*` overrides, passed as
    `remote_from` and `remote_to` (when the command has those parameters). `referrers=True` (a
    command that writes referrers) adds `--fallback-tag`; `layout` names the reference argument
    (for cp: the source's and the destination's) that `--oci-layout` (`--from-oci-layout`,
    `--to-oci-layout`) marks as a layout folder. The options are also made active for the
    command's run (settings.using), so library code that opens a target or an https URL without
    explicit options resolves the same flags the same way."""

    def deco(fn: F) -> F:
        sig = inspect.signature(fn)
        names = ("remote_from", "remote_to") if sides else ("remote",)
        keep = [p for p in sig.parameters.values() if p.name not in names]
        extra = _transport_params(None, referrers, layout is not None and not sides)
        if sides:
            extra += _transport_params("from", layout=layout is not None) + \
                _transport_params("to", layout=layout is not None)

        wants = [n for n in names if n in sig.parameters]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            from acxoci.oci.settings import using

            if sides:
                src, dst = layout if isinstance(layout, tuple) else (None, None)
                _as_layout(kw, "from_oci_layout", src)
                _as_layout(kw, "to_oci_layout", dst)
                kw_from = {k: kw.pop(k) for k in list(kw) if k.startswith("from_")}
                kw_to = {k: kw.pop(k) for k in list(kw) if k.startswith("to_")}
                base = _remote(kw, None, None)
                made = {
                    "remote_from": _remote(kw_from, "from", base),
                    "remote_to": _remote(kw_to, "to", base),
                }
            else:
                _as_layout(kw, "oci_layout", layout if isinstance(layout, str) else None)
                base = _remote(kw, None, None)
                made = {"remote": base}
            kw.update({n: made[n] for n in wants})
            with using(base):  # code that opens targets without explicit options gets these too
                return fn(*args, **kw)

        wrapper.__signature__ = sig.replace(parameters=keep + extra)  # type: ignore[attr-defined]
        hints = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k not in names}
        hints.update({p.name: p.annotation for p in extra})
        wrapper.__annotations__ = hints
        return cast(F, wrapper)

    return deco


def print_issues(result: LintResult) -> None:
    """One line per lint issue (workflows and Agent Graphs share the lint result)."""
    from acxoci.cli.output import say

    for i in result.issues:
        say("  - {}", i.text())


def finish_lint(file: Path, result: LintResult, publish: bool,
                preface: Callable[[], None] | None = None) -> NoReturn:
    """Render a lint result (VALID/INVALID and the issues, or JSON) and exit 0 or 1: the one
    ending of `workflow lint` and `graph lint`."""
    from acxoci.cli.output import emit, say

    def human() -> None:
        if preface is not None:
            preface()
        if result.ok:
            what = "structure and publish profile pass" if publish else "structure passes"
            say("[bold green]VALID ✓[/bold green] — {}", what)
        else:
            say("[bold red]INVALID[/bold red] — {} issue(s)", len(result.errors))
        print_issues(result)

    emit({"file": str(file), **result.to_json()}, human)
    exit_with(0 if result.ok else 1)


# -- the one vocabulary: old spellings of flags --------------------------------------------------
#: Old spellings kept for one release, per command (its words after `acx`): the old flag and the
#: flag that says it now. They are hidden from help and print a deprecation warning on stderr;
#: docs/cli.md's vocabulary table lists each one under its new name (tests/cli/test_vocabulary.py
#: holds the page, these tables and the commands together).
OLD_SPELLINGS: dict[str, dict[str, str]] = {
    "key trust": {"--registry": "--trust-registry", "-r": "--trust-registry"},
    "policy init": {"-r": "--trust-registry", "--issuer-registry": "--issuers", "--level": "--require-level"},
    "check": {"--registry": "--trust-registry", "--host": "--host-descriptor"},
    "harness negotiate": {"--registry": "--trust-registry", "--host": "--host-descriptor",
                          "--out": "--output"},
    "install": {"--host": "--host-descriptor", "--roster": "--cartridges"},
    "verify": {"--host": "--host-descriptor", "--roster": "--cartridges"},
    "push": {"--format": "--attestation-format"},
    "attest": {"--format": "--attestation-format", "--predicate-type": "--type"},
    "cartridge build": {"--out": "--output", "--created-at": "--now"},
    "cartridge sign": {"--signed-at": "--now"},
    "key generate": {"--out": "--output", "--type": "--algorithm"},
    "workflow sign": {"--out": "--output"},
    "workflow remix": {"--out": "--output"},
    "graph sign": {"--out": "--output"},
    "init": {"--out": "--output"},
    "lance": {"--out": "--output"},
    "exchange site": {"--out": "--output"},
    "status-list create": {"--out": "--output"},
    "level bench-init": {"--out": "--output"},
    "level issue": {"--out": "--output", "--validity-days": "--valid-days"},
    "level verify": {"--min-level": "--require-level"},
    "level revoke": {"--publish": "--push"},
    "load": {"--print-only": "--dry-run"},
}
#: Flags that do nothing any more, per command, and why (accepted for one release, with a warning).
RETIRED: dict[str, dict[str, str]] = {
    **{f"exchange {c}": {"--without-graphs": "Agent Graphs are verified like everything else"}
       for c in ("verify", "index", "mirror")},
    # --fallback-tag is for commands that write referrers; these only read
    **{c: {"--fallback-tag": "it writes no referrers"}
       for c in ("activate", "cal", "discover", "install", "installed sync", "installed verify", "level run",
                 "level verify", "login", "manifest get", "pull", "status-list publish", "status-list show",
                 "tags", "verify", "workflow ready")},
}

_OLD_KEY = "acx.old-spellings"


def old_spellings(path: str, flags: Iterable[str] = ()) -> dict[str, tuple[str | None, str]]:
    """The old spellings `acx PATH` accepts: old flag -> (the flag that says it now, or None when
    it does nothing, and why)."""
    have = set(flags)
    out: dict[str, tuple[str | None, str]] = {old: (new, "")
                                              for old, new in OLD_SPELLINGS.get(path, {}).items()}
    out.update({old: (None, why) for old, why in RETIRED.get(path, {}).items() if old not in have})
    return out


def _given(ctx: Any, name: str | None) -> bool:
    try:  # typer >= 0.23 vendors click; older versions use the click package
        from typer._click.core import ParameterSource
    except ImportError:  # pragma: no cover
        from click.core import ParameterSource  # type: ignore[no-redef,import-not-found,unused-ignore,assignment]
    return name is not None and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE


def _old_option(path: str, old: str, new: Any, why: str) -> Any:
    """A hidden option spelled `old` whose value goes to the option `new` (or nowhere: `why`)."""
    from typer.core import TyperOption

    def record(ctx: Any, param: Any, value: Any) -> None:
        if not _given(ctx, param.name):
            return
        if new is None:
            say_error("[yellow]warning[/yellow]: {} does nothing on `acx {}` ({}) and goes in the next "
                      "release; drop it", old, path, why)
            return
        say_error("[yellow]warning[/yellow]: {} is the old spelling of {} on `acx {}` and goes in the next "
                  "release; use {}", old, new.opts[-1], path, new.opts[-1])
        ctx.meta.setdefault(_OLD_KEY, []).append((old, new, value))

    is_flag = bool(getattr(new, "is_flag", True)) if new is not None else True
    return TyperOption(
        param_decls=[f"old_{old.strip('-').replace('-', '_')}", old],
        type=None if is_flag else new.type, is_flag=is_flag or None,
        multiple=bool(getattr(new, "multiple", False)), default=False if is_flag else None,
        expose_value=False, hidden=True, callback=record,
    )


def _with_old_values(callback: Callable[..., Any], required: list[Any]) -> Callable[..., Any]:
    """The command's callback, given the values its old spellings carried under their new names
    (`required`: options made optional so that an old spelling may stand for them; one of the
    two spellings must be given)."""
    try:  # typer >= 0.23 vendors click; older versions use the click package
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover
        from click import get_current_context  # type: ignore[no-redef,import-not-found,unused-ignore]

    @functools.wraps(callback)
    def run(**kw: Any) -> Any:
        ctx = get_current_context()
        for old, new, value in ctx.meta.pop(_OLD_KEY, []):
            if new.multiple:
                kw[new.name] = (*(kw.get(new.name) or ()), *value)
            elif _given(ctx, new.name):
                raise UsageError(f"{old} is the old spelling of {new.opts[-1]}: give it once")
            else:
                kw[new.name] = value
        for option in required:
            if kw.get(option.name) in (None, ()):
                raise UsageError(f"Missing option '{option.opts[-1]}'.",
                                 hint=f"see `{ctx.command_path} --help`")
        return callback(**kw)

    return run


def add_old_spellings(command: Any, path: str) -> None:
    """Give the click command `acx PATH` its old spellings (hidden options, see OLD_SPELLINGS)."""
    by_flag = {opt: p for p in command.params for opt in (*getattr(p, "opts", ()),
                                                           *getattr(p, "secondary_opts", ()))}
    table = old_spellings(path, by_flag)
    if not table:
        return
    required: list[Any] = []
    for old, (new, why) in table.items():
        if old in by_flag:
            raise AssertionError(f"acx {path}: {old} is both a flag and an old spelling")
        if new is not None and new not in by_flag:
            raise AssertionError(f"acx {path}: the old spelling {old} names {new}, which it lacks")
        target = by_flag[new] if new is not None else None
        if target is not None and target.required:
            target.required = False
            required.append(target)
        command.params.append(_old_option(path, old, target, why))
    if command.callback is not None:
        command.callback = _with_old_values(command.callback, required)


class VocabularyGroup(TyperGroup):
    """A command group whose commands also take their old spellings (OLD_SPELLINGS): set as the
    `cls` of the root app and of every group, so each command gets them as it is built."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        top = self.name in (None, "", "acx")
        for name, cmd in self.commands.items():
            if not isinstance(cmd, TyperGroup):
                add_old_spellings(cmd, name if top else f"{self.name} {name}")
