"""`acx push/pull/discover/attach/cp/tags/login/logout` and `acx manifest get`: moving ACX
artifacts through OCI registries and on-disk layouts (`oci-layout:PATH[:tag|@digest]`)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from acxoci.attest.errors import AttestError
from acxoci.cli.apps import manifest_app
from acxoci.cli.common import (
    KEYLESS_KEY_HELP,
    REQUIRE_HELP,
    TLOG_HELP,
    TOKEN_HELP,
    TRUST_CONFIG_HELP,
    attestation_signer,
    refuse_local_file,
    required_trust,
    transport_options,
)
from acxoci.cli.output import (
    OPTS,
    Tree,
    emit,
    info,
    say,
    transfer_progress,
    warn,
    write_artifact,
    write_document,
    write_json,
)
from acxoci.errors import InvalidInput, UsageError
from acxoci.fsutil import require_file
from acxoci.oci.descriptor import Descriptor, is_digest, parse_manifest
from acxoci.oci.digest import file_descriptor
from acxoci.oci.reference import Reference, parse_reference
from acxoci.oci.referrers import referrer_tree
from acxoci.oci.scheduler import (
    DEFAULT_COPY_CONCURRENCY,
    DEFAULT_PULL_CONCURRENCY,
    DEFAULT_PUSH_CONCURRENCY,
    MAX_CONCURRENCY,
)
from acxoci.oci.target import ProgressFn, RemoteOptions, fetch_bytes, open_target

REMOTE: Any = None  # filled in by @transport_options


def _now() -> datetime:
    return datetime.now(UTC)


def _trust(path: Path | None, now: datetime) -> Any:
    if path is None:
        return None
    from acxoci.cartridge.trust_file import load_trust_registry

    return load_trust_registry(path)


#: What happens to a blob once its bytes have moved, shown on its bar so a full bar is never mute.
_AFTER = {"pull": "verifying digest", "push": "confirming with the registry", "copy": "copied"}


@contextlib.contextmanager
def _progress(label: str) -> Iterator[ProgressFn | None]:
    """A progress bar on a TTY (stderr), one labelled bar per blob (its title and short digest);
    silent otherwise or under --json/-q."""
    with transfer_progress(_AFTER.get(label, "done")) as bar:
        if bar is None:
            yield None
            return

        def update(desc: Descriptor, n: int) -> None:
            name = desc.annotations.get("org.opencontainers.image.title") or ""
            known = desc.digest != "sha256:" + "0" * 64  # the placeholder while hash-while-uploading
            short = desc.digest.split(":", 1)[-1][:12] if known else "(hashing)"
            bar(desc.digest, " ".join(p for p in (label, name, short) if p), desc.size, n)

        yield update


def _attest_guard() -> contextlib.AbstractContextManager[None]:
    @contextlib.contextmanager
    def guard() -> Iterator[None]:
        try:
            yield
        except AttestError as exc:
            raise InvalidInput(str(exc)) from exc

    return guard()


def _ref(text: str, *, require: bool = True) -> Reference:
    ref = parse_reference(text)
    if require and ref.reference is None:
        raise UsageError("reference needs a :tag or @digest", where=text)
    return ref


def _pinned(r: Reference, digest: str) -> str:
    """`REPO[:tag]@digest`: the tag as typed (if any), pinned to what was moved."""
    return str(dataclasses.replace(r, digest=digest))


def _trust_line(verdict: Any) -> None:
    """The verified artifact's signer trust, said in human output as --json says it."""
    if isinstance(verdict, dict) and verdict.get("trust"):
        say("  signer {}: {}", verdict["trust"], verdict.get("summary") or "")


