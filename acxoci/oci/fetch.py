"""GET of a small https document (a status list, a trust document) under the same transport setup
as registries: CA bundle / --insecure / registries file / SSL_CERT_FILE for its host, the overall
deadline, a capped body, no credentials, redirects followed without ever leaving HTTPS, and
failures as one actionable sentence."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit

from acxoci.errors import UsageError
from acxoci.oci.errors import RegistryUnavailable
from acxoci.oci.session import error_text, read_capped, redact
from acxoci.oci.settings import RemoteOptions, active_options
from acxoci.oci.transport import Transport


def get_url(
    url: str, *, accept: str, limit: int, options: RemoteOptions | None = None, timeout: float | None = None
) -> bytes:
    """The body of `url` (https only), at most `limit` bytes (LimitExceeded past it);
    RegistryUnavailable (host_failure) for any answer but 200."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc:
        raise UsageError("only https:// URLs are fetched", where=redact(url))
    opts = dataclasses.replace(options or active_options(), plain_http=False, username=None, password=None)
    if timeout is not None:
        opts = dataclasses.replace(opts, timeout=timeout)
    t = Transport.for_host(parts.netloc, opts)
    resp, _ = t.follow("GET", url, {"Accept": accept}, None, auth_value=None, auth_origin=None)
    with resp:
        if resp.status_code != 200:
            raise RegistryUnavailable(f"{redact(url)} answered {error_text(resp)}", where=redact(url))
        return read_capped(resp, limit, redact(url), "document")
