"""The fixed-seed slice of issue 29's property (tests/fuzz/property.py): for a few variants of
every document kind of every vector (one value retyped or nulled, the document re-signed with a
trusted key), every command that reads the kind runs in-process; none exits 70, and a change the
schema refuses is named by its path. The exhaustive run is `make fuzz` (scripts/fuzz.py)."""

from __future__ import annotations

import pytest

from tests.fuzz import property as prop
from tests.fuzz import resign

SLICE_SEED = 29
PER_KIND = 3


@pytest.fixture(scope="module")
def env() -> resign.Env:
    return resign.make_env()


def test_every_kind_has_seeds_and_readers_and_its_seed_is_read_cleanly(env: resign.Env) -> None:
    """The property is live: each kind's first seed reaches its readers signed and is not refused
    as malformed (exit 2/3), so a variant's exit says something about the variant."""
    for kind in resign.kinds():
        seeds = kind.seeds(env)
        assert seeds and kind.readers, kind.name
        results = resign.run_readers(env, kind, *seeds[0])
        assert results is not None, kind.name
        bad = [(r.name, ran.code, ran.out[:300]) for r, ran in results if ran.code in (2, 3, 70)]
        assert not bad, (kind.name, bad)


@pytest.mark.parametrize("kind", [k.name for k in resign.kinds()])
def test_fixed_seed_slice(env: resign.Env, kind: str) -> None:
    cases = prop.sample(env, SLICE_SEED, PER_KIND, kinds=(kind,))
    assert cases, kind
    problems: list[str] = []
    for c in cases:
        out = prop.check(env, c)
        problems += out.crashes + out.unnamed
    assert not problems, "\n".join(problems)


def test_the_property_sees_a_crash_and_an_unnamed_value(
    env: resign.Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker is not a no-op: a change no validating reader names, and a reader that exits
    70, are both findings."""
    kind = resign.BY_KIND["workflow"]
    label, seed = kind.seeds(env)[0]
    c = prop.Case("workflow", label, "/nodes/0/type", resign.replaced(seed, ("nodes", 0, "type"), []), True)
    assert not prop.check(env, c).unnamed and not prop.check(env, c).crashes
    silent = resign.Reader("digest", lambda e, p: ["workflow", "digest", str(p)], validates=True)
    mute = resign.Kind("workflow", kind.seeds, kind.materialize, (silent,))
    assert prop.check(env, c, kind=mute).unnamed
    monkeypatch.setattr(resign, "run", lambda argv: resign.Ran(tuple(argv), 70, '{"error": {}}'))
    assert prop.check(env, c).crashes
