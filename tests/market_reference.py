"""Reference material for the market tests and benchmarks (not part of the package).

* :func:`random_market`: the benchmark recipe, jobs whose rounds are nearly interchangeable (the
  hard case for proportional response), as the Shockwave policy produces them: progress in
  [0, 0.9), valuations growing slowly over the window (batch sizes grow), ceilings at 1, budgets
  3^k for k in 0..5, gangs of 1, 2, 4 or 8 GPUs, a third of the requested GPUs available.
* :func:`next_round_market`: the same market one round later, after the plan's first round ran.
* :func:`oracle_solve`: an independent solve of the same program, written in cvxpy and solved by
  Clarabel (an interior-point conic solver; open source, test-only dependency).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shockwave.market import MarketSolution, solve


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
        """:func:`shockwave.market.solve` on this market."""
        return solve(
            self.valuations,
            self.gang_sizes,
            self.supply,
            budgets=self.budgets,
            progress=self.progress,
            ceilings=self.ceilings,
            **settings,
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
    budgets = 3.0 ** rng.integers(0, 6, jobs)
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
class OracleResult:
    """Clarabel's answer: objective ``sum w log u`` (jobs in the objective), utilities (jobs
    that can buy nothing keep their progress), Clarabel's own solve time and the total time
    through cvxpy (problem construction and compilation included), in seconds."""

    objective: float
    utilities: NDArray[np.float64]
    solve_seconds: float
    total_seconds: float


def oracle_solve(market: Market, *, accuracy: float = 1e-11) -> OracleResult:
    """Solve the market's Eisenberg-Gale program with cvxpy + Clarabel.

    ``accuracy`` is Clarabel's gap tolerance (absolute and relative; feasibility at least
    1e-8, Clarabel's default); utilities are weakly determined by a
    flat objective, so the default asks for far more than the objective needs (at 1e-9 Clarabel's
    utilities were measured off by 5e-5 relative on a three-job market solved exactly here).
    """
    import cvxpy as cp

    a, n, g = market.valuations, market.gang_sizes.astype(float), market.supply
    w, c, ubar = market.budgets, market.progress, market.ceilings
    fits = n[:, None] <= g[None, :]
    buyable = (a > 0) & fits & (w[:, None] > 0)
    active = buyable.any(axis=1)
    in_objective = (w > 0) & (active | (c > 0))
    start = time.perf_counter()
    rows = np.flatnonzero(active)
    utilities = c.copy()
    constant = float(np.sum(w[in_objective & ~active] * np.log(c[in_objective & ~active])))
    if rows.size == 0:
        return OracleResult(constant, utilities, 0.0, time.perf_counter() - start)
    mask = buyable[rows]
    x = cp.Variable(int(mask.sum()))
    row_of, col_of = np.nonzero(mask)
    gain_matrix = np.zeros((rows.size, x.size))
    gain_matrix[row_of, np.arange(x.size)] = a[rows][mask]
    supply_matrix = np.zeros((market.rounds, x.size))
    supply_matrix[col_of, np.arange(x.size)] = n[rows][row_of]
    u = c[rows] + gain_matrix @ x
    constraints = [x >= 0, x <= 1, supply_matrix @ x <= g]
    capped = np.isfinite(ubar[rows])
    if capped.any():
        constraints.append(u[np.flatnonzero(capped)] <= ubar[rows][capped])
    problem = cp.Problem(cp.Maximize(w[rows] @ cp.log(u)), constraints)
    with warnings.catch_warnings():
        # "Solution may be inaccurate" at such tight tolerances: the callers compare anyway.
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(
                solver=cp.CLARABEL,
                tol_gap_abs=accuracy,
                tol_gap_rel=accuracy,
                tol_feas=min(accuracy, 1e-8),
                max_iter=500,
            )
        except cp.error.SolverError as error:
            elapsed = time.perf_counter() - start
            raise RuntimeError(f"Clarabel failed after {elapsed:.1f} s: {error}") from error
    total = time.perf_counter() - start
    if problem.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"Clarabel did not solve the oracle problem: {problem.status}")
    solved = np.clip(np.asarray(x.value), 0.0, 1.0)
    utilities[rows] = c[rows] + gain_matrix @ solved
    objective = float(w[rows] @ np.log(utilities[rows])) + constant
    return OracleResult(objective, utilities, float(problem.solver_stats.solve_time), total)