def push_cmd(
    file: Path = typer.Argument(..., help="Cartridge (.acx), workflow (.cal.json) or .agent-graph.json."),
    ref: str = typer.Argument(..., help="host/repo:tag or oci-layout:PATH:tag"),
    no_verify: bool = typer.Option(False, "--no-verify", help="Push without verifying the artifact."),
    created: str | None = typer.Option(
        None, "--created", help="org.opencontainers.image.created (default: signing time)."
    ),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file: "
                                               "the signer must be trusted in it (see --require)."),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    sign: bool = typer.Option(False, "--sign", help="Also attest the pushed manifest (with --key, or "
                              "keylessly without it)."),
    key: str | None = typer.Option(None, "--key", help="With --sign: " + KEYLESS_KEY_HELP),
    fmt: str | None = typer.Option(None, "--attestation-format", help="With --sign: legacy | bundle | both "
                                   "(default: both with --key, bundle keyless)."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var with the key password."),
    identity_token_file: Path | None = typer.Option(None, "--identity-token-file", help=TOKEN_HELP),
    trust_config: Path | None = typer.Option(None, "--trust-config", help=TRUST_CONFIG_HELP),
    tlog_upload: str = typer.Option("true", "--tlog-upload", help=TLOG_HELP),
    concurrency: int = typer.Option(
        DEFAULT_PUSH_CONCURRENCY, "--concurrency", min=1, max=MAX_CONCURRENCY,
        help="Blobs uploaded at a time (the manifest goes last).",
    ),
    policy: Path | None = typer.Option(None, "--policy", help="After pushing, judge the registry copy as "
                                       "`acx install` would under this policy (exit 8 when it would refuse; "
                                       "the push stays: a refusal here is a warning to the publisher)."),
    allow_tag_mismatch: bool = typer.Option(False, "--allow-tag-mismatch", help="Push to a SemVer tag "
                                            "that is not the artifact's signed version."),
    remote: RemoteOptions = REMOTE,
) -> None:
    """Push a cartridge, workflow or agent graph as an OCI artifact; prints the manifest digest.

    A SemVer-shaped tag must name the artifact's signed version (install refuses any other as a
    rollback), unless --allow-tag-mismatch. With `--sign` the pushed manifest is attested in the
    same step (as `acx attest`), with `--key K` or keylessly. With `--trust-registry T` the signer
    must be trusted in T before anything is pushed (`--require portable` accepts a signer T does
    not vouch for). With `--policy P` the registry copy is judged AFTER the push as `acx install`
    would judge it, so a publisher learns at publish time what a consumer would refuse: exit 8
    then means "pushed, but consumers under P would refuse it"."""
    from acxoci.artifact import detect_kind, push_path

    if not file.exists() and Path(ref).is_file():
        raise UsageError(f"acx push takes the FILE first, then the REF (oras's order is REF FILE); {ref} is "
                         "the file here", hint=f"acx push {ref} {file}")
    now = _now()
    r = _ref(ref, require=False)
    if r.reference is None:
        raise UsageError("push needs a :tag (or @digest to push untagged); it never picks :latest for you",
                         where=ref, hint=f"acx push {file} {ref}:1.0.0")
    require_file(file)  # missing: not_found (4); a folder, FIFO or device: invalid_input (3)
    minimum = required_trust(require, trust_registry, no_verify=no_verify)
    kind = detect_kind(file)  # refuse a non-ACX file before any target is opened
    if not allow_tag_mismatch and r.tag is not None:
        from acxoci.errors import RefusedByPolicy
        from acxoci.install.judge import tag_decision

        verdict = tag_decision(file, kind, r.tag)
        if verdict.failed:
            how = {"cartridge": "acx cartridge sign", "workflow": "acx workflow sign",
                   "agent-graph": "acx graph sign"}[kind]
            hint = (f"sign it first ({how})" if "unsigned" in verdict.reason
                    else "tag it with its signed version, or pass --allow-tag-mismatch")
            raise RefusedByPolicy(f"{verdict.reason}; nothing was pushed", where=ref, hint=hint)
    signing_flags = key is not None or identity_token_file is not None or trust_config is not None
    if signing_flags and not sign:
        raise UsageError("--key, --identity-token-file and --trust-config are for --sign; add --sign to "
                         "attest the push")
    signer = None
    if sign:  # load (and unlock) the key, or get the identity token, before anything is pushed
        signer = attestation_signer(key, password_env, identity_token_file, trust_config, tlog_upload)
    with _attest_guard():
        target, _ = open_target(r, remote)
        with _progress("push") as prog:
            desc, facts, built = push_path(
                target,
                file,
                r.tag if not r.digest else None,
                verify=not no_verify,
                registry=_trust(trust_registry, now),
                now=now,
                created=created,
                progress=prog,
                concurrency=concurrency,
                minimum=minimum,
            )
    if r.digest and r.digest != desc.digest:
        raise UsageError(f"pushed {desc.digest}, but the reference pins {r.digest}", where=ref)
    attested: dict[str, object] | None = None
    if signer is not None:
        from acxoci.attestation.attach import attest_after_push, parse_format

        with _attest_guard():
            attested = attest_after_push(target, desc, r.repo_string(), signer, now=now,
                                         formats=parse_format(fmt, keyless=key is None),
                                         concurrency=concurrency).to_json()
    data = {
        "reference": _pinned(r, desc.digest),
        "digest": desc.digest,
        "mediaType": desc.media_type,
        "size": desc.size,
        "artifactType": built.manifest["artifactType"],
        "kind": facts.kind,
        "tag": r.tag,
        "verdict": facts.verdict,
        "attestation": attested,
    }

    judged = None
    if policy is not None:
        from acxoci.cli.judging import judge_ref, verdict_json

        judged = judge_ref(data["reference"] if r.tag is None else str(r), policy, now=now)
        data["acceptance"] = verdict_json(judged, policy)

    def human() -> None:
        say("pushed {} ({})", data["reference"], facts.kind)
        _trust_line(facts.verdict)
        if attested is not None:
            info("attested {} as {}", attested.get("predicateType"), attested.get("signerKeyId"))
        if judged is not None:
            from acxoci.cli.judging import render_judgement

            render_judgement(judged, header=f" (as `acx install --policy {policy}` would judge it)")

    emit(data, human, quiet_line=desc.digest)
    if judged is not None and not judged.ok:
        raise typer.Exit(8)


