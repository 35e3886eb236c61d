"""Gavel's policy programs as the cone programs cvxpy hands ECOS, in the per-job layout.

Gavel writes its programs in cvxpy (``policies/*.py``, commit c4fa400) and solves them with ECOS.
An interior-point solver's answer depends on the exact program it is given (the scaling of every
row, the auxiliary variables), not only on the optimisation problem, so these builders state the
programs as cvxpy 1.5 canonicalises them (checked against the data cvxpy passes ECOS):

* Gavel's base constraints: per job ``-X[i, k] <= 0`` and ``sum_k X[i, k] <= 1``; coupling rows
  ``sum_i gang_i X[i, k] <= N_k``;
* ``max min_i sum_k W[i, k] X[i, k]`` (max-min fairness): ``min t`` with an epigraph variable,
  rows ``-W_i . X_i - t <= 0``;
* ``max sum T X`` (max sum of throughput): ``min -T . X``;
* the horizon test of ``min_total_duration``: ``min 0`` s.t. ``-T_i . X_i <= -remaining_i / H``;
* water filling's step (``max_min_fairness_water_filling``): ``max min_i (m_i (N_i . X_i -
  s_i) + a_i)`` with ``N_i = T_i / P_i`` (normalised throughput), rows ``-m_i N_i . X_i - t <=
  a_i - m_i s_i`` and ``-N_i . X_i <= -lower_i``;
* ``min max_i (age_i + remaining_i / (T_i . X_i)) / isolated_i`` (finish-time fairness): with
  ``u_i >= 1 / (T_i . X_i)`` as the second-order cone ``(T_i . X_i + u_i, T_i . X_i - u_i, 2)``
  (cvxpy's form of ``inv_pos``) and an epigraph variable ``t`` (none for one job:
  ``min (remaining / isolated) u``): rows ``coef_i u_i - t <= -age_i / isolated_i``.

Job variables are ``X[i, :]`` (``K`` shares), followed by ``u_i`` for finish-time fairness.
"""

from __future__ import annotations

import numpy as np

from shockwave.heterogeneous.cone_program import BlockConeProgram, FloatArray


def _base_rows(n: int, k: int, width: int) -> tuple[FloatArray, FloatArray]:
    """Per-job rows ``-X[i, k] <= 0`` and ``sum_k X[i, k] <= 1`` over ``width`` job variables."""
    rows = np.zeros((n, k + 1, width))
    rows[:, np.arange(k), np.arange(k)] = -1.0
    rows[:, k, :k] = 1.0
    rhs = np.zeros((n, k + 1))
    rhs[:, k] = 1.0
    return rows, rhs


def _capacity(gang: FloatArray, counts: FloatArray, width: int) -> tuple[FloatArray, FloatArray]:
    """Coupling rows ``sum_i gang_i X[i, k] <= N_k``."""
    k = counts.shape[0]
    n = gang.shape[0]
    coupling = np.zeros((k, n, width))
    coupling[np.arange(k), :, np.arange(k)] = gang[None, :]
    return coupling, counts.astype(np.float64).copy()


def max_min_program(weights: FloatArray, gang: FloatArray, counts: FloatArray) -> BlockConeProgram:
    """``max min_i sum_k W[i, k] X[i, k]`` under the base constraints (Gavel's max-min
    fairness; ``X`` is ``x_job``, ``-t`` the optimum)."""
    n, k = weights.shape
    base, base_h = _base_rows(n, k, k)
    epigraph = -weights[:, None, :]
    local_job = np.concatenate([epigraph, base], axis=1)
    local_global = np.zeros((n, k + 2, 1))
    local_global[:, 0, 0] = -1.0
    local_h = np.concatenate([np.zeros((n, 1)), base_h], axis=1)
    coupling, coupling_h = _capacity(gang, counts, k)
    return BlockConeProgram(
        job_c=np.zeros((n, k)),
        global_c=np.ones(1),
        local_job=local_job,
        local_global=local_global,
        local_h=local_h,
        lp_rows=k + 2,
        soc_size=0,
        coupling=coupling,
        coupling_h=coupling_h,
    )


def max_sum_program(
    objective: FloatArray, gang: FloatArray, counts: FloatArray
) -> BlockConeProgram:
    """``max sum_ik C[i, k] X[i, k]`` under the base constraints."""
    n, k = objective.shape
    base, base_h = _base_rows(n, k, k)
    coupling, coupling_h = _capacity(gang, counts, k)
    return BlockConeProgram(
        job_c=-objective,
        global_c=np.zeros(0),
        local_job=base,
        local_global=np.zeros((n, k + 1, 0)),
        local_h=base_h,
        lp_rows=k + 1,
        soc_size=0,
        coupling=coupling,
        coupling_h=coupling_h,
    )


