"""`acx exchange site`: judge every candidate with the injected judge, read a card from the bytes
of each verified one, render the pages and write the folder in one step (a folder acx wrote
before is replaced whole; anything else is never touched)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from acxoci.catalog.cards import card_for
from acxoci.catalog.model import Candidate, Entry, Judge
from acxoci.catalog.render import order, page_name, render_site
from acxoci.errors import AcxError, InvalidInput

MARKER = ".acx-site"


@dataclass(frozen=True)
class Built:
    """What was written: the folder and the entries (for the command's report)."""

    out: Path
    entries: tuple[Entry, ...]
    findings: tuple[str, ...]

    @property
    def verified(self) -> int:
        return sum(1 for e in self.entries if e.verdict.verified)


def judge_all(candidates: Iterable[Candidate], judge: Judge) -> list[Entry]:
    """Each candidate with its verdict and, only when verified, the card of its verified bytes."""
    entries: list[Entry] = []
    for cand in candidates:
        verdict = judge(cand)
        card = None
        notes: tuple[str, ...] = ()
        if verdict.verified and verdict.content is not None and verdict.kind is not None:
            try:
                card = card_for(verdict.kind, verdict.content, verdict.publisher_id)
            except AcxError as exc:  # verified, yet unreadable as a card: say so, show no facts
                notes = (f"the verified artifact could not be summarised: {exc.one_line()}",)
        entries.append(Entry(cand, verdict, card, notes=notes))
    return [replace(e, page=page_name(e)) for e in order(entries)]


def _check_out(out: Path) -> None:
    """`out` may be absent, an empty folder, or a folder this command wrote (it has MARKER)."""
    if not os.path.lexists(out):
        return
    st = os.lstat(out)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise InvalidInput("the output must be a folder (not a file or a symlink)", where=str(out))
    names = os.listdir(out)
    if names and MARKER not in names:
        raise InvalidInput("refusing to replace a folder acx exchange site did not write",
                           where=str(out), hint="choose an empty or new folder")


def write_site(out: Path, files: dict[str, bytes]) -> None:
    """Write `files` into a fresh folder beside `out`, then put it in `out`'s place."""
    out = Path(out)
    _check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for rel, data in sorted(files.items()):
            parts = rel.split("/")
            if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise InvalidInput(f"not a catalog path: {rel!r}")
            dest = tmp.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        (tmp / MARKER).write_bytes(b"written by acx exchange site; replaced whole on the next build\n")
        for d, _, names in os.walk(tmp):
            os.chmod(d, 0o755)
            for name in names:
                os.chmod(os.path.join(d, name), 0o644)
        old = None
        if os.path.lexists(out):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.rename(out, old / "site")
        os.rename(tmp, out)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise


def build_site(candidates: Iterable[Candidate], judge: Judge, *, out: Path, title: str, built: str,
               basis: str, findings: Iterable[str] = ()) -> Built:
    """Judge, render and write the catalog; `findings` are about the source itself."""
    _check_out(Path(out))
    entries = judge_all(candidates, judge)
    found = tuple(findings)
    write_site(out, render_site(entries, title=title, built=built, basis=basis, findings=found))
    return Built(Path(out), tuple(entries), found)
