"""Pausing Python's cyclic garbage collector around bulk, cycle-free work.

Verifying a cartridge builds one tuple per row of each large table (about 100,000 for a
10,000-object ROM). None of them form reference cycles, so reference counting frees them all,
but the cyclic collector still walks every live one each time its thresholds trip: about 30 ms
per verify of the benchmark cartridge. `paused_gc()` turns it off for the duration and back on
only if it was on, so nesting and callers that manage it themselves are unaffected.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off (reference counting still frees memory)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
