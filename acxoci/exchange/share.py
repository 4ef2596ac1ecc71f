"""`acx share agent|workflow|graph FILE`: place a verified artifact in an Exchange folder at its
immutable coordinate (acxoci/exchange/coordinates.py), with the agent card and the pull-request
body the reference writes. The artifact is judged by the Exchange's own acceptance (the
`summarize_*` functions `exchange verify` and `exchange index` run), on the very bytes that land:
they are staged inside the folder, judged there, then renamed into place. A coordinate that
already holds other bytes is never replaced; nothing is written outside the folder or through a
symlink."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.errors import Blocked, InvalidInput, NotFound, UsageError, VerificationFailed
from acxoci.exchange.coordinates import card_path, folder_path
from acxoci.exchange.index import Release, _ledger, _trust_registry, summarize_cartridge, summarize_workflow
from acxoci.exchange.status import AGENT_ID_RE, SEMVER_RE
from acxoci.fsutil import read_bytes, require_file, require_real_folders

KINDS = {"agent": "agent", "workflow": "workflow", "graph": "agent-graph"}
SUFFIXES = {"agent": ".acx", "workflow": ".cal.json", "agent-graph": ".agent-graph.json"}
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024
#: A publisher is one path segment here (the reference lets a workflow's publisher hold `/`).
PUBLISHER_SEGMENT_RE = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*$")
DOC_ID_RE = re.compile(r"^[a-z][a-z0-9._-]{0,127}$")


class ShareRefused(VerificationFailed):
    """The artifact is not accepted by the Exchange's gate, so it is not shared (exit 1)."""


@dataclass(frozen=True)
class SharePlan:
    """What share did (or would do): the coordinate, the card, and whether anything changed."""

    kind: str
    publisher: str
    id: str
    version: str
    destination: str
    readme: str | None
    changed: bool
    dry_run: bool
    entry: dict[str, Any]
    pr_body: str

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "publisher": self.publisher,
            "id": self.id,
            "version": self.version,
            "destination": self.destination,
            "card": self.readme,
            "changed": self.changed,
            "dryRun": self.dry_run,
            "entry": self.entry,
            "pullRequestBody": self.pr_body,
        }


def _clean(value: Any) -> str:
    """One table cell or list item: no line breaks or pipes (as the reference's cards)."""
    return re.sub(r"[\r\n|]+", " ", "" if value is None else str(value)).strip()


def agent_card(entry: dict[str, Any], label: str) -> str:
    """The README.md the reference writes beside a shared cartridge."""
    caps = entry.get("capabilities") or []
    lines = []
    for c in caps:
        state = _clean(c.get("verificationState") or "unresolved")
        if c.get("verified"):
            how = "resolved evidence: verified"
        elif c.get("claimedVerified"):
            how = f"publisher claim only; evidence {state}"
        else:
            how = f"unproven; evidence {state}"
        stack = ", ".join(f"`{_clean(s)}`" for s in c.get("stack") or [])
        lines.append(f"- `{_clean(c.get('taskType'))}`" + (f" — {stack}" if stack else "") + f" — {how}")
    claim = entry.get("levelClaim") or {}
    level = (
        f"Lv.{claim.get('acxLevel', 0)} · claim only; credential evidence "
        f"{_clean(claim.get('verificationState') or 'unresolved')}"
    )
    return (
        f"# {_clean(entry['name'])}\n\n"
        "| Field | Value |\n| --- | --- |\n"
        f"| Publisher | `{_clean(entry['publisher'])}` |\n"
        f"| Artifact | `{_clean(entry['id'])}@{_clean(entry['version'])}` |\n"
        f"| Role | `{_clean(entry['role'])}` |\n"
        f"| Class | {_clean(label)} |\n"
        f"| Level | {level} |\n"
        f"| ROM digest | `{_clean(entry['romHash'])}` |\n"
        f"| Registry trust at submission | `{_clean(entry['trust'])}` |\n\n"
        "## Capabilities\n\n"
        + ("\n".join(lines) if lines else "- No capability claims declared.")
        + "\n\n## Verify before loading\n\n```bash\n"
        "acx cartridge verify cartridge.acx\nacx cartridge spec cartridge.acx\n"
        "acx check cartridge.acx --all-tools\n```\n\n"
        "This card is generated from the signed, ROM-only cartridge. Embedded level and capability values "
        "are claims unless issuer keys, revocation status, and referenced evidence resolve successfully. "
        "The artifact, not this README, is authoritative.\n"
    )


def _lineage(entry: dict[str, Any]) -> str:
    parents = entry.get("lineage") or []
    if not parents:
        return "No signed parents are declared; this artifact is not marked as a remix."
    out = []
    for p in parents:
        coord = f"{_clean(p.get('artifactType'))}:{_clean(p.get('publisherId'))}/{_clean(p.get('id'))}"
        ver, digest = _clean(p.get("version")), _clean(p.get("digest"))
        line = f"- `{_clean(p.get('relation'))}` from `{coord}@{ver}` — `{digest}`"
        out.append(line + (f" — source `{_clean(p.get('source'))}`" if p.get("source") else ""))
    return "\n".join(out)


