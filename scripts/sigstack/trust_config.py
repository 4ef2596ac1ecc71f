#!/usr/bin/env python3
"""Write the loopback stack's trust documents into DIR: trusted_root.json, signing_config.json and
trust_config.json (a ClientTrustConfig: both together, as cosign 3 and sigstore-python take it).

Usage: trust_config.py DIR OIDC_URL FULCIO_URL REKOR_URL REKOR_PUB_PEM CT_URL CT_PUB_PEM TSA_URL
Fulcio's CA chain and the TSA's chain are read from the running servers. Stdlib + `cryptography`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import urllib.request
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

VALID = {"start": "2020-01-01T00:00:00Z"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def ders(pem: str) -> list[bytes]:
    return [c.public_bytes(serialization.Encoding.DER) for c in x509.load_pem_x509_certificates(pem.encode())]


def log(url: str, pub_pem: Path) -> dict[str, object]:
    der = serialization.load_pem_public_key(pub_pem.read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {"baseUrl": url, "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": b64(der), "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": VALID},
            "logId": {"keyId": b64(hashlib.sha256(der).digest())}}


def write(path: Path, doc: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)


def main() -> None:
    out, oidc, fulcio, rekor, rekor_pub, ct, ct_pub, tsa = sys.argv[1:9]
    with urllib.request.urlopen(f"{fulcio}/api/v2/trustBundle", timeout=30) as r:
        fulcio_chain = json.load(r)["chains"][0]["certificates"]
    with urllib.request.urlopen(f"{tsa}/api/v1/timestamp/certchain", timeout=30) as r:
        tsa_chain = r.read().decode()
    root = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [log(rekor, Path(rekor_pub))],
        "certificateAuthorities": [{
            "subject": {"organization": "acx-sigstack", "commonName": "acx-sigstack-fulcio"}, "uri": fulcio,
            "certChain": {"certificates": [{"rawBytes": b64(d)} for d in ders("".join(fulcio_chain))]},
            "validFor": VALID}],
        "ctlogs": [log(ct, Path(ct_pub))],
        "timestampAuthorities": [{
            "subject": {"organization": "acx-sigstack", "commonName": "acx-sigstack-tsa"}, "uri": tsa,
            "certChain": {"certificates": [{"rawBytes": b64(d)} for d in ders(tsa_chain)]},
            "validFor": VALID}],
    }

    def service(url: str, major: int) -> dict[str, object]:
        return {"url": url, "majorApiVersion": major, "validFor": VALID, "operator": "acx-sigstack"}

    signing = {
        "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
        "caUrls": [service(fulcio, 1)], "oidcUrls": [service(oidc, 1)],
        "rekorTlogUrls": [service(rekor, 2)], "tsaUrls": [service(f"{tsa}/api/v1/timestamp", 1)],
        "rekorTlogConfig": {"selector": "ANY"}, "tsaConfig": {"selector": "ANY"},
    }
    d = Path(out)
    write(d / "trusted_root.json", root)
    write(d / "signing_config.json", signing)
    write(d / "trust_config.json", {"mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
                                    "trustedRoot": root, "signingConfig": signing})


if __name__ == "__main__":
    main()
