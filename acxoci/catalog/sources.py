"""What a catalog lists: every artifact file of an Exchange folder (found by the Exchange's own
bounded walk), or every tag of every OCI layout below a mirror folder (`exchange mirror DIR
oci-layout:PATH` writes one layout per repository). Nothing here judges anything."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from acxoci.catalog.model import Candidate, Kind
from acxoci.errors import AcxError, InvalidInput, NotFound
from acxoci.exchange.walk import walk
from acxoci.oci.target import open_target

FOLDER_KINDS: tuple[tuple[Kind, str, str], ...] = (
    ("agent", "cartridges", ".acx"),
    ("workflow", "cals", ".cal.json"),
    ("agent-graph", "graphs", ".agent-graph.json"),
)
LAYOUT_DEPTH = 4  # PATH/<kind>/<publisher>/<id> is the deepest layout a mirror writes
MAX_LAYOUT_ENTRIES = 20_000
MAX_CANDIDATES = 5_000
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


def folder_candidates(root: Path) -> list[Candidate]:
    """Every cartridge, workflow and Agent Graph file of an Exchange folder, symlinks included
    (the gate rejects them; the catalog lists them as rejected)."""
    w = walk(root)
    out: list[Candidate] = []
    for kind, folder, suffix in FOLDER_KINDS:
        links = (s for s in w.symlinks_under(folder) if s.endswith(suffix))
        rels = sorted({*w.under(folder, suffix), *links})
        out += [Candidate("folder", rel, kind, root / rel) for rel in rels]
    if len(out) > MAX_CANDIDATES:
        raise InvalidInput(f"more than {MAX_CANDIDATES} artifacts", where=str(root))
    return out


def _real_dir(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode)


def layout_dirs(root: Path) -> tuple[list[str], list[str]]:
    """(relative paths of the OCI layouts below `root`, problems seen). Iterative, at most
    LAYOUT_DEPTH levels and MAX_LAYOUT_ENTRIES entries, never through a symlink; a layout's
    own folders (blobs) are not entered."""
    if not os.path.lexists(root):
        raise NotFound("layout folder not found", where=str(root))
    if not _real_dir(root):
        raise InvalidInput("the layout folder must be a real folder (not a symlink)", where=str(root))
    found: list[str] = []
    problems: list[str] = []
    seen = 0
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        rel, depth = stack.pop()
        here = root / rel if rel else root
        marker = here / "oci-layout"
        if os.path.lexists(marker):
            if os.path.islink(marker) or not os.path.isfile(marker):
                problems.append(f"{rel or '.'}: oci-layout is not a regular file; skipped")
            else:
                found.append(rel)
            continue
        try:
            names = sorted(e.name for e in os.scandir(here))
        except OSError as exc:
            problems.append(f"{rel or '.'}: cannot be listed ({exc.strerror})")
            continue
        for name in reversed(names):
            seen += 1
            if seen > MAX_LAYOUT_ENTRIES:
                raise InvalidInput(f"more than {MAX_LAYOUT_ENTRIES} entries below the layout folder",
                                   where=str(root))
            child = f"{rel}/{name}" if rel else name
            if os.path.islink(root / child):
                problems.append(f"{child}: symbolic link; not followed")
            elif _real_dir(root / child) and depth < LAYOUT_DEPTH:
                stack.append((child, depth + 1))
    return sorted(found), problems


def layout_candidates(root: Path, display: str) -> tuple[list[Candidate], list[str]]:
    """One candidate per tag of every layout below `root`, named `oci-layout:<display>/<rel>:<tag>`
    (`display` is the folder as the user typed it, so the printed commands work where they did)."""
    dirs, problems = layout_dirs(root)
    out: list[Candidate] = []
    for rel in dirs:
        repo = f"{display.rstrip('/')}/{rel}" if rel else display.rstrip("/") or "."
        try:
            target, _ = open_target(f"oci-layout:{root / rel if rel else root}", create=False)
            tags = sorted(target.tags())
        except AcxError as exc:
            problems.append(f"{rel or '.'}: not a readable OCI layout: {exc.one_line()}")
            continue
        for tag in tags:
            if not TAG_RE.fullmatch(tag):
                problems.append(f"{rel or '.'}: tag {tag[:80]!r} is not an OCI tag; skipped")
                continue
            out.append(Candidate("layout", f"oci-layout:{repo}:{tag}", None, root / rel if rel else root))
            if len(out) > MAX_CANDIDATES:
                raise InvalidInput(f"more than {MAX_CANDIDATES} tagged artifacts", where=str(root))
    return out, problems
