"""OCI-level attestations for ACX artifacts: in-toto statements whose subject is the OCI manifest
digest, written as cosign-compatible legacy `.att` tags and sigstore bundle referrers, and verified
the way `cosign verify-attestation --key` does (plus the ACX content binding)."""
