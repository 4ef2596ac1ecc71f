"""pytest fixtures: real registries and peers on 127.0.0.1, each started and stopped by PID.

Registries are function-scoped by default (a clean registry per test); `*_session` variants
share one server for read-mostly tests. A missing binary skips on a developer machine and
fails when CI is set (tests/harness/env.py).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import env, sigstack
from tests.harness.peers import Cosign, Oras
from tests.harness.servers import Registry, start_crane, start_distribution, start_refreg


def docker_engine_reachable() -> bool:
    """True when a Docker engine answers (never on this project's machines; optional elsewhere)."""
    try:
        import docker  # installed with testcontainers

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


# A registry:2 container (testcontainers) joins the matrix only where a Docker engine is
# reachable; it is never required, so its absence is not a skip.
REGISTRY_KINDS: tuple[str, ...] = ("distribution", "refreg", "crane") + (
    ("container",) if docker_engine_reachable() else ()
)


def start_registry(kind: str, root: Path, **kw: object) -> Registry:
    """Start a registry of `kind` (distribution | refreg | crane) under `root`."""
    if kind == "distribution":
        return start_distribution(env.peer("docker-registry"), root, **kw)  # type: ignore[arg-type]
    if kind == "refreg":
        return start_refreg(env.peer("acx-refreg"), root)
    if kind == "crane":
        return start_crane(env.peer("crane"), root)
    if kind == "container":
        return start_container_registry(root)
    raise ValueError(kind)


def start_container_registry(root: Path) -> Registry:
    """distribution in a `registry:2` container via testcontainers, published on 127.0.0.1."""
    from testcontainers.core.container import DockerContainer

    from tests.harness.servers import wait_ready

    container = DockerContainer("registry:2").with_bind_ports(5000, None)
    container.start()
    host = f"127.0.0.1:{container.get_exposed_port(5000)}"

    class _Proc:  # the Registry API stops by PID; a container stops through Docker
        pid = -1
        returncode: int | None = None

        def poll(self) -> int | None:
            return None

    reg = Registry("distribution", host, _Proc(), root)  # type: ignore[arg-type]
    reg.stop = container.stop  # type: ignore[method-assign]
    wait_ready(reg.url, _Proc(), root / "container.log")  # type: ignore[arg-type]
    return reg


@pytest.fixture
def distribution_registry(tmp_path: Path) -> Iterator[Registry]:
    """distribution 2.8: no Referrers API (tag-schema fallback)."""
    reg = start_registry("distribution", tmp_path / "distribution")
    yield reg
    reg.stop()


@pytest.fixture
def distribution_registry_basic(tmp_path: Path) -> Iterator[Registry]:
    """distribution 2.8 with htpasswd basic auth (user `acx`, password `acx-secret`)."""
    reg = start_registry("distribution", tmp_path / "distribution-basic", basic_auth=("acx", "acx-secret"))
    yield reg
    reg.stop()


@pytest.fixture
def distribution_registry_tls(tmp_path: Path) -> Iterator[Registry]:
    """distribution 2.8 over TLS with a throwaway CA (`reg.ca_path`)."""
    reg = start_registry("distribution", tmp_path / "distribution-tls", tls=True)
    yield reg
    reg.stop()


@pytest.fixture
def refreg(tmp_path: Path) -> Iterator[Registry]:
    """acx-refreg: ggcr registry with the OCI 1.1 Referrers API."""
    reg = start_registry("refreg", tmp_path / "refreg")
    yield reg
    reg.stop()


@pytest.fixture
def crane_registry(tmp_path: Path) -> Iterator[Registry]:
    """`crane registry serve`: no Referrers API."""
    reg = start_registry("crane", tmp_path / "crane")
    yield reg
    reg.stop()


@pytest.fixture(params=REGISTRY_KINDS)
def any_registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    """Each registry kind in turn."""
    reg = start_registry(str(request.param), tmp_path / str(request.param))
    yield reg
    reg.stop()


@pytest.fixture
def oci_layout(tmp_path: Path) -> Path:
    """A path for an OCI image layout (not yet created)."""
    return tmp_path / "layout"


def _peer_home(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    return tmp_path_factory.mktemp(f"home-{name}")


@pytest.fixture(scope="session")
def oras12(tmp_path_factory: pytest.TempPathFactory) -> Oras:
    return Oras("oras12", env.peer("oras12"), _peer_home(tmp_path_factory, "oras12"))


@pytest.fixture(scope="session")
def oras13(tmp_path_factory: pytest.TempPathFactory) -> Oras:
    return Oras("oras13", env.peer("oras13"), _peer_home(tmp_path_factory, "oras13"))


@pytest.fixture(scope="session", params=["oras12", "oras13"])
def any_oras(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Oras:
    name = str(request.param)
    return Oras(name, env.peer(name), _peer_home(tmp_path_factory, name))


@pytest.fixture(scope="session")
def cosign2(tmp_path_factory: pytest.TempPathFactory) -> Cosign:
    return Cosign("cosign2", env.peer("cosign2"), _peer_home(tmp_path_factory, "cosign2"), major=2)


@pytest.fixture(scope="session")
def cosign3(tmp_path_factory: pytest.TempPathFactory) -> Cosign:
    return Cosign("cosign3", env.peer("cosign3"), _peer_home(tmp_path_factory, "cosign3"), major=3)


@pytest.fixture(scope="session")
def sigstack_stack() -> Iterator[sigstack.SigStack]:
    """The loopback Sigstore stack, one per test session (the TSA's metrics port 2112 allows one
    per machine). Missing servers or a taken port skip locally and fail in CI."""
    for rel in sigstack.SIGSTACK_BINS:
        if not (env.PEERS / rel).exists():
            env.missing(f"Sigstore stack server {rel} not found in {env.PEERS}; run `make sigstore-stack`")
    # its own folder, not pytest's basetemp: another pytest session of the same user prunes old
    # basetemps, and the stack's mint secret and pid files must outlive that
    folder = Path(tempfile.mkdtemp(prefix="acx-sigstack-"))
    try:
        try:
            stack = sigstack.start(folder)
        except RuntimeError as exc:
            env.missing(str(exc))
            raise
        yield stack
        sigstack.stop(stack)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def sigstore_go_verifier() -> Path:
    """Debian's `sigstore-go-verification` (the sigstore-go library's verifier)."""
    if not sigstack.SGV.exists():
        env.missing(f"sigstore-go-verification not found at {sigstack.SGV}; run `make sigstore-stack`")
    return sigstack.SGV
