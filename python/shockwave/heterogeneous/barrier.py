"""Points of the central path of Gavel's programs: what an interior-point solver returns.

Gavel solves its policies' programs with ECOS, an interior-point solver. When a program has many
optimal points, such a solver does not return a vertex: it follows the *central path*

    z(mu) = argmax  c.z / mu + sum_j log(h_j - G_j z)

towards ``mu -> 0``, close to the **analytic center of the optimal face**; a variable that is 0 at
every optimum is left at ``~ mu / (its reduced cost)``, a tiny positive share whose size orders
the jobs the round mechanism backfills. (:mod:`shockwave.policies.analytic_center` does the same,
in closed form, for the homogeneous programs' single knapsack.)

The programs here have one structure: variables ``X[i, k]`` (job ``i``, type ``k``) and optionally
one scalar ``t``; every constraint but the ``K`` capacity rows ``sum_i gang_i X[i, k] <= N_k``
involves one job only: ``a_r . X[i, :] + g_r t <= b_r``. The Newton system is then a block
diagonal (one ``K x K`` block per job) plus ``K`` rank-one capacity terms plus a border for
``t``: solved in ``O(n K^3)`` by the Woodbury identity and a Schur complement, vectorised over
the jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_MAX_NEWTON_PER_STAGE = 100
_MU_FACTOR = 0.1
_DECREMENT_TOLERANCE = 1e-12


class BarrierError(RuntimeError):
    """The start is not strictly feasible, or the set has no interior."""


@dataclass(frozen=True)
class JobRowsProgram:
    """``max sum_ik C[i,k] X[i,k] + c_t t`` s.t. per-job rows and the capacity rows.

    Attributes:
        objective: ``C``, shape ``(n, K)``.
        objective_t: ``c_t`` (0 and ``has_t`` False for programs without ``t``).
        rows: ``a``, shape ``(n, R, K)``: the per-job rows' coefficients on ``X[i, :]``.
        rows_t: ``g``, shape ``(n, R)``: their coefficients on ``t``.
        rhs: ``b``, shape ``(n, R)``.
        gang: ``(n,)``; counts: ``(K,)``: the capacity rows.
        has_t: whether ``t`` is a variable.
    """

    objective: FloatArray
    objective_t: float
    rows: FloatArray
    rows_t: FloatArray
    rhs: FloatArray
    gang: FloatArray
    counts: FloatArray
    has_t: bool

    def slacks(self, x: FloatArray, t: float) -> tuple[FloatArray, FloatArray]:
        per_job = self.rhs - np.einsum("irk,ik->ir", self.rows, x) - self.rows_t * t
        capacity = self.counts - self.gang @ x
        return per_job, capacity

    def barrier(self, x: FloatArray, t: float, mu: float) -> float:
        per_job, capacity = self.slacks(x, t)
        if np.any(per_job <= 0.0) or np.any(capacity <= 0.0):
            return np.inf
        linear = float(np.sum(self.objective * x)) + self.objective_t * t
        return -linear / mu - float(np.sum(np.log(per_job)) + np.sum(np.log(capacity)))


def base_rows(
    throughput: FloatArray,
    rate: FloatArray | None,
    rate_t: float,
    rate_rhs: FloatArray | None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Gavel's per-job base rows (``-X[i,k] <= 0``, ``sum_k X[i,k] <= 1``) and an optional rate
    row ``rate[i] . X[i, :] + rate_t t <= rate_rhs[i]``."""
    n, k = throughput.shape
    count = k + 1 + (rate is not None)
    rows = np.zeros((n, count, k))
    rows[:, :k, :] = -np.eye(k)[None, :, :]
    rows[:, k, :] = 1.0
    rows_t = np.zeros((n, count))
    rhs = np.zeros((n, count))
    rhs[:, k] = 1.0
    if rate is not None:
        assert rate_rhs is not None
        rows[:, k + 1, :] = rate
        rows_t[:, k + 1] = rate_t
        rhs[:, k + 1] = rate_rhs
    return rows, rows_t, rhs


def central_path(
    program: JobRowsProgram, x0: FloatArray, t0: float, mu: float, mu_start: float,
    *, stop_when_t_positive: bool = False,
) -> tuple[FloatArray, float]:  # fmt: skip
    """``(X, t)`` on the central path at barrier weight ``mu``, from a strictly feasible start;
    with ``stop_when_t_positive``, as soon as ``t > 0`` (a phase one).

    Raises:
        BarrierError: if the start is not strictly feasible.
    """
    if not mu > 0.0:
        raise ValueError(f"mu must be > 0, got {mu!r}")
    x = np.array(x0, dtype=np.float64)
    t = float(t0)
    if not np.isfinite(program.barrier(x, t, 1.0)):
        raise BarrierError("the start is not strictly feasible")
    current = max(mu_start, mu)
    while True:
        x, t = _center(program, x, t, current, stop_when_t_positive)
        if current <= mu or (stop_when_t_positive and t > 0.0):
            return x, t
        current = max(current * _MU_FACTOR, mu)


