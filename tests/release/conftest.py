"""Fixtures of the release control-plane tests: a primary registry (distribution 2.8) behind a fault
proxy, and pull-through caches of it (distribution's `proxy.remoteurl`), each started and stopped
by PID."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import env
from tests.harness.faultproxy import FaultProxy
from tests.harness.servers import Registry, start_pull_through_cache


@pytest.fixture
def proxied(distribution_registry: Registry) -> Iterator[FaultProxy]:
    """A fault proxy in front of a fresh distribution registry (no rules until a test adds them)."""
    with FaultProxy(distribution_registry.host) as proxy:
        yield proxy


@pytest.fixture
def pull_through(tmp_path: Path) -> Iterator[list[Registry]]:
    """The pull-through caches a test starts with `cache_of(pull_through, ...)`; each is stopped at the
    end of the test."""
    started: list[Registry] = []
    yield started
    for reg in started:
        reg.stop()


def cache_of(started: list[Registry], root: Path, upstream_host: str) -> Registry:
    """A pull-through cache of `upstream_host`, remembered in `started` (stopped by the fixture)."""
    reg = start_pull_through_cache(env.peer("docker-registry"), root, f"http://{upstream_host}")
    started.append(reg)
    return reg
