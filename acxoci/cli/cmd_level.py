"""`acx level bench-init|run|issue|verify|revoke` and `acx status-list create|show`: the level
verifier's side (run the sealed held-out slice, gate, issue, revoke) and the consumer's check."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import platformdirs
import typer

from acxoci.attest import statuslist, vc
from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError, MalformedError
from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.attest.trust import TrustRegistry
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.apps import level_app, status_list_app
from acxoci.cli.common import REQUIRE_HELP, load_signing_key, refuse_below, required_trust, transport_options
from acxoci.cli.common import exit_with as _exit
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import Markup, count_progress, emit, say
from acxoci.errors import InvalidInput, NotFound, RefusedByPolicy, UsageError, VerificationFailed
from acxoci.fsutil import read_bytes
from acxoci.level import benchmark as bench_mod
from acxoci.level import oci as level_oci
from acxoci.level import policy as level_policy
from acxoci.level import status as st
from acxoci.level.binding import CartridgeBinding, bind_cartridge
from acxoci.level.constants import demo_measurement, is_demo_measurement
from acxoci.level.credential import LevelVerdict, issue_credential, verify_credential
from acxoci.level.gate import (
    DEFAULT_COOLDOWN,
    Attempt,
    append_attempt,
    cooldown_decision,
    gate,
    read_attempts,
)
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.run import DEFAULT_DRAW_COUNT, Game, RunResult, run_level
from acxoci.level.solver import load_solver


def _read_json(path: Path, what: str) -> Any:
    data = read_bytes(path, what)
    try:
        return loads_strict(data)
    except AttestError as exc:
        raise InvalidInput(f"{path}: {exc}") from exc


@dataclass(frozen=True)
class _Resolved:
    binding: CartridgeBinding
    pulled: level_oci.PulledCartridge | None


@contextmanager
def _cartridge(ref: str, now: datetime, registry: TrustRegistry | None,
               minimum: str | None = None) -> Iterator[_Resolved]:
    """A local .acx file, or an OCI reference pulled into a temp dir; verified and bound either way,
    and refused (exit 8) when its signer is below `minimum` (--require / --trust-registry)."""
    if Path(ref).is_file():
        yield _Resolved(_bound(Path(ref), now, registry, minimum), None)
        return
    if not level_oci.looks_like_reference(ref):
        raise NotFound(f"cartridge not found: {ref}")
    with tempfile.TemporaryDirectory(prefix="acx-level-") as tmp:
        pulled = level_oci.pull_cartridge(ref, Path(tmp), now=now, registry=registry)
        yield _Resolved(_bound(pulled.path, now, registry, minimum, where=ref), pulled)


def _bound(path: Path, now: datetime, registry: TrustRegistry | None, minimum: str | None,
           where: str | None = None) -> CartridgeBinding:
    binding = bind_cartridge(path, now=now, registry=registry)
    refuse_below(binding.trust, minimum, where or str(path))
    return binding


def _bench_key_path(bench: Path, key: Path | None) -> Path:
    if key is not None:
        return key
    name = bench.name.removesuffix(".json").removesuffix(".bench")
    return bench.with_name(name + ".key")


def _open_bench(bench: Path, key: Path | None) -> bench_mod.BenchmarkSuite:
    doc = bench_mod.load_document(bench)
    return bench_mod.open_suite(doc, bench_mod.read_key(_bench_key_path(bench, key)), str(bench))


CART_TRUST_HELP = "The cartridge's trust registry: its signer must be trusted in it (see --require)."


def _registry(path: Path | None, now: datetime) -> TrustRegistry | None:
    return None if path is None else load_trust_registry(path)


@contextmanager
def _progress(total_hint: int) -> Iterator[Any]:
    """A rich progress bar over games on a TTY (stderr); a no-op callback otherwise."""
    with count_progress("games", total_hint) as step:
        if step is None:
            yield None
            return

        def on_game(done: int, total: int, game: Game) -> None:
            step(done, total)

        yield on_game


def _play(bench: Path, bench_key: Path | None, binding: CartridgeBinding, solver: str, competence: float,
          draws: int, signer: PrivateKey) -> RunResult:
    suite = _open_bench(bench, bench_key)
    slv = load_solver(solver, competence=competence)
    with _progress(min(draws, len(suite.held_out()))) as on_game:
        return run_level(suite, cartridge=binding.path, rom_digest=binding.rom_digest, solver=slv,
                         signer=signer, draw_count=draws, on_game=on_game)


def bench_init_cmd(
    out_dir: Path = typer.Option(Path("."), "-o", "--output",
                                 help="Directory for the benchmark and its key."),
    demo: bool = typer.Option(False, "--demo", help="The reference demo suite acx-bench-dag-de@2026.07.1."),
    tasks: Path | None = typer.Option(None, "--tasks", help="Suite source {id,version,name,tasks,...}."),
) -> None:
    """Seal a benchmark: public slice in clear, held-out slice encrypted under a new verifier key."""
    if demo == (tasks is not None):
        raise UsageError("give exactly one of --demo or --tasks FILE")
    if tasks is None:
        suite = bench_mod.demo_suite()
    else:
        suite = bench_mod.suite_from_source(_read_json(tasks, "tasks file"), str(tasks))
    key = bench_mod.new_key()
    doc = bench_mod.seal_suite(suite, key)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{suite.id}@{suite.version}"
    bench_path, key_path = out_dir / f"{stem}.bench.json", out_dir / f"{stem}.key"
    bench_mod.write_key(key_path, key)
    st.write_json_atomic(bench_path, doc)
    data = {"benchmark": str(bench_path), "key": str(key_path), "id": suite.id, "version": suite.version,
            "digest": doc["digest"], "heldOutSliceDigest": doc["heldOutSliceDigest"],
            "tasks": len(suite.tasks), "heldOut": len(suite.held_out())}

    def human() -> None:
        say("[bold green]SEALED[/bold green] {}: {} tasks, {} held out",
            stem, data['tasks'], data['heldOut'])
        say("  benchmark: {}\n  digest: {}\n  held-out slice: {}\n  key (keep private): "
            "{}", str(bench_path), data['digest'], data['heldOutSliceDigest'], str(key_path))
    emit(data, human)


def run_cmd(
    ref: str = typer.Argument(..., help="The .acx cartridge or an OCI reference."),
    bench: Path = typer.Option(..., "--bench", help="Benchmark document (acx.benchmark/1)."),
    bench_key: Path | None = typer.Option(None, "--bench-key", help="Sealing key (default: beside --bench)."),
    solver: str = typer.Option("reference", "--solver", help="reference | python:mod:func | cmd:COMMAND"),
    competence: float = typer.Option(33.0, "--competence", help="Competence of the reference solver."),
    draws: int = typer.Option(DEFAULT_DRAW_COUNT, "--draws", help="Number of held-out tasks to play."),
    signer_key: Path | None = typer.Option(None, "--signer-key", help="Evidence key (default: ephemeral)."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help=CART_TRUST_HELP),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time."),
) -> None:
    """Re-run the cartridge on the sealed held-out slice and rate it (no credential)."""
    minimum = required_trust(require, trust_registry)
    at = _now(now)
    signer = load_signing_key(signer_key) if signer_key else generate_ed25519()
    with _cartridge(ref, at, _registry(trust_registry, at), minimum) as resolved:
        result = _play(bench, bench_key, resolved.binding, solver, competence, draws, signer)
    decision = gate(result.rating.sigma, result.games_played)
    data = result.summary() | {"gate": {"ok": decision.ok, "message": decision.message}}

    def human() -> None:
        color = "green" if decision.ok else "yellow"
        say("[bold {}]Lv{} {}[/bold {}] μ {} σ {} R {} · pass {} over {} games",
            color, result.level, result.tier, color, data['mu'], data['sigma'], data['R'],
            data['passRate'], result.games_played)
        say("  {}\n  rom digest: {}\n  solver: {}", decision.message, result.rom_digest, result.solver)
    emit(data, human)


def issue_cmd(
    ref: str = typer.Argument(..., help="The .acx cartridge or an OCI reference."),
    bench: Path = typer.Option(..., "--bench", help="Benchmark document (acx.benchmark/1)."),
    issuer: str = typer.Option(..., "--issuer", help="Issuer DID (did:web:…)."),
    issuer_key: Path = typer.Option(..., "--issuer-key", help="Issuer Ed25519 private key (PEM)."),
    status_list: Path = typer.Option(..., "--status-list", help="Status list credential file."),
    status_index: int | None = typer.Option(None, "--status-index", help="Index (default: next free)."),
    out: Path | None = typer.Option(None, "-o", "--output", help="Output (default <cartridge>.level.json)."),
    bench_key: Path | None = typer.Option(None, "--bench-key", help="Sealing key (default: beside --bench)."),
    solver: str = typer.Option("reference", "--solver", help="reference | python:mod:func | cmd:COMMAND"),
    competence: float = typer.Option(33.0, "--competence", help="Competence of the reference solver."),
    draws: int = typer.Option(DEFAULT_DRAW_COUNT, "--draws", help="Number of held-out tasks to play."),
    validity_days: int = typer.Option(365, "--valid-days", help="validUntil = now + this many days."),
    attempt_log: Path | None = typer.Option(None, "--attempt-log", help="Verifier's attempt log (JSONL)."),
    cooldown: int = typer.Option(int(DEFAULT_COOLDOWN.total_seconds()), "--cooldown",
                                 help="Seconds a ROM digest waits after a failed attempt."),
    attach: bool = typer.Option(True, "--attach/--no-attach", help="For OCI refs: attach the VC."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help=CART_TRUST_HELP),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    verifier: str | None = typer.Option(None, "--verifier", help="Who ran the benchmark, recorded as the "
                                        "credential's acx:verifier (default: the issuer DID)."),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time."),
) -> None:
    """Run, gate (σ < 1.5, games ≥ 30) and issue a level credential bound to the verified ROM digest.

    The credential records how the level was measured (benchmark, held-out slice, solver, verifier).
    A level from the demo solver (`--solver reference`) or the demo benchmark is a demonstration:
    policies refuse it unless their `level.allowDemo` is true.

    For an OCI reference the credential is also attached as a referrer and signed as a cosign
    level attestation (unless --no-attach)."""
    minimum = required_trust(require, trust_registry)
    at = _now(now)
    key = load_signing_key(issuer_key)
    log = attempt_log or Path(platformdirs.user_data_dir("acxoci")) / "level-attempts.jsonl"
    doc = bench_mod.load_document(bench)
    suite_label = f"{doc['id']}@{doc['version']}"
    lst = st.read_list_file(status_list)
    try:
        vc.verify(lst, key.public())
    except AttestError as exc:
        raise VerificationFailed(f"{status_list}: status list is not signed by --issuer-key ({exc})") from exc
    if lst.get("issuer") != issuer:
        raise UsageError(f"{status_list}: status list issuer {lst.get('issuer')} is not --issuer {issuer}")
    bits, purpose = statuslist.list_bits_from_credential(lst)
    with _cartridge(ref, at, _registry(trust_registry, at), minimum) as resolved:
        binding = resolved.binding
        cd = cooldown_decision(read_attempts(log), rom_digest=binding.rom_digest, benchmark=suite_label,
                               now=at, cooldown=timedelta(seconds=cooldown))
        if not cd.allowed:
            raise RefusedByPolicy(cd.message, details={"retryAfter": st.iso(cd.retry_after or at),
                                                       "failedAttempts": cd.failed_attempts})
        result = _play(bench, bench_key, binding, solver, competence, draws, key)
        decision = gate(result.rating.sigma, result.games_played)
        base = Attempt(at, binding.rom_digest, suite_label, "issued", round(result.rating.sigma, 3),
                       result.games_played, result.level)
        if not decision.ok:
            append_attempt(log, Attempt(at, binding.rom_digest, suite_label, "gate-failed",
                                        base.sigma, base.games, base.level, decision.message))
            raise RefusedByPolicy(decision.message, details=result.summary())
        index = status_index if status_index is not None else st.allocate_index(status_list, len(bits) * 8)
        if not 0 <= index < len(bits) * 8:
            raise UsageError(f"--status-index {index} is outside the list (0..{len(bits) * 8 - 1})")
        entry = StatusEntry(str(lst["id"]), index, purpose, f"{lst['id']}#{index}")
        cred = issue_credential(result, cartridge_id=binding.cartridge_id, issuer=issuer, key=key, now=at,
                                status=entry, validity=timedelta(days=validity_days),
                                subject_keyid=binding.keyid, verifier=verifier)
        stem = Path(ref).name.removesuffix(".acx") if resolved.pulled is None else "cartridge"
        target = out or Path(stem + ".level.json")
        st.write_json_atomic(target, cred)
        append_attempt(log, base)
        data = result.summary() | {"credential": str(target), "issuer": issuer, "statusListIndex": index,
                                   "statusList": entry.list_credential, "gate": decision.message}
        if resolved.pulled is not None and attach:
            p = resolved.pulled
            data["referrer"] = level_oci.attach_credential(p.target, p.manifest, cred, now=at).digest
            att = level_oci.attest_level(p.target, p.manifest, p.repository, cred, key, now=at)
            data["attestation"] = {"predicateType": level_oci.LEVEL_PREDICATE_TYPE,
                                   "subject": p.manifest.digest, "legacyTag": att.legacy_tag,
                                   "bundleReferrer": att.bundle_referrer}

    def human() -> None:
        say("[bold green]ISSUED[/bold green] Lv{} {} (μ {}, σ {}, {} games) → {}",
            result.level, result.tier, data['mu'], data['sigma'], result.games_played, str(target))
        if is_demo_measurement(result.solver, result.benchmark_digest):
            say("  [yellow]demonstration[/yellow]: measured by the demo solver or "
                "benchmark; policies refuse it unless level.allowDemo is true")
        say("  rom digest: {}\n  status: {} #{}", result.rom_digest, entry.list_credential, index)
        if "referrer" in data:
            say("  attached: {} (+ cosign attestation {})",
                data['referrer'], level_oci.LEVEL_PREDICATE_TYPE)
    emit(data, human)


def _render_level(v: LevelVerdict) -> None:
    color = {"verified": "green", "revoked": "red", "invalid": "red", "unresolved": "yellow"}[v.state]
    say("[bold {}]{}[/bold {}]{}{}", color, v.state.upper(), color,
        f" Lv{v.level} {v.tier}" if v.level is not None else "", f" · issuer {v.issuer}" if v.issuer else "")
    for r in v.reasons:
        say("  - {}", r)
    if v.ok and v.status is not None:
        say("  status: {}", v.status.reason)
    if v.variant:
        say("  proof: eddsa-jcs-2022 ({} variant), evidence checked: {}", v.variant, v.evidence_checked)


def verify_cmd(
    credential: str = typer.Argument(..., help="Level credential file, or a cartridge OCI reference."),
    cartridge: Path | None = typer.Option(None, "--cartridge", help="Verify and bind to this cartridge."),
    rom_digest: str | None = typer.Option(None, "--rom-digest", help="Expected (verified) ROM digest."),
    issuers: Path = typer.Option(..., "--issuers", help="Issuer trust registry (acx.trust-registry/1)."),
    status_list: str | None = typer.Option(None, "--status-list", help="Status list: file, https URL, oci://REF."),
    max_status_age: int = typer.Option(int(st.DEFAULT_MAX_AGE.total_seconds()), "--max-status-age",
                                       help="Seconds after its validFrom that a status list is stale."),
    allow_offline: bool = typer.Option(False, "--allow-offline", help="Accept a cached/stale status list."),
    variant: str = typer.Option("auto", "--variant", help="Proof variant: auto, w3c or acx."),
    min_level: str | None = typer.Option(None, "--require-level", help="Require this level N or a tier."),
    allow_demo: bool = typer.Option(False, "--allow-demo-level", help="With --require-level: count a level "
                                    "measured by the demo solver or benchmark."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Status-list cache directory."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help=CART_TRUST_HELP),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time."),
) -> None:
    """Verify a level credential: proof, issuer, validity, gate, ROM binding, evidence, revocation.

    Given an OCI reference, the cartridge is pulled and verified and every attached credential is
    checked against its ROM digest; it passes when one of them verifies. The level only: not the
    artifact's other attestations or lifecycle (`acx verify REF --policy FILE` judges all of it)."""
    if variant not in ("auto", "w3c", "acx"):
        raise UsageError(f"--variant must be auto, w3c or acx, not {variant!r}")
    minimum = required_trust(require, trust_registry)
    at = _now(now)
    registry = IssuerRegistry.load(issuers, now=at)
    required = level_policy.parse_requirement(min_level) if min_level is not None else None
    check = level_policy.status_checker(status_list, issuers=registry, now=at,
                                        max_age=timedelta(seconds=max_status_age),
                                        allow_offline=allow_offline, cache_dir=cache_dir)

    def run(doc: Any, binding_rom: str, publisher: str | None, keyid: str | None) -> LevelVerdict:
        return verify_credential(doc, issuers=registry, expected_rom_digest=binding_rom, now=at,
                                 status_check=check, subject_publisher=publisher, subject_keyid=keyid,
                                 variant=variant)  # type: ignore[arg-type]

    if not Path(credential).is_file() and level_oci.looks_like_reference(credential):
        if cartridge is not None or rom_digest is not None:
            raise UsageError("with an OCI reference the cartridge is the reference itself")
        with _cartridge(credential, at, _registry(trust_registry, at), minimum) as resolved:
            b, pulled = resolved.binding, resolved.pulled
            assert pulled is not None
            found = level_oci.find_credentials(pulled.target, pulled.manifest)
            checked = [(ref.digest, doc, run(doc, b.rom_digest, b.publisher_id, b.keyid))
                       for ref, doc in found]
        decision = level_policy.decide(checked, required, allow_demo=allow_demo or required is None)
        verdicts = list(decision.verdicts)
        code = 0 if decision.ok else 1
        data = {"reference": credential, "subject": pulled.manifest.digest, "romDigest": b.rom_digest,
                "credentials": [v.to_json() | {"referrer": d} for d, v in verdicts], "ok": decision.ok,
                "requiredLevel": required, "reason": decision.reason(), "exitCode": code}

        def human() -> None:
            color = "green" if decision.ok else "red"
            say("[bold {}]{}[/bold {}] {}",
                color, 'PASS' if decision.ok else 'FAIL', color, decision.reason())
            for d, v in verdicts:
                say("[dim]{}[/dim]", d)
                _render_level(v)
        emit(data, human)
        _exit(code)
    if (cartridge is None) == (rom_digest is None):
        raise UsageError("give exactly one of --cartridge FILE or --rom-digest D")
    doc = _read_json(Path(credential), "credential")
    publisher = keyid = None
    if cartridge is not None:
        binding = _bound(cartridge, at, _registry(trust_registry, at), minimum)
        expected, publisher, keyid = binding.rom_digest, binding.publisher_id, binding.keyid
    else:
        assert rom_digest is not None
        expected = rom_digest
    v = run(doc, expected, publisher, keyid)
    single = level_policy.decide([("file", doc, v)], required, allow_demo=allow_demo or required is None)
    demo = demo_measurement(doc) if v.ok else None
    code = 0 if single.ok else 1

    def human_one() -> None:
        _render_level(v)
        if demo is not None:
            say("  [yellow]demonstration[/yellow]: measured by {}; a level requirement sets it aside "
                "unless --allow-demo-level (a policy: level.allowDemo)", demo)
        if v.ok and not single.ok:
            say("[bold red]FAIL[/bold red] {}", single.reason())
    emit(v.to_json() | {"credential": credential, "requiredLevel": required, "reason": single.reason(),
                        "exitCode": code}, human_one)
    _exit(code)


