"""Gavel's water-filling max-min fairness (``max_min_fairness_water_filling[_perf]``).

Gavel's ``WaterFillingAlgorithm`` (``policies/max_min_fairness_water_filling.py``, commit
c4fa400) raises every job's normalised effective throughput ``N_i . X_i`` (``N_i = T_i / P_i``,
``P_i`` the throughput of an equal split, as in max-min fairness) as far as possible, then the
others', and so on:

1. an LP (ECOS in Gavel; :mod:`.interior_point` here): ``max min_i m_i (N_i . X_i - s_i)`` over
   the jobs not yet frozen (``m_i = gang_i / w_i``; frozen jobs get the large constant ``M``
   instead), keeping every job at or above its floor (``s_i``, or its frozen level); every
   unfrozen job's level ``s_i`` then rises by the optimum ``c / m_i``;
2. a MILP (GLPK in Gavel; HiGHS here): the largest set of unfrozen jobs that can all rise
   ``0.01 %`` above their level at once (``z_i = 1``) while the others stay at least ``1e-5``
   below ``1.0001 s_i``; the unfrozen jobs outside that set are frozen at their level;
3. repeat until every job is frozen or none was frozen in a step.

The allocation is the last LP's point. ``max_min_fairness_water_filling`` is the same with every
throughput taken as 1 (and the type order shuffled every round, as Gavel does for its policies
without ``Perf`` in their names). If an LP fails, the previous step's point is kept (Gavel's
``except``); if the MILP is not solved to optimality, every unfrozen job is frozen.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from shockwave.heterogeneous.gavel_programs import water_filling_program
from shockwave.heterogeneous.interior_point import solve_cone_program
from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState

#: Gavel's MILP: a job counts as rising if it can reach ``SLACK`` times its level ...
SLACK = 1.0001
#: ... and as not rising if it stays ``EPSILON`` below that.
EPSILON = 1e-5


class TypedWaterFilling(TypedAllocationPolicy):
    """``water-filling`` / ``water-filling-agnostic`` (see the module notes)."""

    def __init__(self, *, aware: bool = True) -> None:
        self.aware = aware
        self.name = "water-filling" if aware else "water-filling-agnostic"
        self.gavel_name = (
            "max_min_fairness_water_filling_perf" if aware else "max_min_fairness_water_filling"
        )
        self.shuffles_type_order = not aware

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        n = state.throughput.shape[0]
        thr = state.throughput if self.aware else np.ones_like(state.throughput)
        counts = state.counts.astype(np.float64)
        gang = state.gang.astype(np.float64)
        split = (counts / n) / np.sum(counts / n)
        proportional = np.sum(thr * split[None, :], axis=1)
        normalized = thr * (1.0 / proportional)[:, None]
        big = float(np.max((thr * (1.0 / proportional)[:, None]) * gang[:, None]))
        weight = 1.0 / state.weight  # Gavel's priority weights (all > 0 here)
        frozen = np.zeros(n, dtype=bool)
        level = np.zeros(n)
        floor_of_frozen = np.zeros(n)
        x: FloatArray | None = None
        while True:
            multiplier = np.where(frozen, 0.0, weight * gang)
            additive = np.where(frozen, big, 0.0)
            mask = np.where(frozen, 0.0, 1.0 / np.where(frozen, 1.0, multiplier))
            floor = np.where(frozen, floor_of_frozen, level)
            program = water_filling_program(
                normalized, multiplier, additive - multiplier * level, floor, gang, counts
            )
            solution = solve_cone_program(program)
            if solution.failed or not _has_point(solution.flag):
                break  # Gavel keeps the previous point and stops
            x = solution.x_job
            value = -float(solution.x_global[0])
            level = level + mask * value
            rising = _rising_jobs(normalized, level, np.where(frozen, floor_of_frozen, level),
                                  frozen, big, gang, counts)  # fmt: skip
            newly = ~frozen & ~rising & (weight > 0.0)
            if not newly.any():
                break
            floor_of_frozen = np.where(newly, level, floor_of_frozen)
            frozen |= newly
            if frozen.all():
                break
        if x is None:
            raise RuntimeError(f"{self.name}: the first water-filling LP has no solution")
        return np.clip(x, 0.0, 1.0)


def _has_point(flag: int) -> bool:
    """Whether cvxpy returns a point for ECOS's exit flag (optimal, possibly inaccurate)."""
    return int(flag) in (0, 10)


def _rising_jobs(
    normalized: FloatArray,
    level: FloatArray,
    lower: FloatArray,
    frozen: np.ndarray,
    big: float,
    gang: FloatArray,
    counts: FloatArray,
) -> np.ndarray:
    """Gavel's bottleneck MILP: the largest set of unfrozen jobs that can all rise at once."""
    n, k = normalized.shape
    nk = n * k
    ones, jobs = np.ones(n), np.arange(n)
    rows = np.repeat(jobs, k)
    cols = np.arange(nk)
    target = level * SLACK
    # rows: capacity (k), shares (n), then per job: N_i.X_i - M z_i, -N_i.X_i + M z_i, N_i.X_i
    capacity = (np.tile(np.arange(k), n), cols, np.repeat(gang, k))
    shares = (k + rows, cols, np.ones(nk))
    parts = [capacity, shares]
    for block, sign, with_z in ((0, 1.0, True), (1, -1.0, True), (2, 1.0, False)):
        first = k + n + block * n
        parts.append((first + rows, cols, sign * normalized.ravel()))
        if with_z:
            parts.append((first + jobs, nk + jobs, -sign * big * ones))
    r, c, v = (np.concatenate(axis) for axis in zip(*parts, strict=True))
    matrix = sp.csr_matrix((v, (r, c)), shape=(k + 4 * n, nk + n))
    lower_rows = np.concatenate([np.full(k + 3 * n, -np.inf), lower])
    upper_rows = np.concatenate([counts, ones, target - EPSILON, big - target, np.full(n, np.inf)])
    constraints = LinearConstraint(matrix, lower_rows, upper_rows)
    upper = np.concatenate([np.full(nk, np.inf), np.where(frozen, 0.0, 1.0)])
    objective = np.concatenate([np.zeros(nk), -np.ones(n)])
    integrality = np.concatenate([np.zeros(nk), np.ones(n)])
    # HiGHS' presolve misjudges these programs (windows of 1e-4 under big-M rows): off
    result = milp(objective, integrality=integrality, bounds=Bounds(np.zeros(nk + n), upper),
                  constraints=constraints, options={"presolve": False})  # fmt: skip
    if result.status != 0 or result.x is None:
        return np.zeros(n, dtype=bool)  # Gavel: a non-optimal MILP freezes every job
    return np.asarray(np.round(result.x[nk:]) > 0.5)
