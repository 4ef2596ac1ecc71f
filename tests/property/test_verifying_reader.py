"""acxoci.oci.digest.VerifyingReader against an oracle, for every way of reading it: `read(n)` in
chunks, `read()`, `readinto` (from sources with and without their own `readinto`), `copy_to`
(sequential and, with a small threshold, pipelined) and `copy_verified`. For any body and any
declared size and digest (sha256 or sha512): the bytes delivered are the body's, the progress
callbacks add up to them, and the reader ends verified exactly when body, size and digest all
agree; otherwise it raises one of the typed mismatch errors and `copy_verified` leaves no file.
Written against the survivors of `make mutate`."""

from __future__ import annotations

import hashlib
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acxoci.errors import AcxError
from acxoci.oci import digest as dg
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.digest import VerifyingReader, copy_verified, file_descriptor, file_digest, new_hasher
from acxoci.oci.errors import Unsupported

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
MT = "application/octet-stream"


class NoReadinto:
    """A source with only `read` (like some HTTP streams)."""

    def __init__(self, data: bytes) -> None:
        self._b = io.BytesIO(data)

    def read(self, n: int = -1, /) -> bytes:
        return self._b.read(n)


def _digest(alg: str, data: bytes) -> str:
    return f"{alg}:{hashlib.new(alg, data).hexdigest()}"


@st.composite
def cases(draw: st.DrawFn) -> tuple[bytes, Descriptor, bool]:
    body = draw(st.binary(max_size=3000))
    alg = draw(st.sampled_from(("sha256", "sha512")))
    declared = draw(st.sampled_from(("same", "longer", "shorter", "other-digest")))
    size, digest = len(body), _digest(alg, body)
    if declared == "longer":
        size += draw(st.integers(1, 50))
    elif declared == "shorter" and body:
        size = draw(st.integers(0, len(body) - 1))
    elif declared == "other-digest":
        digest = _digest(alg, body + b"x")
    honest = size == len(body) and digest == _digest(alg, body)
    return body, Descriptor(MT, digest, size), honest


def _source(body: bytes, with_readinto: bool) -> io.BytesIO | NoReadinto:
    return io.BytesIO(body) if with_readinto else NoReadinto(body)


@SETTINGS
@given(case=cases(), way=st.sampled_from(("read-chunks", "read-all", "readinto", "copy", "copy-pipelined")),
       chunk=st.integers(1, 700), with_readinto=st.booleans())
