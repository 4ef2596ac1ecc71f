"""Test-only: when ACX_TEST_KILL_AFTER=<n> is set, register a run observer that SIGKILLs this
process right after the n-th effect entry a release run journals. Put this folder on PYTHONPATH
of a child `acx` (tests/interop/test_github_actions.py); it imports nothing of the tests, so the
child still runs the acxoci it was given (a wheel)."""

import os

_N = os.environ.get("ACX_TEST_KILL_AFTER", "")
if _N.isdigit():
    import signal

    from acxoci.release import interpreter
    from acxoci.release.journal import EffectEntry

    class _Killer:
        seen = 0

        def after_work(self, effect_id: str) -> None:
            return

        def after_entry(self, entry: object) -> None:
            if isinstance(entry, EffectEntry):
                self.seen += 1
                if self.seen == int(_N):
                    os.kill(os.getpid(), signal.SIGKILL)

    interpreter.OBSERVERS.append(_Killer())
