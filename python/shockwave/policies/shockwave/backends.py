"""The Shockwave policy's two planners behind one small interface.

Every planning step the policy (:mod:`~shockwave.policies.shockwave.policy`) predicts each job's
remaining runtime and valuations, its projected finish-time ratio and its fairness boost, and
hands them to a :class:`PlanningBackend` as a :class:`PlanningStep`; the backend returns the
schedule of the next rounds (:class:`BackendPlan`):

* :class:`MarketBackend` (``backend = "market"``): budgets, the Fisher market solved in Rust
  (warm-started from the previous plan), the optional finish-time correction, pacing and rounding;
* :class:`MilpBackend` (``backend = "milp"``): the original's integer program on HiGHS
  (:mod:`~shockwave.policies.shockwave.milp`).

A backend holds only its parameters (set from the policy's); the state carried between steps
(the previous plan, the rounds owed) stays with the policy and arrives in the step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from shockwave import market
from shockwave.adaptation import Prediction
from shockwave.policies.shockwave.budgets import market_budgets
from shockwave.policies.shockwave.correction import correct_plan, required_rounds
from shockwave.policies.shockwave.fairness import FinishTimeTargets
from shockwave.policies.shockwave.milp import MilpInputs, plan_milp
from shockwave.policies.shockwave.plan import Plan, PlanningStats, RoundedSchedule
from shockwave.scheduling import ClusterState

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Names of the backends (the policy's ``backend`` parameter).
Backend = Literal["market", "milp"]

#: Largest progress fraction handed to the market (it needs ``c_i < 1``; a job whose counters
#: say it is done but that is still active, such as the original's stuck jobs, is held just below).
MAX_PROGRESS = 1.0 - 1e-9
#: Share of each warm-start row spread over the window (``market.warm_start_bids``); measured on
#: this policy's consecutive markets, where budgets move and jobs come and go every round
#: (``benches/README.md``, "Warm starts on the policy's markets").
WARM_START_SMOOTHING = 0.1
#: Statuses of a warm-started solve that a cold start may fix: the warm prices misled the
#: interior-point method. (A warm start that ran out of iterations is not retried.)
RETRY_COLD = (market.SolverStatus.STALLED, market.SolverStatus.NUMERICAL_TROUBLE)


@dataclass(frozen=True)
class PlanningStep:
    """What a backend plans from (one planning step of the policy).

    Attributes:
        state: the cluster (the active jobs, in the arrays' order).
        prediction: the adaptation model's prediction for the active jobs (same order).
        rho_hat: each job's projected finish-time ratio.
        boost: each job's fairness boost (the ``milp`` backend's objective weights).
        stalled: jobs the model sees nothing left to gain for, though still active (they are
            owed the first round).
        targets: the finish-time-fairness targets.
        owed: rounds each active job is owed by earlier plans (planned but not run).
        previous: the plan in force before this step (its solution warm-starts the market).
    """

    state: ClusterState
    prediction: Prediction
    rho_hat: FloatArray
    boost: FloatArray
    stalled: BoolArray
    targets: FinishTimeTargets
    owed: FloatArray
    previous: Plan | None


@dataclass(frozen=True)
class BackendPlan:
    """A backend's answer.

    Attributes:
        schedule: the ``(N, T)`` schedule, ``True`` where the job holds its gang in the round.
        budgets: each job's market budget (``milp``: its objective weight).
        solution: the market solution (``None`` for the ``milp`` backend).
        paced: the shares the schedule was rounded from (``None`` for the ``milp`` backend).
    """

    schedule: RoundedSchedule
    budgets: FloatArray
    solution: market.MarketSolution | None = None
    paced: FloatArray | None = None


class PlanningBackend(ABC):
    """A planner of the Shockwave policy: the schedule of the next rounds from a step."""

    name: ClassVar[str]

    @abstractmethod
    def plan(self, step: PlanningStep, stats: PlanningStats) -> BackendPlan:
        """Plan the window; record what the solver did in ``stats``."""


@dataclass(frozen=True)
class MarketBackend(PlanningBackend):
    """The Fisher market (see the policy's parameters of the same names)."""

    planning_rounds: int
    solver_tolerance: float
    solver_threads: int
    gang_budgets: bool
    remaining_exponent: float
    makespan_weight: float
    critical_window_rounds: float
    ftf_correction: bool
    rho_max: float
    name: ClassVar[str] = "market"

    def plan(self, step: PlanningStep, stats: PlanningStats) -> BackendPlan:
        """Budgets, the market solve, the optional correction, pacing and the rounding.

        The market decides how many rounds each job gets in the window; its rounds are nearly
        interchangeable, so *when* it places them is arbitrary, and a receding horizon that only
        dispatches the first round could postpone a job forever. The shares are therefore paced:
        each job's planned total is spread evenly over the rounds in which it still has work
        (``a_it > 0``; a job finishing in three rounds keeps its three), and rounded with the
        rounds each job is owed from earlier plans (planned minus run, carried from plan to
        plan). Stalled jobs are owed the first round.
        """
        state, prediction = step.state, step.prediction
        tau = state.round_seconds
        remaining = prediction.remaining_mean_seconds
        budgets = market_budgets(
            state.weight,
            state.gang_size,
            step.boost,
            remaining,
            gang_budgets=self.gang_budgets,
            remaining_exponent=self.remaining_exponent,
            makespan_weight=self.makespan_weight,
            window_seconds=self.critical_window_rounds * tau,
            round_seconds=tau,
        )

        def solve(warm: FloatArray | None) -> market.MarketSolution:
            return market.solve(
                prediction.valuations,
                state.gang_size,
                float(state.gpus),
                budgets=budgets,
                progress=np.minimum(prediction.offsets, MAX_PROGRESS),
                tol=self.solver_tolerance,
                warm_start=warm,
                threads=self.solver_threads,
            )

        warm = _warm_start(step, budgets)
        solution = solve(warm)
        if warm is not None and solution.status in RETRY_COLD:
            stats.cold_retries += 1
            record_miss(solution, stats)
            solution = solve(None)
        record_solve(solution, stats)
        shares = solution.shares
        if self.ftf_correction:
            deadlines = step.targets.deadlines(
                state.round_index, state.positions, state.arrival_time, self.rho_max
            )
            floors = required_rounds(state.time, deadlines, remaining, self.planning_rounds, tau)
            floors = np.where(step.rho_hat > self.rho_max, floors, 0.0)
            fixed = correct_plan(
                shares,
                prediction.valuations,
                state.gang_size,
                float(state.gpus),
                floors,
                step.boost,
            )
            stats.correction_failures += int(not fixed.solved)
            stats.correction_inexact += int(fixed.inexact)
            stats.corrections += int(fixed.solved and fixed.shares is not shares)
            shares = fixed.shares
        paced = paced_shares(shares, prediction.valuations)
        paced[step.stalled, 0] = 1.0
        return BackendPlan(
            rounded_lazily(paced, state.gang_size.copy(), float(state.gpus), step.owed),
            budgets,
            solution,
            paced,
        )


@dataclass(frozen=True)
class MilpBackend(PlanningBackend):
    """The original's integer program on HiGHS (see the policy's ``milp_*`` parameters)."""

    planning_rounds: int
    rho_max: float
    makespan_k: float
    time_limit: float
    name: ClassVar[str] = "milp"

    def plan(self, step: PlanningStep, stats: PlanningStats) -> BackendPlan:
        """The original's integer program (:mod:`~shockwave.policies.shockwave.milp`); the
        budgets are the fairness boosts (its objective weights)."""
        state = step.state
        done = np.minimum(state.epochs_done, state.num_epochs - 1)
        window_average = np.array(
            [
                float(np.mean(np.maximum(np.rint(job.epoch_seconds[: e + 1]), 1.0)))
                for job, e in zip(state.jobs, done.tolist(), strict=True)
            ]
        )
        plan = plan_milp(
            MilpInputs(
                gang_size=state.gang_size,
                epochs_done=state.epochs_done.astype(np.float64),
                total_epochs=state.num_epochs.astype(np.float64),
                epoch_seconds=window_average,
                remaining=step.prediction.remaining_mean_seconds,
                targets=step.targets.targets(state.round_index, state.positions),
                weights=step.boost,
                round_index=state.round_index,
                rounds=self.planning_rounds,
                round_seconds=state.round_seconds,
                gpus=state.gpus,
                rho_max=self.rho_max,
                makespan_k=self.makespan_k,
                time_limit=self.time_limit,
            )
        )
        stats.solves += 1
        stats.milp_paths[plan.path] = stats.milp_paths.get(plan.path, 0) + 1
        return BackendPlan(RoundedSchedule(plan.schedule), step.boost)


def _warm_start(step: PlanningStep, budgets: FloatArray) -> FloatArray | None:
    """The previous plan's bids, shifted, realigned, rescaled by the budgets and smoothed."""
    plan = step.previous
    if plan is None or plan.solution is None:
        return None
    state = step.state
    return market.warm_start_bids(
        plan.solution,
        previous_jobs=plan.job_ids,
        current_jobs=state.job_ids,
        elapsed_rounds=state.round_index - plan.round_index,
        previous_budgets=plan.budgets,
        budgets=budgets,
        smoothing=WARM_START_SMOOTHING,
    )


def record_miss(solution: market.MarketSolution, stats: PlanningStats) -> None:
    name = solution.status.value
    stats.not_converged_by_status[name] = stats.not_converged_by_status.get(name, 0) + 1


def record_solve(solution: market.MarketSolution, stats: PlanningStats) -> None:
    stats.solves += 1
    stats.solver_iterations += solution.iterations
    stats.worst_gap = max(stats.worst_gap, solution.gap)
    stats.not_converged += int(not solution.converged)
    if not solution.converged:
        record_miss(solution, stats)


def rounded_lazily(
    paced: FloatArray, gang_size: npt.NDArray[np.int64], gpus: float, owed: FloatArray
) -> RoundedSchedule:
    """The schedule of ``paced`` shares (:func:`shockwave.market.round_schedule` with the rounds
    each job is owed): its first round now, the whole window when a later round is read
    (:class:`~shockwave.policies.shockwave.plan.RoundedSchedule`). The arrays are kept, not
    copied: the caller hands over ones it no longer changes."""

    def whole() -> npt.NDArray[np.bool_]:
        return market.round_schedule(paced, gang_size, gpus, deficit=owed)

    head = market.round_schedule(paced[:, :1], gang_size, gpus, deficit=owed)
    return RoundedSchedule(head, (paced.shape[1], whole))


def paced_shares(shares: FloatArray, valuations: FloatArray) -> FloatArray:
    """Each job's planned rounds ``sum_t x_it`` spread evenly over its rounds with work.

    A job's rounds with work are the first ``H_i`` of the window, ``H_i`` the number of rounds
    with ``a_it > 0`` (valuations assume continuous service, so they are positive up to the
    expected finish); ``H_i >= 1``. The supply stays respected on average over the window.

    With GPU types (``(N, T, K)`` shares and valuations) each type's planned rounds are spread
    over the rounds in which the job has work on some type, and a job's rates over the types
    are scaled to sum to at most 1 (one gang per round).
    """
    horizon = np.maximum((valuations > 0).sum(axis=1), 1)  # (N,) or (N, K)
    if shares.ndim == 2:
        rate = np.minimum(shares.sum(axis=1) / horizon, 1.0)
        inside = np.arange(shares.shape[1])[None, :] < horizon[:, None]
        paced: FloatArray = np.where(inside, rate[:, None], 0.0)
        return paced
    typed_rate = shares.sum(axis=1) / horizon
    typed_rate /= np.maximum(typed_rate.sum(axis=1), 1.0)[:, None]
    inside = np.arange(shares.shape[1])[None, :, None] < horizon[:, None, :]
    typed: FloatArray = np.where(inside, typed_rate[:, None, :], 0.0)
    return typed


#: The backends, by name.
BACKENDS: dict[str, type[PlanningBackend]] = {"market": MarketBackend, "milp": MilpBackend}
