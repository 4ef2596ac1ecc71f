"""Typed errors of the OCI layer, all subclasses of the acxoci hierarchy (stable exit codes).

A lying registry or a corrupt layout ends in one of these, never in a half-written file."""

from __future__ import annotations

from acxoci.errors import (
    AuthError,
    InvalidInput,
    NotFound,
    Tampered,
    TransientError,
    UsageError,
    WriteBackFailed,
)


class DigestMismatch(Tampered):
    """Bytes read for a descriptor do not hash to its digest."""

    kind = "digest_mismatch"


class SizeMismatch(Tampered):
    """More or fewer bytes arrived than the descriptor's size."""

    kind = "size_mismatch"


class TruncatedBody(SizeMismatch):
    """Fewer bytes arrived than declared (the connection was cut or the body ended early):
    callers may retry, since nothing unproven was kept."""

    kind = "truncated_body"


class ManifestTooLarge(InvalidInput):
    """A manifest or index larger than the 4 MiB limit was offered or served."""

    kind = "manifest_too_large"


class MalformedManifest(InvalidInput):
    """A manifest, index or descriptor is not valid JSON of the expected shape."""

    kind = "malformed_manifest"


class BadReference(UsageError):
    """A reference string cannot be parsed (`host/repo[:tag][@digest]`, `oci-layout:PATH[:tag]`)."""

    kind = "bad_reference"


class RegistryProtocolError(InvalidInput):
    """The registry answered outside the distribution spec (bad header, redirect loop, bad status)."""

    kind = "registry_protocol"


class RegistryUnavailable(TransientError):
    """Network failure, 5xx or 429 that persisted after the bounded retries."""

    kind = "host_failure"


class ManifestNotFound(NotFound):
    """No manifest for that tag or digest."""

    kind = "not_found"


class BlobNotFound(NotFound):
    """No blob with that digest."""

    kind = "not_found"


class RegistryAuthError(AuthError):
    """401/403 or unusable credentials / auth challenge."""

    kind = "auth_failure"


class UploadFailed(WriteBackFailed):
    """A blob or manifest upload did not take."""

    kind = "writeback_failed"


class Unsupported(UsageError):
    """The target does not support this operation (e.g. delete on a registry that forbids it)."""

    kind = "unsupported"


class TLSFailure(AuthError):
    """The registry's TLS certificate could not be verified (unknown CA, wrong name, expired):
    the server could not prove who it is, so a person must supply the right CA or host."""

    kind = "tls_failure"


class WrongScheme(UsageError):
    """HTTP was spoken to an HTTPS port or the reverse: the plain-HTTP choice is wrong."""

    kind = "wrong_scheme"


class LimitExceeded(InvalidInput):
    """A response or graph passed a bound (body size, pages, referrers, tags, walk depth)."""

    kind = "limit_exceeded"


class RegistryTimeout(RegistryUnavailable):
    """A connect or read did not complete in time (retried within the bounds)."""

    kind = "host_failure"


class DeadlineExceeded(RegistryTimeout):
    """A request did not complete within its overall deadline (slow or dripping server): not
    retried, since the server chose to be slow."""

    kind = "host_failure"


class DiskFull(UploadFailed):
    """A local write failed for lack of space or a file-size limit; nothing was kept."""

    kind = "writeback_failed"
