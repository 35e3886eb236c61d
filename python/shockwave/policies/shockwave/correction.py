"""Least-change correction of a plan onto finish-time constraints (a QP solved by OSQP).

The market's shares are efficient and proportionally fair, but they give a job projected to miss
its fair finish time only as much as its (boosted) budget buys. The correction enforces, where the
cluster allows it, a *hard* floor on the rounds each such job is planned in the window, changing
the plan as little as possible:

    minimise    1/2 sum_it (x_it - m_it)^2  +  sum_i penalty_i s_i
    subject to  sum_i n_i x_it <= G                    every round t (supply)
                0 <= x_it <= 1, x_it = 0 where a_it = 0 (no planning rounds worth nothing)
                sum_t x_it + s_i >= r_i,  s_i >= 0     every job with a floor

``m`` is the market plan, ``r_i`` the rounds job ``i`` needs in the window to finish by its
target (``rho_max`` times its fair completion time), and ``s_i`` a slack that keeps the problem
feasible when the floors cannot all be met. Its linear penalty (``penalty_i``, proportional to
the job's urgency, the most urgent at 1,000 per round) makes a round of shortfall cost more than
moving the plan, and lets the least urgent floors give way first. Solved with OSQP (an
open-source ADMM QP solver); its point is clipped to the bounds and scaled into the supply, so the
plan is feasible whatever OSQP's status; a status other than "solved" is reported
(:attr:`Correction.status`), and a solve that ends without a point (e.g. infeasibility, which the
slacks rule out) keeps the market plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import osqp
import scipy.sparse as sp

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: OSQP statuses whose point is used: the point is made exactly feasible (clipped to its bounds,
#: scaled into the supply), so only the floors can be missed a little when it is not "solved".
ACCEPTED_STATUSES = ("solved", "solved inaccurate", "maximum iterations reached")

#: Status of a correction that had nothing to do (every floor already met by the market plan).
NO_CORRECTION_NEEDED = "not needed"

#: Cost of one round of shortfall against a floor (larger than any change of the plan costs).
SHORTFALL_PENALTY = 1e3


@dataclass(frozen=True)
class Correction:
    """Result of a correction.

    Attributes:
        shares: the corrected ``(N, T)`` shares (the market plan if the solve failed).
        shortfall: rounds each job's floor is missed by, ``(N,)`` (0 where met).
        status: OSQP's status text.
        solved: whether OSQP returned a usable point (otherwise ``shares`` is the market plan);
            with a status other than "solved" the floors may be met only approximately.
    """

    shares: FloatArray
    shortfall: FloatArray
    status: str
    solved: bool

    @property
    def inexact(self) -> bool:
        """A changed plan from a solve OSQP did not finish to "solved" (floors met loosely)."""
        return self.solved and self.status not in ("solved", NO_CORRECTION_NEEDED)


def required_rounds(
    now: float,
    target_completion: FloatArray,
    remaining: FloatArray,
    rounds: int,
    round_seconds: float,
) -> FloatArray:
    """Rounds each job needs in the next ``rounds`` to finish by ``target_completion``.

    A job that must finish by ``D`` with ``R`` seconds of work left needs a share ``R / (D -
    now)`` of the time from now (all of it if that is 1 or more, or if ``D`` has passed); within
    the window that is ``rounds`` times the share, and never more than the rounds of work left.
    """
    slack = target_completion - now
    share = np.where(slack > 0, remaining / np.where(slack > 0, slack, 1.0), 1.0)
    need: FloatArray = np.minimum(np.minimum(share, 1.0) * rounds, remaining / round_seconds)
    return need


def correct_plan(
    shares: FloatArray,
    valuations: FloatArray,
    gang_size: IntArray,
    supply: float,
    floor_rounds: FloatArray,
    urgency: FloatArray,
) -> Correction:
    """Project the market plan onto the floors (module docs).

    Args:
        shares: the market plan, ``(N, T)``.
        valuations: the market's valuations (rounds worth 0 are not planned), ``(N, T)``.
        gang_size: GPUs per job.
        supply: GPUs per round.
        floor_rounds: rounds each job should get in the window (0: no floor).
        urgency: relative cost of a round of shortfall per job (> 0): when the floors cannot all
            be met, the least urgent give way first.
    """
    jobs, rounds = shares.shape
    floor = np.minimum(floor_rounds, (valuations > 0).sum(axis=1))
    constrained = np.flatnonzero(floor > (shares.sum(axis=1) + 1e-9))
    if jobs == 0 or constrained.shape[0] == 0:
        return Correction(shares, np.zeros(jobs), NO_CORRECTION_NEEDED, True)
    k = constrained.shape[0]
    n_x = jobs * rounds
    # variables: x (row-major, job-major) then the slacks of the constrained jobs
    p = sp.diags(np.concatenate([np.ones(n_x), np.zeros(k)]), format="csc")
    weight = urgency[constrained] / float(urgency[constrained].max())
    q = np.concatenate([-shares.reshape(-1), SHORTFALL_PENALTY * np.maximum(weight, 1e-3)])
    # supply rows: sum_i n_i x_it
    cols = np.arange(n_x)
    supply_rows = sp.csr_matrix(
        (np.repeat(gang_size.astype(np.float64), rounds), (cols % rounds, cols)),
        shape=(rounds, n_x + k),
    )
    # floor rows: sum_t x_it + s_i
    floor_cols = (constrained[:, None] * rounds + np.arange(rounds)[None, :]).reshape(-1)
    floor_rows = sp.csr_matrix(
        (
            np.ones(k * rounds + k),
            (
                np.concatenate([np.repeat(np.arange(k), rounds), np.arange(k)]),
                np.concatenate([floor_cols, n_x + np.arange(k)]),
            ),
        ),
        shape=(k, n_x + k),
    )
    bounds = sp.identity(n_x + k, format="csr")
    a = sp.vstack([supply_rows, floor_rows, bounds], format="csc")
    upper_x = (valuations > 0).astype(np.float64).reshape(-1)
    lower = np.concatenate([np.full(rounds, -np.inf), floor[constrained], np.zeros(n_x + k)])
    upper = np.concatenate(
        [np.full(rounds, float(supply)), np.full(k, np.inf), upper_x, np.full(k, np.inf)]
    )
    solver = osqp.OSQP()
    solver.setup(p, q, a, lower, upper, verbose=False, eps_abs=1e-6, eps_rel=1e-6, polishing=True)
    result = solver.solve(raise_error=False)
    status = str(result.info.status)
    if status not in ACCEPTED_STATUSES or result.x is None:
        return Correction(shares, np.zeros(jobs), status, False)
    x = np.clip(result.x[:n_x].reshape(jobs, rounds), 0.0, upper_x.reshape(jobs, rounds))
    # restore exact supply feasibility after the solver's tolerance
    used = (x * gang_size[:, None]).sum(axis=0)
    over = used > supply
    if over.any():
        x[:, over] *= supply / used[over]
    shortfall = np.zeros(jobs)
    shortfall[constrained] = np.maximum(result.x[n_x:], 0.0)
    return Correction(x, shortfall, status, True)
