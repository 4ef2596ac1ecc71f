"""The one strict decoder: no coercion, null is no object, errors name the JSON pointer."""

from __future__ import annotations

from typing import Literal

import pytest

from acxoci.attest.typed import DocumentTypeError, Struct, decode_as, json_pointer


class Tool(Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    name: str
    capability_scopes: tuple[str, ...] = ()


class Doc(Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    schema_version: Literal["x/1"]
    tools: tuple[Tool, ...] = ()
    limits: dict[str, int] | None = None


def test_a_valid_document_decodes_to_the_model() -> None:
    doc = decode_as({"schemaVersion": "x/1", "tools": [{"name": "t", "capabilityScopes": ["a"]}]}, Doc,
                    document="d.json")
    assert doc.tools[0].capability_scopes == ("a",)


@pytest.mark.parametrize(("value", "pointer"), [
    ({"schemaVersion": "x/1", "tools": [{"name": "t", "capabilityScopes": -1}]}, "/tools/0/capabilityScopes"),
    ({"schemaVersion": "x/1", "tools": [{"name": "t", "zz": 1}]}, "/tools/0/zz"),
    ({"schemaVersion": "x/1", "tools": [{"name": "t", "a/b": 1}]}, "/tools/0/a~1b"),
    ({"schemaVersion": "x/1", "tools": [{}]}, "/tools/0/name"),
    ({"tools": []}, "/schemaVersion"),
    ({"schemaVersion": "x/2"}, "/schemaVersion"),
    ({"schemaVersion": "x/1", "limits": {"a": True}}, "/limits/…"),
    ({"schemaVersion": "x/1", "limits": {"a": "1"}}, "/limits/…"),
    ({"schemaVersion": "x/1", "tools": None}, "/tools"),
    (None, ""),
    ([], ""),
])
def test_a_wrong_type_names_the_document_and_the_pointer(value: object, pointer: str) -> None:
    with pytest.raises(DocumentTypeError) as info:
        decode_as(value, Doc, document="d.json")
    assert info.value.pointer == pointer
    assert str(info.value).startswith("d.json: ")


def test_pointer_escapes_tilde_and_slash_and_keeps_unknown_text() -> None:
    assert json_pointer(".a[3].b") == "/a/3/b"
    assert json_pointer("[...]") == "/…"
    assert json_pointer(".a!b") == "/a/!b"