def pull_request_body(kind: str, entry: dict[str, Any], changed: bool) -> str:
    """The pull-request body the reference suggests for a share."""
    tags = ", ".join(f"`{_clean(t)}`" for t in entry.get("tags") or []) or "none"
    disposition = (
        "registry content would change"
        if changed
        else "no filesystem change; compare the coordinate with the git base before opening a PR"
    )
    if kind == "agent":
        moves = ", ".join(f"`{_clean(c.get('taskType'))}`" for c in entry.get("capabilities") or [])
        return (
            f"## Share ACX agent: {_clean(entry['name'])}\n\n"
            f"- Publisher: `{_clean(entry['publisher'])}`\n"
            f"- Artifact: `{_clean(entry['id'])}@{_clean(entry['version'])}`\n"
            f"- Role: `{_clean(entry['role'])}`\n"
            f"- ROM digest: `{_clean(entry['romHash'])}`\n"
            f"- Signature trust before registry review: `{_clean(entry['trust'])}`\n"
            f"- Capabilities: {moves or 'none declared'}\n\n"
            "### Verification\n\n"
            "- [x] Signature and live ROM bytes verified\n"
            "- [x] Package specification is clean\n"
            "- [x] Cartridge is ROM-only; no SAVE-zone field state is shared\n"
            "- [x] Capability and level labels distinguish claims from resolved evidence\n"
            "- [x] Private key is not included\n"
            "- [ ] Registry index regenerated\n"
            "- [ ] Conformance suite passes\n\n"
            "The signed `.acx` artifact is authoritative; generated discovery metadata is review "
            "convenience only.\n"
        )
    head = [
        f"- Publisher: `{_clean(entry['publisher'])}`",
        f"- Version: `{_clean(entry['version'])}`",
    ]
    if kind == "workflow":
        title = f"## Share ACX workflow: {_clean(entry['name'])}"
        head = [
            f"- Workflow id: `{_clean(entry['id'])}`",
            *head,
            f"- Workflow digest: `{_clean(entry['digest'])}`",
            f"- Share disposition: {disposition}",
            f"- Team slots: {entry.get('participantCount', 0)}",
            f"- Nodes: {entry.get('nodeCount', 0)}",
        ]
        checks = ["- [x] Publication profile is valid"]
        tail = (
            "The signed `.cal.json` artifact is authoritative; registry metadata is review "
            "convenience only.\n"
        )
        extra = ""
    else:
        title = f"## Share ACX Agent Graph: {_clean(entry['name'])}"
        head = [
            f"- Graph id: `{_clean(entry['id'])}`",
            *head,
            f"- Graph digest: `{_clean(entry['digest'])}`",
            f"- Share disposition: {disposition}",
            f"- Actors: {entry.get('actorCount', 0)}",
            f"- Knowledge modules: {entry.get('knowledgeCount', 0)}",
            f"- Communication routes: {entry.get('routeCount', 0)}",
            f"- Bound loops: {entry.get('loopCount', 0)}",
            f"- Convergence points: {entry.get('convergenceCount', 0)}",
        ]
        checks = ["- [x] Publication profile and graph invariants are valid"]
        deps = [
            f"- `{_clean(lp.get('id'))}`: `{_clean(lp.get('workflowPublisherId'))}/"
            f"{_clean(lp.get('workflowId'))}@{_clean(lp.get('workflowVersion'))}` — "
            f"`{_clean(lp.get('digest'))}`"
            for lp in entry.get("loops") or []
            if lp.get("kind") == "acx-workflow"
        ]
        extra = (
            "\n### Exact workflow dependencies\n\n"
            + ("\n".join(deps) or "No ACX workflow dependencies are declared.")
            + "\n"
        )
        tail = (
            "The signed `.agent-graph.json` artifact is authoritative. It describes communication, "
            "reporting, knowledge stewardship, and loop convergence; it grants no tools or runtime "
            "permissions.\n"
        )
    checks += [
        "- [x] JCS digest and DSSE/in-toto signature verified",
        "- [x] Signed publisher claim is cryptographically bound (namespace ownership still requires "
        "trust proof/review)",
        "- [x] Private key is not included",
        "- [ ] Registry index regenerated",
        "- [ ] Conformance suite passes",
    ]
    return (
        f"{title}\n\n"
        + "\n".join([*head, f"- Tags: {tags}"])
        + "\n\n### Verification\n\n"
        + "\n".join(checks)
        + f"\n\n### Lineage\n\n{_lineage(entry)}\n{extra}\n{tail}"
    )