def rate_feasibility_program(
    throughput: FloatArray, required: FloatArray, gang: FloatArray, counts: FloatArray
) -> BlockConeProgram:
    """Whether ``sum_k T[i, k] X[i, k] >= required_i`` for every job is feasible with the base
    constraints (``min 0``: Gavel's ``cp.Maximize(1)``)."""
    n, k = throughput.shape
    base, base_h = _base_rows(n, k, k)
    local_job = np.concatenate([base, -throughput[:, None, :]], axis=1)
    local_h = np.concatenate([base_h, -required[:, None]], axis=1)
    coupling, coupling_h = _capacity(gang, counts, k)
    return BlockConeProgram(
        job_c=np.zeros((n, k)),
        global_c=np.zeros(0),
        local_job=local_job,
        local_global=np.zeros((n, k + 2, 0)),
        local_h=local_h,
        lp_rows=k + 2,
        soc_size=0,
        coupling=coupling,
        coupling_h=coupling_h,
    )


def finish_time_program(
    throughput: FloatArray,
    coefficient: FloatArray,
    constant: FloatArray,
    gang: FloatArray,
    counts: FloatArray,
) -> BlockConeProgram:
    """``min max_i (constant_i + coefficient_i / (T_i . X_i))`` under the base constraints
    (Gavel's finish-time fairness: ``coefficient = remaining / isolated``, ``constant = age /
    isolated``); job variables ``(X[i, :], u_i)``."""
    n, k = throughput.shape
    width = k + 1
    multi = n > 1
    base, base_h = _base_rows(n, k, width)
    cone = np.zeros((n, 3, width))
    cone[:, 0, :k] = -throughput
    cone[:, 0, k] = -1.0
    cone[:, 1, :k] = -throughput
    cone[:, 1, k] = 1.0
    cone_h = np.zeros((n, 3))
    cone_h[:, 2] = 2.0
    parts_job, parts_h = [base], [base_h]
    if multi:
        epigraph = np.zeros((n, 1, width))
        epigraph[:, 0, k] = coefficient
        parts_job.insert(0, epigraph)
        parts_h.insert(0, -constant[:, None])
    lp_rows = sum(part.shape[1] for part in parts_job)
    local_job = np.concatenate([*parts_job, cone], axis=1)
    local_h = np.concatenate([*parts_h, cone_h], axis=1)
    g = 1 if multi else 0
    local_global = np.zeros((n, lp_rows + 3, g))
    job_c = np.zeros((n, width))
    if multi:
        local_global[:, 0, 0] = -1.0
    else:
        job_c[0, k] = coefficient[0]
    coupling, coupling_h = _capacity(gang, counts, width)
    return BlockConeProgram(
        job_c=job_c,
        global_c=np.ones(g),
        local_job=local_job,
        local_global=local_global,
        local_h=local_h,
        lp_rows=lp_rows,
        soc_size=3,
        coupling=coupling,
        coupling_h=coupling_h,
    )


def water_filling_program(
    normalized: FloatArray,
    multiplier: FloatArray,
    constant: FloatArray,
    lower: FloatArray,
    gang: FloatArray,
    counts: FloatArray,
) -> BlockConeProgram:
    """``max min_i (multiplier_i N_i . X_i + constant_i)`` under the base constraints and
    ``N_i . X_i >= lower_i`` (one step of Gavel's water filling: ``N`` the normalised
    throughputs, ``constant_i = additive_i - multiplier_i so_far_i``; ``-t`` the optimum)."""
    n, k = normalized.shape
    base, base_h = _base_rows(n, k, k)
    epigraph = -(normalized * multiplier[:, None])[:, None, :]
    floor = -normalized[:, None, :]
    local_job = np.concatenate([epigraph, base, floor], axis=1)
    local_h = np.concatenate([constant[:, None], base_h, -lower[:, None]], axis=1)
    local_global = np.zeros((n, k + 3, 1))
    local_global[:, 0, 0] = -1.0
    coupling, coupling_h = _capacity(gang, counts, k)
    return BlockConeProgram(
        job_c=np.zeros((n, k)),
        global_c=np.ones(1),
        local_job=local_job,
        local_global=local_global,
        local_h=local_h,
        lp_rows=k + 3,
        soc_size=0,
        coupling=coupling,
        coupling_h=coupling_h,
    )