def revoke_cmd(
    credential: Path = typer.Argument(..., help="Level credential (JSON) to revoke."),
    status_list: Path = typer.Option(..., "--status-list", help="Status list credential file."),
    issuer_key: Path = typer.Option(..., "--issuer-key", help="The list issuer's private key."),
    publish: str | None = typer.Option(None, "--push", help="Also push the list to this OCI reference."),
    now: str | None = typer.Option(None, "--now", help="Sign at this RFC 3339 time."),
) -> None:
    """Revoke a credential: set its bit in the status list and re-sign the list."""
    at = _now(now)
    doc = _read_json(credential, "credential")
    if not isinstance(doc, dict):
        raise InvalidInput(f"{credential}: not a JSON object")
    try:
        entry = StatusEntry.from_json(doc.get("credentialStatus"))
    except AttestError as exc:
        raise InvalidInput(f"{credential}: {exc}") from exc
    lst = st.read_list_file(status_list)
    if lst.get("id") != entry.list_credential:
        raise UsageError(f"{status_list} is list {lst.get('id')}, "
                         f"the credential uses {entry.list_credential}")
    new = st.set_status(lst, entry.index, key=load_signing_key(issuer_key), now=at)
    st.write_json_atomic(status_list, new)
    data: dict[str, Any] = {"revoked": True, "statusList": str(status_list), "listId": entry.list_credential,
                            "index": entry.index, "validFrom": new["validFrom"]}
    if publish is not None:
        desc, tag = level_oci.publish_status_list(publish, new, now=at)
        data["published"] = {"digest": desc.digest, "tag": tag}
    emit(data, lambda: say("[bold red]REVOKED[/bold red] {} #{} (list re-signed {})",
                           entry.list_credential, entry.index, new['validFrom']))


