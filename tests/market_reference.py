"""Reference material for the market tests and benchmarks (not part of the package).

* :func:`random_market`: the benchmark recipe, jobs whose rounds are nearly interchangeable (the
  hard case for proportional response), as the Shockwave policy produces them: progress in
  [0, 0.9), valuations growing slowly over the window (batch sizes grow), ceilings at 1, budgets
  3^k for k in 0..5, gangs of 1, 2, 4 or 8 GPUs, a third of the requested GPUs available.
* :func:`next_round_market`: the same market one round later, after the plan's first round ran.
* :func:`policy_markets`: consecutive markets the way the Shockwave policy builds them each round
  (valuations from :class:`shockwave.adaptation.JobModels` on the canonical 120-job trace, 32
  GPUs), with the previous plan and the job identifiers, for warm-start measurements.
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

from shockwave.market import MarketSolution, round_schedule, solve


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
class PolicyRound:
    """One planning step of :func:`policy_markets`: the active jobs (ids), their market, and the
    plan solved cold from scratch."""

    job_ids: NDArray[np.int64]
    market: Market
    plan: MarketSolution


def policy_markets(
    rounds: int,
    *,
    first_round: int = 10,
    window: int = 20,
    gpus: float = 32.0,
    seed: int = 0,
) -> list[PolicyRound]:
    """Consecutive markets of a receding-horizon run on ``traces/canonical_120jobs.trace``.

    Every round (120 s) the arrived, unfinished jobs get valuations and progress from
    :meth:`shockwave.adaptation.JobModels.predict` (``markov``) over ``window`` rounds, ceilings at
    1 and budgets drawn once per job log-uniformly in [1, 1e6] and perturbed by a few percent
    each round (the policy's fairness boosts move them); the market is solved, rounded to whole
    gangs, and the first round runs (each scheduled job gains its expected progress). Returns
    the planning steps from ``first_round`` on (``rounds`` of them; fewer if the trace ends).
    """
    from pathlib import Path

    from shockwave.adaptation import ROUND_SECONDS, JobModels
    from shockwave.traces import load_workload

    trace = Path(__file__).resolve().parents[1] / "traces" / "canonical_120jobs.trace"
    jobs = {job.job_id: job for job in load_workload(trace, "tacc").jobs}
    rng = np.random.default_rng(seed)
    base_budget = {i: float(10.0 ** rng.uniform(0.0, 6.0)) for i in sorted(jobs)}
    models = JobModels("markov")
    done: dict[int, float] = {}
    steps: list[PolicyRound] = []
    for r in range(first_round + rounds):
        now = r * ROUND_SECONDS
        for i in sorted(jobs):
            if i not in done and jobs[i].arrival_time <= now:
                models.add_job(jobs[i])
                done[i] = 0.0
        active = np.array(sorted(i for i in done if i in models), dtype=np.int64)
        if active.size == 0:
            if len(done) == len(jobs):
                break
            continue
        prediction = models.predict(window, job_ids=active)
        gangs = np.array([jobs[i].gang_size for i in active], dtype=np.int64)
        budgets = np.array([base_budget[i] for i in active]) * np.exp(
            rng.normal(0.0, 0.05, active.size)
        )
        market = Market(
            prediction.valuations,
            gangs,
            np.full(window, gpus),
            budgets,
            np.minimum(prediction.offsets, 1.0 - 1e-9),
            np.ones(active.size),
        )
        plan = market.solve()
        if r >= first_round:
            steps.append(PolicyRound(active, market, plan))
        ran = round_schedule(plan.shares, gangs, gpus)[:, 0]
        finished, observed, current = [], [], []
        for k, i in enumerate(active):
            epochs = len(jobs[i].batch_sizes)
            if ran[k]:
                done[i] = min(float(epochs), done[i] + prediction.valuations[k, 0] * epochs)
            if done[i] >= epochs - 1e-9:
                finished.append(int(i))
            else:
                observed.append(int(i))
                current.append(int(jobs[i].batch_sizes[int(done[i])]))
        if observed:
            models.observe(observed, [done[i] for i in observed], current)
        for i in finished:
            models.remove(i)
    return steps


@dataclass(frozen=True)
class OracleResult:
    """Clarabel's answer: objective ``sum w log u`` (jobs in the objective), utilities (jobs
    that can buy nothing keep their progress), Clarabel's own solve time and the total time
    through cvxpy (problem construction and compilation included), in seconds."""

    objective: float
    utilities: NDArray[np.float64]
    solve_seconds: float
    total_seconds: float


def oracle_solve(market: Market, *, accuracy: float = 1e-13) -> OracleResult:
    """Solve the market's Eisenberg-Gale program with cvxpy + Clarabel.

    ``accuracy`` is Clarabel's gap tolerance (absolute and relative; feasibility at least
    1e-8, Clarabel's default); utilities are weakly determined by a
    flat objective, so the default asks for far more than the objective needs: a gap ``g`` (in
    objective units) pins job ``i``'s utility only to ``|log u_i - log u*_i| <~ sqrt(2 g / w_i)``,
    so the job with the smallest budget is the least accurate. At 1e-9 Clarabel's utilities were
    measured off by 5e-5 relative on a three-job market solved exactly here; at 1e-11, by 1.5e-4
    on a one-round market with budgets 1 to 243 whose equilibrium is known in closed form (at
    1e-13, by 1e-8, at no measurable extra cost).
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
