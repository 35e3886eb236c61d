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

from shockwave.heterogeneous.barrier import BarrierError, JobRowsProgram, base_rows, central_path

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: ECOS's relative duality-gap tolerance: the barrier weight at which a program's central point
#: is taken is this times the optimal value over the number of inequalities.
ECOS_RELATIVE_GAP = 1e-8


class BasePrograms:
    """Gavel's base constraints for one allocation (``n`` jobs, ``K`` types), built once and
    shared by the programs solved for it."""

    def __init__(self, throughput: FloatArray, gang: IntArray, counts: IntArray) -> None:
        self.throughput = np.asarray(throughput, dtype=np.float64)
        self.n, self.k = self.throughput.shape
        self.gang = gang.astype(np.float64)
        self.counts = counts.astype(np.float64)
        n, k = self.n, self.k
        nk = n * k
        self._rates = sp.csr_matrix(
            (self.throughput.reshape(-1), (np.repeat(np.arange(n), k), np.arange(nk))),
            shape=(n, nk),
        )
        self._base = sp.vstack(
            [
                -sp.identity(nk, format="csr"),
                sp.kron(sp.csr_matrix(self.gang[None, :]), sp.identity(k), format="csr"),
                sp.kron(sp.identity(n), sp.csr_matrix(np.ones((1, k))), format="csr"),
            ],
            format="csr",
        )
        self._base_rhs = np.concatenate([np.zeros(nk), self.counts, np.ones(n)])
        self._with_rates = sp.vstack([self._base, -self._rates], format="csr")
        self.inequalities = self._base.shape[0] + n

    def start(self) -> FloatArray:
        """A strictly feasible ``X`` of the base constraints: half of an equal share."""
        share = 0.5 * min(1.0 / self.k, float(self.counts.min()) / float(self.gang.sum()))
        return np.full((self.n, self.k), share)

    def feasible(self, required: FloatArray) -> bool:
        """Whether some ``X`` gives every job ``sum_k T[i, k] X[i, k] >= required_i`` (HiGHS)."""
        h = np.concatenate([self._base_rhs, -required])
        result = linprog(np.zeros(self.n * self.k), A_ub=self._with_rates, b_ub=h,
                         bounds=(None, None), method="highs")  # fmt: skip
        return bool(result.status == 0)

    def max_min(self, weights: FloatArray) -> FloatArray:
        """``max min_i sum_k W[i, k] X[i, k]``: the central point at ECOS's tolerance."""
        weighted = sp.csr_matrix(
            (weights.reshape(-1), self._rates.indices, self._rates.indptr), shape=self._rates.shape
        )
        # max t s.t. t - W_i . X_i <= 0 (HiGHS for the optimal value: the barrier's scale)
        a = sp.vstack(
            [sp.hstack([self._base, sp.csr_matrix((self._base.shape[0], 1))]),
             sp.hstack([-weighted, sp.csr_matrix(np.ones((self.n, 1)))])], format="csr",
        )  # fmt: skip
        c = np.zeros(self.n * self.k + 1)
        c[-1] = -1.0
        h = np.concatenate([self._base_rhs, np.zeros(self.n)])
        best = _optimum(c, a, h)
        rows, rows_t, rhs = base_rows(self.throughput, -weights, 1.0, np.zeros(self.n))
        program = JobRowsProgram(np.zeros_like(weights), 1.0, rows, rows_t, rhs, self.gang,
                                 self.counts, has_t=True)  # fmt: skip
        x0 = self.start()
        t0 = float(np.min(np.sum(weights * x0, axis=1))) - max(abs(best), 1e-9)
        mu = ECOS_RELATIVE_GAP * max(abs(best), 1e-12) / self.inequalities
        x, _ = central_path(program, x0, t0, mu, mu_start=max(abs(best), 1e-9))
        return x

    def max_sum(self, objective: FloatArray) -> FloatArray:
        """``max sum_ik C[i, k] X[i, k]``: the central point at ECOS's tolerance."""
        c = -objective.reshape(-1)
        best = _optimum(c, self._base, self._base_rhs)
        rows, rows_t, rhs = base_rows(self.throughput, None, 0.0, None)
        program = JobRowsProgram(objective, 0.0, rows, rows_t, rhs, self.gang, self.counts,
                                 has_t=False)  # fmt: skip
        mu = ECOS_RELATIVE_GAP * max(abs(best), 1e-12) / self._base.shape[0]
        x, _ = central_path(program, self.start(), 0.0, mu, mu_start=max(abs(best), 1e-9))
        return x

    def feasible_center(self, required: FloatArray) -> FloatArray:
        """The analytic center of ``{X : base, sum_k T[i, k] X[i, k] >= required_i}`` (what an
        interior-point solver converges to on a feasibility program).

        Raises:
            BarrierError: if the set has no interior.
        """
        # phase one: max t s.t. T_i . X_i - t >= required_i, from the base constraints' start
        rows, rows_t, rhs = base_rows(self.throughput, -self.throughput, 1.0, -required)
        phase_one = JobRowsProgram(np.zeros((self.n, self.k)), 1.0, rows, rows_t, rhs,
                                   self.gang, self.counts, has_t=True)  # fmt: skip
        x0 = self.start()
        gap = np.sum(self.throughput * x0, axis=1) - required
        t0 = float(gap.min()) - max(1.0, float(np.abs(gap).max()))
        x, t = central_path(phase_one, x0, t0, 1e-12, mu_start=max(1.0, abs(t0)),
                            stop_when_t_positive=True)  # fmt: skip
        if not t > 0.0:
            raise BarrierError("the feasible set has no interior")
        rows, rows_t, rhs = base_rows(self.throughput, -self.throughput, 0.0, -required)
        center = JobRowsProgram(np.zeros((self.n, self.k)), 0.0, rows, rows_t, rhs, self.gang,
                                self.counts, has_t=False)  # fmt: skip
        x, _ = central_path(center, x, 0.0, 1.0, mu_start=1.0)
        return x


def _optimum(c: FloatArray, a: sp.csr_matrix, h: FloatArray) -> float:
    """The optimal value of ``max -c.z s.t. A z <= h`` (HiGHS)."""
    result = linprog(c, A_ub=a, b_ub=h, bounds=(None, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"HiGHS could not solve the program: {result.message}")
    return float(-result.fun)
