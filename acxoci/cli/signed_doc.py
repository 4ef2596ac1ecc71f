"""The signed JSON documents on the command line (CAL workflows and Agent Graphs): one sign step
with its report, one verdict rendering and one verify exit rule, so `acx workflow` and `acx graph`
cannot drift apart in what they print or when they exit 0."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey
from acxoci.cli.common import exit_with, load_signing_key, print_issues
from acxoci.cli.output import emit, say
from acxoci.errors import UsageError
from acxoci.workflow.lint import LintResult
from acxoci.workflow.sign import render, write_atomic
from acxoci.workflow.signed import SignedVerdict

_COLOR = {"trusted": "green", "portable": "yellow", "unsigned": "yellow", "tampered": "red"}

Signer = Callable[..., dict[str, Any]]  # (doc, *, publisher_id, key, now) -> the signed document


def sign_and_write(
    doc: dict[str, Any],
    sign: Signer,
    *,
    target: Path,
    publisher: str,
    key: str | None,
    password_env: str | None,
    now: datetime,
) -> None:
    """Sign `doc`, write it atomically to `target` and report digest, keyid, publisher, signedAt.
    Without a key it refuses and names the one command that makes one (decision 0031): acx never
    generates a signing key as a side effect of signing."""
    if key is None:
        raise UsageError(
            "signing needs a key: --key FILE",
            hint="make one with `acx key generate -o publisher.pem` (0600, plus publisher.pub.pem), "
            "then pass --key publisher.pem",
        )
    private: PrivateKey = load_signing_key(key, password_env)
    signed = sign(doc, publisher_id=publisher, key=private, now=now)
    write_atomic(target, render(signed))
    integ = signed["integrity"]
    emit(
        {
            "file": str(target),
            "digest": integ["digest"],
            "publisherId": publisher,
            "keyid": integ["keyid"],
            "signedAt": integ["signedAt"],
        },
        lambda: say("[bold green]SIGNED[/bold green] {}\n  digest:    {}\n  keyid:     {}\n  "
                    "publisher: {}\n  signedAt:  {}",
                    str(target), integ['digest'], integ['keyid'], publisher, integ['signedAt']),
    )


def render_verdict(v: SignedVerdict, structure: LintResult, *extra: tuple[str, str]) -> None:
    """The verdict line, the signature facts, `extra` (label, text) lines, then the structure."""
    color = _COLOR.get(v.trust, "white")
    say("[bold {}]{}[/bold {}] ({}): {}", color, v.trust.upper(), color, v.status, v.summary)
    lines = [("digest", v.digest or ""), ("publisher", v.publisher_id or "—")]
    if v.keyid:
        lines.append(("keyid", v.keyid))
    lines += [*extra, ("structure", "publishable ✓" if structure.ok else "invalid")]
    width = max(len(label) for label, _ in lines) + 2
    for label, text in lines:
        say("  {} {}", (label + ':').ljust(width), text)
    for i in v.issues:
        say("  - {}", i)
    print_issues(structure)


def finish_verify(file: Path, v: SignedVerdict, structure: LintResult, *extra: tuple[str, str],
                  minimum: str | None = None) -> None:
    """Emit the verdict and exit: 0 only when the document is signed, verifies and is publishable,
    and its signer meets `minimum` (`--require`, trusted by default with a trust registry: exit 8
    below it, as `cartridge verify --require`)."""
    from acxoci.artifact import MEETS

    code = 0 if (v.ok and v.signed and structure.ok) else 1
    below = code == 0 and minimum is not None and v.trust not in MEETS[minimum]
    if below:
        code = 8

    def human() -> None:
        render_verdict(v, structure, *extra)
        if below:
            say("[red]refused:[/red] trust {} does not meet --require {}", v.trust, minimum)

    data = {"file": str(file), **v.to_json(), "structure": structure.to_json(), "require": minimum,
            "exitCode": code, "ok": code == 0}
    if below:
        data["verdict"] = "refused"
    emit(data, human)
    exit_with(code)
