"""Points of the central path of a linear program: what an interior-point solver returns.

Gavel solves its policies' programs with ECOS, an interior-point solver. When a program has many
optimal points, such a solver does not return a vertex: it follows the *central path*

    z(mu) = argmax  c.z / mu + sum_j log(h_j - G_j z)

towards ``mu -> 0`` and stops at a small ``mu``, close to the **analytic center of the optimal
face**; a variable that is 0 at every optimum is left at ``~ mu / (its reduced cost)``, a tiny
positive share whose size orders the jobs the round mechanism backfills. :func:`central_path`
computes ``z(mu)`` for a given small ``mu`` by damped Newton steps on the barrier with a
decreasing ``mu`` (sparse normal equations, scipy's SuperLU), from a strictly feasible start.
(:mod:`shockwave.policies.analytic_center` does the same, in closed form, for the homogeneous
programs' single knapsack.)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
import scipy.sparse.linalg as spla

FloatArray = npt.NDArray[np.float64]

_MAX_NEWTON_PER_STAGE = 80
_MU_FACTOR = 0.1
_DECREMENT_TOLERANCE = 1e-12


class BarrierError(RuntimeError):
    """The start is not strictly feasible, or Newton's method could not make progress."""


def central_path(
    c: FloatArray,
    g: sp.csr_matrix,
    h: FloatArray,
    z0: FloatArray,
    mu: float,
    mu_start: float | None = None,
) -> FloatArray:
    """``z(mu)`` of ``max c.z s.t. G z <= h`` (see the module notes).

    Args:
        c: objective, shape ``(N,)``.
        g: constraint matrix, shape ``(M, N)`` (sparse).
        h: right-hand sides, shape ``(M,)``.
        z0: a strictly feasible start (``G z0 < h``).
        mu: the barrier weight to stop at (in the units of ``c``), > 0.
        mu_start: the first barrier weight (default: ``|c.z0| + 1``, scaled to ``c``).

    Raises:
        BarrierError: if ``z0`` is not strictly feasible or a Newton step fails.
    """
    if not mu > 0.0:
        raise ValueError(f"mu must be > 0, got {mu!r}")
    gt = g.T.tocsr()
    z = np.asarray(z0, dtype=np.float64).copy()
    slack = h - g @ z
    if np.any(slack <= 0.0):
        raise BarrierError("the start is not strictly feasible")
    current = mu_start if mu_start is not None else max(abs(float(c @ z)), 1.0)
    current = max(current, mu)
    while True:
        z = _center(c, g, gt, h, z, current)
        if current <= mu:
            return z
        current = max(current * _MU_FACTOR, mu)


def strictly_feasible(g: sp.csr_matrix, h: FloatArray, z0: FloatArray) -> FloatArray:
    """A point with ``G z < h`` (every slack positive), from any ``z0``: the phase one of a
    barrier method, ``max r s.t. G z + r <= h``, stopped as soon as ``r > 0``.

    Raises:
        BarrierError: if the set has no interior (``r`` stays at or below 0).
    """
    z = np.asarray(z0, dtype=np.float64)
    slack = h - g @ z
    if np.all(slack > 0.0):
        return z.copy()
    m, n = g.shape
    augmented = sp.hstack([g, sp.csr_matrix(np.ones((m, 1)))], format="csr")
    gt = augmented.T.tocsr()
    c = np.zeros(n + 1)
    c[-1] = 1.0
    point = np.concatenate([z, [float(slack.min()) - 1.0]])
    scale = max(float(np.abs(slack).max()), 1.0)
    mu = scale
    for _ in range(60):
        point = _center(c, augmented, gt, h, point, mu, stop_when_positive=True)
        if point[-1] > 0.0 and np.all(h - g @ point[:n] > 0.0):
            return point[:n]
        mu *= _MU_FACTOR
        if mu < 1e-14 * scale:
            break
    raise BarrierError("the feasible set has no interior")


def _center(
    c: FloatArray,
    g: sp.csr_matrix,
    gt: sp.csr_matrix,
    h: FloatArray,
    z: FloatArray,
    mu: float,
    *,
    stop_when_positive: bool = False,
) -> FloatArray:
    def value(point: FloatArray) -> float:
        s = h - g @ point
        if np.any(s <= 0.0):
            return np.inf
        return float(-(c @ point) / mu - np.sum(np.log(s)))

    current = value(z)
    n = z.shape[0]
    for _ in range(_MAX_NEWTON_PER_STAGE):
        s = h - g @ z
        inv = 1.0 / s
        gradient = -c / mu + gt @ inv
        hessian = (gt @ sp.diags(inv * inv) @ g).tocsc()
        hessian = hessian + sp.identity(n, format="csc") * (1e-14 * hessian.diagonal().max())
        step = spla.spsolve(hessian, -gradient)
        if not np.all(np.isfinite(step)):
            raise BarrierError("a Newton step is not finite (singular system)")
        decrement = float(-(gradient @ step))
        if decrement <= _DECREMENT_TOLERANCE:
            return z
        direction = g @ step
        rising = direction > 0.0
        limit = float(np.min(s[rising] / direction[rising])) if rising.any() else np.inf
        length = min(1.0, 0.99 * limit)
        while length > 1e-16:
            trial = z + length * step
            trial_value = value(trial)
            if trial_value <= current - 0.25 * length * decrement:
                break
            length *= 0.5
        else:
            return z  # no decrease at floating-point resolution: centred as well as it gets
        z, current = trial, trial_value
        if stop_when_positive and z[-1] > 0.0:
            return z
    return z
