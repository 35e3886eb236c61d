"""The linear programs behind Gavel's heterogeneity-aware policies, over ``X[i, k]``.

Every program shares Gavel's base constraints (``policy.py``, ``get_base_constraints``):
``X >= 0``, ``sum_i gang_i X[i, k] <= N_k`` per type, ``sum_k X[i, k] <= 1`` per job.
Solved with open-source tools only: HiGHS (scipy's ``linprog``) for optimal values and
feasibility, and :func:`shockwave.heterogeneous.barrier.central_path` for the point an
interior-point solver (Gavel's ECOS) returns among many optimal ones.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import linprog

from shockwave.heterogeneous.barrier import central_path, strictly_feasible

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: ECOS's relative duality-gap tolerance: the barrier weight at which a program's central point
#: is taken is this times the optimal value over the number of inequalities.
ECOS_RELATIVE_GAP = 1e-8


def base_constraints(gang: IntArray, counts: IntArray, extra_columns: int = 0) -> sp.csr_matrix:
    """``G`` of the base constraints over ``X`` flattened row by row (``i * K + k``), with
    ``extra_columns`` zero columns appended (for auxiliary variables)."""
    n, k = gang.shape[0], counts.shape[0]
    nk = n * k
    rows = [
        -sp.identity(nk, format="csr"),
        sp.kron(sp.csr_matrix(gang.astype(np.float64)[None, :]), sp.identity(k), format="csr"),
        sp.kron(sp.identity(n), sp.csr_matrix(np.ones((1, k))), format="csr"),
    ]
    g = sp.vstack(rows, format="csr")
    if extra_columns:
        g = sp.hstack([g, sp.csr_matrix((g.shape[0], extra_columns))], format="csr")
    return g


def base_rhs(n: int, counts: IntArray) -> FloatArray:
    return np.concatenate([np.zeros(n * counts.shape[0]), counts.astype(np.float64), np.ones(n)])


def interior_start(gang: IntArray, counts: IntArray) -> FloatArray:
    """A strictly feasible ``X`` (flattened): the same share everywhere, half of what fits."""
    n, k = gang.shape[0], counts.shape[0]
    share = 0.5 * min(1.0 / k, float(counts.min()) / float(gang.sum()))
    return np.full(n * k, share)


def rate_rows(throughput: FloatArray) -> sp.csr_matrix:
    """``R`` with ``(R x)_i = sum_k T[i, k] X[i, k]`` (each job's effective throughput)."""
    n, k = throughput.shape
    cols = np.arange(n * k)
    return sp.csr_matrix((throughput.reshape(-1), (np.repeat(np.arange(n), k), cols)),
                         shape=(n, n * k))  # fmt: skip


def max_min(weights: FloatArray, gang: IntArray, counts: IntArray) -> FloatArray:
    """Gavel's max-min program: ``max min_i sum_k W[i, k] X[i, k]`` (``W`` of shape n x K);
    the central point at ECOS's tolerance. Returns ``X`` (n x K)."""
    n, k = weights.shape
    nk = n * k
    g_base = base_constraints(gang, counts, extra_columns=1)
    # t - sum_k W[i, k] X[i, k] <= 0
    epigraph = sp.hstack([-rate_rows(weights), sp.csr_matrix(np.ones((n, 1)))], format="csr")
    g = sp.vstack([g_base, epigraph], format="csr")
    h = np.concatenate([base_rhs(n, counts), np.zeros(n)])
    c = np.zeros(nk + 1)
    c[-1] = 1.0
    best = _optimum(c, g, h, nk + 1, free_last=True)
    x0 = interior_start(gang, counts)
    z0 = np.concatenate([x0, [float((rate_rows(weights) @ x0).min()) - max(abs(best), 1e-3)]])
    mu = ECOS_RELATIVE_GAP * max(abs(best), 1e-12) / g.shape[0]
    z = central_path(c, g, h, z0, mu, mu_start=max(abs(best), 1e-9))
    return z[:nk].reshape(n, k)


def max_sum(objective: FloatArray, gang: IntArray, counts: IntArray) -> FloatArray:
    """``max sum_ik C[i, k] X[i, k]`` over the base constraints; the central point."""
    n, k = objective.shape
    g = base_constraints(gang, counts)
    h = base_rhs(n, counts)
    c = objective.reshape(-1).astype(np.float64)
    best = _optimum(c, g, h, n * k)
    mu = ECOS_RELATIVE_GAP * max(abs(best), 1e-12) / g.shape[0]
    z = central_path(c, g, h, interior_start(gang, counts), mu, mu_start=max(abs(best), 1e-9))
    return z.reshape(n, k)


def feasible(
    throughput: FloatArray, gang: IntArray, counts: IntArray, required: FloatArray
) -> bool:
    """Whether some ``X`` of the base constraints gives every job ``sum_k T X >= required``."""
    n, k = throughput.shape
    g = sp.vstack([base_constraints(gang, counts), -rate_rows(throughput)], format="csr")
    h = np.concatenate([base_rhs(n, counts), -required])
    result = linprog(np.zeros(n * k), A_ub=g, b_ub=h, bounds=(None, None), method="highs")
    return bool(result.status == 0)


def feasible_center(
    throughput: FloatArray, gang: IntArray, counts: IntArray, required: FloatArray
) -> FloatArray:
    """The analytic center of ``{X : base constraints, sum_k T[i, k] X[i, k] >= required_i}``
    (what an interior-point solver returns for a feasibility program), as ``X`` (n x K).

    The set must have an interior (relax ``required`` slightly when it sits on the boundary).
    """
    n, k = throughput.shape
    rates = rate_rows(throughput)
    g = sp.vstack([base_constraints(gang, counts), -rates], format="csr")
    h = np.concatenate([base_rhs(n, counts), -required])
    z0 = strictly_feasible(g, h, interior_start(gang, counts))
    z = central_path(np.zeros(n * k), g, h, z0, 1.0)
    return z.reshape(n, k)


def _optimum(c: FloatArray, g: sp.csr_matrix, h: FloatArray, size: int,
             free_last: bool = False) -> float:  # fmt: skip
    bounds = [(None, None)] * size
    result = linprog(-c, A_ub=g, b_ub=h, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"HiGHS could not solve the program: {result.message}")
    return float(-result.fun)
