"""Typed errors of the exchange: each keeps its parent's stable kind and exit code."""

from __future__ import annotations

from acxoci.errors import Blocked


class GraphSupportPending(Blocked):
    """The folder holds Agent Graphs and no graph verifier is wired in yet (docs/exchange.md)."""
