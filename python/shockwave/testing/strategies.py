"""Hypothesis strategies for markets and workloads (needs ``hypothesis``:
``pip install 'shockwave[testing]'``).

* :func:`markets`: random markets with every feature the solver handles (:class:`MarketRecipe`),
  on one GPU type or, with ``max_types``, several;
* :func:`policy_markets`: markets of the Shockwave policy's shape (the benchmark recipe,
  :func:`~shockwave.testing.random_market`, or with ``types`` its jobs on several GPU types,
  :func:`~shockwave.testing.random_typed_market`), optionally one round later;
* :func:`degenerate_markets`: the corner cases the solver's own tests pin (an empty market, a lone
  job, jobs with nothing to gain, zero budgets, jobs at their ceiling, gangs too large for some
  rounds, identical jobs, budgets spanning ``3^12``, a one-round Fisher market; with
  ``max_types``, also GPU types: a free type, a type too small for every gang, types nobody
  values, identical types);
* :func:`workloads`: small workloads of static jobs for the simulator.

Every strategy draws a :class:`~shockwave.testing.Market` (or a
:class:`~shockwave.workload.Workload`); solve it with ``market.solve()`` and judge the answer with
:func:`~shockwave.testing.check_equilibrium` (``market.check(shares)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "shockwave.testing.strategies needs hypothesis: pip install 'shockwave[testing]'"
    ) from exc

from shockwave.testing.markets import (
    Market,
    MarketRecipe,
    next_round_market,
    random_market,
    random_typed_market,
)
from shockwave.workload import Job, Workload

__all__ = [
    "DEGENERATE",
    "TYPED_PREFIX",
    "degenerate_markets",
    "markets",
    "policy_markets",
    "workloads",
]

FloatArray = NDArray[np.float64]


def markets(
    *, max_jobs: int = 25, max_rounds: int = 8, min_types: int = 1, max_types: int = 1
) -> st.SearchStrategy[Market]:
    """Random markets of 1 to ``max_jobs`` jobs, 1 to ``max_rounds`` rounds and ``min_types``
    to ``max_types`` GPU types (a market of more than one type is ``(N, T, K)``, even ``K = 1``
    is ``(N, T)``), each feature of :class:`MarketRecipe` drawn on or off."""
    if not 1 <= min_types <= max_types:
        raise ValueError(f"expected 1 <= min_types <= max_types, got {min_types}, {max_types}")
    return st.builds(
        MarketRecipe,
        jobs=st.integers(1, max_jobs),
        rounds=st.integers(1, max_rounds),
        seed=st.integers(0, 2**32 - 1),
        small_rounds=st.booleans(),
        idle_jobs=st.booleans(),
        progress=st.booleans(),
        budget_spread=st.booleans(),
        ceilings=st.booleans(),
        types=st.integers(min_types, max_types) if max_types > 1 else st.just(1),
    ).map(MarketRecipe.build)


def policy_markets(
    *, max_jobs: int = 60, rounds: int = 20, next_round: bool = True, types: int = 1
) -> st.SearchStrategy[Market]:
    """Markets of the Shockwave policy's shape (:func:`~shockwave.testing.random_market`):
    nearly interchangeable rounds, progress, ceilings at 1, budgets ``3^k``; with ``types`` above
    1 the same jobs on that many GPU types (:func:`~shockwave.testing.random_typed_market`). With
    ``next_round``, sometimes the same market one round later (after an even plan's first
    round), as a receding-horizon scheduler sees it."""

    def build(jobs: int, seed: int, later: bool) -> Market:
        market = (
            random_market(jobs, rounds, seed)
            if types == 1
            else random_typed_market(jobs, rounds, types, seed)
        )
        if later:
            first = np.full((jobs, types), 0.5 / types) if types > 1 else np.full(jobs, 0.5)
            market = next_round_market(market, first)
        return market

    return st.builds(
        build,
        jobs=st.integers(1, max_jobs),
        seed=st.integers(0, 2**32 - 1),
        later=st.booleans() if next_round else st.just(False),
    )


def _empty() -> Market:
    return Market(np.zeros((0, 5)), np.zeros(0, dtype=np.int64), np.full(5, 8.0), *_none(0))


def _lone_job() -> Market:
    return Market(np.array([[0.1, 0.2, 0.3]]), np.array([8]), np.array([8.0, 4.0, 8.0]), *_none(1))


def _ceiling_bound() -> Market:
    market = Market(np.full((1, 3), 0.3), np.array([1]), np.ones(3), *_none(1))
    return _with(market, progress=np.array([0.5]))


def _one_round() -> Market:
    valuations = np.array([[0.1], [0.2], [0.4], [0.8]])
    return Market(valuations, np.ones(4, dtype=np.int64), np.array([2.0]), *_none(4))


def _nothing_to_gain() -> Market:
    market = random_market(30, 8, 2)
    valuations, progress = market.valuations.copy(), market.progress.copy()
    valuations[:4] = 0.0
    progress[:2] = 0.0
    return _with(market, valuations=valuations, progress=progress)


def _zero_budget() -> Market:
    market = random_market(10, 4, 3)
    budgets = market.budgets.copy()
    budgets[0] = 0.0
    return _with(market, budgets=budgets)


def _almost_done() -> Market:
    market = random_market(40, 10, 4)
    progress = market.progress.copy()
    progress[:5] = 1.0 - 1e-6
    return _with(market, progress=progress)


def _gangs_too_large() -> Market:
    market = random_market(40, 10, 5)
    supply = market.supply.copy()
    supply[1::2] = 2.0
    return _with(market, supply=supply)


def _identical_jobs() -> Market:
    row = np.linspace(0.01, 0.02, 6)
    market = Market(np.tile(row, (9, 1)), np.full(9, 2), np.full(6, 6.0), *_none(9))
    return _with(market, progress=np.full(9, 0.3))


def _wide_budgets() -> Market:
    market = random_market(200, 20, 6)
    budgets = (3.0 ** np.random.default_rng(0).integers(0, 13, market.jobs)).astype(np.float64)
    return _with(market, budgets=budgets)


def _free_type() -> Market:
    """Three GPU types, the slowest with room for everyone (its price is 0)."""
    market = random_typed_market(30, 6, 3, 7)
    supply = market.supply.copy()
    supply[:, 2] = float(market.gang_sizes.sum())
    return _with(market, supply=supply)


def _type_too_small() -> Market:
    """A type of one GPU per round: only one-GPU gangs can use it."""
    market = random_typed_market(30, 6, 2, 8)
    supply = market.supply.copy()
    supply[:, 1] = 1.0
    return _with(market, supply=supply)


def _type_nobody_values() -> Market:
    """A type no job gains anything on (valuations 0): the one-type market in disguise."""
    market = random_typed_market(30, 6, 2, 9)
    valuations = market.valuations.copy()
    valuations[:, :, 1] = 0.0
    return _with(market, valuations=valuations)


def _identical_types() -> Market:
    """Two types every job values alike: jobs are indifferent between them."""
    market = random_market(30, 6, 10)
    valuations = np.repeat(market.valuations[:, :, None], 2, axis=2)
    supply = np.repeat(market.supply[:, None] / 2, 2, axis=1).round().clip(min=8.0)
    return _with(market, valuations=valuations, supply=supply)


#: The names of :data:`DEGENERATE`'s markets with GPU types begin with this.
TYPED_PREFIX = "GPU types: "

#: The corner cases of :func:`degenerate_markets`, by name.
DEGENERATE: dict[str, Callable[[], Market]] = {
    "empty": _empty,
    "lone job on rounds of two sizes": _lone_job,
    "lone job held to its ceiling": _ceiling_bound,
    "one round: a plain Fisher market": _one_round,
    "jobs with nothing to gain": _nothing_to_gain,
    "a zero budget": _zero_budget,
    "jobs almost done": _almost_done,
    "gangs too large for some rounds": _gangs_too_large,
    "identical jobs": _identical_jobs,
    "budgets spanning 3^12": _wide_budgets,
    "GPU types: a free type": _free_type,
    "GPU types: a type too small for most gangs": _type_too_small,
    "GPU types: a type nobody values": _type_nobody_values,
    "GPU types: identical types": _identical_types,
}


def degenerate_markets(*, max_types: int = 1) -> st.SearchStrategy[Market]:
    """The corner cases of :data:`DEGENERATE` (the markets the solver's own tests pin): those of
    one GPU type (``(N, T)`` valuations), and with ``max_types`` above 1 also those of 2 to
    ``max_types`` types (``(N, T, K)``)."""
    if max_types < 1:
        raise ValueError(f"expected max_types >= 1, got {max_types}")
    names = [
        name for name in sorted(DEGENERATE) if max_types > 1 or not name.startswith(TYPED_PREFIX)
    ]

    def build(name: str) -> Market:
        return DEGENERATE[name]()

    drawn = st.sampled_from(names).map(build)
    return drawn.filter(lambda m: m.types <= max_types) if max_types > 1 else drawn


def workloads(
    *, max_jobs: int = 8, max_gang: int = 4, max_epochs: int = 6
) -> st.SearchStrategy[Workload]:
    """Small workloads of static jobs (gangs of 1 to ``max_gang`` GPUs, 1 to ``max_epochs``
    epochs of 10 s to 10 min, arrivals within an hour), for simulating on at least
    ``max_gang`` GPUs."""
    job = st.tuples(
        st.floats(0.0, 3600.0),
        st.integers(1, max_gang),
        st.integers(1, max_epochs),
        st.floats(10.0, 600.0),
        st.sampled_from([16, 32, 64]),
    )

    def build(rows: list[tuple[float, int, int, float, int]]) -> Workload:
        return Workload(
            tuple(
                Job(
                    k,
                    arrival,
                    gang,
                    "LM",
                    "",
                    "static",
                    np.full(epochs, batch, dtype=np.int64),
                    np.full(epochs, seconds),
                )
                for k, (arrival, gang, epochs, seconds, batch) in enumerate(rows)
            )
        )

    return st.lists(job, min_size=1, max_size=max_jobs).map(build)


def _none(jobs: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Default budgets, progress and ceilings."""
    return np.ones(jobs), np.zeros(jobs), np.ones(jobs)


def _with(market: Market, **fields: FloatArray) -> Market:
    return replace(market, **fields)  # type: ignore[arg-type]
