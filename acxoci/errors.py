"""One exception hierarchy for acxoci: each class has a stable exit code and a `kind` string.

The CLI maps any AcxError to its exit code and prints one line (or `{"error": {...}}` with
`--json`). Library code raises these; it never calls sys.exit.
"""

from __future__ import annotations

import errno
from typing import Any, ClassVar


class AcxError(Exception):
    """Base class. `kind` is stable and machine-readable; `exit_code` is documented in docs/cli.md."""

    kind: ClassVar[str] = "error"
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint
        self.details = dict(details or {})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message, "exitCode": self.exit_code}
        if self.where:
            out["where"] = self.where
        if self.hint:
            out["hint"] = self.hint
        if self.details:
            out["details"] = self.details
        return out

    def one_line(self) -> str:
        parts = [self.message]
        if self.where:
            parts.insert(0, f"{self.where}:")
        line = " ".join(parts)
        if self.hint:
            line += f" ({self.hint})"
        return line


class VerificationFailed(AcxError):
    """A signature, digest or binding did not verify: the artifact must not be trusted."""

    kind = "verification_failed"
    exit_code = 1


class Tampered(VerificationFailed):
    """Content differs from what was signed."""

    kind = "tampered"
    exit_code = 1


class UsageError(AcxError):
    """The command line itself is wrong (flags, arguments)."""

    kind = "usage"
    exit_code = 2


class InvalidInput(AcxError):
    """A file or document is malformed: not SQLite, bad JSON, schema violation, unsafe path."""

    kind = "invalid_input"
    exit_code = 3


class NotFound(AcxError):
    """A file, tag, digest, blob or repository does not exist."""

    kind = "not_found"
    exit_code = 4


class AuthError(AcxError):
    """Authentication or authorization failed (401/403, missing credentials): a person must act."""

    kind = "auth_failure"
    exit_code = 5


class TransientError(AcxError):
    """A host or registry failure that may pass (network, 5xx, 429): retry later."""

    kind = "host_failure"
    exit_code = 6


class WriteBackFailed(AcxError):
    """A write did not take (upload rejected, read-back differs from what was written)."""

    kind = "writeback_failed"
    exit_code = 7


class RefusedByPolicy(AcxError):
    """A verification or host policy refused the artifact (trust, level, harness, limits)."""

    kind = "refused_by_policy"
    exit_code = 8


class Blocked(AcxError):
    """A step cannot proceed without a person (a gate, a conflicting tag, a permanent error)."""

    kind = "blocked"
    exit_code = 9


class InternalError(AcxError):
    """A bug in acxoci itself."""

    kind = "internal"
    exit_code = 70


ALL_ERRORS: tuple[type[AcxError], ...] = (
    VerificationFailed, Tampered, UsageError, InvalidInput, NotFound, AuthError,
    TransientError, WriteBackFailed, RefusedByPolicy, Blocked, InternalError,
)


def parse_problem(exc: Exception) -> str:
    """A parser error (PyYAML, JSON, decoding) as one line a user can act on: where and what,
    without the library's multi-line context dump or its class names."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# The disk refused a write (full, over quota or past the file-size limit, read-only, failing):
# an environment failure, never a bug: writeback_failed at the CLI (nothing is kept), and a
# resumable host_failure inside a release (it may pass once space is freed).
DISK_SAID_NO: frozenset[int] = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO})
