"""Gavel's heterogeneity-aware policies on effective throughput ``sum_k T[i, k] X[i, k]``, and
their agnostic forms (Gavel's ``policies/*.py``, commit c4fa400; the programs are Gavel's, the
code is ours). Each program is built as cvxpy hands it to ECOS (:mod:`.gavel_programs`) and
solved by ECOS's algorithm (:mod:`.interior_point`), so that where a program has many optimal
points the one Gavel takes is returned.

* ``gavel`` (``max_min_fairness_perf``): ``max min_i sum_k T[i,k] X[i,k] gang_i / (w_i P_i)``,
  ``P_i = sum_k T[i,k] N_k / N`` (the throughput of an equal split of every type);
  ``gavel-agnostic`` (``max_min_fairness``): the same with every throughput taken as 1.
* ``mst`` (``max_sum_throughput_perf``): ``max sum_ik T[i,k] X[i,k]``.
* ``ossp`` (``min_total_duration_perf``): Gavel's binary search for the smallest horizon ``H``
  (from [100, 10^6] s to within 5 %, widened tenfold until one is feasible) such that every job
  can run its remaining steps, ``sum_k T[i,k] X[i,k] >= remaining_i / H``, each horizon tested by
  the solver's status (``optimal`` or not, as Gavel tests it); the point returned for the last
  feasible horizon. ``ossp-agnostic`` (``min_total_duration``): every type taken as fast as the
  cluster's first type (Gavel's ``v100``).
* ``themis`` (``finish_time_fairness_perf``): ``min max_i rho_i``, ``rho_i = (age_i + remaining_i
  / sum_k T X) / (isolated_i + remaining_i / I_i)``: ``I_i`` the throughput on an equal share
  ``N_k / (n gang_i)`` of each type (rows scaled to sum to at most 1), ``isolated_i`` the
  isolated time the job's past progress would have taken at the ``I_i`` of each earlier call.
  ``themis-agnostic`` (``finish_time_fairness``): every type as fast as the first type.

Every share is clipped to ``[0, 1]`` as Gavel clips the solver's point. Where Gavel's solver
fails (cvxpy's ``SolverError``, Gavel's simulator stops), :class:`GavelSolverError` is raised.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shockwave.errors import RunFailedError
from shockwave.heterogeneous.cone_program import BlockConeProgram
from shockwave.heterogeneous.fairness import isolated_shares
from shockwave.heterogeneous.gavel_programs import (
    finish_time_program,
    max_min_program,
    max_sum_program,
    rate_feasibility_program,
)
from shockwave.heterogeneous.interior_point import ConeSolution, ExitFlag, solve_cone_program
from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState
from shockwave.heterogeneous.rate_scale import largest_rate_scale

#: Horizons whose feasibility margin ``scale * H - 1`` is within this are tested by the solver;
#: farther from the boundary the exact test decides (on ``T2`` ECOS's status agreed with the
#: exact test in all 790 calls, the closest at margins of 4.6e-4 and -1.3e-3).
SCREEN_MARGIN = 1e-2


class GavelSolverError(RunFailedError, RuntimeError):
    """ECOS's algorithm failed on a program (a negative exit flag): cvxpy raises ``SolverError``
    there and Gavel's simulator stops."""


def solve_or_raise(policy: str, program: BlockConeProgram) -> ConeSolution:
    """Solve ``program`` for ``policy``; :class:`GavelSolverError` where ECOS fails."""
    solution = solve_cone_program(program)
    if solution.failed:
        raise GavelSolverError(
            f"{policy}: the solver stopped with ECOS exit flag {int(solution.flag)} "
            f"({solution.flag.name}) after {solution.iterations} iterations on "
            f"{program.num_jobs} jobs; Gavel's simulator (cvxpy's SolverError) stops here too"
        )
    return solution


