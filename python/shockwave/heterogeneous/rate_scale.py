"""The largest uniform scale of required rates a cluster can serve, by HiGHS (scipy)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from shockwave.heterogeneous.cone_program import FloatArray


def largest_rate_scale(
    throughput: FloatArray, required: FloatArray, gang: FloatArray, counts: FloatArray
) -> float:
    """``max theta`` such that some ``X`` with Gavel's base constraints (``X >= 0``,
    ``sum_k X[i, k] <= 1``, ``sum_i gang_i X[i, k] <= N_k``) gives every job
    ``sum_k T[i, k] X[i, k] >= theta required_i``: the rates ``required / H`` are feasible iff
    ``theta H >= 1``.

    Raises:
        RuntimeError: if HiGHS does not solve the program.
    """
    n, k = throughput.shape
    nk = n * k
    job_rows = np.repeat(np.arange(n), k)
    columns = np.arange(nk)
    capacity = sp.csr_matrix((np.repeat(gang, k), (np.tile(np.arange(k), n), columns)), (k, nk + 1))
    shares = sp.csr_matrix((np.ones(nk), (job_rows, columns)), (n, nk + 1))
    rates = sp.csr_matrix(
        (np.concatenate([-throughput.ravel(), required]),
         (np.concatenate([job_rows, np.arange(n)]), np.concatenate([columns, np.full(n, nk)]))),
        (n, nk + 1),
    )  # fmt: skip
    a_ub = sp.vstack([capacity, shares, rates], format="csr")
    b_ub = np.concatenate([counts, np.ones(n), np.zeros(n)])
    c = np.zeros(nk + 1)
    c[-1] = -1.0
    bounds = [(0.0, None)] * nk + [(None, None)]
    result = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"HiGHS could not find the largest rate scale: {result.message}")
    return float(-result.fun)
