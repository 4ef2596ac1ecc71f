"""The `acx` console entry point: start what a command will need before loading the CLI.

Loading the CLI (typer, rich, the crypto stack) takes about 0.1 s. For `acx cartridge verify
FILE` the cartridge is opened (every check of `open_cartridge`) and its ROM hashing pass started
first, so the hashing helper works while the rest loads; the command's own `open_cartridge` then
takes that opened cartridge if the file is unchanged (acxoci/cartridge/reader.py `open_early`).
Reading the arguments here is only a guess at what the command will open: a wrong guess costs
the work of one open, never a verdict.
"""

from __future__ import annotations

import sys

# the verify command's options that take a value (acxoci/cli/cmd_cartridge.py verify_cmd)
_VALUE_OPTIONS = frozenset({"--trust-registry", "--require", "--now", "--max-decompressed"})


def early_cartridge(argv: list[str]) -> tuple[str, dict[str, int]] | None:
    """(FILE, limits) when `argv` reads as `cartridge verify [options] FILE`, else None."""
    words = [a for a in argv if not a.startswith("-")][:2]
    if words != ["cartridge", "verify"] or "--" in argv or argv.index("verify") < argv.index("cartridge"):
        return None
    limits: dict[str, int] = {}
    path: str | None = None
    rest = iter(argv[argv.index("verify") + 1 :])
    for arg in rest:
        name, eq, value = arg.partition("=")
        if name in _VALUE_OPTIONS:
            value = value if eq else next(rest, "")
            if name == "--max-decompressed":
                if not value.isascii() or not value.isdigit():
                    return None
                limits["max_decompressed"] = int(value)
        elif arg.startswith("-"):
            continue
        elif path is None:
            path = arg
        else:
            return None  # more than one operand: not a shape this guess knows
    return (path, limits) if path else None


def main() -> None:
    """Run `acx`."""
    guess = early_cartridge(sys.argv[1:])
    if guess is not None:
        from acxoci.cartridge.reader import open_early

        open_early(guess[0], **guess[1])
    from acxoci.cli.main import main as cli_main

    cli_main()
