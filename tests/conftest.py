"""Fixtures shared by all tests. Server and peer fixtures live in tests/harness/fixtures.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import env

pytest_plugins = ["tests.harness.fixtures"]


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """../shared/vectors (skips outside CI when absent, fails in CI)."""
    return env.vectors()


@pytest.fixture
def tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone set to UTC+9 (POSIX form: needs no tz database), so that a
    conversion to local time instead of UTC shows in tests of times written and compared in UTC."""
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    assert time.localtime(0).tm_hour == 9
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own user cache (status lists and the trust documents' high-water marks),
    so no test sees another's marks and none writes into the real home."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
