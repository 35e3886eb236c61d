"""Gavel's heterogeneity-aware policies on effective throughput ``sum_k T[i, k] X[i, k]``, and
their agnostic forms (Gavel's ``policies/*.py``, commit c4fa400; the programs are Gavel's, the
code is ours, solved with :mod:`shockwave.heterogeneous.programs`).

* ``gavel`` (``max_min_fairness_perf``): ``max min_i sum_k T[i,k] X[i,k] gang_i / (w_i P_i)``,
  ``P_i = sum_k T[i,k] N_k / N`` (the throughput of an equal split of every type);
  ``gavel-agnostic`` (``max_min_fairness``): the same with every throughput taken as 1.
* ``mst`` (``max_sum_throughput_perf``): ``max sum_ik T[i,k] X[i,k]``.
* ``ossp`` (``min_total_duration_perf``): the smallest horizon ``H`` (binary search from
  [100, 10^6] s to within 5 %, widened tenfold until feasible) such that every job can run its
  remaining steps: ``sum_k T[i,k] X[i,k] >= remaining_i / H``; the central point of that set.
  ``ossp-agnostic`` (``min_total_duration``): every type taken as fast as the cluster's first
  type (Gavel's ``v100``).
* ``themis`` (``finish_time_fairness_perf``): ``min max_i rho_i``, ``rho_i = (age_i + remaining_i
  / sum_k T X) / (isolated_i + remaining_i / I_i)``: ``I_i`` the throughput on an equal share
  ``N_k / (n gang_i)`` of each type (rows scaled to sum to at most 1), ``isolated_i`` the
  isolated time the job's past progress would have taken at the ``I_i`` of each earlier call.
  Solved by bisection on ``rho`` (HiGHS feasibility) and the central point of the optimal set.
  ``themis-agnostic`` (``finish_time_fairness``): every type as fast as the first type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shockwave.heterogeneous.barrier import BarrierError
from shockwave.heterogeneous.programs import BasePrograms
from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState

#: Relative width to which Themis' optimal rho is bracketed.
_RHO_TOLERANCE = 1e-9
#: Relative relaxation of the optimum whose set's center is returned (ECOS's tolerances).
_OPTIMUM_RELAXATION = 1e-7


def _relaxed_center(programs: BasePrograms, required: Callable[[float], FloatArray]) -> FloatArray:
    """The center of the set at the optimum relaxed by ``_OPTIMUM_RELAXATION`` (an interior
    point solver's tolerance), relaxed tenfold more while HiGHS' feasibility tolerance left it
    without an interior."""
    relaxation = _OPTIMUM_RELAXATION
    while True:
        try:
            return programs.feasible_center(required(1.0 + relaxation))
        except BarrierError:
            if relaxation >= 1e-3:
                raise
            relaxation *= 10.0


def _reference_speeds(throughput: FloatArray) -> FloatArray:
    """Every type as fast as the first (Gavel's agnostic programs copy the ``v100`` column)."""
    return np.repeat(throughput[:, :1], throughput.shape[1], axis=1)


class TypedMaxMinFairness(TypedAllocationPolicy):
    """``gavel`` / ``gavel-agnostic`` (see the module notes)."""

    def __init__(self, *, aware: bool = True) -> None:
        self.aware = aware
        self.name = "gavel" if aware else "gavel-agnostic"
        self.gavel_name = "max_min_fairness_perf" if aware else "max_min_fairness"
        self.shuffles_type_order = not aware

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        n = state.num_active
        thr = state.throughput if self.aware else np.ones_like(state.throughput)
        counts = state.counts.astype(np.float64)
        split = (counts / n) / np.sum(counts / n)
        proportional = np.sum(thr * split[None, :], axis=1)
        weights = thr * (1.0 / state.weight / proportional)[:, None] * state.gang[:, None]
        return BasePrograms(thr, state.gang, state.counts).max_min(weights)


class TypedMaxSumThroughput(TypedAllocationPolicy):
    """``mst`` (Gavel's ``max_sum_throughput_perf``)."""

    name = "mst"
    gavel_name = "max_sum_throughput_perf"

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        return BasePrograms(state.throughput, state.gang, state.counts).max_sum(state.throughput)


class TypedMinTotalDuration(TypedAllocationPolicy):
    """``ossp`` / ``ossp-agnostic`` (see the module notes)."""

    def __init__(self, *, aware: bool = True) -> None:
        self.aware = aware
        self.name = "ossp" if aware else "ossp-agnostic"
        self.gavel_name = "min_total_duration_perf" if aware else "min_total_duration"
        self.shuffles_type_order = not aware

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        thr = state.throughput if self.aware else _reference_speeds(state.throughput)
        remaining = state.remaining_steps.astype(np.float64)
        programs = BasePrograms(thr, state.gang, state.counts)

        def ok(horizon: float) -> bool:
            return programs.feasible(remaining / horizon)

        high, low, last_high = 1e6, 100.0, 1e6
        found: float | None = None
        while found is None:
            while 1.05 * low < high:
                horizon = (low + high) / 2.0
                if ok(horizon):
                    found, high = horizon, horizon
                else:
                    low = horizon
            high, low, last_high = last_high * 10.0, last_high, last_high * 10.0
            if last_high > 1e30:
                raise RuntimeError(f"{self.name}: no horizon makes the jobs feasible")
        return _relaxed_center(programs, lambda factor: remaining / (found * factor))


class TypedFinishTimeFairness(TypedAllocationPolicy):
    """``themis`` / ``themis-agnostic`` (see the module notes)."""

    def __init__(self, *, aware: bool = True) -> None:
        self.aware = aware
        self.name = "themis" if aware else "themis-agnostic"
        self.gavel_name = "finish_time_fairness_perf" if aware else "finish_time_fairness"
        self.shuffles_type_order = not aware
        self.reset()

    def reset(self) -> None:
        self._isolated_time: dict[int, float] = {}
        self._previous_remaining: dict[int, float] = {}
        self._previous_rate: dict[int, float] = {}

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        thr = state.throughput if self.aware else _reference_speeds(state.throughput)
        n = state.num_active
        counts = state.counts.astype(np.float64)
        share = (counts[None, :] / n) / state.gang[:, None].astype(np.float64)
        share = share / np.maximum(share.sum(axis=1), 1.0)[:, None]
        isolated_rate = np.sum(thr * share, axis=1)
        remaining = state.remaining_steps.astype(np.float64)
        ids = state.job_ids.tolist()
        expected_isolated = np.empty(n)
        for i, job in enumerate(ids):
            spent = self._isolated_time.get(job, 0.0)
            if job in self._previous_remaining:
                spent += (self._previous_remaining[job] - remaining[i]) / self._previous_rate[job]
            self._isolated_time[job] = spent
            expected_isolated[i] = spent + remaining[i] / isolated_rate[i]
        self._previous_remaining = dict(zip(ids, remaining.tolist(), strict=True))
        self._previous_rate = dict(zip(ids, isolated_rate.tolist(), strict=True))
        age = state.time_since_arrival
        programs = BasePrograms(thr, state.gang, state.counts)

        def required(rho: float) -> FloatArray:
            room = rho * expected_isolated - age
            return remaining / room

        def ok(rho: float) -> bool:
            if np.any(rho * expected_isolated - age <= 0.0):
                return False
            return programs.feasible(required(rho))

        low = float(np.max(age / expected_isolated))
        high = max(2.0 * low, 1.0)
        while not ok(high):
            low, high = high, 2.0 * high
            if high > 1e30:
                raise RuntimeError(f"{self.name}: no finish-time fairness is feasible")
        while high - low > _RHO_TOLERANCE * high:
            middle = 0.5 * (low + high)
            if ok(middle):
                high = middle
            else:
                low = middle
        return _relaxed_center(programs, lambda factor: required(high * factor))
