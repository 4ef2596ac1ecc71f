"""VerifyingReader: exact bytes pass; short, long and wrong content fail; copy leaves no file."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from acxoci.oci.descriptor import Descriptor
from acxoci.oci.digest import VerifyingReader, copy_verified, file_descriptor
from acxoci.oci.errors import DigestMismatch, SizeMismatch

DATA = b"acx" * 100_000


def _desc(data: bytes = DATA, size: int | None = None) -> Descriptor:
    return Descriptor(
        "application/octet-stream",
        "sha256:" + hashlib.sha256(data).hexdigest(),
        len(data) if size is None else size,
    )


def test_good_stream() -> None:
    r = VerifyingReader(io.BytesIO(DATA), _desc())
    assert b"".join(r.chunks(4096)) == DATA and r.verified


@pytest.mark.parametrize(
    ("body", "desc", "error"),
    [
        (DATA[:-1], _desc(), SizeMismatch),
        (DATA + b"!", _desc(), SizeMismatch),
        (b"x" + DATA[1:], _desc(), DigestMismatch),
        (DATA, _desc(size=len(DATA) - 1), SizeMismatch),
    ],
)
def test_lies(body: bytes, desc: Descriptor, error: type[Exception]) -> None:
    with pytest.raises(error):
        VerifyingReader(io.BytesIO(body), desc).read_all()


def test_copy_verified_leaves_nothing_on_failure(tmp_path: Path) -> None:
    dest = tmp_path / "out.bin"
    with pytest.raises(DigestMismatch):
        copy_verified(VerifyingReader(io.BytesIO(b"y" + DATA[1:]), _desc()), dest)
    assert list(tmp_path.iterdir()) == []
    copy_verified(VerifyingReader(io.BytesIO(DATA), _desc()), dest)
    assert dest.read_bytes() == DATA
    assert file_descriptor(dest, "x").digest == _desc().digest


@pytest.mark.parametrize("pipelined", [False, True])
@pytest.mark.parametrize(
    ("body", "error"),
    [(DATA, None), (DATA[:-5], SizeMismatch), (DATA + b"!", SizeMismatch), (b"x" + DATA[1:], DigestMismatch)],
)
def test_copy_to_sequential_and_pipelined(
    monkeypatch: pytest.MonkeyPatch, pipelined: bool, body: bytes, error: type[Exception] | None
) -> None:
    import acxoci.oci.digest as dg

    monkeypatch.setattr(dg, "PIPELINE_MIN", 1 if pipelined else 1 << 40)
    out = io.BytesIO()
    reader = VerifyingReader(io.BytesIO(body), _desc())
    seen: list[int] = []
    reader.add_progress(seen.append)
    if error is None:
        assert reader.copy_to(out, bufsize=7919) == len(DATA)
        assert out.getvalue() == DATA and reader.verified and sum(seen) == len(DATA)
    else:
        with pytest.raises(error):
            reader.copy_to(out, bufsize=7919)
        assert not reader.verified


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize(
    ("body", "error"), [(DATA, None), (DATA[:-5], SizeMismatch), (b"x" + DATA[1:], DigestMismatch)]
)
def test_pipelined_copy_into_real_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, direct: bool, body: bytes, error: type[Exception] | None
) -> None:
    """The large-body path into a regular file (O_DIRECT where allowed): exact bytes and length,
    the zero padding of the last block trimmed, the handle left at the end; lies still raise."""
    import acxoci.oci.digest as dg

    monkeypatch.setattr(dg, "PIPELINE_MIN", 1)
    monkeypatch.setattr(dg, "DIRECT_IO", direct)
    path = tmp_path / "blob.part"
    reader = VerifyingReader(io.BytesIO(body), _desc())
    with path.open("wb") as fh:
        if error is None:
            assert reader.copy_to(fh, bufsize=5000) == len(DATA)  # not a block multiple
            assert fh.tell() == len(DATA)
            fh.write(b"!")  # buffered writes continue at the right offset
        else:
            with pytest.raises(error):
                reader.copy_to(fh, bufsize=5000)
    if error is None:
        assert path.read_bytes() == DATA + b"!" and reader.verified
    else:
        assert not reader.verified


def test_direct_write_refused_falls_back_to_plain_writes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A filesystem that takes O_DIRECT but refuses the I/O (EINVAL) still gets every byte."""
    import errno
    import fcntl
    import os

    import acxoci.oci.digest as dg

    if not getattr(os, "O_DIRECT", 0):
        pytest.skip("no O_DIRECT on this platform")
    refused: list[int] = []

    def picky_write(fd: int, data: memoryview) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(len(data))
            raise OSError(errno.EINVAL, "direct I/O refused")
        return os.write(fd, data)

    monkeypatch.setattr(dg, "PIPELINE_MIN", 1)
    monkeypatch.setattr(dg._DirectWriter, "_write", staticmethod(picky_write))
    path = tmp_path / "blob.part"
    reader = VerifyingReader(io.BytesIO(DATA), _desc())
    with path.open("wb") as fh:
        assert reader.copy_to(fh, bufsize=8192) == len(DATA)
    assert path.read_bytes() == DATA and reader.verified and refused


def test_short_body_is_a_truncation_not_just_a_size_lie() -> None:
    """A body that ends early is TruncatedBody (retryable); one that runs long is not."""
    from acxoci.oci.errors import TruncatedBody

    with pytest.raises(TruncatedBody):
        VerifyingReader(io.BytesIO(DATA[:-1]), _desc()).read_all()
    with pytest.raises(SizeMismatch) as exc:
        VerifyingReader(io.BytesIO(DATA + b"!"), _desc()).read_all()
    assert not isinstance(exc.value, TruncatedBody)
