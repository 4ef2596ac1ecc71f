"""Signing with a key held in a PKCS#11 token (an HSM, a smart card, SoftHSM2), named by an RFC 7512
URI as cosign spells it:

    pkcs11:token=LABEL;object=KEYLABEL?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=1234

Path attributes: `token` (label), `serial`, `slot-id`, `object` (key label), `id` (key id,
percent-encoded). Query attributes: `module-path`, `pin-value`, `pin-source` (a file holding the
PIN). As in cosign, COSIGN_PKCS11_MODULE_PATH and COSIGN_PKCS11_PIN fill in what the URI leaves out;
a PIN is prompted for only at a terminal. The private key never leaves the token: the signing key
acx gets is a `cryptography` key object whose `sign` calls the token (ECDSA P-256 with SHA-256,
DER-encoded as cosign expects, or pure Ed25519, the format of publisher signatures).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote_to_bytes

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from typing_extensions import Buffer

from acxoci.attest.keys import PrivateKey
from acxoci.errors import AuthError, InvalidInput, NotFound, UsageError
from acxoci.fsutil import read_bytes

PATH_ATTRIBUTES = ("token", "serial", "slot-id", "object", "id", "manufacturer", "model",
                   "library-manufacturer", "library-description", "library-version", "type")
QUERY_ATTRIBUTES = ("module-path", "module-name", "pin-value", "pin-source")
P256_OID_DER = bytes.fromhex("06082a8648ce3d030107")
#: CKA_EC_PARAMS of an Ed25519 key: the OID 1.3.101.112, or the PrintableString "edwards25519"
ED25519_PARAMS = (bytes.fromhex("06032b6570"), bytes.fromhex("130c656477617264733235353139"))
MAX_PIN_FILE = 4096


@dataclass(frozen=True)
class Pkcs11Uri:
    """The parts of a pkcs11: URI acx uses."""

    module_path: str | None
    token: str | None = None
    serial: str | None = None
    slot_id: int | None = None
    object: str | None = None
    id: bytes | None = None
    pin: str | None = None
    pin_source: str | None = None

    def describe(self) -> str:
        """The URI without its PIN (safe to print)."""
        parts = [f"token={self.token}" if self.token else "", f"object={self.object}" if self.object else "",
                 f"id={self.id.hex()}" if self.id else "",
                 f"slot-id={self.slot_id}" if self.slot_id is not None else ""]
        return "pkcs11:" + ";".join(p for p in parts if p)


MAX_SLOT_DIGITS = 20
"""A PKCS#11 slot id is a CK_ULONG (at most 2**64 - 1: 20 digits)."""


def _bad(why: str) -> NoReturn:
    raise UsageError(f"pkcs11 URI: {why}", where="--key")


def parse_pkcs11_uri(uri: str) -> Pkcs11Uri:
    """RFC 7512 parsing of the attributes above (unknown attributes are refused, not ignored)."""
    if not uri.startswith("pkcs11:"):
        _bad("must start with pkcs11:")
    path, _, query = uri.removeprefix("pkcs11:").partition("?")
    attrs: dict[str, bytes] = {}
    for item in (p for p in path.split(";") if p):
        name, eq, value = item.partition("=")
        if not eq or name not in PATH_ATTRIBUTES:
            _bad(f"unknown or malformed path attribute {name!r}")
        if name in attrs:
            _bad(f"{name} given twice")
        attrs[name] = unquote_to_bytes(value)
    q: dict[str, str] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        _bad("malformed query (?name=value&…)")
    for name, value in pairs:
        if name not in QUERY_ATTRIBUTES:
            _bad(f"unknown query attribute {name!r}")
        if name in q:  # as a repeated path attribute: which one would be meant is not ours to guess
            _bad(f"{name} given twice")
        q[name] = value

    def text(name: str) -> str | None:
        raw = attrs.get(name)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            _bad(f"{name} is not UTF-8")

    slot = text("slot-id")
    if slot is not None and not (slot.isascii() and slot.isdigit() and len(slot) <= MAX_SLOT_DIGITS):
        _bad(f"slot-id must be a number of at most {MAX_SLOT_DIGITS} ASCII digits")
    if text("object") is None and "id" not in attrs:
        _bad("name the key with object= or id=")
    module = q.get("module-path") or os.environ.get("COSIGN_PKCS11_MODULE_PATH")
    return Pkcs11Uri(module, text("token"), text("serial"), int(slot) if slot is not None else None,
                     text("object"), attrs.get("id"), q.get("pin-value"), q.get("pin-source"))


