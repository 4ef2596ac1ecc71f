"""The one blob-transfer scheduler of push, pull and cp: `BlobScheduler(n)` runs at most `n` blob
transfers at a time (the `--concurrency` of those commands) on worker threads. Manifests are
never scheduled here: a caller pushes its manifest only after `settle()` proved every blob in
place, so a destination never holds a manifest whose blobs are missing.

The first failure wins: it is recorded, every other transfer stops at its next chunk (a transfer
calls `check()` from its progress hook and gets TransferCancelled) and queued ones never start;
`settle()` (or leaving the `with` block) re-raises that first failure, never a TransferCancelled.
An interrupt in the calling thread cancels the batch the same way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

DEFAULT_PUSH_CONCURRENCY = 5
"""`oras push` default."""
DEFAULT_PULL_CONCURRENCY = 3
"""`oras pull` default."""
DEFAULT_COPY_CONCURRENCY = 3
"""`oras cp` default."""
MAX_CONCURRENCY = 64

T = TypeVar("T")


class TransferCancelled(Exception):
    """Raised inside a transfer whose batch already failed or was interrupted (internal: the
    batch's first failure is what callers see)."""


class BlobScheduler:
    """At most `concurrency` blob transfers in flight; the first failure cancels the rest."""

    def __init__(self, concurrency: int, *, name: str = "acx-blob") -> None:
        self.concurrency = max(1, min(MAX_CONCURRENCY, int(concurrency)))
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix=name)
        self._pending: list[Future[Any]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._first: BaseException | None = None

    @property
    def failure(self) -> BaseException | None:
        """The batch's first real failure (None while none, or when it was only cancelled)."""
        return self._first

    @property
    def cancelled(self) -> bool:
        return self._stop.is_set()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue one transfer; it starts when a worker is free (never after a failure)."""
        fut: Future[T] = self._pool.submit(self._run, fn, args, kwargs)
        self._pending.append(fut)
        return fut

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        self.check()
        try:
            return fn(*args, **kwargs)
        except TransferCancelled:
            raise
        except BaseException as exc:
            with self._lock:
                if self._first is None:
                    self._first = exc
            self._stop.set()
            raise

    def check(self) -> None:
        """Called by a transfer between chunks: TransferCancelled once the batch failed."""
        if self._stop.is_set():
            raise TransferCancelled("another transfer of this batch failed")

    def cancel(self) -> None:
        """Stop the batch: queued transfers never start, running ones stop at their next chunk."""
        self._stop.set()
        for f in self._pending:
            f.cancel()

    def settle(self) -> None:
        """Wait for every transfer submitted so far; re-raise the batch's first failure."""
        futures, self._pending = self._pending, []
        for f in futures:
            if not f.cancelled():
                f.exception()  # waits
        if self._first is not None:
            raise self._first
        if self._stop.is_set():
            raise TransferCancelled("the transfers were cancelled")

    def close(self) -> None:
        """Cancel what has not started and wait for the running transfers to stop."""
        self.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> BlobScheduler:
        return self

    def __exit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            self.close()
            return
        try:
            self.settle()
        finally:
            self.close()