def pull_cmd(
    ref: str = typer.Argument(..., help="host/repo:tag|@digest or oci-layout:PATH:tag"),
    output: Path = typer.Option(Path("."), "-o", "--output", help="File or directory to write (default: the "
                                "current directory, the file named by its title, as oras pulls)."),
    no_verify: bool = typer.Option(False, "--no-verify", help="Do not verify the artifact after download."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file: "
                                               "the signer must be trusted in it (see --require)."),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    concurrency: int = typer.Option(
        DEFAULT_PULL_CONCURRENCY, "--concurrency", min=1, max=MAX_CONCURRENCY,
        help="Layers downloaded at a time.",
    ),
    remote: RemoteOptions = REMOTE,
) -> None:
    """Pull an artifact: digest-checked while streaming, verified, then renamed into place. A
    multi-file artifact (`oras push REF a.txt b.txt`, with --no-verify) is written into the
    folder -o names, one file per layer title. With `--trust-registry T` nothing is written unless
    the signer is trusted in T (`--require portable` also takes a valid signature T does not vouch
    for), exactly as `acx cartridge verify --trust-registry T --require trusted` decides."""
    from acxoci.artifact import pull_file

    refuse_local_file(ref, "pull")
    minimum = required_trust(require, trust_registry, no_verify=no_verify)
    now = _now()
    r = _ref(ref)
    to_stdout = str(output) == "-"
    if to_stdout and OPTS.json:
        raise UsageError("-o - writes the artifact to stdout, which --json also needs", hint="drop one")
    target, _ = open_target(r, remote, create=False)
    with contextlib.ExitStack() as stack:
        # -o -: pull (digest-checked, verified) into a private folder, then stream it to stdout.
        dest = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="acx-pull-"))) if to_stdout \
            else output
        with _attest_guard(), _progress("pull") as prog:
            pulled = pull_file(
                target,
                r.reference or "",
                dest,
                verify=not no_verify,
                registry=_trust(trust_registry, now),
                now=now,
                progress=prog,
                concurrency=concurrency,
                minimum=minimum,
            )
        if to_stdout:
            if pulled.layer is None:
                raise UsageError(f"the artifact has {len(pulled.files)} files; -o - takes a one-file "
                                 "artifact", hint="pull into a folder: -o DIR")
            with pulled.path.open("rb") as fh:
                write_artifact(fh)
    shown = "-" if to_stdout else str(pulled.path)
    verdict = pulled.verdict
    if isinstance(verdict, dict) and "file" in verdict:
        verdict = {**verdict, "file": shown}  # where the artifact is now, not the checked temp file
    data = {
        "reference": _pinned(r, pulled.manifest.digest),
        "digest": pulled.manifest.digest,
        "layer": pulled.layer.digest if pulled.layer is not None else None,
        "size": sum(layer.size for layer, _ in pulled.files),
        "path": shown,
        "files": [{"path": "-" if to_stdout else str(p), "digest": layer.digest, "size": layer.size,
                   "mediaType": layer.media_type} for layer, p in pulled.files],
        "kind": pulled.kind,
        "verdict": verdict,
    }
    if to_stdout:
        info("pulled {} to stdout", pulled.manifest.digest)
        return
    def human() -> None:
        say("pulled {} {}", shown, pulled.manifest.digest)
        _trust_line(verdict)

    emit(data, human, quiet_line=pulled.manifest.digest)