def _pin(uri: Pkcs11Uri) -> str:
    if uri.pin is not None:
        return uri.pin
    if uri.pin_source is not None:
        src = uri.pin_source.removeprefix("file:")
        return read_bytes(Path(src), "PKCS#11 PIN file", limit=MAX_PIN_FILE).decode("utf-8").strip()
    env = os.environ.get("COSIGN_PKCS11_PIN")
    if env is not None:
        return env
    from acxoci.keyfiles import interactive, prompt_secret

    if interactive():
        return prompt_secret(f"PIN for {uri.describe()}: ")
    raise AuthError("no PIN for the PKCS#11 token", where=uri.describe(),
                    hint="add pin-value= or pin-source= to the URI, or set COSIGN_PKCS11_PIN")


def _unwrap_octets(der: bytes) -> bytes:
    """The contents of a DER OCTET STRING (CKA_EC_POINT is one), or the bytes as they are."""
    if len(der) >= 2 and der[0] == 0x04:
        n, off = der[1], 2
        if n & 0x80:
            width = n & 0x7F
            n, off = int.from_bytes(der[2:2 + width], "big"), 2 + width
        if off + n == len(der):
            return der[off:]
    return der


class _TokenEcKey(ec.EllipticCurvePrivateKey):
    """A P-256 key in a token: `sign` hashes with SHA-256 here and signs with CKM_ECDSA there."""

    def __init__(self, handle: Any, public: ec.EllipticCurvePublicKey) -> None:
        self._handle, self._public = handle, public

    def sign(self, data: Buffer, signature_algorithm: ec.EllipticCurveSignatureAlgorithm) -> bytes:
        from pkcs11 import Mechanism

        if not isinstance(signature_algorithm.algorithm, hashes.SHA256):
            raise InvalidInput("the PKCS#11 key signs ECDSA with SHA-256 only", where="--key")
        raw = self._handle.sign(hashlib.sha256(bytes(data)).digest(), mechanism=Mechanism.ECDSA)
        half = len(raw) // 2
        return encode_dss_signature(int.from_bytes(raw[:half], "big"), int.from_bytes(raw[half:], "big"))

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._public

    @property
    def curve(self) -> ec.EllipticCurve:
        return self._public.curve

    @property
    def key_size(self) -> int:
        return self._public.key_size

    def exchange(self, algorithm: ec.ECDH, peer_public_key: ec.EllipticCurvePublicKey) -> bytes:
        raise InvalidInput("a PKCS#11 key only signs", where="--key")

    def private_numbers(self) -> ec.EllipticCurvePrivateNumbers:
        raise InvalidInput("a PKCS#11 private key cannot be exported", where="--key")

    def private_bytes(self, encoding: serialization.Encoding, format: serialization.PrivateFormat,
                      encryption_algorithm: serialization.KeySerializationEncryption) -> bytes:
        raise InvalidInput("a PKCS#11 private key cannot be exported", where="--key")

    def __copy__(self) -> _TokenEcKey:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _TokenEcKey:
        return self


class _TokenEd25519Key(ed25519.Ed25519PrivateKey):
    """An Ed25519 key in a token: pure EdDSA (CKM_EDDSA), as publisher signatures need."""

    def __init__(self, handle: Any, public: ed25519.Ed25519PublicKey) -> None:
        self._handle, self._public = handle, public

    def sign(self, data: Buffer) -> bytes:
        from pkcs11 import Mechanism

        return bytes(self._handle.sign(bytes(data), mechanism=Mechanism.EDDSA))

    def public_key(self) -> ed25519.Ed25519PublicKey:
        return self._public

    def private_bytes(self, encoding: serialization.Encoding, format: serialization.PrivateFormat,
                      encryption_algorithm: serialization.KeySerializationEncryption) -> bytes:
        raise InvalidInput("a PKCS#11 private key cannot be exported", where="--key")

    def private_bytes_raw(self) -> bytes:
        raise InvalidInput("a PKCS#11 private key cannot be exported", where="--key")

    def __copy__(self) -> _TokenEd25519Key:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _TokenEd25519Key:
        return self


