"""A plan of the Shockwave policy and the planner's statistics (shared by the policy and its
backends)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from shockwave import market

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


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


class RoundedSchedule:
    """A plan's ``(N, T)`` whole-gang schedule, rounded only as far as it is read.

    The rounding (:func:`shockwave.market.round_schedule`) fills the rounds in order, and round
    ``t`` depends only on the shares, deficits and supply of rounds ``0..t``: the first rounds of
    the window rounded alone are the first columns of the whole window rounded. A policy that
    re-plans every round reads only the first column of each plan, so the planner rounds that
    and keeps a function that rounds the whole window, called the first time a later column (or
    the whole schedule: a checkpoint, an inspection) is read. What is read is always the whole
    rounding's bits.

    Args:
        head: ``(N, h)`` the first ``h >= 1`` rounds, rounded (the whole schedule when ``whole``
            is not given).
        whole: ``(T, f)``: the window's rounds and a function that rounds the whole window.
    """

    def __init__(
        self, head: BoolArray, whole: tuple[int, Callable[[], BoolArray]] | None = None
    ) -> None:
        self.rounds: int = head.shape[1] if whole is None else whole[0]
        self._head = head
        self._whole = None if whole is None else whole[1]

    def first(self, count: int) -> BoolArray:
        """The schedule of the window's first ``count`` rounds, ``(N, count)``."""
        if count > self._head.shape[1] and self._whole is not None:
            self._head, self._whole = self._whole(), None
        return self._head[:, :count]

    def whole(self) -> BoolArray:
        """The whole schedule, ``(N, T)``."""
        return self.first(self.rounds)


@dataclass
class Plan:
    """A solved plan: which job runs in which of the next rounds.

    Attributes:
        round_index: the round the plan starts at.
        job_ids: the planned jobs (rows).
        rounded: the schedule (:attr:`schedule`), rounded as far as it was read.
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
    rounded: RoundedSchedule
    backfill_order: IntArray
    remaining_seconds: FloatArray
    rho_hat: FloatArray
    budgets: FloatArray
    solution: market.MarketSolution | None
    paced: FloatArray | None = None

    @property
    def schedule(self) -> BoolArray:
        """``(N, T)`` booleans, ``True`` where the job holds its gang in the round."""
        return self.rounded.whole()
