"""The original Shockwave's integer program, solved with HiGHS (``scipy.optimize.milp``).

This backend exists for fidelity and to measure what the market relaxation costs; it is slow (a
mixed-integer program per planning step, each with a time limit). It follows NOTES §5.7:

Variables per job ``i``: ``x_it`` in {0, 1} (runs in round ``t`` of the window), planned epochs
``de_i >= 0``, the SOS2 weights ``l_ib >= 0`` and indicators ``z_ib`` in {0, 1} of the
piecewise-linear ``log`` on the breakpoints ``b`` in {0, .2, .4, .6, .8, 1}, the remaining
runtime after the window ``R_i >= 0``; and ``M = max_i R_i``.

    maximise    sum_i p_i U_i / (N T)  -  k M,       U_i = sum_b l_ib log(b)   (log 0 := log 1e-6)
    subject to  sum_i n_i x_it <= G                          every round t
                de_i d_i <= tau sum_t x_it                   (d_i: window-average epoch seconds)
                sum_b l_ib = 1,  sum_b l_ib b = (e_i + de_i) / E_i
                l_ib <= z_ib,  sum_b z_ib <= 2,  z_il + z_ir <= 1 for r >= l + 2   (SOS2)
                R_i >= Rhat_i - de_i d_i,  M >= R_i
                tau (r + T) + R_i / s <= rho_max F_i         (finish-time fairness; s = min(1, G/N))

with ``p_i = 1``. Like the original, when this program is infeasible (it almost always is: a job
whose target lies inside the window cannot satisfy its constraint), the *relaxation* runs: the
fairness constraints are dropped, ``p_i = rho^_i ** lambda`` for jobs projected above
``rho_max`` (``** 100`` within one round of finishing), and the program is solved again. Its
rounds per job ``n_i`` are then re-timed by the *rank* program

    minimise    sum_{i: n_i > 0} p_i sum_t t y_it / n_i
    subject to  sum_t y_it = n_i,  sum_i n_i y_it <= G,  y_it in {0, 1},

which moves the urgent jobs' rounds to the front of the window (if it fails, the relaxed
schedule is kept). A solve that hits the time limit uses HiGHS's best incumbent; one without an
incumbent counts as infeasible, as cvxpy maps Gurobi's status for the original.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Breakpoints of the piecewise-linear log of progress, and their log values (log 0 -> log 1e-6).
BREAKPOINTS = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
LOG_BREAKPOINTS = np.log(np.maximum(BREAKPOINTS, 1e-6))
#: Pairs of breakpoints that may not both be active (SOS2: only neighbours).
_FAR_PAIRS = [(a, b) for a in range(6) for b in range(a + 2, 6)]


@dataclass(frozen=True)
class MilpInputs:
    """One planning step of the original's program.

    Attributes:
        gang_size: GPUs per job, ``(N,)``.
        epochs_done: whole epochs done ``e_i``, ``(N,)``.
        total_epochs: ``E_i``, ``(N,)``.
        epoch_seconds: window-average epoch duration ``d_i``, seconds, ``(N,)``.
        remaining: expected remaining runtime ``Rhat_i``, seconds, ``(N,)``.
        targets: momentum finish-time targets ``F_i``, seconds, ``(N,)``.
        weights: ``p_i`` of the relaxation, ``(N,)``.
        round_index: ``r``, the current round.
        rounds: ``T``.
        round_seconds: ``tau``.
        gpus: ``G``.
        rho_max: the fairness bound.
        makespan_k: ``k`` (per second, in units of the normalised objective).
        time_limit: seconds per HiGHS solve.
    """

    gang_size: IntArray
    epochs_done: FloatArray
    total_epochs: FloatArray
    epoch_seconds: FloatArray
    remaining: FloatArray
    targets: FloatArray
    weights: FloatArray
    round_index: int
    rounds: int
    round_seconds: float
    gpus: int
    rho_max: float
    makespan_k: float
    time_limit: float


@dataclass(frozen=True)
class MilpPlan:
    """The schedule of one planning step and how it was obtained.

    Attributes:
        schedule: ``(N, T)`` booleans.
        path: ``"constrained"`` (the fairness-constrained program was solved), ``"relaxed"``
            (relaxation + rank program), ``"relaxed-unranked"`` (the rank program failed) or
            ``"failed"`` (no incumbent at all: nobody is planned; backfill fills the round).
        solve_seconds: HiGHS time of the step, seconds.
    """

    schedule: BoolArray
    path: str
    solve_seconds: float


def plan_milp(inputs: MilpInputs) -> MilpPlan:
    """Solve one planning step of the original program (module docs)."""
    n = inputs.gang_size.shape[0]
    t = inputs.rounds
    if n == 0:
        return MilpPlan(np.zeros((0, t), dtype=bool), "constrained", 0.0)
    constrained = _solve_main(inputs, np.ones(n), with_fairness=True)
    seconds = constrained[1]
    if constrained[0] is not None:
        return MilpPlan(constrained[0], "constrained", seconds)
    relaxed, more = _solve_main(inputs, inputs.weights, with_fairness=False)
    seconds += more
    if relaxed is None:
        return MilpPlan(np.zeros((n, t), dtype=bool), "failed", seconds)
    ranked, more = _rank(relaxed.sum(axis=1), inputs)
    seconds += more
    if ranked is None:
        return MilpPlan(relaxed, "relaxed-unranked", seconds)
    return MilpPlan(ranked, "relaxed", seconds)


def _solve_main(
    p: MilpInputs, weights: FloatArray, *, with_fairness: bool
) -> tuple[BoolArray | None, float]:
    n, t = p.gang_size.shape[0], p.rounds
    # variable layout: per job [x_0..x_{T-1}, de, l_0..l_5, z_0..z_5, R], then M
    width = t + 1 + 6 + 6 + 1
    nv = n * width + 1
    base = np.arange(n) * width
    ix = base[:, None] + np.arange(t)[None, :]
    ide = base + t
    il = base[:, None] + t + 1 + np.arange(6)[None, :]
    iz = base[:, None] + t + 7 + np.arange(6)[None, :]
    ir = base + t + 13
    im = n * width

    cost = np.zeros(nv)
    cost[il] = -(weights[:, None] * LOG_BREAKPOINTS[None, :]) / (n * t)
    cost[im] = p.makespan_k

    rows: list[sp.coo_matrix] = []
    lows: list[FloatArray] = []
    highs: list[FloatArray] = []

    def add(
        r: IntArray, c: IntArray, v: FloatArray, count: int, lo: FloatArray, hi: FloatArray
    ) -> None:
        rows.append(sp.coo_matrix((v, (r, c)), shape=(count, nv)))
        lows.append(lo)
        highs.append(hi)

    jobs = np.arange(n)
    # supply per round
    add(
        np.tile(np.arange(t), n),
        ix.reshape(-1),
        np.repeat(p.gang_size.astype(np.float64), t),
        t,
        np.full(t, -np.inf),
        np.full(t, float(p.gpus)),
    )
    # de_i d_i - tau sum_t x_it <= 0
    add(
        np.concatenate([jobs, np.repeat(jobs, t)]),
        np.concatenate([ide, ix.reshape(-1)]),
        np.concatenate([p.epoch_seconds, np.full(n * t, -p.round_seconds)]),
        n,
        np.full(n, -np.inf),
        np.zeros(n),
    )
    # sum_b l_ib = 1
    add(np.repeat(jobs, 6), il.reshape(-1), np.ones(6 * n), n, np.ones(n), np.ones(n))
    # sum_b l_ib b - de_i / E_i = e_i / E_i
    done = p.epochs_done / p.total_epochs
    add(
        np.concatenate([np.repeat(jobs, 6), jobs]),
        np.concatenate([il.reshape(-1), ide]),
        np.concatenate([np.tile(BREAKPOINTS, n), -1.0 / p.total_epochs]),
        n,
        done,
        done,
    )
    # l_ib - z_ib <= 0
    k6 = np.arange(6 * n)
    add(
        np.concatenate([k6, k6]),
        np.concatenate([il.reshape(-1), iz.reshape(-1)]),
        np.concatenate([np.ones(6 * n), -np.ones(6 * n)]),
        6 * n,
        np.full(6 * n, -np.inf),
        np.zeros(6 * n),
    )
    # sum_b z_ib <= 2
    add(np.repeat(jobs, 6), iz.reshape(-1), np.ones(6 * n), n, np.full(n, -np.inf), np.full(n, 2.0))
    # z_il + z_ir <= 1 for far pairs
    pairs = len(_FAR_PAIRS)
    left = np.array([a for a, _ in _FAR_PAIRS])
    right = np.array([b for _, b in _FAR_PAIRS])
    prow = np.arange(pairs * n)
    add(
        np.concatenate([prow, prow]),
        np.concatenate([iz[:, left].reshape(-1), iz[:, right].reshape(-1)]),
        np.ones(2 * pairs * n),
        pairs * n,
        np.full(pairs * n, -np.inf),
        np.ones(pairs * n),
    )
    # R_i + de_i d_i >= Rhat_i
    add(
        np.concatenate([jobs, jobs]),
        np.concatenate([ir, ide]),
        np.concatenate([np.ones(n), p.epoch_seconds]),
        n,
        p.remaining,
        np.full(n, np.inf),
    )
    # M - R_i >= 0
    add(
        np.concatenate([jobs, jobs]),
        np.concatenate([np.full(n, im), ir]),
        np.concatenate([np.ones(n), -np.ones(n)]),
        n,
        np.zeros(n),
        np.full(n, np.inf),
    )
    if with_fairness:
        share = min(1.0, p.gpus / n)
        bound = p.rho_max * p.targets - p.round_seconds * (p.round_index + t)
        add(jobs, ir, np.full(n, 1.0 / share), n, np.full(n, -np.inf), bound)

    lower = np.zeros(nv)
    upper = np.full(nv, np.inf)
    upper[ix] = 1.0
    upper[iz] = 1.0
    upper[il] = 1.0
    upper[ide] = np.maximum(p.total_epochs - p.epochs_done, 0.0)
    integrality = np.zeros(nv)
    integrality[ix] = 1
    integrality[iz] = 1
    matrix = sp.vstack(rows, format="csr")
    started = time.perf_counter()
    result = milp(
        cost,
        integrality=integrality,
        bounds=Bounds(lower, upper),
        constraints=LinearConstraint(matrix, np.concatenate(lows), np.concatenate(highs)),
        options={"time_limit": p.time_limit, "mip_rel_gap": 1e-3, "disp": False},
    )
    seconds = time.perf_counter() - started
    if not _has_incumbent(result):
        return None, seconds
    return result.x[ix] > 0.5, seconds


def _rank(planned: IntArray, p: MilpInputs) -> tuple[BoolArray | None, float]:
    """Re-time each job's planned rounds to the front by urgency (the original's rank step)."""
    n, t = p.gang_size.shape[0], p.rounds
    counts = planned.astype(np.float64)
    nv = n * t
    iy = np.arange(nv).reshape(n, t)
    safe = np.where(counts > 0, counts, 1.0)
    cost = (np.where(counts > 0, p.weights / safe, 0.0)[:, None] * np.arange(t)[None, :]).reshape(
        -1
    )
    jobs = np.arange(n)
    exact = sp.coo_matrix((np.ones(nv), (np.repeat(jobs, t), iy.reshape(-1))), shape=(n, nv))
    supply = sp.coo_matrix(
        (np.repeat(p.gang_size.astype(np.float64), t), (np.tile(np.arange(t), n), iy.reshape(-1))),
        shape=(t, nv),
    )
    started = time.perf_counter()
    result = milp(
        cost / max(float(np.abs(cost).max()), 1.0),
        integrality=np.ones(nv),
        bounds=Bounds(np.zeros(nv), np.ones(nv)),
        constraints=[
            LinearConstraint(exact.tocsr(), counts, counts),
            LinearConstraint(supply.tocsr(), -np.inf, float(p.gpus)),
        ],
        options={"time_limit": p.time_limit, "disp": False},
    )
    seconds = time.perf_counter() - started
    if not _has_incumbent(result):
        return None, seconds
    return result.x.reshape(n, t) > 0.5, seconds


def _has_incumbent(result: OptimizeResult) -> bool:
    """Solved, or stopped at the time limit with a feasible point (scipy status 0 or 1)."""
    return result.x is not None and result.status in (0, 1)