def test_reader_matches_the_oracle(case: tuple[bytes, Descriptor, bool], way: str, chunk: int,
                                   with_readinto: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    body, desc, honest = case
    seen: list[int] = []
    extra: list[int] = []
    r = VerifyingReader(_source(body, with_readinto), desc, progress=seen.append)
    r.add_progress(extra.append)
    out = bytearray()
    try:
        if way == "read-chunks":
            while data := r.read(chunk):
                out += data
            r.read(chunk)  # after EOF: nothing more, no new error
        elif way == "read-all":
            out += r.read()
        elif way == "readinto":
            buf = memoryview(bytearray(chunk))
            while n := r.readinto(buf):
                out += buf[:n]
            assert r.readinto(buf) == 0
        else:
            if way == "copy-pipelined":
                monkeypatch.setattr(dg, "PIPELINE_MIN", 1)
                monkeypatch.setattr(dg, "DIRECT_IO", False)
            fh = io.BytesIO()
            copied: list[int] = []
            total = r.copy_to(fh, bufsize=chunk, progress=copied.append)
            out += fh.getvalue()
            assert total == len(out) == sum(copied)
    except AcxError:
        assert not honest, "an honest body was refused"
        assert not r.verified
        assert bytes(out) == body[: len(out)]
        assert len(out) <= desc.size, "bytes past the declared size were handed out"
        return
    assert honest, f"a lying stream was accepted ({desc}, {len(body)} bytes)"
    assert r.verified and bytes(out) == body
    assert sum(seen) == sum(extra) == len(body)


@SETTINGS
@given(case=cases(), with_readinto=st.booleans())
def test_copy_verified_renames_only_a_proven_file(case: tuple[bytes, Descriptor, bool],
                                                  with_readinto: bool) -> None:
    body, desc, honest = case
    with tempfile.TemporaryDirectory() as d:
        dest = Path(d) / "sub" / "blob"
        try:
            copy_verified(VerifyingReader(_source(body, with_readinto), desc), dest)
        except AcxError:
            assert not honest
            assert not dest.exists() and list(dest.parent.iterdir()) == []
            return
        assert honest and dest.read_bytes() == body


def test_hashers_and_file_digests() -> None:
    assert new_hasher("sha256:ab").name == "sha256"
    assert new_hasher("sha512:ab").name == "sha512"
    with pytest.raises(Unsupported) as info:
        new_hasher("md5:ab:cd")
    assert str(info.value) == "unsupported digest algorithm 'md5'" and info.value.where == "md5:ab:cd"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f"
        p.write_bytes(b"abc" * 5000)
        assert file_digest(p) == (_digest("sha256", b"abc" * 5000), 15000)
        assert file_digest(p, "sha512") == (_digest("sha512", b"abc" * 5000), 15000)
        assert file_descriptor(p, "x/y") == Descriptor("x/y", _digest("sha256", b"abc" * 5000), 15000)


def test_big_bodies_and_eager_verification(tmp_path: Path) -> None:
    body = bytes(range(256)) * (5 * 4096 + 3)  # > 4 MiB and > one read chunk
    desc = Descriptor(MT, _digest("sha256", body), len(body))
    assert VerifyingReader(io.BytesIO(body), desc).read() == body
    assert VerifyingReader(io.BytesIO(body), desc).read_all() == body
    r = VerifyingReader(io.BytesIO(body), desc)
    assert r.read(len(body)) == body and r.verified  # the declared size reached: checked at once
    p = tmp_path / "big"
    p.write_bytes(body)
    assert file_digest(p) == (desc.digest, len(body))
    dest = tmp_path / "a" / "b" / "blob"
    copy_verified(VerifyingReader(io.BytesIO(body), desc), dest, fsync=True)
    assert dest.read_bytes() == body


def test_refusals_say_what_and_where() -> None:
    from acxoci.oci.errors import DigestMismatch, SizeMismatch, TruncatedBody

    desc = Descriptor(MT, _digest("sha256", b"abc"), 3)
    with pytest.raises(DigestMismatch) as d:
        VerifyingReader(io.BytesIO(b"abd"), desc).read()
    assert str(d.value) == f"content hashes to {_digest('sha256', b'abd')}"
    with pytest.raises(TruncatedBody) as t:
        VerifyingReader(io.BytesIO(b"ab"), desc, where="w").read()
    assert str(t.value) == "got 2 bytes, expected 3 (truncated body)" and t.value.where == "w"
    with pytest.raises(SizeMismatch) as s:
        VerifyingReader(io.BytesIO(b"abcd"), desc, where="w").read()
    assert str(s.value) == "more than the declared 3 bytes" and s.value.where == "w"


def test_close_calls_on_close_once() -> None:
    calls: list[int] = []
    desc = Descriptor(MT, _digest("sha256", b""), 0)
    with VerifyingReader(io.BytesIO(b""), desc, on_close=lambda: calls.append(1)) as r:
        r.close()
    assert calls == [1]


def test_where_defaults_to_the_digest() -> None:
    desc = Descriptor(MT, _digest("sha256", b"abc"), 3)
    with pytest.raises(AcxError) as info:
        VerifyingReader(io.BytesIO(b"abd"), desc).read()
    assert info.value.where == desc.digest
    with pytest.raises(AcxError) as info:
        VerifyingReader(io.BytesIO(b"abd"), desc, where="blob x").read()
    assert info.value.where == "blob x"