def discover_cmd(
    ref: str = typer.Argument(..., help="Subject: host/repo:tag|@digest or oci-layout:PATH:tag"),
    artifact_type: str | None = typer.Option(None, "--artifact-type", help="Only referrers of this type."),
    depth: int = typer.Option(8, "--depth", min=1, help="How deep to follow referrers of referrers (1: "
                              "the artifact's own referrers only)."),
    remote: RemoteOptions = REMOTE,
) -> None:
    """Show the referrers graph of an artifact as a tree (Referrers API, fallback tag or a layout's
    index; only entries whose manifest names their subject: the others are reported as strays)."""
    refuse_local_file(ref, "discover")
    r = _ref(ref)
    target, _ = open_target(r, remote, create=False)
    desc = target.resolve(r.reference or "")
    walk = referrer_tree(target, desc, artifact_type, depth)
    for w in walk.warnings:
        warn("{}", w)
    if walk.strays:
        warn("{} listed entr{} left out (gone, unreadable or naming another subject); see --json `strays`",
             len(walk.strays), "y" if len(walk.strays) == 1 else "ies")
    data = {
        "reference": f"{target.name}@{desc.digest}",
        "mediaType": desc.media_type,
        "digest": desc.digest,
        "size": desc.size,
        "referrers": walk.nodes,
        "strays": walk.strays,
        "warnings": walk.warnings,
    }

    def human() -> None:
        root = Tree(str(data["reference"]))
        todo: list[tuple[Tree, list[dict[str, Any]]]] = [(root, walk.nodes)]
        while todo:  # iterative: the walk's depth cap bounds it, not the stack
            branch, nodes = todo.pop()
            for n in nodes:
                sub = branch.add(n.get("artifactType") or n["mediaType"]).add(n["digest"])
                todo.append((sub, n["referrers"]))
        root.show()

    emit(data, human)


