"""in-toto Statement v1: build and strict parse. The payload bytes are the JCS of the Statement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attest.canonical import jcs, loads_strict
from attest.errors import MalformedError

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

    def canonical_bytes(self) -> bytes:
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