def status_create_cmd(
    list_id: str = typer.Option(..., "--id", help="The list's id / URL (statusListCredential)."),
    issuer: str = typer.Option(..., "--issuer", help="Issuer DID."),
    issuer_key: Path = typer.Option(..., "--issuer-key", help="Issuer Ed25519 private key (PEM)."),
    out: Path = typer.Option(..., "-o", "--output", help="Where to write the signed list."),
    size: int = typer.Option(statuslist.MIN_BITS, "--size", help="Bits (>= 131072, multiple of 8)."),
    valid_days: int | None = typer.Option(None, "--valid-days", help="validUntil = now + days."),
    now: str | None = typer.Option(None, "--now", help="Sign at this RFC 3339 time."),
) -> None:
    """Create and sign an empty Bitstring Status List credential (revocation)."""
    at = _now(now)
    try:
        doc = st.create_status_list(list_id=list_id, issuer=issuer, key=load_signing_key(issuer_key), now=at,
                                    size_bits=size,
                                    valid_for=timedelta(days=valid_days) if valid_days is not None else None)
    except MalformedError as exc:
        raise UsageError(str(exc)) from exc
    st.write_json_atomic(out, doc)
    data = {"statusList": str(out), "id": list_id, "issuer": issuer, "size": size,
            "validFrom": doc["validFrom"]}
    emit(data, lambda: say("[bold green]CREATED[/bold green] {} ({} bits) → {}", list_id, size, str(out)))


