"""Reproducible markets of the Shockwave policy's shape, for tests and benchmarks.

* :class:`Market`: the arguments of :func:`shockwave.market.solve`, solvable and checkable;
* :func:`random_market`: the benchmark recipe, jobs whose rounds are nearly interchangeable (the
  hard case for proportional response), as the Shockwave policy produces them: progress in
  ``[0, 0.9)``, valuations growing slowly over the window (batch sizes grow), ceilings at 1,
  budgets ``3^k`` for ``k`` in 0..5, gangs of 1, 2, 4 or 8 GPUs, a third of the requested GPUs
  available;
* :func:`next_round_market`: the same market one round later, after the plan's first round ran;
* :class:`MarketRecipe`: a reproducible random market with every feature the solver handles
  (varying supply, jobs with nothing to gain, progress, budgets spanning ``3^12``, ceilings).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shockwave.market import MarketSolution, solve
from shockwave.testing.equilibrium import check_equilibrium

__all__ = ["Market", "MarketRecipe", "next_round_market", "random_market"]


@dataclass(frozen=True)
class Market:
    """Inputs of :func:`shockwave.market.solve` (see its documentation for units)."""

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


def next_round_market(market: Market, first_round_shares: NDArray[np.float64]) -> Market:
    """The market one round later: each job progressed by what it ran of round 0 (capped below
    its ceiling), and the window moved on (the new last round repeats the old last one)."""
    gained = market.valuations[:, 0] * first_round_shares
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
    """

    jobs: int
    rounds: int
    seed: int
    small_rounds: bool = False
    idle_jobs: bool = False
    progress: bool = False
    budget_spread: bool = False
    ceilings: bool = True

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
        return Market(valuations, gangs.astype(np.int64), supply, budgets, progress, ceilings)
