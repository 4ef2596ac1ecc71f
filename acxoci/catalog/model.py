"""The catalog's vocabulary: what was found (Candidate), what acx decided about it (Verdict, made by
an injected Judge), what the verified bytes say (Card), and one page's worth of both (Entry)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Kind = Literal["agent", "workflow", "agent-graph"]
KIND_ORDER: dict[str, int] = {"agent": 0, "workflow": 1, "agent-graph": 2, "unknown": 3}


@dataclass(frozen=True)
class Candidate:
    """One artifact a source holds: an Exchange folder file (`location` its relative path, `path`
    the file) or a tag of an OCI layout (`location` the `oci-layout:` reference)."""

    source: Literal["folder", "layout"]
    location: str
    kind: Kind | None = None
    path: Path | None = None


@dataclass(frozen=True)
class Check:
    """One line of a verdict, as the command line printed it: `id`, `status` (pass, fail, skip,
    unavailable, note) and the reason."""

    id: str
    status: str
    reason: str


@dataclass(frozen=True)
class Lifecycle:
    """The Exchange lifecycle status of a release (active, deprecated, superseded, withdrawn)."""

    status: str
    reason: str = ""
    successor: str | None = None


@dataclass(frozen=True)
class Level:
    """The level an agent claims, and what acx could establish about it (`state`: verified,
    revoked, invalid, unresolved, failed, not-required, none)."""

    claimed: str | None
    state: str
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    """What acx decided, in the words of the command that decided it.

    `verified` is true only when that command accepts the artifact's bytes and signer (the page
    then shows its facts); `word` is the headline (trusted, portable, verified, rejected, refused,
    withdrawn, unverified); `content` is the file the verified bytes were read from."""

    verified: bool
    word: str
    trust: str
    summary: str
    command: str
    kind: Kind | None = None
    digest: str | None = None
    publisher_id: str | None = None
    key_id: str | None = None
    checks: tuple[Check, ...] = ()
    level: Level | None = None
    lifecycle: Lifecycle | None = None
    content: Path | None = None
    install: str | None = None


Judge = Callable[[Candidate], Verdict]
"""The one decision the catalog shows: acx's verdict for one candidate (injected, so the catalog
follows whichever acceptance decision the command line uses)."""


@dataclass(frozen=True)
class Item:
    """A named thing on a card (a skill, a capability, a RAC item, a participant, an actor)."""

    name: str
    detail: str = ""
    extra: str = ""


@dataclass(frozen=True)
class Section:
    """A titled list on a card: Skills, Capabilities, RAC, Participants, Actors, Lineage…"""

    title: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Card:
    """Facts read from verified bytes only."""

    id: str
    version: str
    name: str
    description: str
    publisher: str
    license: str = ""
    tags: tuple[str, ...] = ()
    role: str = ""
    sections: tuple[Section, ...] = ()
    graph_svg: str = ""


@dataclass(frozen=True)
class Entry:
    """One catalog page: the candidate, the verdict and (for a verified artifact) its card."""

    candidate: Candidate
    verdict: Verdict
    card: Card | None = None
    page: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def kind(self) -> str:
        return self.verdict.kind or self.candidate.kind or "unknown"