def status_show_cmd(
    source: str = typer.Argument(..., help="Status list file or https URL."),
    index: int | None = typer.Option(None, "--index", help="Show this index's bit."),
    issuers: Path | None = typer.Option(None, "--issuers", help="Verify the proof against this registry."),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time."),
) -> None:
    """Show a status list: issuer, dates, size, set bits; optionally verify it."""
    at = _now(now)
    doc = st.fetch_list(source, now=at).doc
    verified: str | None = None
    if issuers is not None:
        listed = st.verify_status_list(doc, issuers=IssuerRegistry.load(issuers, now=at), now=at)
        verified = listed.keyid
    try:
        bits, purpose = statuslist.list_bits_from_credential(doc)
    except AttestError as exc:
        raise InvalidInput(f"{source}: {exc}") from exc
    set_idx = [j for n, byte in enumerate(bits) if byte for j in range(n * 8, n * 8 + 8)
               if statuslist.get_bit(bits, j)]
    data: dict[str, Any] = {"id": doc.get("id"), "issuer": doc.get("issuer"), "purpose": purpose,
                            "validFrom": doc.get("validFrom"), "validUntil": doc.get("validUntil"),
                            "size": len(bits) * 8, "setCount": len(set_idx), "set": set_idx[:1000],
                            "verifiedBy": verified}
    if index is not None:
        try:
            data["index"] = {"index": index, "set": statuslist.get_bit(bits, index)}
        except MalformedError as exc:
            raise UsageError(str(exc)) from exc

    def human() -> None:
        head = Markup("[bold green]VERIFIED[/bold green] ") if verified else ""
        say("{}{} · issuer {} · {}", head, str(data['id']), str(data['issuer']), purpose)
        until = f" until {data['validUntil']}" if data["validUntil"] else ""
        say("  valid from {}{}", data['validFrom'], until)
        say("  {} bits, {} set{}", data["size"], len(set_idx),
            f": {', '.join(map(str, set_idx[:20]))}" if set_idx else "")
        if index is not None:
            say("  index {}: {}", index, 'SET (revoked)' if data['index']['set'] else 'clear')
    emit(data, human)


