"""The bounded read of a codebase for `acx init --from-code`: an iterative, sorted walk that never
follows a symlink (so it never leaves DIR), skips vendored and generated folders, stops at fixed
caps on entries, depth and bytes read, and reads only small dependency manifests. Nothing it
finds is executed, imported or evaluated: manifests are parsed as data (JSON, TOML, lines), and
the parsing is bounded in time as well as in bytes: a cap on the bytes parsed in all, a smaller
one for TOML (its parser is slower), and no TOML line with more dots than a real key has (the
standard parser is quadratic in a key's depth)."""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.errors import InvalidInput, NotFound

MAX_ENTRIES = 50_000
MAX_DEPTH = 12
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_MANIFESTS = 200
MAX_PARSED_BYTES = 16 * 1024 * 1024  # of all manifests together; the rest are not read
MAX_TOML_BYTES = 256 * 1024  # per TOML manifest
MAX_TOML_PARSED_BYTES = 1024 * 1024  # of all TOML manifests together
MAX_TOML_LINE_DOTS = 256  # dots on one TOML line (a dotted key's depth is bounded by them)
#: Folders that hold other people's code or build output, never the project's own signals.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "bower_components",
        "vendor",
        "third_party",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        "dist",
        "build",
        "target",
        ".gradle",
        ".idea",
        ".vscode",
        ".terraform",
        ".next",
        ".nuxt",
        "coverage",
        ".cache",
    }
)
#: Hidden folders that carry signals (CI and repository policy); every other dot-folder is skipped.
HIDDEN_DIRS = frozenset({".github", ".gitlab", ".circleci", ".buildkite", ".woodpecker", ".forgejo"})
#: Dependency manifests read as data (by exact file name); `requirements*.txt` too.
MANIFESTS = frozenset(
    {
        "package.json",
        "pyproject.toml",
        "setup.cfg",
        "Pipfile",
        "go.mod",
        "Cargo.toml",
        "composer.json",
        "Gemfile",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "mix.exs",
    }
)


@dataclass(frozen=True)
class Listing:
    """What the walk saw: file and folder paths (POSIX, relative to DIR, sorted), the dependency
    names each manifest declares, and whether a cap stopped the walk early."""

    files: tuple[str, ...]
    dirs: tuple[str, ...]
    deps: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unreadable: tuple[str, ...] = ()
    truncated: str | None = None


