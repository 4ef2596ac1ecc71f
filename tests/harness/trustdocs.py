"""Test documents and set-ups: one-key `acx.trust-registry/1` registries built through the same
`attest.trust.make_key_entry` that `acx key trust` uses (so tests share one shape)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PublicKey, generate_ed25519
from acxoci.attest.trust import SCHEMA_VERSION, make_key_entry, parse_rfc3339


def registry_doc(
    pub: PublicKey,
    publisher: str,
    *,
    not_before: str = "2026-01-01T00:00:00Z",
    not_after: str = "2028-01-01T00:00:00Z",
    verified_at: str = "2026-01-01T00:00:00Z",
    oidc_subject: str | None = None,
) -> dict[str, Any]:
    """A registry vouching for `pub` as `publisher` (dns-txt proof, or github-oidc for io.github.*)."""
    entry = make_key_entry(
        pub,
        publisher_id=publisher,
        not_before=parse_rfc3339(not_before),
        not_after=parse_rfc3339(not_after),
        verified_at=parse_rfc3339(verified_at),
        oidc_subject=oidc_subject,
    )
    return {"schemaVersion": SCHEMA_VERSION, "keys": [entry]}


LEVEL_BENCH_FILE = "acx-bench-dag-de@2026.07.1.bench.json"


def make_level_verifier(capsys: Any, folder: Path, *, issuer: str, list_id: str, now: str) -> dict[str, Path]:
    """A level verifier in `folder`, set up through the CLI: an issuer key (`issuer.pem`,
    `issuer.pub`), an issuer registry trusting it (`issuers.json`), the sealed demo benchmark
    (`bench/`) and an empty signed status list (`sl.json`). Returns `dir` and `bench`."""
    from tests.harness.cli import acx_json

    key = generate_ed25519()
    pub = key.public()
    (folder / "issuer.pem").write_bytes(key.pkcs8_pem())
    (folder / "issuer.pub").write_text(pub.spki_pem())
    (folder / "issuers.json").write_text(json.dumps(registry_doc(pub, "example.verifier")))
    code, out = acx_json(capsys, "level", "bench-init", "--demo", "-o", str(folder / "bench"))
    assert code == 0, out
    code, out = acx_json(
        capsys,
        "status-list",
        "create",
        "--id",
        list_id,
        "--issuer",
        issuer,
        "--issuer-key",
        str(folder / "issuer.pem"),
        "-o",
        str(folder / "sl.json"),
        "--now",
        now,
    )
    assert code == 0 and out["size"] == 131072, out
    return {"dir": folder, "bench": folder / "bench" / LEVEL_BENCH_FILE}