def attach_cmd(
    ref: str = typer.Argument(..., help="Subject: host/repo:tag|@digest or oci-layout:PATH:tag"),
    file: Path = typer.Argument(..., help="File to attach as the referrer's one layer (oras's FILE:MEDIATYPE "
                                "works too)."),
    artifact_type: str = typer.Option(..., "--artifact-type", help="artifactType of the referrer."),
    media_type: str | None = typer.Option(
        None, "--media-type", help="Layer media type (default: artifact type)."
    ),
    annotation: list[str] = typer.Option([], "--annotation", "-a", help="Manifest annotation KEY=VALUE."),
    created: str | None = typer.Option(
        None, "--created", help="org.opencontainers.image.created (default: now)."
    ),
    remote: RemoteOptions = REMOTE,
) -> None:
    """Attach a file to an artifact as an OCI 1.1 referrer (subject = the artifact's manifest)."""
    from acxoci.oci.shapes import EMPTY_CONFIG_BLOB, referrer_manifest

    refuse_local_file(ref, "attach")
    r = _ref(ref)
    path, colon, typed = str(file).rpartition(":")
    if not file.exists() and colon and path and typed and Path(path).is_file():  # oras: FILE:MEDIATYPE
        if media_type is not None and media_type != typed:
            raise UsageError(f"{file} names media type {typed} and --media-type says {media_type}: give one")
        file, media_type = Path(path), typed
    from acxoci.oci.descriptor import is_media_type

    for flag, value in (("--artifact-type", artifact_type), ("--media-type", media_type)):
        if value is not None and not is_media_type(value):
            raise UsageError(f"{flag} {value[:80]!r} is not a media type (type/subtype)")
    require_file(file)  # missing: not_found (4); a folder, FIFO or device: invalid_input (3)
    ann: dict[str, str] = {}
    for a in annotation:
        key, sep, value = a.partition("=")
        if not sep or not key:
            raise UsageError(f"annotation {a!r} is not KEY=VALUE")
        ann[key] = value
    target, _ = open_target(r, remote, create=False)
    subject = target.resolve(r.reference or "")
    layer = file_descriptor(file, media_type or artifact_type)
    when = created or _now().strftime("%Y-%m-%dT%H:%M:%SZ")
    built = referrer_manifest(
        subject=subject.plain(),
        artifact_type=artifact_type,
        file_digest=layer.digest,
        file_size=layer.size,
        media_type=layer.media_type,
        title=file.name,
        created=when,
        annotations=ann,
    )
    config = built.blobs[0]
    if not target.exists(config):
        target.push(config, io.BytesIO(EMPTY_CONFIG_BLOB))
    if not target.exists(layer):
        with file.open("rb") as fh:
            target.push(layer, fh)
    desc = Descriptor(built.descriptor.media_type, built.descriptor.digest, built.descriptor.size)
    target.push(desc, io.BytesIO(built.data))
    data = {
        "reference": f"{target.name}@{desc.digest}",
        "digest": desc.digest,
        "subject": subject.digest,
        "artifactType": artifact_type,
    }
    emit(data, lambda: say("{}", desc.digest), quiet_line=desc.digest)


MAX_LIST_PAIRS = 10_000


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """`--from-list FILE`: one `SRC DST` pair per line (blank lines and `#` comments skipped);
    InvalidInput naming the line when one is not exactly two references."""
    from acxoci.fsutil import read_bytes

    pairs: list[tuple[str, str]] = []
    text = read_bytes(path, "copy list", limit=4 * 1024 * 1024).decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2:
            raise InvalidInput(f"line {n}: expected `SRC DST`, found {len(words)} word(s)", where=str(path))
        pairs.append((words[0], words[1]))
        if len(pairs) > MAX_LIST_PAIRS:
            raise InvalidInput(f"more than {MAX_LIST_PAIRS} pairs", where=str(path))
    if not pairs:
        raise InvalidInput("no `SRC DST` pair in the list", where=str(path))
    return pairs


def _copy_one(src: str, dst: str, recursive: bool, concurrency: int, remote_from: RemoteOptions,
              remote_to: RemoteOptions, prog: ProgressFn | None) -> dict[str, Any]:
    """Copy one artifact graph; the `transfer` fields of its result."""
    from acxoci.oci.copy import copy

    for side in (src, dst):
        refuse_local_file(side, "cp")
    s = _ref(src)
    d = _ref(dst, require=False)
    src_t, _ = open_target(s, remote_from, create=False)
    dst_t, _ = open_target(d, remote_to)
    report = copy(src_t, dst_t, s.reference or "", dst_tag=d.tag, referrers=recursive, progress=prog,
                  concurrency=concurrency)
    destination = f"{dst_t.name}:{d.tag or s.tag}@{report.root.digest}" if (d.tag or s.tag) \
        else f"{dst_t.name}@{report.root.digest}"
    return {"reference": destination, "digest": report.root.digest, "source": str(s),
            "destination": destination, "copied": len(report.copied), "skipped": len(report.skipped),
            "referrers": report.referrers, "strays": report.strays, "legacyTags": report.legacy_tags,
            "bytes": report.bytes_copied}


