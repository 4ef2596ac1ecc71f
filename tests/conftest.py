"""Fixtures shared by all tests. Server and peer fixtures live in tests/harness/fixtures.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import env

pytest_plugins = ["tests.harness.fixtures"]


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """../shared/vectors (skips outside CI when absent, fails in CI)."""
    return env.vectors()
