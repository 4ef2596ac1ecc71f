"""Order checks on whole columns: one pass each, no sorted copy and no set."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import islice
from typing import Any


def strictly_rising(values: Sequence[Any]) -> bool:
    """True when every value is greater than the one before it (so all distinct, and sorted)."""
    return all(map(operator.lt, values, islice(values, 1, None)))


def strictly_falling(values: Sequence[Any]) -> bool:
    """True when every value is smaller than the one before it."""
    return all(map(operator.gt, values, islice(values, 1, None)))
