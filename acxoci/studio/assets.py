"""The static files shipped in the wheel (`acxoci/studio/static/`, package data): the Studio's page,
script and styles, and the catalog's. Read once, by exact name, never through a path taken from a
request; a symlink or anything but a small regular file is refused."""

from __future__ import annotations

import os
import stat
from importlib.resources import as_file, files

from acxoci.errors import InternalError

MAX_ASSET = 2 * 1024 * 1024
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
#: URL path of the Studio → its file. Nothing else is served.
STUDIO = {
    "/": "index.html",
    "/studio.js": "studio.js",
    "/acx.css": "acx.css",
    "/studio.css": "studio.css",
    "/favicon.svg": "favicon.svg",
}
#: Files a catalog copies next to its pages.
CATALOG = ("acx.css", "catalog.css", "catalog.js", "favicon.svg")


def content_type(name: str) -> str:
    """The Content-Type of a shipped file, by its (known) suffix."""
    return CONTENT_TYPES[os.path.splitext(name)[1]]


def read_asset(name: str) -> bytes:
    """One shipped file's bytes (InternalError if the installation is broken or tampered with)."""
    if name not in set(STUDIO.values()) | set(CATALOG):
        raise InternalError(f"not a shipped asset: {name!r}")
    with as_file(files("acxoci.studio").joinpath("static", name)) as path:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise InternalError(f"shipped asset {name} cannot be read: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ASSET:
                raise InternalError(f"shipped asset {name} is not a small regular file")
            return fh.read(MAX_ASSET + 1)


def studio_assets() -> dict[str, tuple[bytes, str]]:
    """URL path → (bytes, content type) for everything the builder serves."""
    return {url: (read_asset(name), content_type(name)) for url, name in STUDIO.items()}
