"""Markets for the benchmarks: the ones the Shockwave policy solves on a trace, and an
independent solve of the same program by Clarabel (through cvxpy, when installed).

* :func:`canonical_workload`: the paper's 120-job trace on 32 GPUs with the TACC throughputs,
  regenerated from its seed (byte for byte the bundled ``traces/canonical_120jobs.trace``), so
  that an installed package needs no repository files;
* :func:`policy_markets`: every market the Shockwave policy solves while it schedules a workload,
  with the job identifiers, for warm-start measurements;
* :func:`oracle_solve`: the market's Eisenberg-Gale program in cvxpy, solved by Clarabel (an
  interior-point conic solver; ``pip install cvxpy clarabel``).
"""

from __future__ import annotations

import importlib
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shockwave.market import MarketSolution
from shockwave.scheduling import Mechanics
from shockwave.testing.markets import Market
from shockwave.traces import GeneratorParameters, load_workload, write_generated
from shockwave.workload import Workload

__all__ = [
    "ORACLE_ATTEMPTS",
    "OracleResult",
    "PolicyMarket",
    "canonical_workload",
    "oracle_solve",
    "policy_markets",
]

#: The generator's parameters of the canonical trace (jobs, GPUs, seed).
CANONICAL = GeneratorParameters(jobs=120, gpus=32, seed=25)


def canonical_workload() -> Workload:
    """The canonical 120-job trace with the TACC throughputs (regenerated from its seed)."""
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "canonical_120jobs.trace"
        write_generated(CANONICAL, trace)
        return load_workload(trace, "tacc")


@dataclass(frozen=True)
class PolicyMarket:
    """One market of :func:`policy_markets`: the jobs (identifiers, one per row), the market, and
    the rounds since the previous market (0 for the first)."""

    job_ids: NDArray[np.int64]
    market: Market
    elapsed_rounds: int


def policy_markets(
    workload: Workload | None = None, *, gpus: int = 32, mechanics: Mechanics = "gavel"
) -> list[PolicyMarket]:
    """The markets the Shockwave policy (default parameters) solves, in order, while the
    simulator runs ``workload`` (default: the canonical trace, :func:`canonical_workload`) on
    ``gpus`` GPUs
    with ``mechanics``.

    Recorded by spying on :func:`shockwave.market.solve` and
    :func:`shockwave.market.warm_start_bids` (the policy calls the latter with the job
    identifiers of the previous and the new market before every solve but the first); a cold
    retry of the same market is not recorded twice.
    """
    from unittest import mock

    from shockwave import market as market_module
    from shockwave.policies.shockwave import Shockwave
    from shockwave.scheduling import SimulationConfig
    from shockwave.sim import simulate

    if workload is None:
        workload = canonical_workload()
    solves: list[Any] = []
    links: list[tuple[Any, Any, int] | None] = []
    pending: list[tuple[Any, Any, int]] = []

    def spy_links(*args: Any, **kwargs: Any) -> NDArray[np.float64]:
        pending.append((kwargs["previous_jobs"], kwargs["current_jobs"], kwargs["elapsed_rounds"]))
        return real_links(*args, **kwargs)

    def spy_solve(*args: Any, **kwargs: Any) -> MarketSolution:
        retry = bool(solves) and kwargs.get("warm_start") is None and solves[-1][0][0] is args[0]
        if not retry:
            solves.append((args, kwargs))
            links.append(pending.pop() if pending else None)
        return real_solve(*args, **kwargs)

    real_solve, real_links = market_module.solve, market_module.warm_start_bids
    with (
        mock.patch.object(market_module, "solve", spy_solve),
        mock.patch.object(market_module, "warm_start_bids", spy_links),
    ):
        simulate(workload, Shockwave(), SimulationConfig(gpus=gpus, mechanics=mechanics))
    recorded = []
    for k, ((valuations, gangs, supply), kwargs) in enumerate(solves):
        link = links[k]
        if link is not None:
            ids, elapsed = np.asarray(link[1]), int(link[2])
        else:  # the first market: its jobs are the next market's previous jobs
            following = links[k + 1] if k + 1 < len(links) else None
            ids = np.asarray(following[0]) if following else np.arange(len(gangs))
            elapsed = 0
        jobs, rounds = np.shape(valuations)
        recorded.append(
            PolicyMarket(
                ids.astype(np.int64),
                Market(
                    np.array(valuations),
                    np.array(gangs, dtype=np.int64),
                    np.broadcast_to(np.asarray(supply, dtype=np.float64), (rounds,)).copy(),
                    np.array(kwargs["budgets"]),
                    np.array(kwargs["progress"]),
                    np.ones(jobs),
                ),
                elapsed,
            )
        )
    return recorded


@dataclass(frozen=True)
class OracleResult:
    """Clarabel's answer: objective ``sum w log u`` (jobs in the objective), utilities (jobs
    that can buy nothing keep their progress), Clarabel's own solve time (of the run that solved
    the program) and the total time through cvxpy (problem construction, compilation and the
    runs that stopped short included), in seconds; ``attempt``: how Clarabel was run when it
    solved the program (one of :data:`ORACLE_ATTEMPTS`, see :func:`oracle_solve`)."""

    objective: float
    utilities: NDArray[np.float64]
    solve_seconds: float
    total_seconds: float
    attempt: str = "default"