def _center(
    p: JobRowsProgram, x: FloatArray, t: float, mu: float, stop_when_t_positive: bool
) -> tuple[FloatArray, float]:
    value = p.barrier(x, t, mu)
    for _ in range(_MAX_NEWTON_PER_STAGE):
        per_job, capacity = p.slacks(x, t)
        inv = 1.0 / per_job  # (n, R)
        inv_cap = 1.0 / capacity  # (K,)
        # gradient of the barrier function (minimised)
        grad_x = -p.objective / mu + np.einsum("ir,irk->ik", inv, p.rows)
        grad_x += inv_cap[None, :] * p.gang[:, None]
        grad_t = -p.objective_t / mu + float(np.sum(inv * p.rows_t))
        # Hessian blocks: the bound rows (-X[i, k] <= 0, the first K rows of every job) are a
        # diagonal; the other rows are rank-one terms, inverted by Sherman-Morrison-Woodbury
        # (forming their sum would be hopelessly ill-conditioned near the optimum).
        d = inv * inv
        k = x.shape[1]
        diagonal = d[:, :k]  # (n, K)
        low = p.rows[:, k:, :]  # (n, R', K)
        low_weight = d[:, k:]  # (n, R')
        inverse = _block_inverse(diagonal, low, low_weight)
        border = np.einsum("ir,ir,irk->ik", d, p.rows_t, p.rows)  # H_xt, (n, K)
        corner = float(np.sum(d * p.rows_t * p.rows_t))
        cap_weight = inv_cap * inv_cap  # (K,)
        solve = _woodbury(inverse, p.gang, cap_weight)
        if p.has_t:
            ax = solve(-grad_x)
            ab = solve(border)
            schur = corner - float(np.sum(border * ab))
            step_t = (-grad_t - float(np.sum(border * ax))) / schur
            step_x = ax - ab * step_t
        else:
            step_x = solve(-grad_x)
            step_t = 0.0
        decrement = -(float(np.sum(grad_x * step_x)) + grad_t * step_t)
        if not np.isfinite(decrement):
            raise BarrierError("a Newton step is not finite")
        if decrement <= _DECREMENT_TOLERANCE:
            break
        # the longest step that stays strictly inside
        d_job = np.einsum("irk,ik->ir", p.rows, step_x) + p.rows_t * step_t
        d_cap = p.gang @ step_x
        limit = np.inf
        rising = d_job > 0.0
        if rising.any():
            limit = min(limit, float(np.min(per_job[rising] / d_job[rising])))
        rising_cap = d_cap > 0.0
        if rising_cap.any():
            limit = min(limit, float(np.min(capacity[rising_cap] / d_cap[rising_cap])))
        length = min(1.0, 0.99 * limit)
        while length > 1e-16:
            trial_x, trial_t = x + length * step_x, t + length * step_t
            trial = p.barrier(trial_x, trial_t, mu)
            if trial <= value - 0.25 * length * decrement:
                break
            length *= 0.5
        else:
            break  # no decrease at floating-point resolution: centred as well as it gets
        x, t, value = trial_x, trial_t, trial
        if stop_when_t_positive and t > 0.0:
            break
    return x, t


def _block_inverse(diagonal: FloatArray, low: FloatArray, weight: FloatArray) -> FloatArray:
    """``(diag(diagonal_i) + sum_r weight_ir a_ir a_ir^T)^-1`` for every job ``i``."""
    dinv = 1.0 / diagonal  # (n, K)
    scaled = low * dinv[:, None, :]  # (n, R', K): a_r D^-1
    small = np.einsum("irk,isk->irs", scaled, low)  # A^T D^-1 A, (n, R', R')
    r = low.shape[1]
    small += np.eye(r)[None] / weight[:, :, None] * np.eye(r)[None]
    inner = np.linalg.inv(small)
    inverse = np.einsum("ik,kl->ikl", dinv, np.eye(diagonal.shape[1]))
    inverse -= np.einsum("irk,irs,isl->ikl", scaled, inner, scaled)
    return np.asarray(inverse, dtype=np.float64)


def _woodbury(
    inverse: FloatArray, gang: FloatArray, weight: FloatArray
) -> Callable[[FloatArray], FloatArray]:
    """A solver for ``(B + sum_k weight_k v_k v_k^T) y = r`` given ``inverse = B^-1`` (block
    diagonal, ``(n, K, K)``), ``v_k`` the vector with ``gang_i`` at ``(i, k)``."""
    # B^-1 U: for column k of U (gang at (i, k)): gang_i * inverse[i, :, k]
    binv_u = inverse * gang[:, None, None]  # (n, K, K): [i, :, k]
    capacitance = np.diag(1.0 / weight) + np.einsum("i,ilk->lk", gang, binv_u)  # U^T B^-1 U

    def solve(r: FloatArray) -> FloatArray:
        y = np.einsum("ikl,il->ik", inverse, r)
        correction = np.linalg.solve(capacitance, gang @ y)  # U^T B^-1 r, (K,)
        return np.asarray(y - np.einsum("ikl,l->ik", binv_u, correction), dtype=np.float64)

    return solve
