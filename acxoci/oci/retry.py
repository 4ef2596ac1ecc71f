"""Retry policy shared by every registry request: which answers are worth retrying, how long to
wait (`Retry-After` or jittered exponential backoff), and the bounds in count and time."""

from __future__ import annotations

import email.utils
import random
import time

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF = 8.0


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Parse `Retry-After` (seconds or HTTP-date); None if absent or unparseable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def backoff(attempt: int) -> float:
    """Jittered exponential delay before retry number `attempt` (1-based), at most MAX_BACKOFF."""
    return float(min(MAX_BACKOFF, 0.1 * (2 ** (attempt - 1))) * (0.5 + random.random() / 2))


class Budget:
    """Bounds for one logical request: at most `max_retries` retries within `max_seconds`."""

    def __init__(self, max_retries: int, max_seconds: float) -> None:
        self.max_retries = max_retries
        self.max_seconds = max_seconds
        self.start = time.monotonic()
        self.attempt = 0
        self.waited = 0.0

    def spent(self) -> float:
        return max(time.monotonic() - self.start, self.waited)

    def next_delay(self, suggested: float | None = None) -> float | None:
        """The delay before the next try, or None when the budget is used up."""
        self.attempt += 1
        delay = suggested if suggested is not None else backoff(self.attempt)
        if self.attempt > self.max_retries or self.spent() + delay > self.max_seconds:
            return None
        self.waited += delay
        return delay
