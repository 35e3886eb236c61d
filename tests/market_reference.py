"""Reference material for the market tests and benchmarks (not part of the package).

Everything here lives in the installed package now, and is re-exported for the tests and
benches that import it from this module:

* :class:`Market`, :func:`random_market`, :func:`random_typed_market`, :func:`next_round_market`:
  the benchmark recipe (on one GPU type or several) and its next round (:mod:`shockwave.testing`);
* :func:`policy_markets`: every market the Shockwave policy solves while it schedules a trace,
  with the job identifiers, for warm-start measurements (:mod:`shockwave.bench.markets`);
* :func:`oracle_solve`: an independent solve of the same program (with GPU types too), written in
  cvxpy and solved by Clarabel (an interior-point conic solver; open source, test-only
  dependency) (:mod:`shockwave.bench.markets`).
"""

from __future__ import annotations

from shockwave.bench.markets import OracleResult, PolicyMarket, oracle_solve, policy_markets
from shockwave.testing import Market, next_round_market, random_market, random_typed_market

__all__ = [
    "Market",
    "OracleResult",
    "PolicyMarket",
    "next_round_market",
    "oracle_solve",
    "policy_markets",
    "random_market",
    "random_typed_market",
]