def _identity(kind: str, path: Path, now: datetime) -> tuple[str, str, str]:
    """(publisher, id, version) as the artifact's signed content says, before the full judgement."""
    if kind == "agent":
        from acxoci.cartridge.reader import open_cartridge

        with open_cartridge(path) as cart:
            meta = cart.meta()
        return (
            str(meta.get("acx.publisher_id") or ""),
            str(meta.get("acx.artifact_id") or ""),
            str(meta.get("acx.artifact_version") or ""),
        )
    from acxoci.attest.canonical import loads_strict

    doc = loads_strict(read_bytes(path, kind, limit=16 * 1024 * 1024))
    if not isinstance(doc, dict):
        raise InvalidInput(f"the {kind} is not a JSON object", where=str(path))
    if kind == "workflow":
        from acxoci.workflow.verify import verify_workflow

        v: Any = verify_workflow(doc, registry=None, now=now)
    else:
        from acxoci.workflow.graph import verify_graph

        v = verify_graph(doc, registry=None, now=now)
    if not v.signed:
        raise ShareRefused(
            f"share refused: the {kind} is not signed (acx {kind} sign first)", where=str(path)
        )
    return str(v.publisher_id or ""), str(doc.get("id") or ""), str(doc.get("version") or "")


def _check_segments(kind: str, publisher: str, aid: str, version: str, where: str) -> None:
    problems = []
    if not PUBLISHER_SEGMENT_RE.fullmatch(publisher):
        problems.append(f"publisher {publisher!r} is not a path-safe reverse-DNS id")
    if not (AGENT_ID_RE if kind == "agent" else DOC_ID_RE).fullmatch(aid):
        problems.append(f"id {aid!r} is not a safe registry identifier")
    if not SEMVER_RE.fullmatch(version):
        problems.append(f"version {version!r} is not SemVer")
    if problems:
        raise ShareRefused("share refused: " + "; ".join(problems), where=where)


def _judge(kind: str, path: Path, rel: str, root: Path, now: datetime) -> Release:
    ledger, registry = _ledger(root), _trust_registry(root, now)
    if kind == "agent":
        rel_obj, rejected = summarize_cartridge(path, rel, ledger, registry, now)
    elif kind == "workflow":
        rel_obj, rejected = summarize_workflow(path, rel, ledger, registry, now)
    else:
        from acxoci.exchange.graphs import graph_support, summarize_graph

        support = graph_support()
        if support is None:
            raise UsageError("Agent Graph support is not available in this build")
        rel_obj, rejected = summarize_graph(support, path, rel, ledger, registry, now)
    if rejected is not None or rel_obj is None:
        reason = rejected.reason if rejected is not None else "not accepted"
        raise ShareRefused(f"share refused: the Exchange would reject this {kind}: {reason}", where=str(path))
    return rel_obj


def _same_file(path: Path, data: bytes) -> bool:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise Blocked("the coordinate holds something that is not a regular file", where=str(path))
    return st.st_size == len(data) and read_bytes(path, "artifact", limit=MAX_ARTIFACT_BYTES) == data


def _stage(folder: Path, data: bytes, suffix: str) -> Path:
    """`data` in a new file inside `folder` (the Exchange), synced, mode 0644: placed later by name."""
    fd, name = tempfile.mkstemp(prefix=".share-", suffix=suffix, dir=folder)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(path, 0o644)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _card(release: Release, root: Path, card_rel: str | None, force: bool) -> bytes | None:
    """The agent card to write (None: no card, or the same one is there). Refused when a symlink or
    other non-file stands at its place, or when other text is there and `force` is not given."""
    if card_rel is None:
        return None
    from acxoci.authoring.roles import role_label

    card = agent_card(release.entry, role_label(str(release.entry.get("role")))).encode("utf-8")
    card_file = root / card_rel
    try:
        st = card_file.lstat()
    except FileNotFoundError:
        return card
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput("refusing to replace a symlink or a non-file with the agent card",
                           where=str(card_file))
    if st.st_size == len(card) and read_bytes(card_file, "agent card", limit=len(card)) == card:
        return None
    if not force:
        raise Blocked(
            f"{card_rel} exists with other text",
            where=str(card_file),
            hint="review it and pass --force to regenerate the card",
        )
    return card


