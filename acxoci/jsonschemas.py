"""Our JSON Schemas: one loader and one way to report violations, as `$.path: message` lines,
for every document type. The files live once, in the top-level `schemas/`; `acxoci/schemas` is a
link to it, so wheels and sdists carry them as package data."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from attest.canonical import loads_strict


@cache
def load_schema(name: str) -> dict[str, Any]:
    """`schemas/<name>` as parsed JSON (cached)."""
    text = (resources.files("acxoci") / "schemas" / name).read_text(encoding="utf-8")
    doc: dict[str, Any] = loads_strict(text)
    return doc


def json_path(parts: Iterable[str | int]) -> str:
    """`$`-rooted JSON path of an error location: `$.a[0].b`."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def schema_errors(name: str, doc: Any) -> list[str]:
    """Every violation of schema `name` by `doc`, ordered by path (empty when valid)."""
    validator = jsonschema.Draft202012Validator(load_schema(name))
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{json_path(e.absolute_path)}: {e.message}" for e in errors]
