"""The Shockwave policy: plan the next rounds as a market, dispatch the first one.

Every round (or every ``replan_period`` rounds, and whenever jobs arrive or complete):

1. the adaptation model (:class:`~shockwave.adaptation.JobModels`) is told each job's progress,
   batch size and measured throughput, and predicts its expected remaining runtime, its progress
   so far ``c_i`` and the valuations ``a_it`` of the next ``T`` rounds;
2. finish-time-fairness targets are refreshed when the set of jobs changed, and each job's
   projected ratio ``rho^_i`` gives its fairness boost
   (:mod:`~shockwave.policies.shockwave.fairness`);
3. budgets combine a base share, the fairness boost and the makespan budget
   (:mod:`~shockwave.policies.shockwave.budgets`);
4. the market of the next ``T`` rounds is solved (warm-started from the previous plan); each
   job's planned rounds are paced evenly over its rounds with work and rounded into whole-gang
   rounds together with the rounds earlier plans still owe it (at most ``max_owed_rounds``);
5. the first round of the plan is dispatched; GPUs it leaves free go to the other jobs, longest
   expected remaining runtime first (work conservation).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from shockwave import market
from shockwave.adaptation import ESTIMATORS, JobModels, Prediction
from shockwave.id_lookup import positions_of
from shockwave.policies.protocol import RoundPolicy
from shockwave.policies.shockwave.budgets import market_budgets
from shockwave.policies.shockwave.correction import correct_plan, required_rounds
from shockwave.policies.shockwave.fairness import (
    FinishTimeTargets,
    fairness_boost,
)
from shockwave.policies.shockwave.milp import MilpInputs, plan_milp

if TYPE_CHECKING:
    from shockwave.sim.state import ClusterState

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Largest progress fraction handed to the market (it needs ``c_i < 1``; a job whose counters
#: say it is done but that is still active, such as the original's stuck jobs, is held just below).
_MAX_PROGRESS = 1.0 - 1e-9
#: Share of each warm-start row spread over the window (``market.warm_start_bids``); measured on
#: this policy's consecutive markets, where budgets move and jobs come and go every round
#: (``benches/README.md``, "Warm starts on the policy's markets").
WARM_START_SMOOTHING = 0.1


@dataclass
class PlanningStats:
    """What the planner did over a simulation (for reports and tests).

    Attributes:
        solves: market solves.
        solver_iterations: their iterations in total.
        worst_gap: largest relative duality gap of a solve.
        not_converged: solves that stopped above the tolerance (their certified plan was used).
        cold_retries: warm-started solves that missed the tolerance and were solved again cold.
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


