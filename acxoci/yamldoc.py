"""The one YAML reader (verification policies, host limits, release plans, SKILL.md front matter).

YAML documents here are plain data, so the reader refuses what only an attacker needs: anchors and
aliases (a kilobyte of nested aliases expands to gigabytes: "billion laughs") and nesting deeper
than `MAX_DEPTH` (PyYAML builds objects recursively, so a deep document would end in a
RecursionError). Both are found in libyaml's event stream, which is parsed without recursion,
before a single object is built."""

from __future__ import annotations

from typing import Any

from acxoci.errors import InvalidInput, parse_problem

MAX_DEPTH = 64


def load_yaml(text: str, *, what: str, where: str) -> Any:
    """`text` as data; InvalidInput naming `what` and `where` for invalid YAML, an anchor or alias,
    or nesting deeper than MAX_DEPTH."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML was built with it
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise InvalidInput(f"{what}: YAML anchors and aliases are not accepted", where=where)
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise InvalidInput(f"{what}: nested deeper than {MAX_DEPTH} levels", where=where)
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{what} is not valid YAML: {parse_problem(exc)}", where=where) from exc
