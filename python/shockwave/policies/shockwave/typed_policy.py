"""The Shockwave policy on a cluster of several GPU types: a market over (round, type).

Whenever it is asked (every round under the ``exact`` mechanics and in real runs; at Gavel's
recomputes under the ``gavel`` mechanics) the policy plans the next ``T`` rounds as a dynamic
Fisher market whose goods are the GPUs of each type in each round (``docs/market.md``, "GPU
types"), and returns the time shares ``X[i, k]`` of the coming round:

1. **valuations** ``v[i, t, k]``: the expected fraction of job ``i``'s work gained in round
   ``t`` on type ``k`` (:mod:`~shockwave.policies.shockwave.typed_valuations`: one adaptation
   model per type for adapting jobs, exact for static ones), discounted by
   ``time_discount ** t`` (progress sooner is worth more). **A move costs its restart**: in
   the first round, a type other than the one the job ran on in the previous round (any type,
   for a job that did not run) is worth ``(tau - p) / tau`` of its value, ``p`` the cluster's
   restart penalty (0 under Gavel's mechanics, which have none);
2. **jobs that can finish this round** (expected remaining runtime on some type, plus the
   restart a move there costs, within one round) are given a whole gang of the type on which
   they finish soonest, while it has GPUs free, the furthest behind first (projected
   finish-time ratio), and leave the market, whose first round has that much less supply. In the
   market such a job cannot tell the types apart (on every type it gains its whole remaining
   work), so it would buy the cheapest, slowest type and finish late in the round or, with a
   fraction of a fast one, wait for rounds; the homogeneous policy's ``** 100`` budget for it
   instead leaves every other job's share meaningless (its budget is up to ``1e12`` times
   theirs, and the solver's tolerance is relative to the budgets' sum);
3. **budgets** as on one type (:func:`~shockwave.policies.shockwave.budgets.market_budgets`:
   gang-proportional base, the remaining-work tilt, the makespan share of the jobs on the
   critical path, the fairness boost), with each job's expected remaining runtime taken on its
   fastest usable type and its projected finish-time ratio measured against the heterogeneous
   isolated share (:func:`~shockwave.heterogeneous.fairness.isolated_shares`: an equal split of
   every type among the active jobs, Gavel's definition, the one the results report), and the
   fairness boost's ``rho^ ** lambda`` for every job (no ``** 100`` for the finishing ones: they
   are served by step 2);
4. the **market** is solved in Rust to the solver tolerance (warm-started from the previous
   plan, retried cold when the warm start stalls; a solve that does not converge is counted in
   :attr:`TypedShockwave.stats`); each job's planned rounds on each type are **paced** evenly
   over the rounds in which it has work on that type, its rates over the types scaled to sum to
   at most 1 (:func:`~shockwave.policies.shockwave.backends.paced_shares`);
5. the paced rates of the first round are the allocation ``X[i, k]``, which the typed round
   mechanism (:class:`~shockwave.heterogeneous.allocation.TypedRounds`, the one every typed
   policy's shares go through) turns into whole gangs of one type per round within each type's
   GPUs, with its deficits carrying what each job was owed and its work-conserving backfill.

On a homogeneous cluster the homogeneous policy (:class:`~shockwave.policies.shockwave.Shockwave`)
runs; this class serves typed clusters (``--cluster``), simulated or real.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave import market
from shockwave.adaptation import Estimator
from shockwave.errors import InputError
from shockwave.heterogeneous.fairness import isolated_shares
from shockwave.heterogeneous.protocol import TypedAllocationPolicy, TypedAllocationState
from shockwave.persistence import StateReader
from shockwave.policies.shockwave.backends import (
    MAX_PROGRESS,
    RETRY_COLD,
    WARM_START_SMOOTHING,
    paced_shares,
    record_miss,
    record_solve,
)
from shockwave.policies.shockwave.budgets import market_budgets
from shockwave.policies.shockwave.fairness import FINISHING_EXPONENT, fairness_boost
from shockwave.policies.shockwave.plan import PlanningStats
from shockwave.policies.shockwave.policy import Shockwave
from shockwave.policies.shockwave.saved_state import (
    solution_data,
    solution_of,
    stats_data,
    stats_of,
)
from shockwave.policies.shockwave.typed_valuations import TypedPrediction, TypedPredictor

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The homogeneous policy's parameters this one takes (same meaning, same checks).
TYPED_PARAMETERS = (
    "planning_rounds",
    "makespan_weight",
    "critical_window_rounds",
    "remaining_exponent",
    "fairness_exponent",
    "rho_max",
    "estimator",
    "solver_tolerance",
    "solver_threads",
    "gang_budgets",
)


@dataclass(frozen=True)
class TypedPlan:
    """A plan of the typed policy (for inspection, and its solution warm-starts the next).

    Attributes:
        round_index: the round the plan starts at.
        job_ids: the planned jobs (rows).
        budgets: each job's market budget.
        remaining_seconds: each job's expected remaining runtime on its fastest type, seconds.
        rho_hat: each job's projected finish-time ratio.
        paced: ``(N, T, K)`` the paced shares (the allocation is their first round).
        solution: the market solution (``None`` when no job had anything left to gain).
    """

    round_index: int
    job_ids: IntArray
    budgets: FloatArray
    remaining_seconds: FloatArray
    rho_hat: FloatArray
    paced: FloatArray
    solution: market.MarketSolution | None


@dataclass
class TypedShockwave(TypedAllocationPolicy):
    """Shockwave on a typed cluster (see the module notes).

    The parameters are the homogeneous policy's of the same names
    (:class:`~shockwave.policies.shockwave.Shockwave`: same checks; its ``milp`` backend,
    finish-time correction, owed rounds and absolute fairness clock have no typed form: the typed
    round mechanism carries what each job is owed). Five defaults differ, chosen on tuning
    traces only (``docs/market.md``, "The policy on GPU types"): ``planning_rounds = 1``,
    ``gang_budgets = False``, ``remaining_exponent = 0``, ``fairness_exponent = 2`` and
    ``progress_offsets = False``. Three more parameters:

    Attributes:
        progress_offsets: utilities as the homogeneous market has them, ``c_i + sum v x`` with
            ``c_i`` the fraction of the job done (``True``), or in fractions of the work each job
            has *left*, with no offset (``False``): then the market is a competitive equilibrium
            from the budgets, and with GPU-fair budgets and one round each job gets at least the
            expected progress of its equal share of every type (the finish-time-fairness
            metric's own split), where the offsets would let the jobs that progressed furthest
            be starved.
        time_discount: round ``t`` of the window is worth ``time_discount ** t`` of the progress
            it brings (in ``(0, 1]``; no effect with one round). With types the window's total
            progress alone would value a short job's one round on a fast type and its five on a
            slow one alike (both finish it inside the window); discounting makes progress sooner
            worth more, so short jobs buy fast rounds early.
        finish_fastest: give each job that can finish this round a whole gang of the type on
            which it finishes soonest, outside the market (module notes, step 2; ``True``), or
            leave it in the market with the homogeneous policy's ``** 100`` budget (``False``).
    """

    planning_rounds: int = 1
    makespan_weight: float = 0.5
    critical_window_rounds: float = 1.0
    remaining_exponent: float = 0.0
    fairness_exponent: float = 2.0
    rho_max: float = 1.0
    estimator: Estimator = "markov"
    solver_tolerance: float = 1e-4
    solver_threads: int = 1
    gang_budgets: bool = False
    progress_offsets: bool = False
    time_discount: float = 0.5
    finish_fastest: bool = True
    name = "shockwave"  # type: ignore[misc]  # a class attribute, not a dataclass field

    _predictor: TypedPredictor = field(init=False, repr=False)
    _plan: TypedPlan | None = field(default=None, init=False, repr=False)
    stats: PlanningStats = field(default_factory=PlanningStats, init=False, repr=False)

    def __post_init__(self) -> None:
        # the homogeneous policy's checks of the same parameters (InputError naming the field)
        Shockwave(**{name: getattr(self, name) for name in TYPED_PARAMETERS})
        if not 0.0 < self.time_discount <= 1.0:  # NaN too
            raise InputError("time_discount", f"must be in (0, 1], got {self.time_discount!r}")
        self.reset()

    def reset(self) -> None:
        """Forget every job and plan (a new run)."""
        self._predictor = TypedPredictor(self.estimator)
        self._plan = None
        self.stats = PlanningStats()

    @property
    def last_plan(self) -> TypedPlan | None:
        """The latest plan (for inspection)."""
        return self._plan

    # ------------------------------------------------------------------------ per round
    def allocate(self, state: TypedAllocationState) -> FloatArray:
        """``X[i, k]`` of a new plan (:func:`first_round_allocation`; module notes)."""
        if state.num_active == 0:
            return np.zeros((0, len(state.types)))
        started = time.perf_counter()
        plan = self._replan(state)
        self._plan = plan
        self.stats.planning_seconds.append(time.perf_counter() - started)
        return first_round_allocation(plan)

    def _replan(self, state: TypedAllocationState) -> TypedPlan:
        tau = state.round_seconds
        prediction = self._predictor.predict(state, self.planning_rounds)
        valuations = prediction.valuations
        keep = self._move_factor(state)
        valuations[:, 0, :] *= keep
        valuations *= (self.time_discount ** np.arange(valuations.shape[1]))[None, :, None]
        remaining = prediction.remaining_seconds.min(axis=1)
        remaining = np.where(np.isfinite(remaining), remaining, 0.0)
        rho_hat = self._projected_ratio(state, remaining)
        boost = fairness_boost(
            rho_hat,
            remaining,
            rho_max=self.rho_max,
            exponent=self.fairness_exponent,
            round_seconds=tau,
            finishing_exponent=self.fairness_exponent
            if self.finish_fastest
            else FINISHING_EXPONENT,
        )
        budgets = market_budgets(
            state.weight,
            state.gang,
            boost,
            remaining,
            gang_budgets=self.gang_budgets,
            remaining_exponent=self.remaining_exponent,
            makespan_weight=self.makespan_weight,
            window_seconds=self.critical_window_rounds * tau,
            round_seconds=tau,
        )
        supply = np.repeat(state.counts.astype(np.float64)[None, :], valuations.shape[1], axis=0)
        finishing = np.full(valuations.shape[0], -1, dtype=np.int64)
        if self.finish_fastest:
            seconds = prediction.remaining_seconds + (1.0 - keep) * tau  # with a move's restart
            finishing = finishing_types(seconds, tau, state.gang, rho_hat, supply[0])
        served = finishing >= 0
        stalled = (valuations.sum(axis=(1, 2)) <= 0.0) & ~served
        crowded_out = state.gang > supply.max()  # by the finishing jobs' gangs: nothing this time
        solution = self._solve(state, prediction, budgets, stalled | served | crowded_out, supply)
        shares = np.zeros_like(valuations) if solution is None else np.array(solution.shares)
        rows = np.flatnonzero(served)
        shares[rows] = 0.0
        shares[rows, 0, finishing[rows]] = 1.0
        paced = paced_shares(shares, valuations)
        # nothing left to gain by the model, yet active: the first round on its best type
        held = np.flatnonzero(stalled)
        paced[held, 0, :] = 0.0
        paced[held, 0, self._best_type(state)[held]] = 1.0
        return TypedPlan(
            state.round_index,
            state.job_ids.copy(),
            budgets,
            remaining,
            rho_hat,
            paced,
            solution,
        )

    def _move_factor(self, state: TypedAllocationState) -> FloatArray:
        """``(N, K)``: the share of the first round a job keeps on each type after the restart
        that a start or a move there costs."""
        tau = state.round_seconds
        keep = max(tau - state.restart_penalty_seconds, 0.0) / tau
        k = state.throughput.shape[1]
        same = state.previous_types[:, None] == np.arange(k)[None, :]
        factor: FloatArray = np.where(same, 1.0, keep)
        return factor

    def _solve(
        self,
        state: TypedAllocationState,
        prediction: TypedPrediction,
        budgets: FloatArray,
        outside: npt.NDArray[np.bool_],
        supply: FloatArray,
    ) -> market.MarketSolution | None:
        """The market of the window over ``supply`` (``(T, K)`` GPUs) and the jobs not
        ``outside`` it (``None``: no job left)."""
        if bool(outside.all()):
            return None
        valuations = np.where(outside[:, None, None], 0.0, prediction.valuations)
        if self.progress_offsets:
            progress = np.minimum(prediction.offsets, MAX_PROGRESS)
        else:  # fractions of the work left, from no offset (see the class notes)
            left = np.maximum(1.0 - prediction.offsets, 1e-12)
            valuations = valuations / left[:, None, None]
            progress = np.zeros_like(prediction.offsets)
        budgets = np.where(outside, 0.0, budgets)
        # a job outside buys nothing (no budget, no valuations); as a gang of one it also passes
        # the market's check that every gang fits somewhere, when finishing jobs took the room
        gangs = np.where(outside, 1, state.gang)

        def solve(warm: FloatArray | None) -> market.MarketSolution:
            return market.solve(
                valuations,
                gangs,
                supply,
                budgets=budgets,
                progress=progress,
                tol=self.solver_tolerance,
                warm_start=warm,
                threads=int(self.solver_threads),
            )

        warm = self._warm_start(state, budgets)
        solution = solve(warm)
        if warm is not None and solution.status in RETRY_COLD:
            self.stats.cold_retries += 1
            record_miss(solution, self.stats)
            solution = solve(None)
        record_solve(solution, self.stats)
        return solution

    def _warm_start(self, state: TypedAllocationState, budgets: FloatArray) -> FloatArray | None:
        """The previous plan's bids, shifted by the rounds since, realigned, rescaled."""
        plan = self._plan
        if plan is None or plan.solution is None:
            return None
        return market.warm_start_bids(
            plan.solution,
            previous_jobs=plan.job_ids,
            current_jobs=state.job_ids,
            elapsed_rounds=max(state.round_index - plan.round_index, 0),
            previous_budgets=plan.budgets,
            budgets=budgets,
            smoothing=WARM_START_SMOOTHING,
        )

    def _projected_ratio(self, state: TypedAllocationState, remaining: FloatArray) -> FloatArray:
        """Each job's projected finish-time ratio: its age plus its expected remaining runtime
        over its isolated runtime on an equal share of every type at today's contention (at
        today's speeds)."""
        shares = isolated_shares(state.counts, state.gang, float(state.num_active))
        isolated_rate = (state.throughput * shares).sum(axis=1)  # iterations/s
        with np.errstate(divide="ignore", invalid="ignore"):
            isolated = state.total_steps / isolated_rate
            ratio = (state.time_since_arrival + remaining) / isolated
        projected: FloatArray = np.where(np.isfinite(ratio), ratio, 0.0)
        return projected

    def _best_type(self, state: TypedAllocationState) -> IntArray:
        """Each job's most rewarding type this round (its speed there, less a move's cost)."""
        fits = state.gang[:, None] <= state.counts[None, :]
        gain = np.where(fits, state.throughput * self._move_factor(state), -1.0)
        best: IntArray = np.argmax(gain, axis=1).astype(np.int64)
        return best

    # -------------------------------------------------------------------------- state
    def snapshot(self) -> dict[str, Any]:
        """The policy's state as data (the adaptation models in their own encoding)."""
        plan = self._plan
        return {
            "predictor": self._predictor.snapshot(),
            "plan": None
            if plan is None
            else {
                "round_index": plan.round_index,
                "job_ids": plan.job_ids.copy(),
                "budgets": plan.budgets.copy(),
                "remaining_seconds": plan.remaining_seconds.copy(),
                "rho_hat": plan.rho_hat.copy(),
                "paced": plan.paced.copy(),
                "solution": solution_data(plan.solution),
            },
            "stats": stats_data(self.stats),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take back :meth:`snapshot`, every part checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the part that does not fit.
        """
        saved = StateReader(dict(state), f"policy {self.name!r}")
        predictor = TypedPredictor(self.estimator)
        predictor.restore(saved.table("predictor"))
        plan = None
        if saved.raw("plan") is not None:
            table = saved.table("plan")
            job_ids = table.array("job_ids", np.int64, (None,))
            jobs = job_ids.shape[0]
            plan = TypedPlan(
                table.integer("round_index", 0),
                job_ids,
                table.array("budgets", np.float64, (jobs,)),
                table.array("remaining_seconds", np.float64, (jobs,)),
                table.array("rho_hat", np.float64, (jobs,)),
                table.array("paced", np.float64, (jobs, None, None)),
                None if table.raw("solution") is None else solution_of(table.table("solution")),
            )
            table.done()
        stats = stats_of(saved.table("stats"))
        saved.done()
        self._predictor, self._plan, self.stats = predictor, plan, stats


def finishing_types(
    seconds: FloatArray,
    round_seconds: float,
    gang: IntArray,
    rho_hat: FloatArray,
    free: FloatArray,
) -> IntArray:
    """The type each job that can finish this round is given (``-1``: none), module notes step 2.

    Args:
        seconds: ``(N, K)`` expected seconds of the round each job needs to finish on each type
            (its remaining runtime there plus the restart a move costs; ``inf`` where it cannot
            run).
        round_seconds: the round's length, seconds.
        gang: ``(N,)`` GPUs per job.
        rho_hat: ``(N,)`` projected finish-time ratios: the largest is served first (ties: the
            lower row).
        free: ``(K,)`` GPUs of each type; what is given is taken from it (in place).
    """
    given = np.full(seconds.shape[0], -1, dtype=np.int64)
    can = seconds <= round_seconds
    candidates = np.flatnonzero(can.any(axis=1))  # the few that can finish: the loop is theirs
    for i in candidates[np.argsort(-rho_hat[candidates], kind="stable")]:
        fits = can[i] & (free >= gang[i])
        if fits.any():
            k = int(np.argmin(np.where(fits, seconds[i], np.inf)))
            given[i] = k
            free[k] -= gang[i]
    return given


def first_round_allocation(plan: TypedPlan) -> FloatArray:
    """``X[i, k]``: each job's paced rate of the first round (its planned rounds over its rounds
    with work, over all types), split over the types as the market's first round splits it (the
    round whose valuations carry the cost of a move), or as its whole window does when it buys
    nothing in the first round."""
    rate = plan.paced[:, 0, :].sum(axis=1)
    if plan.solution is None:
        split = plan.paced[:, 0, :]
    else:
        shares = np.asarray(plan.solution.shares)
        first, window = shares[:, 0, :], shares.sum(axis=1)
        split = np.where(first.sum(axis=1)[:, None] > 1e-9, first, window)
        split = np.where(split.sum(axis=1)[:, None] > 0.0, split, plan.paced[:, 0, :])
    total = split.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(total[:, None] > 0.0, split * (rate / total)[:, None], 0.0)
    allocation: FloatArray = np.clip(x, 0.0, 1.0)
    return allocation