def _names_from_json(doc: Any, keys: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    if isinstance(doc, dict):
        for k in keys:
            v = doc.get(k)
            if isinstance(v, dict):
                out += [str(n) for n in v]
    return out


def _pep508_name(spec: str) -> str:
    name = ""
    for ch in spec.strip():
        if ch.isalnum() or ch in "-_.":
            name += ch
        else:
            break
    return name


def _names_from_toml(doc: dict[str, Any], name: str) -> list[str]:
    out: list[str] = []
    if name == "pyproject.toml":
        project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
        assert isinstance(project, dict)
        deps = project.get("dependencies")
        out += [_pep508_name(d) for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
        opt = project.get("optional-dependencies")
        for group in opt.values() if isinstance(opt, dict) else []:
            out += [_pep508_name(d) for d in group if isinstance(d, str)] if isinstance(group, list) else []
        tool = doc.get("tool") if isinstance(doc.get("tool"), dict) else {}
        assert isinstance(tool, dict)
        poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
        assert isinstance(poetry, dict)
        out += _names_from_json(poetry, ("dependencies", "dev-dependencies"))
        out += [f"tool:{k}" for k in tool]
    elif name in ("Cargo.toml", "Pipfile"):
        out += _names_from_json(doc, ("dependencies", "dev-dependencies", "packages", "dev-packages"))
    return out


def _names_from_lines(text: str, name: str) -> list[str]:
    out: list[str] = []
    for raw in text.splitlines()[:10_000]:
        line = raw.strip()
        if not line or line.startswith(("#", "//", "-")):
            continue
        if name == "go.mod":
            parts = line.split()
            if parts[0] in ("require", "module", "go", "toolchain", "replace", "exclude", ")"):
                parts = parts[1:] if parts[0] == "require" and len(parts) > 2 else []
            if parts and parts[0] != "(":
                out.append(parts[0])
        elif name == "Gemfile":
            if line.startswith("gem "):
                out.append(line[4:].strip().strip("'\"").split("'")[0].split('"')[0].split(",")[0])
        elif name == "setup.cfg" or name.startswith("requirements"):
            out.append(_pep508_name(line))
        elif name in ("pom.xml", "build.gradle", "build.gradle.kts", "mix.exs") and (
            "<artifactId>" in line or "implementation" in line or "{:" in line
        ):
            out.append(line.replace("<artifactId>", "").replace("</artifactId>", "").strip()[:120])
    return out


def declared_names(name: str, data: bytes) -> list[str]:
    """The dependency names a manifest declares, parsed as data; ValueError if it cannot be read
    (or cannot be parsed in bounded time)."""
    text = data.decode("utf-8")
    if name in ("package.json", "composer.json"):
        doc = loads_strict(data)
        keys = ("dependencies", "devDependencies", "peerDependencies", "require", "require-dev")
        return _names_from_json(doc, keys)
    if _is_toml(name):
        if len(data) > MAX_TOML_BYTES:
            raise ValueError(f"a TOML manifest larger than {MAX_TOML_BYTES} bytes")
        if any(line.count(".") > MAX_TOML_LINE_DOTS for line in text.split("\n")):
            raise ValueError(f"a TOML line with more than {MAX_TOML_LINE_DOTS} dots")
        return _names_from_toml(tomllib.loads(text), name)
    return _names_from_lines(text, name)


def _is_manifest(name: str) -> bool:
    return name in MANIFESTS or (name.startswith("requirements") and name.endswith(".txt"))


def _is_toml(name: str) -> bool:
    return name.endswith(".toml") or name == "Pipfile"


@dataclass
class _Budget:
    """What is left to parse in this walk (all manifests, and TOML ones), in bytes."""

    left: int = MAX_PARSED_BYTES
    toml_left: int = MAX_TOML_PARSED_BYTES

    def take(self, name: str, size: int) -> bool:
        """Whether a manifest of `size` bytes may still be parsed (and take it from the budget)."""
        toml = _is_toml(name)
        if size > self.left or (toml and size > self.toml_left):
            return False
        self.left -= size
        if toml:
            self.toml_left -= size
        return True


def walk(root: Path, *, exclude: Path | None = None) -> Listing:
    """Walk `root` breadth-first in sorted order within the caps; `exclude` (an output folder
    inside `root`) is not looked into."""
    try:
        st = root.lstat()
    except FileNotFoundError as exc:
        raise NotFound(f"codebase folder not found: {root}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidInput("--from-code needs a folder (a symlink is not followed)", where=str(root))
    skip = os.path.realpath(exclude) if exclude is not None else None
    files: list[str] = []
    dirs: list[str] = []
    deps: dict[str, tuple[str, ...]] = {}
    unreadable: list[str] = []
    truncated: str | None = None
    seen = 0
    budget = _Budget()
    queue: list[tuple[str, str, int]] = [(str(root), "", 0)]
    head = 0
    while head < len(queue) and truncated is None:
        folder, rel, depth = queue[head]
        head += 1
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            unreadable.append(rel or ".")
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                truncated = f"more than {MAX_ENTRIES} entries"
                break
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                est = entry.stat(follow_symlinks=False)
            except OSError:
                unreadable.append(path)
                continue
            if stat.S_ISDIR(est.st_mode):
                hidden = entry.name.startswith(".") and entry.name not in HIDDEN_DIRS
                if entry.name in SKIP_DIRS or hidden or os.path.realpath(entry.path) == skip:
                    continue
                dirs.append(path)
                if depth + 1 < MAX_DEPTH:
                    queue.append((entry.path, path, depth + 1))
                elif truncated is None:
                    truncated = f"folders deeper than {MAX_DEPTH} levels"
                continue
            if not stat.S_ISREG(est.st_mode):
                continue  # symlinks, sockets, devices: never read, never followed
            files.append(path)
            if _is_manifest(entry.name) and len(deps) < MAX_MANIFESTS:
                deps[path] = _read_manifest(entry.path, entry.name, est.st_size, path, unreadable, budget)
    return Listing(
        tuple(sorted(files)),
        tuple(sorted(dirs)),
        dict(sorted(deps.items())),
        tuple(sorted(unreadable)),
        truncated,
    )


def _read_manifest(
    real: str, name: str, size: int, path: str, unreadable: list[str], budget: _Budget
) -> tuple[str, ...]:
    limit = MAX_TOML_BYTES if _is_toml(name) else MAX_MANIFEST_BYTES
    if size > limit or not budget.take(name, size):
        unreadable.append(path)
        return ()
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError("not a regular file")
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise ValueError("too large")
        names = declared_names(name, data)
    except (OSError, ValueError, RecursionError):
        unreadable.append(path)
        return ()
    return tuple(sorted({n.strip().lower() for n in names if n and n.strip()}))
