"""SemVer 2.0.0 parsing and precedence for anti-rollback (pure): a SemVer-looking tag must name the
signed `acx.artifact_version`, and an install may not replace a newer version of the same name."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER_RE = re.compile(
    rf"v?({_NUM})\.({_NUM})\.({_NUM})(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
MAX_LEN = 128


@dataclass(frozen=True)
class Version:
    """A parsed SemVer (build metadata kept for display only: it has no precedence)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: str | None = None

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        """Sort key by SemVer precedence (a release sorts after its pre-releases)."""
        pre = tuple((0, int(p)) if p.isascii() and p.isdigit() else (1, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def same_as(self, other: Version) -> bool:
        """Equal precedence (build metadata ignored, as SemVer says)."""
        return self.key() == other.key()


def parse(text: str | None) -> Version | None:
    """The SemVer `text` names (an optional leading `v` allowed), or None. Whole-string match only."""
    if not isinstance(text, str) or len(text) > MAX_LEN:
        return None
    m = SEMVER_RE.fullmatch(text)
    if m is None:
        return None
    major, minor, patch, pre, build = m.groups()
    return Version(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build)


def is_downgrade(new: str | None, installed: str | None) -> bool:
    """True when both are SemVer and `new` has lower precedence than `installed`."""
    a, b = parse(new), parse(installed)
    return a is not None and b is not None and a.key() < b.key()