def cp_cmd(
    src: str | None = typer.Argument(None, help="Source reference (tag or digest)."),
    dst: str | None = typer.Argument(None, help="Destination reference (tag optional: defaults to the "
                                     "source tag)."),
    recursive: bool = typer.Option(
        False, "-r", "--recursive", help="Also copy referrers (and cosign .sig/.att tags)."
    ),
    pair_list: Path | None = typer.Option(None, "--from-list", help="Copy every `SRC DST` pair in FILE (one "
                                          "per line), --concurrency artifacts at a time."),
    concurrency: int = typer.Option(
        DEFAULT_COPY_CONCURRENCY, "--concurrency", min=1, max=MAX_CONCURRENCY,
        help="Blobs copied at a time (with --from-list: artifacts copied at a time).",
    ),
    remote_from: RemoteOptions = REMOTE,
    remote_to: RemoteOptions = REMOTE,
) -> None:
    """Copy an artifact graph between any two targets (registry or layout), skipping existing blobs;
    with --from-list, many artifacts (a mirror) in one process, several at a time."""
    if pair_list is not None:  # (not `from_list`: the transport options own the `from_` prefix)
        if src is not None or dst is not None:
            raise UsageError("give SRC DST or --from-list FILE, not both")
        _copy_list(read_pairs(pair_list), recursive, concurrency, remote_from, remote_to)
        return
    if src is None or dst is None:
        raise UsageError("acx cp needs SRC and DST (or --from-list FILE)")
    with _progress("copy") as prog:
        data = _copy_one(src, dst, recursive, concurrency, remote_from, remote_to, prog)
    strays = data["strays"]
    if strays:
        warn("{} listed referrer entr{} left out (gone, unreadable or naming another subject); "
             "see --json `strays`", len(strays), "y" if len(strays) == 1 else "ies")
    emit(
        data,
        lambda: say("copied {} ({} new, {} skipped, {} referrers)", data["digest"], data["copied"],
                    data["skipped"], len(data["referrers"])),
        quiet_line=data["digest"],
    )


def _copy_list(pairs: list[tuple[str, str]], recursive: bool, concurrency: int, remote_from: RemoteOptions,
               remote_to: RemoteOptions) -> None:
    """Copy every pair, `concurrency` at a time (each pair's blobs one at a time); a failed pair is
    reported and the others go on; exit with the first failure's code."""
    from concurrent.futures import ThreadPoolExecutor

    from acxoci.cli.output import status_line
    from acxoci.errors import AcxError

    def one(pair: tuple[str, str]) -> dict[str, Any]:
        try:
            return _copy_one(pair[0], pair[1], recursive, 1, remote_from, remote_to, None)
        except AcxError as exc:
            return {"source": pair[0], "destination": pair[1], "error": exc.to_json()}

    results: list[dict[str, Any]] = []
    with status_line("cp") as note, ThreadPoolExecutor(max_workers=concurrency) as pool:
        for res in pool.map(one, pairs):
            results.append(res)
            if note is not None:
                note(f"{len(results)}/{len(pairs)} {res.get('destination')}")
    failed = [r for r in results if "error" in r]

    def human() -> None:
        for r in results:
            if "error" in r:
                say("[red]FAILED[/red] {} → {}: {}", r["source"], r["destination"], r["error"]["message"])
            else:
                say("copied {} → {} ({} new, {} skipped)", r["source"], r["destination"], r["copied"],
                    r["skipped"])
        say("{} of {} copied", len(results) - len(failed), len(results))

    emit({"ok": not failed, "copies": results, "failed": len(failed)}, human, kind="document")
    if failed:
        raise typer.Exit(int(failed[0]["error"]["exitCode"]))


