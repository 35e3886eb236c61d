"""Tools for testing code that uses shockwave's market solver: an independent equilibrium check
and market generators.

* :func:`check_equilibrium`: the equilibrium invariants a plan violates (feasibility, supply,
  ceilings, optimality by an independent dual bound, market clearing), empty when all hold;
* :class:`Market`, :func:`random_market`, :func:`next_round_market`: reproducible markets of the
  Shockwave policy's shape (the benchmarks' instances);
* :mod:`shockwave.testing.strategies`: hypothesis strategies for markets (random, policy-shaped
  and degenerate) and workloads (needs ``hypothesis``: ``pip install 'shockwave[testing]'``).

See ``docs/testing.md`` for a worked example.
"""

from __future__ import annotations

from shockwave.testing.equilibrium import check_equilibrium
from shockwave.testing.markets import (
    Market,
    next_round_market,
    random_market,
    random_typed_market,
)

__all__ = [
    "Market",
    "check_equilibrium",
    "next_round_market",
    "random_market",
    "random_typed_market",
]