def _place(folder: Path, moves: list[tuple[Path, Path, bool]]) -> None:
    """Put staged files in place, all or none: each (staged, destination, may_replace); a file
    that may not replace is linked (an existing one stays, Blocked), the others are renamed over
    (so they go last). When a later one fails, the earlier ones placed here are taken back."""
    placed: list[Path] = []
    try:
        for staged, dest, may_replace in moves:
            if may_replace:
                if dest.is_symlink():
                    raise InvalidInput("refusing to replace a symlink", where=str(dest))
                os.replace(staged, dest)
            else:
                try:
                    os.link(staged, dest)  # never replaces: a coordinate written meanwhile stays
                except FileExistsError as exc:
                    raise Blocked(f"{dest.name} appeared while sharing; nothing replaced",
                                  where=str(dest)) from exc
            placed.append(dest)
    except BaseException:
        for dest in placed:
            with contextlib.suppress(OSError):
                dest.unlink()
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def share(
    kind_arg: str,
    file: Path,
    registry_root: Path,
    *,
    publisher: str | None = None,
    slug: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    now: datetime,
) -> SharePlan:
    """Judge `file` as the Exchange would at its coordinate, then place it there (and the agent
    card), unless `dry_run`. Blocked if the coordinate holds other bytes; `force` only allows a
    changed agent card (README.md) to be rewritten, never the artifact."""
    kind = KINDS.get(kind_arg)
    if kind is None:
        raise UsageError(f"unknown artifact kind {kind_arg!r}", hint="agent, workflow or graph")
    if not file.name.endswith(SUFFIXES[kind]):
        raise UsageError(f"a shared {kind_arg} must be a *{SUFFIXES[kind]} file", where=str(file))
    require_file(file, f"shared {kind_arg}")
    if not registry_root.is_dir():
        raise NotFound(f"registry folder not found: {registry_root}")
    aid_pub, aid, version = _identity(kind, file, now)
    _check_segments(kind, aid_pub, aid, version, str(file))
    if publisher is not None and publisher != aid_pub:
        raise ShareRefused(
            f"share refused: --publisher {publisher!r} is not the signed publisher {aid_pub!r}"
        )
    if slug is not None and slug != aid:
        raise ShareRefused(f"share refused: --slug {slug!r} is not the ROM-bound artifact id {aid!r}")
    rel = folder_path(kind, aid_pub, aid, version)
    require_real_folders(registry_root, rel, "registry folder")
    dest = registry_root / rel
    data = read_bytes(file, kind, limit=MAX_ARTIFACT_BYTES)
    existing_same = _same_file(dest, data)
    if dest.exists() and not existing_same:
        raise Blocked(
            f"{rel} already holds other bytes: a published coordinate is immutable",
            where=str(dest),
            hint="publish a new version instead",
        )
    changed = not existing_same
    card_rel = card_path(aid_pub, aid, version) if kind == "agent" else None
    if card_rel is not None:
        require_real_folders(registry_root, card_rel, "registry folder")
    readme = str(registry_root / card_rel) if card_rel is not None else None
    if dry_run or existing_same:
        release = _judge(kind, file if dry_run and not existing_same else dest, rel, registry_root, now)
        card = _card(release, registry_root, card_rel, force)
        if card is not None:
            changed = True
            if not dry_run:
                assert card_rel is not None
                card_tmp = _stage(dest.parent, card, ".md")
                try:
                    _place(dest.parent, [(card_tmp, registry_root / card_rel, True)])
                finally:
                    card_tmp.unlink(missing_ok=True)
    else:
        made = [
            d for d in reversed(dest.relative_to(registry_root).parents) if not (registry_root / d).exists()
        ]
        dest.parent.mkdir(parents=True, exist_ok=True)
        require_real_folders(registry_root, rel, "registry folder")
        staged: list[Path] = []
        ok = False
        try:
            tmp = _stage(dest.parent, data, SUFFIXES[kind])
            staged.append(tmp)
            release = _judge(kind, tmp, rel, registry_root, now)  # the very bytes that land
            card = _card(release, registry_root, card_rel, force)  # every destination checked first
            moves = [(tmp, dest, False)]
            if card is not None:
                assert card_rel is not None
                staged.append(_stage(dest.parent, card, ".md"))
                moves.append((staged[-1], registry_root / card_rel, True))
            _place(dest.parent, moves)
            ok = True
        finally:
            for t in staged:
                t.unlink(missing_ok=True)
            for d in reversed(made if not ok else []):  # a refused share leaves no empty folders
                with contextlib.suppress(OSError):
                    (registry_root / d).rmdir()
    entry = dict(release.entry)
    entry.pop("registryStatus", None)
    return SharePlan(
        kind,
        aid_pub,
        aid,
        version,
        str(dest),
        readme,
        changed,
        dry_run,
        entry,
        pull_request_body(kind, entry, changed),
    )


def default_registry(cwd: Path) -> Path:
    """`./registry` when it is an Exchange folder (index.json and status.json), as the reference."""
    guess = cwd / "registry"
    if (guess / "index.json").is_file() and (guess / "status.json").is_file():
        return guess
    raise UsageError(
        "name the Exchange folder with --registry DIR",
        hint="or run from a checkout whose registry/ holds index.json and status.json",
    )


__all__ = ["SharePlan", "ShareRefused", "default_registry", "share"]
