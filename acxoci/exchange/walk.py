"""A bounded walk of an Exchange folder: iterative, depth- and count-capped, never following a
symlink (a symlink is reported, as the reference's gate forbids them), entries visited in the
reference's order (each folder's names in locale order), with the gate's secret-material scan."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from acxoci.errors import InvalidInput, NotFound
from acxoci.exchange.order import locale_key
from acxoci.fsutil import open_regular

MAX_ENTRIES = 20_000
MAX_DEPTH = 12
MAX_SCAN_BYTES = 1 << 30  # secret scan stops (and says so) beyond 1 GiB in total
# PEM armour of private keys, assembled so this source file holds no key-like block itself
PEM_MARKERS = tuple(
    b"-----BEGIN " + kind + b"PRIVATE" + b" KEY-----" for kind in (b"", b"ENCRYPTED ", b"RSA ", b"OPENSSH ")
)


@dataclass
class Walk:
    """What the walk found: regular files (relative POSIX paths, walk order), symlinks, and
    policy issues (secret-bearing names, private key material)."""

    root: Path
    files: list[str] = field(default_factory=list)
    symlinks: list[str] = field(default_factory=list)
    policy: list[str] = field(default_factory=list)

    def under(self, folder: str, suffix: str) -> list[str]:
        """Files below `folder/` whose name ends with `suffix`, in walk order."""
        return [f for f in self.files if f.startswith(folder + "/") and f.endswith(suffix)]

    def symlinks_under(self, folder: str) -> list[str]:
        return [f for f in self.symlinks if f.startswith(folder + "/")]


def _secret_name(rel: str) -> bool:
    import re

    return bool(
        re.search(r"(^|/)\.env(?:\.|$)", rel, re.I)
        or re.search(r"\.key\.pem$", rel, re.I)
        or re.search(r"(^|/)id_(?:rsa|dsa|ecdsa|ed25519)$", rel, re.I)
        or re.search(r"(?:private|secret)[^/]*\.pem$", rel, re.I)
    )


def _has_private_key(path: Path, budget: list[int]) -> bool:
    """Stream the file looking for a private-key PEM header (bounded by the shared budget)."""
    keep = max(len(m) for m in PEM_MARKERS)
    tail = b""
    with open_regular(path, "exchange file", nofollow=True) as fh:
        while budget[0] > 0:
            chunk = fh.read(min(1 << 20, budget[0]))
            if not chunk:
                return False
            budget[0] -= len(chunk)
            window = tail + chunk
            if any(m in window for m in PEM_MARKERS):
                return True
            tail = window[-keep:]
    return False


def walk(root: Path) -> Walk:
    """Walk `root` (which must be a real folder). InvalidInput beyond the caps."""
    if not os.path.lexists(root):
        raise NotFound("exchange folder not found", where=str(root))
    st = os.lstat(root)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise InvalidInput("the exchange folder must be a real folder (not a symlink)", where=str(root))
    out = Walk(root)
    budget = [MAX_SCAN_BYTES]
    seen = 0

    def listing(folder: Path) -> Iterator[os.DirEntry[str]]:
        try:
            return iter(sorted(os.scandir(folder), key=lambda e: locale_key(e.name)))
        except OSError as exc:
            raise InvalidInput(f"cannot list a folder: {exc.strerror}", where=str(folder)) from exc

    # depth-first, each folder in name order, entering a subfolder where it sorts (like the
    # reference's recursive listing), with an explicit stack instead of recursion
    stack: list[tuple[str, int, Iterator[os.DirEntry[str]]]] = [("", 0, listing(root))]
    while stack:
        rel, depth, it = stack[-1]
        e = next(it, None)
        if e is None:
            stack.pop()
            continue
        seen += 1
        if seen > MAX_ENTRIES:
            raise InvalidInput(f"the exchange folder has more than {MAX_ENTRIES} entries", where=str(root))
        erel = f"{rel}/{e.name}" if rel else e.name
        if e.is_symlink():
            out.symlinks.append(erel)
            out.policy.append(f"{erel}: symbolic links are forbidden in the registry")
        elif e.is_dir(follow_symlinks=False):
            if depth + 1 > MAX_DEPTH:
                raise InvalidInput(f"the exchange folder is deeper than {MAX_DEPTH} levels", where=erel)
            stack.append((erel, depth + 1, listing(Path(e.path))))
        elif e.is_file(follow_symlinks=False):
            out.files.append(erel)
            if _secret_name(erel):
                out.policy.append(f"{erel}: secret-bearing filename is forbidden")
            try:
                if budget[0] > 0 and _has_private_key(Path(e.path), budget):
                    out.policy.append(f"{erel}: private key material is forbidden")
            except OSError as exc:
                out.policy.append(f"{erel}: cannot be read ({exc.strerror})")
    if budget[0] <= 0:
        out.policy.append(f"secret scan stopped after {MAX_SCAN_BYTES} bytes")
    out.policy = sorted(set(out.policy))
    return out
