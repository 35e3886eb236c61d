"""Budgets of the planning market: base share, fairness boost and the makespan budget.

The original Shockwave plans with an integer program whose objective is

    sum_i p_i log(progress_i) / (N T)  -  k max_i R_i,

with ``p_i = rho^_i ** lambda`` for jobs projected to miss their fair finish time and ``R_i`` a
job's expected remaining runtime after the window. In a Fisher market the same intentions are
budgets:

* **base**: every job brings ``weight_i`` (its priority weight), times its gang size when
  ``gang_budgets`` is on. Equal budgets are GPU-fair (a job on ``n`` GPUs pays ``n`` times the
  price per round, so it gets ``1/n`` of the rounds); budgets proportional to gang size are
  *time*-fair, which is what finish-time fairness measures (it compares a job with itself on
  ``1/N`` of the cluster's *time*, whatever its gang).
* **remaining-work tilt**: the base is multiplied by ``((median R + tau) / (R_i + tau)) **
  remaining_exponent`` (``R`` the expected remaining runtimes): with a positive exponent, jobs
  close to their end bring more budget, which shortens the average completion time (the way
  shortest-remaining-time-first does) without starving long jobs, whose finish-time targets are
  proportionally later and whose fairness boost takes over when they fall behind;
* **fairness boost**: the base is multiplied by ``rho^_i ** lambda`` for jobs projected above
  ``rho_max`` (:func:`~shockwave.policies.shockwave.fairness.fairness_boost`): ``p_i`` above.
* **makespan budget**: the term ``-k max_i R_i`` gives the jobs whose remaining runtime is the
  largest a marginal value ``k tau`` per round they are served, on top of their log utility. At
  a market equilibrium a buyer with utility ``w log u`` values a round at ``w a / u``; matching the
  two marginal values, the regulariser is equivalent to raising the budget of a job at the maximum
  by ``k tau u_i / a_i``. Several jobs share the maximum once the plan levels their remaining
  runtimes, so we give the budget to the jobs on the *critical path*: those whose expected
  remaining runtime is within ``critical_window_rounds`` rounds of the largest, in proportion to
  how far they are above that threshold. Its size is a share ``makespan_weight`` of the total
  budget of the other terms, so it does not depend on the scale of the budgets (the original's
  ``k`` is in units of its normalised objective, which has no meaning in a market whose budgets
  are only defined up to scale).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def critical_path_weights(remaining: FloatArray, window_seconds: float) -> FloatArray:
    """Share of the makespan budget of each job (sums to 1, or all 0 without jobs).

    Jobs whose expected remaining runtime is within ``window_seconds`` of the largest share the
    budget in proportion to their excess over ``max - window_seconds``; the longest job always
    has a positive share. With a zero window the jobs at the maximum share it equally.
    """
    if remaining.shape[0] == 0 or float(remaining.max()) <= 0.0:
        return np.zeros_like(remaining)  # no work left anywhere: nobody is critical
    longest = float(remaining.max())
    excess = np.maximum(remaining - (longest - window_seconds), 0.0)
    if float(excess.sum()) <= 0.0:  # a window too small to register: the longest jobs only
        excess = (remaining == longest).astype(np.float64)
    return excess / float(excess.sum())


def market_budgets(
    weight: FloatArray,
    gang_size: IntArray,
    boost: FloatArray,
    remaining: FloatArray,
    *,
    gang_budgets: bool,
    remaining_exponent: float,
    makespan_weight: float,
    window_seconds: float,
    round_seconds: float,
) -> FloatArray:
    """Budgets of the planning market (module docs), one per active job, ``> 0``.

    Args:
        weight: priority weights.
        gang_size: GPUs per job.
        boost: fairness multipliers (:func:`~shockwave.policies.shockwave.fairness.fairness_boost`).
        remaining: expected remaining runtimes, seconds.
        gang_budgets: base budgets proportional to gang size.
        remaining_exponent: exponent of the remaining-work tilt (0: none).
        makespan_weight: share of the total budget given to the critical path (0: none).
        window_seconds: how close to the longest remaining runtime a job must be to be critical.
        round_seconds: round length, seconds.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is redone just below
        budgets = _budgets(
            weight,
            gang_size,
            boost,
            remaining,
            gang_budgets,
            remaining_exponent,
            makespan_weight,
            window_seconds,
            round_seconds,
        )
        total = float(budgets.sum()) if budgets.shape[0] else 0.0
    if not math.isfinite(total):
        # Weights so large that the budgets overflow: only their ratios matter, so rescale.
        largest = float(weight.max())
        budgets = _budgets(
            weight / largest,
            gang_size,
            boost,
            remaining,
            gang_budgets,
            remaining_exponent,
            makespan_weight,
            window_seconds,
            round_seconds,
        )
    return budgets


def _budgets(
    weight: FloatArray,
    gang_size: IntArray,
    boost: FloatArray,
    remaining: FloatArray,
    gang_budgets: bool,
    remaining_exponent: float,
    makespan_weight: float,
    window_seconds: float,
    round_seconds: float,
) -> FloatArray:
    base = weight * (gang_size.astype(np.float64) if gang_budgets else 1.0) * boost
    if base.shape[0] == 0:
        return base
    if remaining_exponent:
        scale = float(np.median(remaining)) + round_seconds
        tilt = (scale / (remaining + round_seconds)) ** remaining_exponent
        # a job behind its fair-share schedule (boosted) is no longer held back for its length
        base = base * np.where(boost > 1.0, np.maximum(tilt, 1.0), tilt)
    if makespan_weight > 0.0:
        share = critical_path_weights(remaining, window_seconds)
        base = base + makespan_weight * float(base.sum()) * share
    return base