def is_token_key(key: PrivateKey) -> bool:
    """True when `key` lives in a PKCS#11 token (its private half cannot be exported)."""
    return isinstance(key.key, _TokenEcKey | _TokenEd25519Key)


#: Sessions stay open for the life of the process (the key objects sign through them); one per
#: token, since a PKCS#11 login belongs to the whole application.
_SESSIONS: dict[tuple[str, bytes], Any] = {}


def load_pkcs11_key(ref: str) -> PrivateKey:
    """Open the token the URI names, log in, and find the private key and its public half."""
    uri = parse_pkcs11_uri(ref)
    if uri.module_path is None:
        raise UsageError("pkcs11 URI: no module-path= (or COSIGN_PKCS11_MODULE_PATH) names the PKCS#11 "
                         "library", where="--key")
    try:
        import pkcs11
        from pkcs11 import Attribute, KeyType, ObjectClass
        from pkcs11.exceptions import PKCS11Error
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise UsageError("pkcs11: keys need the python-pkcs11 package") from exc
    where = uri.describe()
    try:
        lib = pkcs11.lib(uri.module_path)
    except (RuntimeError, OSError, PKCS11Error) as exc:
        raise InvalidInput(f"cannot load the PKCS#11 module: {exc}", where=uri.module_path) from exc
    try:
        slots = [s for s in lib.get_slots(token_present=True)
                 if uri.slot_id is None or s.slot_id == uri.slot_id]
        tokens = [s.get_token() for s in slots]
        tokens = [t for t in tokens if (uri.token is None or t.label == uri.token)
                  and (uri.serial is None or t.serial.decode("ascii", "replace").strip() == uri.serial)]
        if len(tokens) != 1:
            raise NotFound(f"{len(tokens)} PKCS#11 tokens match (need exactly one)", where=where)
        slot_key = (uri.module_path, bytes(tokens[0].serial))
        session = _SESSIONS.get(slot_key)
        if session is None:
            session = _SESSIONS[slot_key] = tokens[0].open(user_pin=_pin(uri))
        private = list(session.get_objects({Attribute.CLASS: ObjectClass.PRIVATE_KEY,
                                            **({Attribute.LABEL: uri.object} if uri.object else {}),
                                            **({Attribute.ID: uri.id} if uri.id else {})}))
        public = list(session.get_objects({Attribute.CLASS: ObjectClass.PUBLIC_KEY,
                                           **({Attribute.LABEL: uri.object} if uri.object else {}),
                                           **({Attribute.ID: uri.id} if uri.id else {})}))
        if len(private) != 1 or len(public) != 1:
            raise NotFound(f"the token holds {len(private)} private and {len(public)} public keys matching "
                           "(need one of each)", where=where)
        params = bytes(public[0][Attribute.EC_PARAMS])
        point = _unwrap_octets(bytes(public[0][Attribute.EC_POINT]))
        key_type = public[0][Attribute.KEY_TYPE]
    except PKCS11Error as exc:
        raise AuthError(f"PKCS#11 token refused: {type(exc).__name__} {exc}".strip(), where=where) from exc
    if key_type == KeyType.EC and params == P256_OID_DER:
        return PrivateKey(_TokenEcKey(private[0], ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(),
                                                                                                point)))
    if key_type == KeyType.EC_EDWARDS and params in ED25519_PARAMS:
        return PrivateKey(_TokenEd25519Key(private[0], ed25519.Ed25519PublicKey.from_public_bytes(point)))
    raise InvalidInput("the PKCS#11 key is neither ECDSA P-256 nor Ed25519", where=where)
