"""in-toto Statement v1: build and strict parse. The payload bytes are the JCS of the Statement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.errors import MalformedError

STATEMENT_V1 = "https://in-toto.io/Statement/v1"
STATEMENT_V01 = "https://in-toto.io/Statement/v0.1"
KNOWN_STATEMENT_TYPES = (STATEMENT_V1, STATEMENT_V01)


@dataclass(frozen=True)
class Subject:
    name: str
    digest: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "digest": dict(self.digest)}


@dataclass(frozen=True)
class Statement:
    subjects: tuple[Subject, ...]
    predicate_type: str
    predicate: dict[str, Any]
    type_: str = STATEMENT_V1
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "_type": self.type_,
            "subject": [s.to_json() for s in self.subjects],
            "predicateType": self.predicate_type,
            "predicate": self.predicate,
        }

    def conformance_errors(self) -> list[str]:
        """Problems the in-toto reference library (`in-toto-attestation`) finds in a v1 Statement;
        other statement types (cosign's v0.1) are not its to judge and give []."""
        if self.type_ != STATEMENT_V1:
            return []
        from google.protobuf import json_format
        from in_toto_attestation.v1 import statement_pb2
        from in_toto_attestation.v1.statement import Statement as ReferenceStatement

        doc = self.to_json()
        # The v1 spec makes `predicate` optional (cosign signs `{}`); the library insists on a
        # non-empty one, so an empty predicate is checked with a stand-in member.
        if not doc["predicate"]:
            doc["predicate"] = {"_": None}
        try:
            pb = json_format.ParseDict(doc, statement_pb2.Statement())
            ReferenceStatement.copy_from_pb(pb).validate()
        except (ValueError, json_format.ParseError) as exc:
            return [str(exc)]
        return []

    def canonical_bytes(self) -> bytes:
        """The payload to sign: JCS of the Statement, which must conform to in-toto v1 when it
        claims to be v1 (checked with the in-toto reference library)."""
        problems = self.conformance_errors()
        if problems:
            raise MalformedError(f"in-toto statement does not conform: {'; '.join(problems)}")
        return jcs(self.to_json())

    @classmethod
    def from_json(cls, doc: Any, *, allowed_types: tuple[str, ...] = KNOWN_STATEMENT_TYPES) -> Statement:
        if not isinstance(doc, dict):
            raise MalformedError("in-toto statement is not a JSON object")
        t = doc.get("_type")
        if t not in allowed_types:
            raise MalformedError(f"in-toto statement _type is {t!r}, expected one of {list(allowed_types)}")
        subj = doc.get("subject")
        if not isinstance(subj, list) or not subj:
            raise MalformedError("in-toto statement has no subject")
        subjects: list[Subject] = []
        for i, s in enumerate(subj):
            if not isinstance(s, dict) or not isinstance(s.get("digest"), dict):
                raise MalformedError(f"in-toto subject[{i}] has no digest")
            dig = s["digest"]
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in dig.items()):
                raise MalformedError(f"in-toto subject[{i}].digest must map strings to strings")
            name = s.get("name", "")
            if not isinstance(name, str):
                raise MalformedError(f"in-toto subject[{i}].name is not a string")
            subjects.append(Subject(name, dict(dig)))
        pt = doc.get("predicateType")
        if not isinstance(pt, str) or not pt:
            raise MalformedError("in-toto statement has no predicateType")
        pred = doc.get("predicate", {})
        if not isinstance(pred, dict):
            raise MalformedError("in-toto predicate is not an object")
        extra = {k: v for k, v in doc.items() if k not in ("_type", "subject", "predicateType", "predicate")}
        return cls(tuple(subjects), pt, pred, t, extra)

    @classmethod
    def from_bytes(cls, payload: bytes, **kw: Any) -> Statement:
        return cls.from_json(loads_strict(payload), **kw)
