"""The Shockwave policy: plan the next rounds as a market, dispatch the first one.

Every round (or every ``replan_period`` rounds, and whenever jobs arrive or complete):

1. the adaptation model (:class:`~shockwave.adaptation.JobModels`) is told each job's progress,
   batch size and measured throughput, and predicts its expected remaining runtime, its progress
   so far ``c_i`` and the valuations ``a_it`` of the next ``T`` rounds;
2. finish-time-fairness targets are refreshed when the set of jobs changed, and each job's
   projected ratio ``rho^_i`` gives its fairness boost
   (:mod:`~shockwave.policies.shockwave.fairness`);
3. the planning backend (:mod:`~shockwave.policies.shockwave.backends`, the ``backend``
   parameter) plans the window. The ``market`` backend: budgets combine a base share, the
   fairness boost and the makespan budget (:mod:`~shockwave.policies.shockwave.budgets`); the
   market of the next ``T`` rounds is solved (warm-started from the previous plan; a warm start
   that stalls is retried cold); each job's planned rounds are paced evenly over its rounds with
   work and rounded into whole-gang rounds together with the rounds earlier plans still owe it
   (at most ``max_owed_rounds``). The ``milp`` backend solves the original's integer program;
4. the policy keeps the plan, and what each job is owed, until the next planning step;
5. the first round of the plan is dispatched; GPUs it leaves free go to the other jobs, longest
   expected remaining runtime first (work conservation).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave import market
from shockwave.adaptation import ESTIMATORS, Estimator, JobModels
from shockwave.arguments import choice, is_integer
from shockwave.errors import InputError
from shockwave.id_lookup import positions_of
from shockwave.persistence import StateReader
from shockwave.policies.shockwave.backends import (
    BACKENDS,
    WARM_START_SMOOTHING,
    Backend,
    MarketBackend,
    MilpBackend,
    PlanningBackend,
    PlanningStep,
    paced_shares,
)
from shockwave.policies.shockwave.fairness import (
    FAIRNESS_CLOCKS,
    FairnessClock,
    FinishTimeTargets,
    fairness_boost,
)
from shockwave.policies.shockwave.plan import Plan, PlanningStats, RoundedSchedule
from shockwave.policies.shockwave.saved_state import (
    models_data,
    models_of,
    plan_data,
    plan_of,
    stats_data,
    stats_of,
    targets_data,
    targets_of,
)
from shockwave.scheduling import ClusterState, RoundPolicy

__all__ = ["WARM_START_SMOOTHING", "Plan", "PlanningStats", "Shockwave", "paced_shares"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


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
        solver_threads: threads of the market solve (``threads`` of
            :func:`shockwave.market.solve`): 0 (one per core) to
            :data:`~shockwave.market.MAX_SOLVER_THREADS`; the plans are the same bits for any
            number. Default 1: on a two-core machine shared with other work two threads measured
            up to 3x slower than one (1.3x to 1.5x faster on an idle one; ``benches/README.md``,
            issue 24).
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
    estimator: Estimator = "markov"
    replan_period: int = 1
    gang_budgets: bool = True
    fairness_clock: FairnessClock = "jct"
    ftf_correction: bool = False
    solver_tolerance: float = 1e-4
    solver_threads: int = 1
    backend: Backend = "market"
    milp_makespan_k: float = 1e-3
    milp_time_limit: float = 15.0
    max_owed_rounds: float = 2.0
    name = "shockwave"

    _backend: PlanningBackend | None = field(default=None, init=False, repr=False)
    _models: JobModels | None = field(default=None, init=False, repr=False)
    _targets: FinishTimeTargets | None = field(default=None, init=False, repr=False)
    _plan: Plan | None = field(default=None, init=False, repr=False)
    _owed: FloatArray = field(default_factory=lambda: np.zeros(0), init=False, repr=False)
    #: the jobs the adaptation model holds: job id -> position in the workload
    _known: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    #: the same, as a mask over the workload's positions (a vectorised membership test)
    _known_mask: npt.NDArray[np.bool_] = field(
        default_factory=lambda: np.zeros(0, dtype=bool), init=False, repr=False
    )
    #: per workload position, the bits of the epochs done and the batch size last told to the
    #: adaptation model (-1: nothing yet); not saved: after a restore every job is told again
    _observed: IntArray = field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64), init=False, repr=False
    )
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
                raise InputError(name, f"must be finite, got {value!r}")
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
            (
                "solver_threads",
                is_integer(self.solver_threads)
                and 0 <= int(self.solver_threads) <= market.MAX_SOLVER_THREADS,
                f"an integer from 0 (one per core) to {market.MAX_SOLVER_THREADS}",
            ),
            ("milp_makespan_k", self.milp_makespan_k >= 0, ">= 0"),
            ("milp_time_limit", self.milp_time_limit > 0, "> 0"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise InputError(name, f"must be {rule}, got {getattr(self, name)!r}")
        # The option strings, validated by the one helper against the one list of each.
        choice(self.estimator, "estimator", ESTIMATORS)
        choice(self.fairness_clock, "fairness_clock", FAIRNESS_CLOCKS)
        choice(self.backend, "backend", tuple(BACKENDS))
        self.reset()

    def _make_backend(self) -> PlanningBackend:
        """The planner of the ``backend`` parameter, with its share of the parameters."""
        if self.backend == "milp":
            return MilpBackend(
                planning_rounds=self.planning_rounds,
                rho_max=self.rho_max,
                makespan_k=self.milp_makespan_k,
                time_limit=self.milp_time_limit,
            )
        return MarketBackend(
            planning_rounds=self.planning_rounds,
            solver_tolerance=self.solver_tolerance,
            solver_threads=int(self.solver_threads),
            gang_budgets=self.gang_budgets,
            remaining_exponent=self.remaining_exponent,
            makespan_weight=self.makespan_weight,
            critical_window_rounds=self.critical_window_rounds,
            ftf_correction=self.ftf_correction,
            rho_max=self.rho_max,
        )

    @property
    def last_plan(self) -> Plan | None:
        """The plan the latest round was dispatched from (for inspection)."""
        return self._plan

    def reset(self) -> None:
        """Forget every job and plan (a new simulation)."""
        self._backend = self._make_backend()
        self._models = None
        self._targets = None
        self._plan = None
        self._owed = np.zeros(0)
        self._known = {}
        self._known_mask = np.zeros(0, dtype=bool)
        self._observed = np.zeros((0, 2), dtype=np.int64)
        self._set_changed = True
        self.stats = PlanningStats()

    # -------------------------------------------------------------------------- state
    def snapshot(self) -> dict[str, Any]:
        """The policy's state as data (:mod:`~shockwave.policies.shockwave.saved_state`)."""
        return {
            "models": models_data(self._models),
            "targets": targets_data(self._targets),
            "plan": plan_data(self._plan),
            "owed": self._owed.copy(),
            "known_ids": np.array(list(self._known), dtype=np.int64),
            "known_positions": np.array(list(self._known.values()), dtype=np.int64),
            "known_mask": self._known_mask.copy(),
            "set_changed": self._set_changed,
            "stats": stats_data(self.stats),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take back :meth:`snapshot`, every part checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the part that does not fit.
        """
        saved = StateReader(dict(state), f"policy {self.name!r}")
        models = models_of(saved, "models")
        targets = None if saved.raw("targets") is None else targets_of(saved.table("targets"))
        plan = None if saved.raw("plan") is None else plan_of(saved.table("plan"))
        owed = saved.array("owed", np.float64, (None,))
        mask = saved.array("known_mask", np.bool_, owed.shape)
        ids = saved.array("known_ids", np.int64, (None,))
        positions = saved.array("known_positions", np.int64, ids.shape)
        if np.any((positions < 0) | (positions >= mask.shape[0])):
            raise saved.error("known_positions", "a position is out of range")
        set_changed = saved.boolean("set_changed")
        stats = stats_of(saved.table("stats"))
        saved.done()
        self._models, self._targets, self._plan = models, targets, plan
        self._owed, self._known_mask = owed, mask
        self._observed = np.full((owed.shape[0], 2), -1, dtype=np.int64)
        self._known = dict(zip(ids.tolist(), positions.tolist(), strict=True))
        self._set_changed = set_changed
        self.stats = stats

    # ------------------------------------------------------------------------ per round
    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        """The jobs of the coming round (see the module docs)."""
        models = self._sync(state)
        plan = self._plan
        stale = (
            plan is None
            or self._set_changed
            or state.round_index - plan.round_index >= min(self.replan_period, plan.rounded.rounds)
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
            self._models = JobModels(self.estimator)
            self._targets = FinishTimeTargets(len(state.workload), self.fairness_clock)
            self._owed = np.zeros(len(state.workload))
            self._known_mask = np.zeros(len(state.workload), dtype=bool)
            self._observed = np.full((len(state.workload), 2), -1, dtype=np.int64)
        models = self._models
        known, mask = self._known, self._known_mask
        for job_id in state.completed.tolist():
            if job_id in known:
                models.remove(job_id)
                mask[known.pop(job_id)] = False
        # jobs that change batch size by the original's runtime rules may reach sizes their
        # profile does not list, at the throughput table's rates: the model must know them
        runtime_rules = state.batch_size_changes == "runtime-rules"
        throughputs = state.workload.throughputs if runtime_rules else None
        for index in np.flatnonzero(~mask[state.positions]).tolist():
            job = state.job(index)
            models.add_job(job, throughputs=throughputs)
            position = int(state.positions[index])
            known[int(job.job_id)] = position
            mask[position] = True
        if state.arrived.shape[0] or state.completed.shape[0]:
            self._set_changed = True
        if state.num_active == 0:
            return models
        done = np.minimum(state.epoch_progress, state.num_epochs.astype(np.float64))
        # An update that repeats what the model holds changes nothing (and keeps the job's
        # memoised prediction): tell it only the jobs whose progress or batch size changed.
        now = np.column_stack([done.view(np.int64), state.batch_size])
        told = (self._observed[state.positions] != now).any(axis=1)
        models.observe(state.job_ids[told], done[told], state.batch_size[told])
        self._observed[state.positions[told]] = now[told]
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
        elapsed = min(state.round_index - plan.round_index, plan.rounded.rounds)
        if elapsed <= 0:
            return
        rows = positions_of(state.job_ids, plan.job_ids)
        alive = rows >= 0
        balance = (plan.paced[:, :elapsed] - plan.rounded.first(elapsed)).sum(axis=1)
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
            schedule = RoundedSchedule(np.zeros((0, t_rounds), dtype=bool))
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
        backend = self._backend if self._backend is not None else self._make_backend()
        step = PlanningStep(
            state=state,
            prediction=prediction,
            rho_hat=rho_hat,
            boost=boost,
            stalled=stalled,
            targets=targets,
            owed=self._owed[state.positions],
            previous=self._plan,
        )
        planned = backend.plan(step, self.stats)
        self.stats.planning_seconds.append(time.perf_counter() - started)
        return Plan(
            state.round_index,
            state.job_ids.copy(),
            planned.schedule,
            state.job_ids[order],
            remaining,
            rho_hat,
            planned.budgets,
            planned.solution,
            planned.paced,
        )

    # ------------------------------------------------------------------------- dispatch
    def _dispatch(self, state: ClusterState, plan: Plan) -> IntArray:
        """The plan's column for this round, restricted to active jobs, then backfilled.

        Backfill takes the plan's order (longest expected remaining runtime first; jobs admitted
        since the plan was made go last, in admission order) and adds every job whose gang fits
        in the GPUs still free.
        """
        rows = positions_of(state.job_ids, plan.job_ids)  # state index of each plan row, -1 if gone
        elapsed = state.round_index - plan.round_index
        column = plan.rounded.first(elapsed + 1)[:, elapsed]
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
