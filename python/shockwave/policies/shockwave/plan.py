"""A plan of the Shockwave policy and the planner's statistics (shared by the policy and its
backends)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from shockwave import market

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass
class PlanningStats:
    """What the planner did over a simulation (for reports and tests).

    Attributes:
        solves: market solves.
        solver_iterations: their iterations in total.
        worst_gap: largest relative duality gap of a solve.
        not_converged: solves that stopped above the tolerance (their certified plan was used).
        not_converged_by_status: those solves by the solver's status
            (:class:`~shockwave.market.SolverStatus` value: ``"stalled"``, ...), retries
            included.
        cold_retries: warm-started solves that stalled or ran into numerical trouble and were
            solved again cold (a warm start that ran out of iterations is not retried: a cold
            start with the same budget would need more).
        corrections: plans changed by the finish-time correction.
        correction_failures: corrections without a usable point (the market plan was kept).
        correction_inexact: corrections used with a status other than "solved".
        milp_paths: ``milp`` backend: how many steps took each path (constrained, relaxed, ...).
        planning_seconds: wall time of each planning step, seconds.
    """

    solves: int = 0
    solver_iterations: int = 0
    worst_gap: float = 0.0
    not_converged: int = 0
    not_converged_by_status: dict[str, int] = field(default_factory=dict)
    cold_retries: int = 0
    corrections: int = 0
    correction_failures: int = 0
    correction_inexact: int = 0
    milp_paths: dict[str, int] = field(default_factory=dict)
    planning_seconds: list[float] = field(default_factory=list)


@dataclass
class Plan:
    """A solved plan: which job runs in which of the next rounds.

    Attributes:
        round_index: the round the plan starts at.
        job_ids: the planned jobs (rows).
        schedule: ``(N, T)`` booleans, ``True`` where the job holds its gang in the round.
        backfill_order: job ids, longest expected remaining runtime first.
        remaining_seconds: each job's expected remaining runtime, seconds.
        rho_hat: each job's projected finish-time ratio.
        budgets: each job's market budget (``milp``: its objective weight ``p_i``).
        solution: the market solution (``None`` for the ``milp`` backend or no jobs).
        paced: ``(N, T)`` the shares the schedule was rounded from (the market's shares paced
            evenly over each job's rounds with work; ``None`` for the ``milp`` backend).
    """

    round_index: int
    job_ids: IntArray
    schedule: npt.NDArray[np.bool_]
    backfill_order: IntArray
    remaining_seconds: FloatArray
    rho_hat: FloatArray
    budgets: FloatArray
    solution: market.MarketSolution | None
    paced: FloatArray | None = None
