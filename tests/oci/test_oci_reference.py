"""Reference parsing: registry and oci-layout forms, tags, digests, and bad input."""

from __future__ import annotations

import pytest

from acxoci.oci.errors import BadReference
from acxoci.oci.reference import fallback_tag, parse_reference

D = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "host", "repo", "tag", "digest"),
    [
        ("127.0.0.1:5000/acx/demo:v1", "127.0.0.1:5000", "acx/demo", "v1", None),
        (f"localhost/acx/demo@{D}", "localhost", "acx/demo", None, D),
        (f"reg.example.com/a/b/c:t1@{D}", "reg.example.com", "a/b/c", "t1", D),
        ("ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", None),
        ("acx/demo", "docker.io", "acx/demo", None, None),
        ("[::1]:5000/x:y", "[::1]:5000", "x", "y", None),
    ],
)
def test_registry_references(text: str, host: str, repo: str, tag: str | None, digest: str | None) -> None:
    r = parse_reference(text)
    assert (r.host, r.repository, r.tag, r.digest) == (host, repo, tag, digest)
    assert not r.is_layout


def test_layout_references() -> None:
    r = parse_reference("oci-layout:/tmp/a:b/store:v1")
    assert r.layout_path == "/tmp/a:b/store" and r.tag == "v1"
    r = parse_reference(f"oci-layout:./store@{D}")
    assert r.layout_path == "./store" and r.digest == D and r.tag is None
    assert parse_reference("oci-layout:store").reference is None
    assert str(parse_reference("oci-layout:store:v2")) == "oci-layout:store:v2"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "host:5000/UPPER/repo:v1",
        "127.0.0.1:5000/acx:-bad",
        f"127.0.0.1:5000/a@{D[:-1]}",
        "127.0.0.1:5000/a@md5:abc",
        "a b/c",
        "oci-layout::v1",
        "127.0.0.1:5000/a//b:v1",
    ],
)
def test_bad_references(text: str) -> None:
    with pytest.raises(BadReference):
        parse_reference(text)


def test_require_ref_and_fallback_tag() -> None:
    with pytest.raises(BadReference):
        parse_reference("127.0.0.1:5000/a", require_ref=True)
    assert fallback_tag(D) == "sha256-" + "a" * 64
