"""Every file acx reads on a user's behalf goes through `fsutil.open_regular`/`read_bytes`: a FIFO,
device or socket is refused before a byte is read and every read has a bound (issue 29). This scan
keeps raw reads (`Path.read_bytes/read_text`, `Path.open` for reading, builtin `open`) out of the
code, except where acx reads a file it wrote itself or package data, each with its reason."""

from __future__ import annotations

import ast

from tests.harness.env import REPO

#: (file, function) -> why a raw read there is not a read of a user's file.
ALLOWED = {
    ("acxoci/jsonschemas.py", "load_schema"): "acx's own schemas, package data",
    ("acxoci/oci/staging.py", "_prefix_hash"): "acx's own partial download in its staging folder",
    ("acxoci/oci/digest.py", "file_digest"): "callers hand it a file open_regular/require_file admitted",
    ("acxoci/oci/uploads.py", "push_file"): "the artifact file, admitted and identity-pinned before",
    ("acxoci/install/store.py", "_fsync_tree"): "fsyncs the staged folder acx itself wrote",
    ("acxoci/cartridge/build.py", "build_cartridge"): "fsyncs the temporary cartridge acx just wrote",
    ("acxoci/cli/cmd_oci.py", "pull_cmd"): "streams the pulled copy acx itself wrote and digest-checked",
    ("acxoci/cli/cmd_oci.py", "attach_cmd"): "the file require_file admitted; the registry checks its digest",
    ("acxoci/artifact.py", "_push_layer"): "the artifact file, whose identity is checked right after opening",
}


def raw_reads(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing function, line) of every raw file read in `tree`."""
    found: list[tuple[str, int]] = []
    stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
    while stack:
        node, func = stack.pop()
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            if isinstance(child, ast.Call):
                f = child.func
                mode = child.args[0] if child.args else None
                reading = mode is None or (isinstance(mode, ast.Constant) and str(mode.value).startswith("r"))
                if (
                    (isinstance(f, ast.Name) and f.id == "open")
                    or (isinstance(f, ast.Attribute) and f.attr in ("read_bytes", "read_text")
                        and not child.args)
                    or (isinstance(f, ast.Attribute) and f.attr == "open" and reading
                        and not isinstance(f.value, ast.Name | ast.Subscript))
                ):
                    found.append((name, child.lineno))
            stack.append((child, name))
    return found


def test_the_scan_sees_each_raw_read() -> None:
    src = ("def a(p):\n    return p.read_bytes()\n"
           "def b(p):\n    return open(p)\n"
           "def c(p):\n    with p.path.open('rb') as fh:\n        return fh\n"
           "def d(p):\n    return read_bytes(p, 'x'), p.x.open('wb')\n")
    assert sorted(n for n, _ in raw_reads(ast.parse(src))) == ["a", "b", "c"]


def test_no_raw_read_of_a_users_file() -> None:
    found = []
    for path in sorted((REPO / "acxoci").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "acxoci/fsutil.py":
            continue
        for func, line in raw_reads(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, func) not in ALLOWED:
                found.append(f"{rel}:{line} in {func}()")
    assert not found, "\n".join(found)
