"""A child process for crash tests: runs `install()` with a hook that, at the named stage, touches
a marker file and waits to be killed (or sleeps, then goes on). Tests SIGKILL it there.

    python -m tests.harness.install_child REF POLICY STORE STAGE MARKER [NAME] [SECONDS]

Exit 0 when the install ran to the end (installed or refused), 3 when it raised."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path


def main(argv: list[str]) -> int:
    from acxoci.errors import AcxError
    from acxoci.install.install import InstallHooks, install
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy

    ref, policy, store, stage, marker = argv[:5]
    name = argv[5] if len(argv) > 5 and argv[5] else None
    seconds = float(argv[6]) if len(argv) > 6 else 60.0

    def at(where: str) -> None:
        if where == stage:
            Path(marker).touch()
            time.sleep(seconds)

    now = datetime.now(UTC)
    try:
        install(ref, policy=load_policy(Path(policy), now=now), store=Store(Path(store)), now=now, name=name,
                hooks=InstallHooks(at))
    except AcxError as exc:
        print(exc.one_line(), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
