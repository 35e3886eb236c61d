"""The Shockwave policy's state as data, for checkpoints and journals.

What the policy keeps between rounds, each part saved as plain values and arrays
(:mod:`shockwave.persistence`) and read back checked:

* the adaptation model (:class:`~shockwave.adaptation.JobModels`): its own versioned binary
  encoding (``JobModels.to_bytes``: format ``SWJM``, every value little endian, floats by their
  bits), held as an array of bytes; decoding (in Rust) checks every length, index and value
  against what the model's constructors accept;
* the finish-time targets (:class:`~shockwave.policies.shockwave.fairness.FinishTimeTargets`):
  four arrays over the workload's positions and the clock;
* the last plan (:class:`~shockwave.policies.shockwave.plan.Plan`) with its market solution,
  rebuilt through the solution's checked constructor (its bids warm-start the next solve);
* the rounds owed, the jobs the model holds, and the planner's statistics.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from shockwave import market
from shockwave.adaptation import JobModels
from shockwave.errors import InputError
from shockwave.persistence import StateFormatError, StateReader
from shockwave.policies.shockwave.fairness import FAIRNESS_CLOCKS, FinishTimeTargets
from shockwave.policies.shockwave.plan import Plan, PlanningStats, RoundedSchedule

#: The target arrays of :class:`FinishTimeTargets`, with their dtypes.
_TARGET_ARRAYS: dict[str, type[np.generic]] = {
    "_last_round": np.int64,
    "_last_value": np.float64,
    "_weighted_sum": np.float64,
    "_weight": np.float64,
}
#: The scalar fields of a market solution (besides its arrays and status).
_SOLUTION_NUMBERS = ("objective", "dual_bound", "gap")
_SOLUTION_COUNTS = ("iterations", "pr_iterations", "ipm_iterations")


# --------------------------------------------------------------------------------- models
def models_data(models: JobModels | None) -> np.ndarray[Any, Any] | None:
    """The adaptation model's bytes (``None`` before the first round)."""
    if models is None:
        return None
    data: np.ndarray[Any, Any] = np.frombuffer(models.to_bytes(), dtype=np.uint8).copy()
    return data


def models_of(saved: StateReader, name: str) -> JobModels | None:
    """The model of :func:`models_data`, decoded and checked by the model itself."""
    if saved.raw(name) is None:
        return None
    data = saved.array(name, np.uint8, (None,))
    try:
        return JobModels.from_bytes(data.tobytes())
    except (InputError, ValueError) as exc:
        raise saved.error(name, f"not an adaptation model ({exc})") from None


# -------------------------------------------------------------------------------- targets
def targets_data(targets: FinishTimeTargets | None) -> dict[str, Any] | None:
    """The finish-time targets (``None`` before the first round)."""
    if targets is None:
        return None
    out: dict[str, Any] = {
        name.lstrip("_"): getattr(targets, name).copy() for name in _TARGET_ARRAYS
    }
    out["clock"] = targets.clock
    return out


def targets_of(saved: StateReader) -> FinishTimeTargets:
    """The targets of :func:`targets_data`, checked."""
    clock = saved.text("clock", FAIRNESS_CLOCKS)
    first = saved.array("last_round", np.int64, (None,))
    arrays = {"_last_round": first}
    for name, dtype in _TARGET_ARRAYS.items():
        if name != "_last_round":
            arrays[name] = saved.array(name.lstrip("_"), dtype, first.shape)
    saved.done()
    targets = FinishTimeTargets(first.shape[0], clock)  # type: ignore[arg-type]
    for name, value in arrays.items():
        setattr(targets, name, value)
    return targets


# ----------------------------------------------------------------------------------- plan
def plan_data(plan: Plan | None) -> dict[str, Any] | None:
    """The last plan with its market solution (``None`` before the first plan)."""
    if plan is None:
        return None
    return {
        "round_index": plan.round_index,
        "job_ids": plan.job_ids.copy(),
        "schedule": plan.schedule.copy(),
        "backfill_order": plan.backfill_order.copy(),
        "remaining_seconds": plan.remaining_seconds.copy(),
        "rho_hat": plan.rho_hat.copy(),
        "budgets": plan.budgets.copy(),
        "solution": solution_data(plan.solution),
        "paced": None if plan.paced is None else plan.paced.copy(),
    }


