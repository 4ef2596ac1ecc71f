"""A run observer that SIGKILLs its own process at a chosen point of a release run (tests install
it in a forked child, or in a CLI child through `killhook/sitecustomize.py`; shipped code never
reads a test hook from the environment)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from acxoci.release.journal import EffectEntry, Entry


class Killer:
    """SIGKILL after the n-th journal entry that `matches` (default: effect transitions), or, with
    `after_work`, after the n-th attempt's remote work and before anything about it is journaled."""

    def __init__(self, n: int, *, after_work: bool = False,
                 matches: Callable[[Entry], bool] | None = None) -> None:
        self.n = n
        self.before_journal = after_work
        self.matches = matches or (lambda e: isinstance(e, EffectEntry))
        self.seen = 0

    @staticmethod
    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def after_work(self, effect_id: str) -> None:
        if self.before_journal:
            self.seen += 1
            if self.seen == self.n:
                self.die()

    def after_entry(self, entry: Entry) -> None:
        if not self.before_journal and self.matches(entry):
            self.seen += 1
            if self.seen == self.n:
                self.die()