def _shares(solution: ConeSolution, k: int) -> FloatArray:
    """The shares ``X`` of a solution, clipped to ``[0, 1]`` as Gavel clips them."""
    return np.clip(solution.x_job[:, :k], 0.0, 1.0)


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
        n, k = state.throughput.shape
        thr = state.throughput if self.aware else np.ones_like(state.throughput)
        counts = state.counts.astype(np.float64)
        split = (counts / n) / np.sum(counts / n)
        proportional = np.sum(thr * split[None, :], axis=1)
        priority = (1.0 / state.weight) * (1.0 / proportional)
        weights = (thr * priority[:, None]) * state.gang.astype(np.float64)[:, None]
        program = max_min_program(weights, state.gang.astype(np.float64), counts)
        return _shares(solve_or_raise(self.name, program), k)


class TypedMaxSumThroughput(TypedAllocationPolicy):
    """``mst`` (Gavel's ``max_sum_throughput_perf``)."""

    name: str = "mst"  # type: ignore[misc]  # the base's per-instance name
    gavel_name = "max_sum_throughput_perf"

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        k = state.throughput.shape[1]
        program = max_sum_program(
            state.throughput, state.gang.astype(np.float64), state.counts.astype(np.float64)
        )
        return _shares(solve_or_raise(self.name, program), k)


class TypedMinTotalDuration(TypedAllocationPolicy):
    """``ossp`` / ``ossp-agnostic`` (see the module notes)."""

    def __init__(self, *, aware: bool = True) -> None:
        self.aware = aware
        self.name = "ossp" if aware else "ossp-agnostic"
        self.gavel_name = "min_total_duration_perf" if aware else "min_total_duration"
        self.shuffles_type_order = not aware

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        k = state.throughput.shape[1]
        thr = state.throughput if self.aware else _reference_speeds(state.throughput)
        remaining = state.remaining_steps.astype(np.float64)
        gang, counts = state.gang.astype(np.float64), state.counts.astype(np.float64)
        scale = largest_rate_scale(thr, remaining, gang, counts)
        solved: dict[float, ConeSolution] = {}
        decided: dict[float, bool] = {}

        def solve(horizon: float) -> ConeSolution:
            if horizon not in solved:
                program = rate_feasibility_program(thr, remaining / horizon, gang, counts)
                solved[horizon] = solve_or_raise(self.name, program)
            return solved[horizon]

        def screened(horizon: float) -> bool:
            # the required rates are feasible iff scale * horizon >= 1; the solver's status is
            # asked only near that boundary, where the two could differ
            margin = scale * horizon - 1.0
            decided[horizon] = (
                margin > 0.0 if abs(margin) > SCREEN_MARGIN else solve(horizon).optimal
            )
            return decided[horizon]

        horizon = self._search(screened)
        below = [h for h, ok in decided.items() if not ok and h < horizon]
        # the search's outcome rests on its two decisions around the boundary: check both with
        # the solver, and replay Gavel's search with the solver alone if either disagrees
        if not solve(horizon).optimal or (below and solve(max(below)).optimal):
            horizon = self._search(lambda h: solve(h).optimal)
        return _shares(solve(horizon), k)

    def _search(self, feasible: Callable[[float], bool]) -> float:
        """Gavel's search: the last horizon found feasible."""
        high, low, last_high = 1e6, 100.0, 1e6
        found: float | None = None
        while found is None:
            while 1.05 * low < high:
                horizon = (low + high) / 2.0
                if feasible(horizon):
                    found, high = horizon, horizon
                else:
                    low = horizon
            high, low, last_high = last_high * 10.0, last_high, last_high * 10.0
            if last_high > 1e30:
                raise GavelSolverError(f"{self.name}: no horizon makes the jobs feasible")
        return found


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
        k = state.throughput.shape[1]
        thr = state.throughput if self.aware else _reference_speeds(state.throughput)
        n = state.num_active
        counts = state.counts.astype(np.float64)
        share = isolated_shares(state.counts, state.gang, n)
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
        program = finish_time_program(
            thr,
            remaining / expected_isolated,
            state.time_since_arrival / expected_isolated,
            state.gang.astype(np.float64),
            counts,
        )
        solution = solve_or_raise(self.name, program)
        if solution.flag not in (ExitFlag.OPTIMAL, ExitFlag.OPTIMAL_INACCURATE):
            # an infeasibility certificate: cvxpy leaves no point, Gavel falls back to its
            # isolated allocation
            return np.asarray(share, dtype=np.float64)
        return _shares(solution, k)