def plan_of(saved: StateReader) -> Plan:
    """The plan of :func:`plan_data`, checked (its solution through the solution's own
    checked constructor)."""
    round_index = saved.integer("round_index", 0)
    job_ids = saved.array("job_ids", np.int64, (None,))
    jobs = job_ids.shape[0]
    schedule = saved.array("schedule", np.bool_, (jobs, None))
    rounds = schedule.shape[1]
    plan = Plan(
        round_index,
        job_ids,
        RoundedSchedule(schedule),
        saved.array("backfill_order", np.int64, (jobs,)),
        saved.array("remaining_seconds", np.float64, (jobs,)),
        saved.array("rho_hat", np.float64, (jobs,)),
        saved.array("budgets", np.float64, (jobs,)),
        None if saved.raw("solution") is None else solution_of(saved.table("solution")),
        saved.optional_array("paced", np.float64, (jobs, rounds)),
    )
    saved.done()
    return plan


def solution_data(solution: market.MarketSolution | None) -> dict[str, Any] | None:
    """A market solution as data (``None`` for none)."""
    if solution is None:
        return None
    solved: dict[str, Any] = {
        "shares": np.array(solution.shares),
        "prices": np.array(solution.prices),
        "utilities": np.array(solution.utilities),
        "bids": np.array(solution.bids),
        "converged": bool(solution.converged),
        "status": solution.status.value,
    }
    solved.update({name: float(getattr(solution, name)) for name in _SOLUTION_NUMBERS})
    solved.update({name: int(getattr(solution, name)) for name in _SOLUTION_COUNTS})
    return solved


def solution_of(saved: StateReader) -> market.MarketSolution:
    """The solution of :func:`solution_data` (``(N, T)`` or, with GPU types, ``(N, T, K)``),
    through the solution's own checked constructor."""
    statuses = {status.value: status for status in _statuses()}
    typed = np.ndim(saved.raw("shares")) == 3
    grid = (None,) * (3 if typed else 2)
    values: dict[str, Any] = {
        "shares": saved.array("shares", np.float64, grid),
        "prices": saved.array("prices", np.float64, (None, None) if typed else (None,)),
        "utilities": saved.array("utilities", np.float64, (None,)),
        "bids": saved.array("bids", np.float64, grid),
        "converged": saved.boolean("converged"),
        "status": statuses[saved.text("status", tuple(statuses))],
    }
    values.update({name: saved.number(name) for name in _SOLUTION_NUMBERS})
    values.update({name: saved.integer(name, 0) for name in _SOLUTION_COUNTS})
    saved.done()
    try:
        return market.MarketSolution(**values)
    except (InputError, ValueError, TypeError) as exc:
        raise StateFormatError(f"{saved.where}: not a market solution ({exc})") from None


def _statuses() -> tuple[market.SolverStatus, ...]:
    return (
        market.SolverStatus.CONVERGED,
        market.SolverStatus.ITERATION_LIMIT,
        market.SolverStatus.STALLED,
        market.SolverStatus.NUMERICAL_TROUBLE,
    )


# ---------------------------------------------------------------------------------- stats
def stats_data(stats: PlanningStats) -> dict[str, Any]:
    """The planner's statistics."""
    out: dict[str, Any] = {f.name: getattr(stats, f.name) for f in fields(stats)}
    out["not_converged_by_status"] = dict(stats.not_converged_by_status)
    out["milp_paths"] = dict(stats.milp_paths)
    out["planning_seconds"] = np.array(stats.planning_seconds, dtype=np.float64)
    return out


def stats_of(saved: StateReader) -> PlanningStats:
    """The statistics of :func:`stats_data`, checked."""
    stats = PlanningStats(
        solves=saved.integer("solves", 0),
        solver_iterations=saved.integer("solver_iterations", 0),
        worst_gap=saved.number("worst_gap"),
        not_converged=saved.integer("not_converged", 0),
        not_converged_by_status=_tally(saved.table("not_converged_by_status")),
        cold_retries=saved.integer("cold_retries", 0),
        corrections=saved.integer("corrections", 0),
        correction_failures=saved.integer("correction_failures", 0),
        correction_inexact=saved.integer("correction_inexact", 0),
        milp_paths=_tally(saved.table("milp_paths")),
        planning_seconds=saved.array("planning_seconds", np.float64, (None,)).tolist(),
    )
    saved.done()
    return stats


def _tally(saved: StateReader) -> dict[str, int]:
    out = {key: saved.integer(key, 0) for key in list(saved.tree)}
    saved.done()
    return out