@dataclass
class Shockwave(RoundPolicy):
    """Shockwave: fair and efficient scheduling of adapting jobs with a planning market.

    Parameters (all can be set in the ``[shockwave]`` table of a ``--config`` file; the defaults
    come from the tuning run documented in ``docs/shockwave.md``):

    Attributes:
        planning_rounds: ``T``, rounds in the planning window.
        makespan_weight: share of the total budget given to the jobs on the critical path (the
            market form of the original's makespan regulariser ``k``); 0 disables it.
        critical_window_rounds: a job is on the critical path if its expected remaining runtime
            is within this many rounds of the longest one.
        remaining_exponent: exponent of the remaining-work tilt of the budgets (jobs close to
            their end bring more budget); 0 disables it.
        fairness_exponent: ``lambda``: a job projected above ``rho_max`` has its budget
            multiplied by ``rho^ ** lambda``; 0 disables the boost.
        rho_max: projected finish-time ratio above which a job's budget is raised.
        estimator: the adaptation model's estimator, ``"markov"``, ``"dirichlet"`` or
            ``"oracle"``.
        replan_period: re-plan at least every this many rounds (and whenever jobs arrive or
            complete); 1 re-plans every round.
        gang_budgets: base budgets proportional to gang size (time-fair) instead of equal
            (GPU-fair).
        fairness_clock: ``"jct"`` (compare completion times since arrival) or ``"absolute"``
            (the original's absolute finish times); see
            :mod:`~shockwave.policies.shockwave.fairness`.
        ftf_correction: correct the market plan onto hard finish-time floors with a QP (OSQP;
            :mod:`~shockwave.policies.shockwave.correction`).
        max_owed_rounds: most rounds a job can be owed from earlier plans (planned but not run,
            carried into the next plan's rounding); a job ahead of its plan owes at most one.
        solver_tolerance: relative duality gap at which the market solve stops.
        backend: ``"market"`` (the Fisher market, solved in Rust) or ``"milp"`` (the original's
            integer program, solved by HiGHS; :mod:`~shockwave.policies.shockwave.milp`). The
            ``milp`` backend ignores the budget parameters and uses ``milp_makespan_k``; for the
            original's cadence also set ``replan_period = 8`` and ``fairness_clock =
            "absolute"``.
        milp_makespan_k: ``k`` of the original's objective (per second of remaining runtime).
        milp_time_limit: seconds per HiGHS solve (the original gave Gurobi 15 s).
    """

    planning_rounds: int = 20
    makespan_weight: float = 0.5
    critical_window_rounds: float = 1.0
    remaining_exponent: float = 2.0
    fairness_exponent: float = 0.0
    rho_max: float = 1.0
    estimator: str = "markov"
    replan_period: int = 1
    gang_budgets: bool = True
    fairness_clock: str = "jct"
    ftf_correction: bool = False
    solver_tolerance: float = 1e-4
    backend: str = "market"
    milp_makespan_k: float = 1e-3
    milp_time_limit: float = 15.0
    max_owed_rounds: float = 2.0
    name = "shockwave"

    _models: JobModels | None = field(default=None, init=False, repr=False)
    _targets: FinishTimeTargets | None = field(default=None, init=False, repr=False)
    _plan: Plan | None = field(default=None, init=False, repr=False)
    _owed: FloatArray = field(default_factory=lambda: np.zeros(0), init=False, repr=False)
    _known: set[int] = field(default_factory=set, init=False, repr=False)
    _set_changed: bool = field(default=True, init=False, repr=False)
    stats: PlanningStats = field(default_factory=lambda: PlanningStats(), init=False, repr=False)

    def __post_init__(self) -> None:
        for name in (
            "makespan_weight", "critical_window_rounds", "remaining_exponent",
            "fairness_exponent", "rho_max", "max_owed_rounds", "solver_tolerance",
            "milp_makespan_k", "milp_time_limit",
        ):  # fmt: skip
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"shockwave: {name} must be finite, got {value!r}")
        limit = market.MAX_INTERIOR_POINT_ROUNDS
        checks = [
            (
                "planning_rounds",
                1 <= self.planning_rounds <= limit,
                f">= 1 and at most {limit} (the market's dense T x T price system)",
            ),
            ("makespan_weight", self.makespan_weight >= 0, ">= 0"),
            ("critical_window_rounds", self.critical_window_rounds >= 0, ">= 0"),
            ("remaining_exponent", self.remaining_exponent >= 0, ">= 0"),
            ("fairness_exponent", self.fairness_exponent >= 0, ">= 0"),
            ("rho_max", self.rho_max > 0, "> 0"),
            ("replan_period", self.replan_period >= 1, ">= 1"),
            ("max_owed_rounds", self.max_owed_rounds >= 0, ">= 0"),
            ("solver_tolerance", 0 < self.solver_tolerance < 1, "in (0, 1)"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"shockwave: {name} must be {rule}, got {getattr(self, name)!r}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(
                f"shockwave: estimator must be one of {ESTIMATORS}, got {self.estimator!r}"
            )
        if self.backend not in ("market", "milp"):
            raise ValueError(f"shockwave: backend must be 'market' or 'milp', got {self.backend!r}")
        if self.milp_makespan_k < 0 or self.milp_time_limit <= 0:
            raise ValueError("shockwave: milp_makespan_k must be >= 0 and milp_time_limit > 0")
        if self.fairness_clock not in ("jct", "absolute"):
            raise ValueError(
                "shockwave: fairness_clock must be 'jct' or 'absolute', "
                f"got {self.fairness_clock!r}"
            )
        self.reset()

    @property
    def last_plan(self) -> Plan | None:
        """The plan the latest round was dispatched from (for inspection)."""
        return self._plan

    def reset(self) -> None:
        """Forget every job and plan (a new simulation)."""
        self._models = None
        self._targets = None
        self._plan = None
        self._owed = np.zeros(0)
        self._known = set()
        self._set_changed = True
        self.stats = PlanningStats()

    # ------------------------------------------------------------------------ per round
    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        """The jobs of the coming round (see the module docs)."""
        models = self._sync(state)
        plan = self._plan
        stale = (
            plan is None
            or self._set_changed
            or state.round_index - plan.round_index
            >= min(self.replan_period, plan.schedule.shape[1])
        )
        if stale:
            plan = self._replan(state, models)
            self._plan = plan
            self._set_changed = False
        assert plan is not None
        return self._dispatch(state, plan)

    def _sync(self, state: ClusterState) -> JobModels:
        """Bring the adaptation model up to date with the cluster."""
        if self._models is None:
            self._models = JobModels(self.estimator)  # type: ignore[arg-type]
            self._targets = FinishTimeTargets(len(state.workload), self.fairness_clock)  # type: ignore[arg-type]
            self._owed = np.zeros(len(state.workload))
        models = self._models
        for job_id in state.completed.tolist():
            if job_id in self._known:
                models.remove(job_id)
                self._known.discard(job_id)
        throughputs = state.workload.throughputs if state.mechanics == "gavel" else None
        for index in np.flatnonzero(~np.isin(state.job_ids, list(self._known))).tolist():
            job = state.job(index)
            models.add_job(job, throughputs=throughputs)
            self._known.add(int(job.job_id))
        if state.arrived.shape[0] or state.completed.shape[0]:
            self._set_changed = True
        if state.num_active == 0:
            return models
        done = np.minimum(state.epoch_progress, state.num_epochs.astype(np.float64))
        models.observe(state.job_ids, done, state.batch_size)
        self._observe_throughput(state, models)
        return models

    @staticmethod
    def _observe_throughput(state: ClusterState, models: JobModels) -> None:
        """Pass the throughput measured in the round that just ended."""
        fresh = (state.last_sample_round == state.round_index) & (
            state.last_sample_steps_per_second > 0
        )
        if fresh.any():
            models.observe_throughput(
                state.job_ids[fresh],
                state.last_sample_round[fresh] - 1,
                state.last_sample_batch_size[fresh],
                steps_per_second=state.last_sample_steps_per_second[fresh],
            )

    # ------------------------------------------------------------------------- planning
    def _settle_owed(self, state: ClusterState) -> None:
        """Carry the rounds each job was owed by the previous plan (planned minus planned-run)."""
        plan = self._plan
        if plan is None or plan.paced is None or plan.job_ids.size == 0:
            return
        elapsed = min(state.round_index - plan.round_index, plan.schedule.shape[1])
        if elapsed <= 0:
            return
        rows = positions_of(state.job_ids, plan.job_ids)
        alive = rows >= 0
        balance = (plan.paced[:, :elapsed] - plan.schedule[:, :elapsed]).sum(axis=1)
        positions = state.positions[rows[alive]]
        self._owed[positions] = np.clip(
            self._owed[positions] + balance[alive], -1.0, self.max_owed_rounds
        )

    def _replan(self, state: ClusterState, models: JobModels) -> Plan:
        started = time.perf_counter()
        self._settle_owed(state)
        t_rounds = self.planning_rounds
        if state.num_active == 0:
            empty = np.zeros(0, dtype=np.int64)
            none = np.zeros(0, dtype=np.float64)
            schedule = np.zeros((0, t_rounds), dtype=bool)
            return Plan(state.round_index, empty, schedule, empty, none, none, none, None)
        tau = state.round_seconds
        prediction = models.predict(t_rounds, tau, job_ids=state.job_ids)
        remaining = prediction.remaining_mean_seconds
        targets = self._targets
        assert targets is not None
        if self._set_changed:
            targets.reestimate(
                state.round_index,
                state.positions,
                state.admission_time,
                state.service_seconds + remaining,
                state.gpus,
            )
        rho_hat = targets.projected_ratio(
            state.time,
            state.round_index,
            state.positions,
            state.arrival_time,
            remaining,
            state.gpus,
        )
        boost = fairness_boost(
            rho_hat,
            remaining,
            rho_max=self.rho_max,
            exponent=self.fairness_exponent,
            round_seconds=tau,
        )
        # Jobs the model sees nothing left to gain for, though still active (the original
        # simulator's stuck jobs): run them first, so that they leave instead of waiting forever.
        stalled = prediction.valuations.sum(axis=1) <= 0.0
        order = np.lexsort((state.job_ids, -remaining, ~stalled))
        solution: market.MarketSolution | None = None
        paced: FloatArray | None = None
        if self.backend == "milp":
            budgets = boost
            schedule = self._plan_milp(state, remaining, boost)
        else:
            budgets = market_budgets(
                state.weight,
                state.gang_size,
                boost,
                remaining,
                gang_budgets=self.gang_budgets,
                remaining_exponent=self.remaining_exponent,
                makespan_weight=self.makespan_weight,
                window_seconds=self.critical_window_rounds * tau,
                round_seconds=tau,
            )
            solution, paced, schedule = self._plan_market(
                state, prediction, rho_hat, boost, budgets, stalled
            )
        self.stats.planning_seconds.append(time.perf_counter() - started)
        return Plan(
            state.round_index,
            state.job_ids.copy(),
            schedule,
            state.job_ids[order],
            remaining,
            rho_hat,
            budgets,
            solution,
            paced,
        )

    def _plan_market(
        self,
        state: ClusterState,
        prediction: Prediction,
        rho_hat: FloatArray,
        boost: FloatArray,
        budgets: FloatArray,
        stalled: npt.NDArray[np.bool_],
    ) -> tuple[market.MarketSolution, FloatArray, npt.NDArray[np.bool_]]:
        """The market solve, the optional correction, pacing and the rounding.

        The market decides how many rounds each job gets in the window; its rounds are nearly
        interchangeable, so *when* it places them is arbitrary, and a receding horizon that only
        dispatches the first round could postpone a job forever. The shares are therefore paced:
        each job's planned total is spread evenly over the rounds in which it still has work
        (``a_it > 0``; a job finishing in three rounds keeps its three), and rounded with the
        rounds each job is owed from earlier plans (planned minus run, carried from plan to
        plan). Stalled jobs are owed the first round.
        """
        tau = state.round_seconds
        remaining = prediction.remaining_mean_seconds

        def solve(warm: FloatArray | None) -> market.MarketSolution:
            return market.solve(
                prediction.valuations,
                state.gang_size,
                float(state.gpus),
                budgets=budgets,
                progress=np.minimum(prediction.offsets, _MAX_PROGRESS),
                tol=self.solver_tolerance,
                warm_start=warm,
            )

        warm = self._warm_start(state, budgets)
        solution = solve(warm)
        if not solution.converged and warm is not None:
            # a warm start that does not reach the tolerance is retried cold
            self.stats.cold_retries += 1
            solution = solve(None)
        self._record_solve(solution)
        shares = solution.shares
        if self.ftf_correction:
            assert self._targets is not None
            deadlines = self._targets.deadlines(
                state.round_index, state.positions, state.arrival_time, self.rho_max
            )
            floors = required_rounds(state.time, deadlines, remaining, self.planning_rounds, tau)
            floors = np.where(rho_hat > self.rho_max, floors, 0.0)
            fixed = correct_plan(
                shares, prediction.valuations, state.gang_size, float(state.gpus), floors, boost
            )
            self.stats.correction_failures += int(not fixed.solved)
            self.stats.correction_inexact += int(fixed.inexact)
            self.stats.corrections += int(fixed.solved and fixed.shares is not shares)
            shares = fixed.shares
        paced = paced_shares(shares, prediction.valuations)
        owed = self._owed[state.positions]
        paced[stalled, 0] = 1.0
        schedule = market.round_schedule(paced, state.gang_size, float(state.gpus), deficit=owed)
        return solution, paced, schedule

    def _plan_milp(
        self, state: ClusterState, remaining: FloatArray, boost: FloatArray
    ) -> npt.NDArray[np.bool_]:
        """The original's integer program (:mod:`~shockwave.policies.shockwave.milp`)."""
        assert self._targets is not None
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
                remaining=remaining,
                targets=self._targets.targets(state.round_index, state.positions),
                weights=boost,
                round_index=state.round_index,
                rounds=self.planning_rounds,
                round_seconds=state.round_seconds,
                gpus=state.gpus,
                rho_max=self.rho_max,
                makespan_k=self.milp_makespan_k,
                time_limit=self.milp_time_limit,
            )
        )
        self.stats.solves += 1
        self.stats.milp_paths[plan.path] = self.stats.milp_paths.get(plan.path, 0) + 1
        return plan.schedule

    def _warm_start(self, state: ClusterState, budgets: FloatArray) -> FloatArray | None:
        plan = self._plan
        if plan is None or plan.solution is None:
            return None
        return market.warm_start_bids(
            plan.solution,
            previous_jobs=plan.job_ids,
            current_jobs=state.job_ids,
            elapsed_rounds=state.round_index - plan.round_index,
            previous_budgets=plan.budgets,
            budgets=budgets,
            smoothing=WARM_START_SMOOTHING,
        )

    def _record_solve(self, solution: market.MarketSolution) -> None:
        self.stats.solves += 1
        self.stats.solver_iterations += solution.iterations
        self.stats.worst_gap = max(self.stats.worst_gap, solution.gap)
        self.stats.not_converged += int(not solution.converged)

    # ------------------------------------------------------------------------- dispatch
    def _dispatch(self, state: ClusterState, plan: Plan) -> IntArray:
        """The plan's column for this round, restricted to active jobs, then backfilled.

        Backfill takes the plan's order (longest expected remaining runtime first; jobs admitted
        since the plan was made go last, in admission order) and adds every job whose gang fits
        in the GPUs still free.
        """
        rows = positions_of(state.job_ids, plan.job_ids)  # state index of each plan row, -1 if gone
        column = plan.schedule[:, state.round_index - plan.round_index]
        chosen = rows[column & (rows >= 0)]
        free = state.gpus - int(state.gang_size[chosen].sum())
        if free <= 0:
            return state.job_ids[chosen]
        backfill = positions_of(state.job_ids, plan.backfill_order)
        backfill = backfill[backfill >= 0]
        unplanned = np.ones(state.num_active, dtype=bool)
        unplanned[backfill] = False
        candidates = np.concatenate([backfill, np.flatnonzero(unplanned)])
        taken = np.zeros(state.num_active, dtype=bool)
        taken[chosen] = True
        candidates = candidates[~taken[candidates] & (state.gang_size[candidates] <= free)]
        extra: list[int] = []
        smallest = int(state.gang_size[candidates].min()) if candidates.size else free + 1
        for index, gang in zip(
            candidates.tolist(), state.gang_size[candidates].tolist(), strict=True
        ):
            if gang <= free:
                extra.append(index)
                free -= gang
                if free < smallest:
                    break
        picked: IntArray = state.job_ids[np.concatenate([chosen, np.array(extra, dtype=np.int64)])]
        return picked


def paced_shares(shares: FloatArray, valuations: FloatArray) -> FloatArray:
    """Each job's planned rounds ``sum_t x_it`` spread evenly over its rounds with work.

    A job's rounds with work are the first ``H_i`` of the window, ``H_i`` the number of rounds
    with ``a_it > 0`` (valuations assume continuous service, so they are positive up to the
    expected finish); ``H_i >= 1``. The supply stays respected on average over the window.
    """
    horizon = np.maximum((valuations > 0).sum(axis=1), 1)
    rate = np.minimum(shares.sum(axis=1) / horizon, 1.0)
    inside = np.arange(shares.shape[1])[None, :] < horizon[:, None]
    paced: FloatArray = np.where(inside, rate[:, None], 0.0)
    return paced
