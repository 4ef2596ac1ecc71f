"""Names and formats shared by the level modules (a leaf: it imports nothing of ours), so the
OCI glue, the credential verifier and the status lists do not import each other in a circle."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

CREDENTIAL_MEDIA_TYPE: Final = "application/vc"
LEVEL_ARTIFACT_TYPE: Final = "application/vnd.acx.level-attestation.v1"
STATUS_MEDIA_TYPE: Final = "application/vnd.acx.status-list.v1+json"


def iso(dt: datetime) -> str:
    """RFC 3339 UTC with milliseconds and `Z`, as the reference writes timestamps."""
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: The reference's demo benchmark (`acx-bench-dag-de@2026.07.1`): its suite digest, per ACX brief §10.
DEMO_BENCHMARK_ID: Final = "acx-bench-dag-de"
DEMO_SOLVER_PREFIX: Final = "reference("


def measurement_fields(doc: Mapping[str, Any]) -> dict[str, str | None]:
    """How a level credential says it was measured: benchmark id and digest, solver, verifier."""
    subject = doc.get("credentialSubject")
    results = subject.get("result") if isinstance(subject, Mapping) else None
    res = results[0] if isinstance(results, list) and results and isinstance(results[0], Mapping) else {}

    def text(key: str) -> str | None:
        value = res.get(key)
        return value if isinstance(value, str) else None

    return {"benchmark_id": text("acx:benchmarkId"), "benchmark_digest": text("acx:benchmarkDigest"),
            "solver": text("acx:solver"), "verifier": text("acx:verifier")}


def demo_measurement(doc: Mapping[str, Any]) -> str | None:
    """What makes a level credential's measurement a demonstration (the demo solver or the demo
    benchmark), or None: the one rule every level requirement applies unless demos are allowed."""
    m = measurement_fields(doc)
    if not is_demo_measurement(m["solver"], m["benchmark_digest"], m["benchmark_id"]):
        return None
    solver = m["solver"]
    demo_solver = solver is not None and solver.strip().lower().startswith(DEMO_SOLVER_PREFIX)
    return f"solver {solver}" if demo_solver else "the demo benchmark"


def is_demo_measurement(solver: str | None, benchmark_digest: str | None,
                        benchmark_id: str | None = None) -> bool:
    """True for a level measured by the demo solver or on the demo benchmark (compared without
    regard to case or surrounding space: a spelling is no disguise)."""
    if solver is not None and solver.strip().lower().startswith(DEMO_SOLVER_PREFIX):
        return True
    if benchmark_id is not None and benchmark_id.strip().lower() == DEMO_BENCHMARK_ID:
        return True
    if benchmark_digest is None:
        return False
    from acxoci.level.benchmark import demo_suite_digest

    return benchmark_digest.strip().lower() == demo_suite_digest()
