"""Finish-time-fairness targets and the budgets they imply.

Finish-time fairness compares a job's completion time with the time it would take on an equal
share of the cluster. Shockwave keeps, per job, a *target finish time* and raises the budget of
every job projected to miss it.

Targets (the original's rule, NOTES §5.7): whenever the set of active jobs changes, every job's
equal-share finish time is estimated as

    F~_i = t_admit_i + (done_i + R_i) / s,     s = min(1, G / N),

with ``done_i`` the exclusive seconds of work the job has done, ``R_i`` its expected remaining
exclusive runtime and ``N`` the number of active jobs (``s`` ignores gang sizes, as the metric
does). The estimates are kept with the round they were made in; the target is their
*momentum average*: the time-weighted mean of the estimates (each weighted by how many rounds it
stood), mixed 0.9 / 0.1 with the latest one.

Projection: if the job got its equal share from now on, it would finish at ``now + R_i / s``. The
original compares that with the target as absolute times; ``clock="jct"`` (our default) compares
the corresponding completion times since arrival instead,

    rho^_i = (now + R_i / s - a_i) / (F_i - a_i),

which is what the finish-time-fairness metric measures (JCT over an equal-share JCT) and does not
flatten the ratio of jobs that arrive late in a long trace.

Budgets: a job projected above ``rho_max`` gets its budget multiplied by ``rho^_i ** lambda``
(``** 100`` if it needs less than one round to finish, as the original), the relaxation the
original applies to its objective, expressed as market budgets.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: ``"jct"``: compare completion times since arrival; ``"absolute"``: the original's absolute times.
FairnessClock = Literal["jct", "absolute"]
#: The clocks (the policy's ``fairness_clock`` option).
FAIRNESS_CLOCKS: tuple[FairnessClock, ...] = get_args(FairnessClock)

#: Weight of the time-weighted history in the momentum target (the original's 0.9).
MOMENTUM = 0.9

#: Exponent for jobs that need less than one round to finish (the original's ``** 100``).
FINISHING_EXPONENT = 100.0

#: Largest budget multiplier; keeps ``rho ** lambda`` finite for hopeless jobs (budgets only
#: matter relative to each other, and the market solver is scale invariant).
MAX_BOOST = 1e12


class FinishTimeTargets:
    """Per-job finish-time targets, updated when the set of active jobs changes.

    Jobs are addressed by their position in the workload (dense, ``0 .. jobs - 1``), so every
    update is a vectorised operation over the active jobs. The momentum average is kept
    incrementally: the time-weighted sum of the past estimates plus the latest estimate and the
    round it was made in.

    Args:
        jobs: number of jobs in the workload.
        clock: how projected and target finish times are compared (module docs).
    """

    def __init__(self, jobs: int, clock: FairnessClock = "jct") -> None:
        self.clock: FairnessClock = clock
        self._last_round = np.full(jobs, -1, dtype=np.int64)
        self._last_value = np.zeros(jobs, dtype=np.float64)
        self._weighted_sum = np.zeros(jobs, dtype=np.float64)
        self._weight = np.zeros(jobs, dtype=np.float64)

    def reestimate(
        self,
        round_index: int,
        positions: IntArray,
        admission_time: FloatArray,
        exclusive_estimate: FloatArray,
        gpus: int,
    ) -> None:
        """Record a new equal-share finish estimate for every active job.

        Args:
            round_index: the current round.
            positions: the active jobs' positions in the workload.
            admission_time: when each was admitted, seconds.
            exclusive_estimate: each job's expected total exclusive runtime (done + remaining),
                seconds.
            gpus: GPUs in the cluster.
        """
        share = min(1.0, gpus / max(positions.shape[0], 1))
        estimate = admission_time + exclusive_estimate / share
        last = self._last_round[positions]
        seen = last >= 0
        stood = np.where(seen, round_index - last, 0).astype(np.float64)
        self._weighted_sum[positions] += stood * self._last_value[positions]
        self._weight[positions] += stood
        self._last_round[positions] = round_index
        self._last_value[positions] = estimate

    def targets(self, round_index: int, positions: IntArray) -> FloatArray:
        """The momentum target finish time of each job, seconds (it must have an estimate)."""
        latest = self._last_value[positions]
        stood = (round_index - self._last_round[positions]).astype(np.float64)
        weight = self._weight[positions] + stood
        total = self._weighted_sum[positions] + stood * latest
        average = np.where(weight > 0, total / np.where(weight > 0, weight, 1.0), latest)
        return MOMENTUM * average + (1.0 - MOMENTUM) * latest

    def deadlines(
        self, round_index: int, positions: IntArray, arrival_time: FloatArray, rho_max: float
    ) -> FloatArray:
        """Latest completion times that keep each job within ``rho_max`` of its target, s."""
        target = self.targets(round_index, positions)
        if self.clock == "absolute":
            return rho_max * target
        return arrival_time + rho_max * (target - arrival_time)

    def projected_ratio(
        self,
        now: float,
        round_index: int,
        positions: IntArray,
        arrival_time: FloatArray,
        remaining: FloatArray,
        gpus: int,
    ) -> FloatArray:
        """``rho^``: projected over target finish (module docs), one per active job."""
        share = min(1.0, gpus / max(positions.shape[0], 1))
        projected = now + remaining / share
        target = self.targets(round_index, positions)
        ratio: FloatArray
        if self.clock == "absolute":
            ratio = projected / np.maximum(target, 1e-9)
        else:
            ratio = (projected - arrival_time) / np.maximum(target - arrival_time, 1e-9)
        return ratio


def fairness_boost(
    rho_hat: FloatArray,
    remaining: FloatArray,
    *,
    rho_max: float,
    exponent: float,
    round_seconds: float,
    finishing_exponent: float = FINISHING_EXPONENT,
) -> FloatArray:
    """Budget multipliers: ``rho^ ** lambda`` above ``rho_max`` (``** finishing_exponent``,
    the original's 100, within one round of finishing), 1 otherwise; capped at
    :data:`MAX_BOOST`."""
    power = np.where(remaining < round_seconds, finishing_exponent, exponent)
    late = rho_hat > rho_max
    with np.errstate(over="ignore"):
        boost = np.where(late, np.power(np.maximum(rho_hat, 1.0), power), 1.0)
    return np.minimum(boost, MAX_BOOST)
