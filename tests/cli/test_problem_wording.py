"""Messages say what is wrong in our words: no parser context dumps, library class names or
Python reprs such as `None` reach a user."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from acxoci.errors import InvalidInput, parse_problem
from acxoci.install.vpolicy import load_policy
from acxoci.policy.limits import load_host_limits


def test_yaml_problem_is_one_line_with_its_place() -> None:
    with pytest.raises(yaml.YAMLError) as info:
        yaml.safe_load("a: [1,\nb: }\n")
    text = parse_problem(info.value)
    assert text.startswith("line 2, column 4: ") and "\n" not in text and "<unicode string>" not in text


@pytest.mark.parametrize("loader", [
    lambda p: load_policy(p, now=datetime.now(UTC)),
    load_host_limits,
])
def test_bad_yaml_files_name_line_and_column_only(tmp_path: Path, loader: object) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: : :\n")
    with pytest.raises(InvalidInput) as info:
        loader(bad)  # type: ignore[operator]
    msg = info.value.message
    assert "line 1, column 4" in msg and "\n" not in msg and "<unicode string>" not in msg


def test_registry_errors_keep_the_registry_words_and_drop_pages() -> None:
    from acxoci.oci.registry import registry_error_text

    body = b'{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}'
    assert registry_error_text(404, body) == "HTTP 404: NAME_UNKNOWN: repository name not known to registry"
    page = b"<html><body><h1>502 Bad Gateway</h1><script>alert(1)</script></body></html>"
    assert registry_error_text(502, page) == "HTTP 502"
    assert registry_error_text(500, b'{"errors": "nope"}') == "HTTP 500"
    sneaky = b'{"errors":[{"code":"DENIED","message":"no\\u001b[31m red\\nline"}]}'
    assert registry_error_text(403, sneaky) == "HTTP 403: DENIED: no?[31m red?line"
    assert registry_error_text(400, b"{" * 100_000) == "HTTP 400"