def status_publish_cmd(
    file: Path = typer.Argument(..., help="Signed status list credential file."),
    ref: str = typer.Argument(..., help="OCI reference (tag defaults to :status)."),
    issuers: Path | None = typer.Option(None, "--issuers", help="Verify against this registry first."),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time."),
) -> None:
    """Push a status list as an OCI artifact (application/vnd.acx.status-list.v1+json) and move its tag."""
    at = _now(now)
    doc = st.read_list_file(file)
    if issuers is not None:
        st.verify_status_list(doc, issuers=IssuerRegistry.load(issuers, now=at), now=at)
    desc, tag = level_oci.publish_status_list(ref, doc, now=at)
    pinned = level_oci.published_reference(ref, tag, desc.digest)
    data = {"statusList": str(file), "reference": pinned, "tag": tag, "digest": desc.digest}
    emit(data, lambda: say("[bold green]PUBLISHED[/bold green] {} :{} → {}", ref, tag, desc.digest),
         quiet_line=desc.digest)


_REGISTERED = False


def register(app: typer.Typer) -> None:
    """Add the level commands to `acx level` and the status-list commands to `acx status-list`."""
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    level_app.command("bench-init")(bench_init_cmd)
    level_app.command("run")(transport_options(layout="ref")(run_cmd))
    level_app.command("issue")(transport_options(referrers=True, layout="ref")(issue_cmd))
    level_app.command("verify")(transport_options()(verify_cmd))
    level_app.command("revoke")(transport_options()(revoke_cmd))
    status_list_app.command("create")(status_create_cmd)
    status_list_app.command("show")(transport_options()(status_show_cmd))
    status_list_app.command("publish")(transport_options(layout="ref")(status_publish_cmd))
