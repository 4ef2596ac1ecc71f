"""Test-only pause points for crash tests of `acx install` (see `acxoci.install.install`).

With `ACX_TEST_PAUSE_AT=<stage>` the install sleeps at that stage (after touching
`$ACX_TEST_PAUSE_FILE` if set) so a test can SIGKILL it there deterministically. A leaf module, so
the store and the installer can both pause without importing each other. Never set it outside tests.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PAUSE_ENV = "ACX_TEST_PAUSE_AT"
PAUSE_FILE_ENV = "ACX_TEST_PAUSE_FILE"


def pause_for_test(stage: str) -> None:
    """Test-only: sleep at `stage` when ACX_TEST_PAUSE_AT names it."""
    if os.environ.get(PAUSE_ENV) != stage:
        return
    marker = os.environ.get(PAUSE_FILE_ENV)
    if marker:
        Path(marker).write_text(stage, encoding="utf-8")
    time.sleep(float(os.environ.get("ACX_TEST_PAUSE_SECONDS", "60")))
