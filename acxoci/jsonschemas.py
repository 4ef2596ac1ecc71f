"""Our JSON Schemas: one loader and one way to report violations, as `$.path: message` lines,
for every document type. The files live once, in the top-level `schemas/`; `acxoci/schemas` is a
link to it, so wheels and sdists carry them as package data."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

from acxoci.attest.canonical import loads_strict


@cache
def load_schema(name: str) -> dict[str, Any]:
    """`schemas/<name>` as parsed JSON (cached)."""
    text = (resources.files("acxoci") / "schemas" / name).read_text(encoding="utf-8")
    doc: dict[str, Any] = loads_strict(text)
    return doc


def json_path(parts: Iterable[str | int]) -> str:
    """`$`-rooted JSON path of an error location: `$.a[0].b`."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _strict_integer(_checker: Any, instance: Any) -> bool:
    """`integer` means a JSON integer: 29.0 is a number, not an integer, and a bool is neither."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _anchored_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterable[Any]:
    """`pattern`, but a trailing `$` means the end of the string (Python's `$` also matches before
    a final newline, so `^[a-z]+$` would accept "evil\n"; ECMA-262's does not)."""
    if not isinstance(instance, str):
        return
    anchored = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith("\\$") else pattern
    if re.search(anchored, instance) is None:
        import jsonschema

        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _strict() -> Any:
    """The validator class (jsonschema is imported the first time a document is validated)."""
    import jsonschema

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator,
        validators={"pattern": _anchored_pattern},
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
    )


def strict_validator(schema: dict[str, Any]) -> Any:
    """A draft 2020-12 validator with strict integers and true-end-anchored patterns."""
    return _strict()(schema)


def schema_errors(name: str, doc: Any) -> list[str]:
    """Every violation of schema `name` by `doc`, ordered by path (empty when valid). Integers
    are strict (no 29.0, no true) and patterns are anchored at the true end of the string."""
    return schema_errors_of(load_schema(name), doc)


def schema_errors_of(schema: dict[str, Any], doc: Any) -> list[str]:
    """`schema_errors` against a schema (or a part of one) already loaded."""
    found = strict_validator(schema).iter_errors(doc)
    errors = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{json_path(e.absolute_path)}: {e.message}" for e in errors]
