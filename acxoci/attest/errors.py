"""Errors raised by the attest primitives. acxoci maps them onto its own hierarchy."""

from __future__ import annotations


class AttestError(ValueError):
    """Base: a malformed document or a failed cryptographic check."""


class MalformedError(AttestError):
    """Input is not of the expected shape (bad JSON, bad base64, wrong fields)."""


class SignatureError(AttestError):
    """A signature did not verify."""