def tags_cmd(
    repo: str = typer.Argument(..., help="host/repo or oci-layout:PATH"),
    remote: RemoteOptions = REMOTE,
) -> None:
    """List the tags of a repository or layout."""
    refuse_local_file(repo, "tags")
    r = _ref(repo, require=False)
    target, _ = open_target(r, remote, create=False)
    tags = target.tags()

    def human() -> None:
        for t in tags:
            say("{}", t)

    emit({"repository": target.name, "tags": tags}, human)


def manifest_get_cmd(
    ref: str = typer.Argument(..., help="host/repo:tag|@digest or oci-layout:PATH:tag"),
    descriptor: bool = typer.Option(False, "--descriptor", help="Print the descriptor instead."),
    remote: RemoteOptions = REMOTE,
) -> None:
    """Fetch a manifest (digest-checked); prints its exact bytes (on a terminal with terminal
    controls \\u-escaped: the same JSON), or JSON under --json. Without a tag or digest it reads
    `:latest`, as `acx install` does."""
    refuse_local_file(ref, "manifest get")
    r = _ref(ref, require=False)
    target, _ = open_target(r, remote, create=False)
    desc = target.resolve(r.reference or "latest")
    data = fetch_bytes(target, desc)
    m = parse_manifest(data, media_type=desc.media_type, where=str(r))
    d = {"mediaType": desc.media_type, "digest": desc.digest, "size": desc.size}
    if descriptor:
        emit(d, lambda: write_json(d))
        return
    if OPTS.json:
        emit({"descriptor": d, "manifest": dict(m.raw)})
        return
    write_document(data)  # on a terminal with its controls \u-escaped: the same JSON value


def login_cmd(
    host: str = typer.Argument(..., help="Registry host[:port]."),
    username: str = typer.Option(..., "-u", "--username", help="User name."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from stdin."),
    password: str | None = typer.Option(None, "-p", "--password", help="Password (prefer --password-stdin)."),
    remote: RemoteOptions = REMOTE,
) -> None:
    """Check credentials against the registry, then store them in the docker config (like oras)."""
    from acxoci.keyfiles import interactive, prompt_secret
    from acxoci.oci.auth import Credential, store_credential
    from acxoci.oci.transport import Transport

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif password is None and interactive():
        password = prompt_secret(f"Password for {username}@{host}: ")
    if not password and password_stdin:
        raise UsageError("no password: --password-stdin read an empty line",
                         hint="printf '%s\\n' \"$TOKEN\" | acx login HOST -u USER --password-stdin")
    if not password:
        raise UsageError("no password: use --password-stdin (or run on a terminal to be asked)")
    if "/" in host or is_digest(host):
        raise UsageError("login takes a registry host, not a reference", where=host)
    opts = dataclasses.replace(remote, username=username, password=password)
    Transport(host, opts).ping()
    path = store_credential(host, Credential(username, password), remote.docker_config)
    emit({"host": host, "username": username, "config": str(path)}, lambda: say("Login Succeeded"))


def logout_cmd(host: str = typer.Argument(..., help="Registry host[:port].")) -> None:
    """Remove stored credentials for a registry host."""
    from acxoci.oci.auth import remove_credential

    removed = remove_credential(host)
    emit(
        {"host": host, "removed": removed},
        lambda: info("logged out of {}", host) if removed else info("no credentials for {}", host),
    )


def register(app: typer.Typer) -> None:
    """Add the OCI commands to the root app and `manifest get` to the manifest group."""
    reads = transport_options(layout="ref")
    writes = transport_options(referrers=True, layout="ref")
    app.command("push")(writes(push_cmd))
    app.command("pull")(reads(pull_cmd))
    app.command("discover")(reads(discover_cmd))
    app.command("attach")(writes(attach_cmd))
    app.command("cp")(transport_options(sides=True, referrers=True, layout=("src", "dst"))(cp_cmd))
    app.command("tags")(transport_options(layout="repo")(tags_cmd))
    app.command("login")(transport_options()(login_cmd))
    app.command("logout")(logout_cmd)
    manifest_app.command("get")(reads(manifest_get_cmd))
