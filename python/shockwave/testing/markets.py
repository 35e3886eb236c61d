"""Reproducible markets of the Shockwave policy's shape, for tests and benchmarks.

* :class:`Market`: the arguments of :func:`shockwave.market.solve`, solvable and checkable;
* :func:`random_market`: the benchmark recipe, jobs whose rounds are nearly interchangeable (the
  hard case for proportional response), as the Shockwave policy produces them: progress in
  ``[0, 0.9)``, valuations growing slowly over the window (batch sizes grow), ceilings at 1,
  budgets ``3^k`` for ``k`` in 0..5, gangs of 1, 2, 4 or 8 GPUs, a third of the requested GPUs
  available;
* :func:`random_typed_market`: the same jobs on ``K`` GPU types (each next type slower, by a
  factor that differs by job, as GPU generations do), the GPUs split over the types;
* :func:`next_round_market`: the same market one round later, after the plan's first round ran;
* :class:`MarketRecipe`: a reproducible random market with every feature the solver handles
  (varying supply, jobs with nothing to gain, progress, budgets spanning ``3^12``, ceilings, GPU
  types).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shockwave.market import MarketSolution, solve
from shockwave.testing.equilibrium import check_equilibrium

__all__ = [
    "Market",
    "MarketRecipe",
    "next_round_market",
    "random_market",
    "random_typed_market",
    "type_speeds",
]


@dataclass(frozen=True)
class Market:
    """Inputs of :func:`shockwave.market.solve` (see its documentation for units): ``(N, T)``
    valuations and ``(T,)`` supply, or ``(N, T, K)`` and ``(T, K)`` on ``K`` GPU types."""

    valuations: NDArray[np.float64]
    gang_sizes: NDArray[np.int64]
    supply: NDArray[np.float64]
    budgets: NDArray[np.float64]
    progress: NDArray[np.float64]
    ceilings: NDArray[np.float64]

    @property
    def jobs(self) -> int:
        return int(self.valuations.shape[0])

    @property
    def rounds(self) -> int:
        return int(self.valuations.shape[1])

    @property
    def types(self) -> int:
        """GPU types ``K`` (1 for a market given as ``(N, T)``)."""
        return int(self.valuations.shape[2]) if self.valuations.ndim == 3 else 1

    def solve(self, **settings: Any) -> MarketSolution:
        """:func:`shockwave.market.solve` on this market (``settings``: its keyword
        arguments)."""
        return solve(
            self.valuations,
            self.gang_sizes,
            self.supply,
            budgets=self.budgets,
            progress=self.progress,
            ceilings=self.ceilings,
            **settings,
        )

    def check(
        self,
        shares: NDArray[np.float64],
        *,
        tol: float = 1e-6,
        prices: NDArray[np.float64] | None = None,
    ) -> list[str]:
        """:func:`~shockwave.testing.check_equilibrium` of ``shares`` in this market."""
        return check_equilibrium(
            self.valuations,
            self.gang_sizes,
            self.supply,
            shares,
            budgets=self.budgets,
            progress=self.progress,
            ceilings=self.ceilings,
            tol=tol,
            prices=prices,
        )


def random_market(jobs: int, rounds: int, seed: int) -> Market:
    """The benchmark recipe (see the module documentation)."""
    rng = np.random.default_rng(seed)
    gangs = rng.choice([1, 2, 4, 8], size=jobs, p=[0.6, 0.2, 0.12, 0.08])
    progress = rng.uniform(0.0, 0.9, jobs)
    rounds_to_finish = np.exp(rng.uniform(np.log(3.0), np.log(300.0), jobs))
    growth = rng.uniform(0.0, 0.5, jobs)[:, None] * np.arange(rounds)[None, :] / max(rounds, 1)
    noise = rng.uniform(0.95, 1.05, (jobs, rounds))
    valuations = ((1.0 - progress) / rounds_to_finish)[:, None] * (1.0 + growth) * noise
    budgets = (3.0 ** rng.integers(0, 6, jobs)).astype(np.float64)
    supply = np.full(rounds, max(8.0, float(gangs.sum() // 3)))
    return Market(valuations, gangs.astype(np.int64), supply, budgets, progress, np.ones(jobs))


def type_speeds(jobs: int, types: int, seed: int) -> NDArray[np.float64]:
    """``(jobs, types)`` speeds relative to type 0 (the fastest): each next type slower by a
    factor drawn per job in ``[0.35, 0.85]`` (GPU generations speed models up differently)."""
    rng = np.random.default_rng([seed, types])
    steps = rng.uniform(0.35, 0.85, (jobs, max(types - 1, 0)))
    return np.concatenate([np.ones((jobs, 1)), np.cumprod(steps, axis=1)], axis=1)


def random_typed_market(jobs: int, rounds: int, types: int, seed: int) -> Market:
    """The jobs of ``random_market(jobs, rounds, seed)`` on ``types`` GPU types: valuations
    scaled by :func:`type_speeds`, the recipe's GPUs split evenly over the types (at least 8 of
    each per round, so every gang fits every type)."""
    one = random_market(jobs, rounds, seed)
    valuations = one.valuations[:, :, None] * type_speeds(jobs, types, seed)[:, None, :]
    each = max(8.0, float(np.floor(one.supply[0] / types)))
    return replace(one, valuations=valuations, supply=np.full((rounds, types), each))


def next_round_market(market: Market, first_round_shares: NDArray[np.float64]) -> Market:
    """The market one round later: each job progressed by what it ran of round 0 (capped below
    its ceiling), and the window moved on (the new last round repeats the old last one).
    ``first_round_shares``: ``(N,)``, or ``(N, K)`` with GPU types."""
    first = market.valuations[:, 0] * first_round_shares
    gained = first.sum(axis=1) if first.ndim == 2 else first
    progress = np.minimum(market.progress + gained, 0.99 * market.ceilings)
    valuations = np.concatenate([market.valuations[:, 1:], market.valuations[:, -1:]], axis=1)
    return replace(market, valuations=valuations, progress=progress)


@dataclass(frozen=True)
class MarketRecipe:
    """A reproducible random market with every feature the solver handles (what the property
    tests draw; hypothesis prints the recipe when a property fails).

    Attributes:
        jobs, rounds: the market's size ``(N, T)``.
        seed: seed of the draws.
        small_rounds: some rounds supply only 4 GPUs (too few for 8-GPU gangs).
        idle_jobs: some jobs value nothing (all their valuations are 0).
        progress: jobs start with progress in ``[0, 0.95)`` (otherwise 0).
        budget_spread: budgets ``3^k``, ``k`` in 0..12 (otherwise all 1).
        ceilings: ceilings at 1 (otherwise none: ``inf``).
        types: GPU types ``K``; above 1 the market is ``(N, T, K)``: valuations scaled by
            :func:`type_speeds`, the GPUs split unevenly over the types, and some types out of
            reach of some jobs (a gang larger than the type's supply, or no speed-up measured
            there: valuation 0).
    """

    jobs: int
    rounds: int
    seed: int
    small_rounds: bool = False
    idle_jobs: bool = False
    progress: bool = False
    budget_spread: bool = False
    ceilings: bool = True
    types: int = 1

    def build(self) -> Market:
        """The market: gangs of 1, 2, 4 or 8 GPUs, a third of the requested GPUs (at least 8)
        per round, valuations of 0.5 to 10 % of a job per round with 20 % noise."""
        jobs, rounds = self.jobs, self.rounds
        rng = np.random.default_rng(self.seed)
        gangs = rng.choice([1, 2, 4, 8], size=jobs, p=[0.55, 0.2, 0.15, 0.1])
        supply = np.full(rounds, float(max(8, gangs.sum() // 3)))
        if self.small_rounds and rounds > 1:
            supply[rng.random(rounds) < 0.3] = 4.0  # too small for 8-GPU gangs
            supply[0] = max(supply[0], 8.0)
        base = rng.uniform(0.005, 0.1, jobs)[:, None]
        valuations = base * rng.uniform(0.8, 1.2, (jobs, rounds))
        if self.idle_jobs:
            valuations[rng.random(jobs) < 0.15] = 0.0
        progress = rng.uniform(0.0, 0.95, jobs) if self.progress else np.zeros(jobs)
        budgets = (
            (3.0 ** rng.integers(0, 13, jobs)).astype(np.float64)
            if self.budget_spread
            else np.ones(jobs)
        )
        ceilings = np.ones(jobs) if self.ceilings else np.full(jobs, np.inf)
        market = Market(valuations, gangs.astype(np.int64), supply, budgets, progress, ceilings)
        return market if self.types == 1 else self._typed(market)

    def _typed(self, market: Market) -> Market:
        """``market`` on ``types`` GPU types (its own draws: the one-type market is unchanged)."""
        jobs, rounds, types = market.jobs, market.rounds, self.types
        rng = np.random.default_rng([self.seed, types])
        valuations = market.valuations[:, :, None] * type_speeds(jobs, types, self.seed)[:, None]
        valuations[rng.random((jobs, 1, types)).repeat(rounds, axis=1) < 0.1] = 0.0
        share = rng.dirichlet(np.ones(types))
        supply = np.maximum(1.0, np.round(market.supply[:, None] * share[None, :]))
        supply[:, int(np.argmax(share))] = np.maximum(supply[:, int(np.argmax(share))], 8.0)
        return replace(market, valuations=valuations, supply=supply)
