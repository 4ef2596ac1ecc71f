"""Level requirements for other verifiers (`acx verify --require-level`, `workflow ready` minLevel):
parse a requirement, verify every credential attached to a cartridge manifest, and decide."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from acxoci.attest.statuslist import StatusEntry
from acxoci.errors import UsageError
from acxoci.level import status as st
from acxoci.level.binding import CartridgeBinding
from acxoci.level.constants import demo_measurement
from acxoci.level.credential import LevelVerdict, StatusCheck, verify_credential
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.oci import find_credentials
from acxoci.level.trueskill import TIERS
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.target import Target

_TIER_FLOOR = {name: floor_ for floor_, name in TIERS}


def parse_requirement(text: str) -> int:
    """`N` (a level) or a tier name (its floor: senior → 15) → the minimum acxLevel."""
    t = text.strip().lower()
    if t.isascii() and t.isdigit():
        return int(t)
    if t in _TIER_FLOOR:
        return _TIER_FLOOR[t]
    raise UsageError(f"level requirement {text!r} is neither a number nor a tier "
                     f"({', '.join(name for _, name in reversed(TIERS))})")


@dataclass(frozen=True)
class LevelCheck:
    """Every attached credential's verdict and the decision against a minimum level."""

    verdicts: tuple[tuple[str, LevelVerdict], ...]
    required: int | None
    demo: tuple[tuple[str, str], ...] = ()  # (label, why) of verified demo levels that do not count

    @property
    def best(self) -> LevelVerdict | None:
        """The highest verified level that counts, else the first verdict (for its reasons), else None."""
        set_aside = {label for label, _ in self.demo}
        good = [v for label, v in self.verdicts if v.ok and label not in set_aside]
        if good:
            return max(good, key=lambda v: v.level or 0)
        return self.verdicts[0][1] if self.verdicts else None

    @property
    def ok(self) -> bool:
        """A verified, unrevoked credential that counts exists, at or above the requirement."""
        best = self.best
        if best is None or not best.ok or self._only_demo():
            return False
        return self.required is None or (best.level or 0) >= self.required

    def _only_demo(self) -> bool:
        set_aside = {label for label, _ in self.demo}
        return bool(set_aside) and all(label in set_aside for label, v in self.verdicts if v.ok)

    def reason(self) -> str:
        """One line saying why the check passed or failed."""
        best = self.best
        if best is None:
            return "no level credential attached"
        if best.ok and self._only_demo():
            return (f"level measured by {self.demo[0][1]}, a demonstration: it does not count "
                    "(--allow-demo-level counts it)")
        if not best.ok:
            return f"level credential {best.state}: " + "; ".join(best.reasons[:3])
        if self.required is not None and (best.level or 0) < self.required:
            return f"verified level {best.level} is below the required {self.required}"
        return f"verified Lv{best.level} {best.tier} (issuer {best.issuer})"


def status_checker(source: str | None, *, issuers: IssuerRegistry, now: datetime,
                   max_age: timedelta = st.DEFAULT_MAX_AGE, allow_offline: bool = False,
                   cache_dir: Path | None = None) -> StatusCheck | None:
    """A revocation check. `source` overrides where the list is read from (a file, https URL or
    OCI reference); with None each credential's own `statusListCredential` is fetched, so
    revocation is always checked, never skipped."""

    def check(entry: StatusEntry, vc_issuer: str) -> st.StatusOutcome:
        where = source if source is not None else entry.list_credential
        return st.check_status(entry, source=where, issuers=issuers, vc_issuer=vc_issuer, now=now,
                               max_age=max_age, allow_offline=allow_offline, cache_dir=cache_dir)
    return check


def check_documents(docs: Sequence[tuple[str, dict[str, object]]], binding: CartridgeBinding, *,
                    issuers: IssuerRegistry, now: datetime, status_check: StatusCheck | None,
                    required: int | None = None, allow_demo: bool = False) -> LevelCheck:
    """Verify (label, credential) pairs against the cartridge's verified binding and decide. A level
    measured by the demo solver or benchmark does not count unless `allow_demo` (the same rule as
    a policy's level.allowDemo)."""
    return decide([(label, doc, verify_credential(
        doc, issuers=issuers, expected_rom_digest=binding.rom_digest, now=now, status_check=status_check,
        subject_publisher=binding.publisher_id, subject_keyid=binding.keyid)) for label, doc in docs],
        required, allow_demo=allow_demo)


def decide(checked: Sequence[tuple[str, Mapping[str, object], LevelVerdict]], required: int | None, *,
           allow_demo: bool = False) -> LevelCheck:
    """The decision over (label, credential, its verdict) triples: a verified demo measurement is
    set aside unless `allow_demo` (a policy's level.allowDemo)."""
    demo = () if allow_demo else tuple(
        (label, why) for label, doc, v in checked if v.ok and (why := demo_measurement(doc)) is not None)
    return LevelCheck(tuple((label, v) for label, _, v in checked), required, demo)


def check_attached(target: Target, subject: Descriptor, binding: CartridgeBinding, *,
                   issuers: IssuerRegistry, now: datetime, status_check: StatusCheck | None,
                   required: int | None = None, allow_demo: bool = False) -> LevelCheck:
    """Verify every level credential referring to `subject` (OCI referrers) and decide."""
    docs = [(ref.digest, doc) for ref, doc in find_credentials(target, subject)]
    return check_documents(docs, binding, issuers=issuers, now=now, status_check=status_check,
                           required=required, allow_demo=allow_demo)