#: How :func:`oracle_solve` runs Clarabel, in order, until one run solves the program: its
#: default settings, its equilibration (the rescaling of rows and columns) off, the budgets
#: divided by their sum (the same optimum).
ORACLE_ATTEMPTS = ("default", "no equilibration", "normalised budgets")


def oracle_solve(market: Market, *, accuracy: float = 1e-13) -> OracleResult:
    """Solve the market's Eisenberg-Gale program with cvxpy + Clarabel.

    With GPU types (``(N, T, K)`` valuations, ``(T, K)`` supply) the program of
    :mod:`shockwave.market`: one variable per purchasable (job, round, type), at most one gang per
    job and round over the types, each type's supply per round. A market of one type is the same
    program with ``K = 1``.

    ``accuracy`` is Clarabel's gap tolerance (absolute and relative; feasibility at least
    1e-8, Clarabel's default); utilities are weakly determined by a
    flat objective, so the default asks for far more than the objective needs: a gap ``g`` (in
    objective units) pins job ``i``'s utility only to ``|log u_i - log u*_i| <~ sqrt(2 g / w_i)``,
    so the job with the smallest budget is the least accurate. At 1e-9 Clarabel's utilities were
    measured off by 5e-5 relative on a three-job market solved exactly here; at 1e-11, by 1.5e-4
    on a one-round market with budgets 1 to 243 whose equilibrium is known in closed form (at
    1e-13, by 1e-8, at no measurable extra cost).

    Where Clarabel stops short with its default settings (``InsufficientProgress``, seen on
    random 500-job 3-type markets at a relative gap of 4e-4), it is run again as
    :data:`ORACLE_ATTEMPTS` lists (each solved some of those markets the others did not) and
    the first run that solves the program counts: ``attempt`` names it, the solve time is its
    own. ``RuntimeError`` if none does.
    """
    cp: Any = importlib.import_module("cvxpy")  # test-only dependency, untyped for us

    typed = market.valuations.ndim == 3
    a = market.valuations if typed else market.valuations[:, :, None]
    g = market.supply if typed else market.supply[:, None]
    n = market.gang_sizes.astype(float)
    w, c, ubar = market.budgets, market.progress, market.ceilings
    _, rounds, types = a.shape
    fits = n[:, None, None] <= g[None, :, :]
    buyable = (a > 0) & fits & (w[:, None, None] > 0)
    active = buyable.any(axis=(1, 2))
    in_objective = (w > 0) & (active | (c > 0))
    start = time.perf_counter()
    rows = np.flatnonzero(active)
    utilities = c.copy()
    constant = float(np.sum(w[in_objective & ~active] * np.log(c[in_objective & ~active])))
    if rows.size == 0:
        return OracleResult(constant, utilities, 0.0, time.perf_counter() - start)
    from scipy.sparse import csr_matrix

    mask = buyable[rows]
    x = cp.Variable(int(mask.sum()))
    row_of, round_of, type_of = np.nonzero(mask)
    columns = np.arange(x.size)

    def sparse(values: NDArray[Any], at: NDArray[np.int64], height: int) -> Any:
        return csr_matrix((values, (at, columns)), shape=(height, x.size))

    gain_matrix = sparse(a[rows][mask], row_of, rows.size)
    supply_matrix = sparse(n[rows][row_of], round_of * types + type_of, rounds * types)
    # one gang per job and round: a row per (job, round) with a purchasable entry
    slots, slot_of = np.unique(row_of * rounds + round_of, return_inverse=True)
    slot_matrix = sparse(np.ones(x.size), slot_of, slots.size)
    u = c[rows] + gain_matrix @ x
    constraints = [x >= 0, slot_matrix @ x <= 1, supply_matrix @ x <= g.reshape(-1)]
    capped = np.isfinite(ubar[rows])
    if capped.any():
        constraints.append(u[np.flatnonzero(capped)] <= ubar[rows][capped])
    settings = {
        "tol_gap_abs": accuracy,
        "tol_gap_rel": accuracy,
        "tol_feas": min(accuracy, 1e-8),
        "max_iter": 500,
    }
    failure = ""
    for attempt in ORACLE_ATTEMPTS:
        scale = float(w[rows].sum()) if attempt == "normalised budgets" else 1.0
        problem = cp.Problem(cp.Maximize((w[rows] / scale) @ cp.log(u)), constraints)
        with warnings.catch_warnings():
            # "Solution may be inaccurate" at such tight tolerances: the callers compare anyway.
            warnings.simplefilter("ignore", UserWarning)
            try:
                problem.solve(
                    solver=cp.CLARABEL,
                    equilibrate_enable=attempt != "no equilibration",
                    **settings,
                )
            except cp.error.SolverError as error:
                failure = f"Clarabel failed after {time.perf_counter() - start:.1f} s: {error}"
                continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            break
        failure = f"Clarabel did not solve the oracle problem: {problem.status}"
    else:
        raise RuntimeError(failure)
    total = time.perf_counter() - start
    solved = np.clip(np.asarray(x.value), 0.0, 1.0)
    utilities[rows] = c[rows] + gain_matrix @ solved
    objective = float(w[rows] @ np.log(utilities[rows])) + constant
    solve_seconds = float(problem.solver_stats.solve_time)
    return OracleResult(objective, utilities, solve_seconds, total, attempt)
