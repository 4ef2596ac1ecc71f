"""References: `host[:port]/repo[:tag][@digest]` for registries and `oci-layout:PATH[:tag|@digest]`
for an on-disk OCI image layout. Pure parsing, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from acxoci.oci.descriptor import is_digest
from acxoci.oci.errors import BadReference

LAYOUT_PREFIX = "oci-layout:"
DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"

_REPO_RE = re.compile(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_HOST_RE = re.compile(r"^(?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::[0-9]{1,5})?$")


def valid_tag(tag: str) -> bool:
    """True if `tag` matches the distribution-spec tag grammar."""
    return bool(_TAG_RE.fullmatch(tag))


@dataclass(frozen=True)
class Reference:
    """A parsed reference. `layout_path` is set for `oci-layout:` references, else `host`+`repository`."""

    host: str = ""
    repository: str = ""
    tag: str | None = None
    digest: str | None = None
    layout_path: str | None = None

    @property
    def is_layout(self) -> bool:
        return self.layout_path is not None

    @property
    def reference(self) -> str | None:
        """What to resolve: the digest if pinned, else the tag (None if neither)."""
        return self.digest or self.tag

    @property
    def api_host(self) -> str:
        """Host to talk to (docker.io maps to registry-1.docker.io)."""
        return DOCKER_HUB_API if self.host == DOCKER_HUB else self.host

    def repo_string(self) -> str:
        """`host/repo` or `oci-layout:PATH` without tag/digest."""
        if self.layout_path is not None:
            return LAYOUT_PREFIX + self.layout_path
        return f"{self.host}/{self.repository}"

    def __str__(self) -> str:
        out = self.repo_string()
        if self.tag:
            out += ":" + self.tag
        if self.digest:
            out += "@" + self.digest
        return out


def _split_tag_digest(rest: str, text: str) -> tuple[str, str | None, str | None]:
    digest: str | None = None
    if "@" in rest:
        rest, digest = rest.rsplit("@", 1)
        if not is_digest(digest):
            raise BadReference(f"invalid digest {digest!r}", where=text)
    tag: str | None = None
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not valid_tag(tag):
            raise BadReference(f"invalid tag {tag!r}", where=text)
    return rest, tag, digest


def parse_reference(text: str, *, require_ref: bool = False) -> Reference:
    """Parse a registry or `oci-layout:` reference; `require_ref` demands a tag or digest."""
    if not text or any(c.isspace() for c in text):
        raise BadReference("empty reference or whitespace in it", where=text or "<empty>")
    if text.startswith(LAYOUT_PREFIX):
        body = text[len(LAYOUT_PREFIX) :]
        path, tag, digest = _split_tag_digest(body, text)
        if not path:
            raise BadReference("oci-layout reference has no path", where=text)
        ref = Reference(tag=tag, digest=digest, layout_path=path)
    else:
        rest, tag, digest = _split_tag_digest(text, text)
        first, _, remainder = rest.partition("/")
        if remainder and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
            host, repo = first, remainder
        else:
            host, repo = DOCKER_HUB, rest
            if "/" not in repo:
                repo = "library/" + repo
        if not _HOST_RE.fullmatch(host):
            raise BadReference(f"invalid registry host {host!r}", where=text)
        if not _REPO_RE.fullmatch(repo) or len(repo) > 255:
            raise BadReference(f"invalid repository name {repo!r}", where=text)
        ref = Reference(host=host, repository=repo, tag=tag, digest=digest)
    if require_ref and ref.reference is None:
        raise BadReference("reference needs a :tag or @digest", where=text)
    return ref


def fallback_tag(digest: str) -> str:
    """The referrers tag-schema tag for a subject digest: `sha256:<hex>` → `sha256-<hex>`."""
    alg, _, hexpart = digest.partition(":")
    return f"{alg}-{hexpart}"[:128]
