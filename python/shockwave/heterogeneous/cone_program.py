"""Conic programs with one block of variables per job, the form all of Gavel's programs take.

A :class:`BlockConeProgram` is ``min c.x  s.t.  G x + s = h,  s in K`` (ECOS's standard form, no
equality constraints), with variables and rows laid out by job:

* variables: ``b`` per job (``x_job``, shape ``(n, b)``: the shares ``X[i, :]`` and any
  auxiliary variable of the job) and ``g`` global ones (``x_global``, e.g. an epigraph
  variable);
* **local rows**, ``R`` per job, touching that job's variables and the global ones:
  ``local_job`` ``(n, R, b)``, ``local_global`` ``(n, R, g)``, ``local_h`` ``(n, R)``; the first
  ``lp_rows`` are linear inequalities (``s >= 0``), the others second-order cones of
  ``soc_size`` rows each (``s_0 >= ||s_1:||``), the same for every job;
* **coupling rows**, linear inequalities touching job variables only: ``coupling``
  ``(C, n, b)``, ``coupling_h`` ``(C,)`` (Gavel's capacity rows ``sum_i gang_i X[i, k] <= N_k``).

Vectors of the row space are pairs ``(local (n, R), coupling (C,))``; of the variable space,
pairs ``(job (n, b), global (g,))``. The layout is ours: the interior-point method of
:mod:`shockwave.heterogeneous.interior_point` is invariant under permutations of rows and
variables, so only the coefficients need to match the program a modelling layer hands a solver.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
#: A vector of the variable space: ``(per-job variables (n, b), global variables (g,))``.
Primal = tuple[FloatArray, FloatArray]
#: A vector of the row space: ``(local rows (n, R), coupling rows (C,))``.
Rows = tuple[FloatArray, FloatArray]

#: Ruiz equilibration passes (ECOS's ``EQUIL_ITERS``).
EQUILIBRATION_PASSES = 3
#: Row or column maxima below this are left unscaled (ECOS's rule).
_EQUILIBRATION_FLOOR = 1e-6


@dataclass(frozen=True)
class BlockConeProgram:
    """``min c.x s.t. G x + s = h, s in K`` in the per-job layout (see the module notes)."""

    job_c: FloatArray
    global_c: FloatArray
    local_job: FloatArray
    local_global: FloatArray
    local_h: FloatArray
    lp_rows: int
    soc_size: int
    coupling: FloatArray
    coupling_h: FloatArray

    def __post_init__(self) -> None:
        n, r, b = self.local_job.shape
        g = self.global_c.shape[0]
        if self.job_c.shape != (n, b):
            raise ValueError(f"job_c must be {(n, b)}, got {self.job_c.shape}")
        if self.local_global.shape != (n, r, g):
            raise ValueError(f"local_global must be {(n, r, g)}, got {self.local_global.shape}")
        if self.local_h.shape != (n, r):
            raise ValueError(f"local_h must be {(n, r)}, got {self.local_h.shape}")
        if not 0 <= self.lp_rows <= r:
            raise ValueError(f"lp_rows must be in [0, {r}], got {self.lp_rows}")
        cone_rows = r - self.lp_rows
        if cone_rows and (self.soc_size < 2 or cone_rows % self.soc_size):
            raise ValueError(f"{cone_rows} cone rows do not split into cones of {self.soc_size}")
        c = self.coupling_h.shape[0]
        if self.coupling.shape != (c, n, b):
            raise ValueError(f"coupling must be {(c, n, b)}, got {self.coupling.shape}")

    @property
    def num_jobs(self) -> int:
        return int(self.local_job.shape[0])

    @property
    def num_cones(self) -> int:
        """Second-order cones per job."""
        rows = self.local_job.shape[1] - self.lp_rows
        return rows // self.soc_size if rows else 0

    @property
    def degree(self) -> int:
        """The cone's degree: linear rows plus second-order cones (ECOS's ``D``)."""
        return self.num_jobs * (self.lp_rows + self.num_cones) + int(self.coupling_h.shape[0])

    def apply(self, x: Primal) -> Rows:
        """``G x``."""
        xj, xg = x
        local = np.einsum("nrb,nb->nr", self.local_job, xj)
        if xg.shape[0]:
            local += self.local_global @ xg
        return local, np.einsum("cnb,nb->c", self.coupling, xj)

    def apply_transpose(self, z: Rows) -> Primal:
        """``G' z``."""
        zl, zc = z
        xj = np.einsum("nrb,nr->nb", self.local_job, zl) + np.einsum("cnb,c->nb", self.coupling, zc)
        xg = np.einsum("nrg,nr->g", self.local_global, zl)
        return xj, xg

    def equilibrate(self) -> tuple[BlockConeProgram, Primal, Rows]:
        """ECOS's Ruiz equilibration: ``EQUILIBRATION_PASSES`` passes dividing every row and
        column by the square root of its largest magnitude (a cone's rows share the sum of their
        maxima); returns the scaled program and the column and row scales (``x = x_scaled /
        column_scale``, ``s = s_scaled * row_scale``). The objective is scaled too."""
        aj, ag, cp = self.local_job.copy(), self.local_global.copy(), self.coupling.copy()
        n, r, b = aj.shape
        col_j, col_g = np.ones((n, b)), np.ones(ag.shape[2])
        row_l, row_c = np.ones((n, r)), np.ones(cp.shape[0])
        lp = self.lp_rows
        for _ in range(EQUILIBRATION_PASSES):
            abs_j, abs_g, abs_c = np.abs(aj), np.abs(ag), np.abs(cp)
            cj = abs_j.max(axis=1, initial=0.0)
            if cp.shape[0]:
                cj = np.maximum(cj, abs_c.max(axis=0))
            cg = abs_g.max(axis=(0, 1), initial=0.0)
            rl = np.maximum(abs_j.max(axis=2, initial=0.0), abs_g.max(axis=2, initial=0.0))
            if self.num_cones:
                cones = rl[:, lp:].reshape(n, self.num_cones, self.soc_size)
                total = cones.sum(axis=2, keepdims=True)
                rl[:, lp:] = np.broadcast_to(total, cones.shape).reshape(n, -1)
            rc = abs_c.max(axis=(1, 2), initial=0.0)
            cj, cg, rl, rc = (_root(v) for v in (cj, cg, rl, rc))
            aj /= rl[:, :, None]
            ag /= rl[:, :, None]
            cp /= rc[:, None, None]
            aj /= cj[:, None, :]
            ag /= cg[None, None, :]
            cp /= cj[None, :, :]
            col_j *= cj
            col_g *= cg
            row_l *= rl
            row_c *= rc
        scaled = replace(
            self,
            job_c=self.job_c / col_j,
            global_c=self.global_c / col_g,
            local_job=aj,
            local_global=ag,
            local_h=self.local_h / row_l,
            coupling=cp,
            coupling_h=self.coupling_h / row_c,
        )
        return scaled, (col_j, col_g), (row_l, row_c)


def _root(maxima: FloatArray) -> FloatArray:
    return np.where(np.abs(maxima) < _EQUILIBRATION_FLOOR, 1.0, np.sqrt(maxima))


def dot(a: tuple[FloatArray, FloatArray], b: tuple[FloatArray, FloatArray]) -> float:
    """Inner product of two vectors of the same space."""
    return float(np.sum(a[0] * b[0]) + np.sum(a[1] * b[1]))


def norm(a: tuple[FloatArray, FloatArray]) -> float:
    """Euclidean norm."""
    return float(np.sqrt(np.sum(a[0] * a[0]) + np.sum(a[1] * a[1])))


def max_abs(a: tuple[FloatArray, FloatArray]) -> float:
    """Infinity norm."""
    return float(max(np.max(np.abs(a[0]), initial=0.0), np.max(np.abs(a[1]), initial=0.0)))
