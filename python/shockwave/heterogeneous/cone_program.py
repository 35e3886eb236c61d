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

**Identical jobs held once.** Jobs whose every coefficient is the same (Gavel's traces draw a
few dozen job kinds, so a round's thousands of jobs fall in a few hundred classes) have the same
iterates all through the interior-point method: each job's part of every step is computed from
its own coefficients and the shared unknowns only, and numpy computes a row the same wherever it
lies. :meth:`BlockConeProgram.merged` holds each class once (``members[i]`` the row of job
``i``); the per-job work (the blocks' factorisations, their products) is then done once per class,
while every sum over jobs (inner products, norms, the Schur complement, the coupling rows) is still
taken over all jobs, in their order and with the operands' memory layout of a program without
classes, so the results are the same bits. The largest of those sums (the Schur complement and
the refined solves', :meth:`BlockConeProgram.job_sum`) add the classes' products job after job in
Rust, in the order numpy's ``einsum`` adds them, without a row per job in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache, cached_property

import numpy as np
import numpy.typing as npt

from shockwave import _core

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
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
    #: ``None``: one row per job in the per-job arrays. Otherwise they hold one row per class of
    #: identical jobs and job ``i`` is row ``members[i]`` (:meth:`merged`).
    members: IntArray | None = None

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
        m = self.members
        if m is not None and (m.ndim != 1 or (m.size and not 0 <= m.min() <= m.max() < n)):
            raise ValueError(f"members must be a vector of row indices below {n}")

    @property
    def num_jobs(self) -> int:
        """The program's jobs."""
        return int(self.local_job.shape[0] if self.members is None else self.members.shape[0])

    @property
    def num_blocks(self) -> int:
        """Rows of the per-job arrays: the jobs, or their classes in a :meth:`merged` program."""
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

    def merged(self) -> BlockConeProgram:
        """This program with each class of identical jobs (the same bits in every coefficient)
        held once (module notes); itself when no two jobs are identical."""
        if self.members is not None:
            return self
        n = self.num_jobs
        rows = np.concatenate(
            [
                a.reshape(n, -1)
                for a in (
                    self.job_c,
                    self.local_job,
                    self.local_global,
                    self.local_h,
                    np.swapaxes(self.coupling, 0, 1),
                )
            ],
            axis=1,
        )
        keys = np.ascontiguousarray(rows).view(np.uint64)
        # classes by a hash of each row's bits (wrapping uint64 arithmetic), checked row by row;
        # on a collision, by the rows themselves (a sort of whole rows, slower)
        hashed = (keys * _hash_multipliers(keys.shape[1])).sum(axis=1, dtype=np.uint64)
        _, first, members = np.unique(hashed, return_index=True, return_inverse=True)
        if not np.array_equal(keys, keys[first[members]]):
            _, first, members = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        if first.shape[0] == n:
            return self
        # classes in the order of their first job
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        keep = first[order]
        return replace(
            self,
            job_c=self.job_c[keep],
            local_job=self.local_job[keep],
            local_global=self.local_global[keep],
            local_h=self.local_h[keep],
            coupling=self.coupling[:, keep],
            members=rank[members.reshape(-1)],
        )

    def expand(self, a: FloatArray) -> FloatArray:
        """A per-job array of this program's rows, one row per job (a merged program's class
        rows repeated), with ``a``'s strides: the bits of numpy's sums over an array depend on
        its memory layout, and the sums must be those of a program without classes."""
        if self.members is None:
            return a
        item = a.itemsize
        # a view of the first columns of a C-ordered parent (the strides tell, not the flags: a
        # one-row view counts as contiguous): the same view of a gathered parent
        if a.ndim == 2 and a.strides[1] == item and a.strides[0] > a.shape[1] * item:
            pitch, rest = divmod(a.strides[0], item)
            if rest:
                raise ValueError("expand takes C-ordered arrays or column slices of them")
        elif a.flags.c_contiguous:
            return np.take(a, self.members, axis=0)  # (faster than a[self.members])
        else:
            raise ValueError("expand takes C-ordered arrays or column slices of them")
        parent = np.empty((self.members.shape[0], pitch))
        out = parent[:, : a.shape[1]]
        out[...] = np.take(a, self.members, axis=0)
        return out

    @cached_property
    def _job_coupling(self) -> FloatArray:
        """``coupling`` with a row per job (C-ordered, as a program without classes holds it)."""
        if self.members is None:
            return self.coupling
        return np.ascontiguousarray(np.take(self.coupling, self.members, axis=1))

    def apply(self, x: Primal) -> Rows:
        """``G x``."""
        xj, xg = x
        local = np.einsum("nrb,nb->nr", self.local_job, xj)
        if xg.shape[0]:
            local += self.local_global @ xg
        return local, np.einsum("cnb,nb->c", self._job_coupling, self.expand(xj))

    def apply_transpose(self, z: Rows) -> Primal:
        """``G' z``."""
        zl, zc = z
        xj = np.einsum("nrb,nr->nb", self.local_job, zl) + np.einsum("cnb,c->nb", self.coupling, zc)
        if self.members is None:
            xg = np.einsum("nrg,nr->g", self.local_global, zl)
        else:
            xg = np.einsum("nrg,nr->g", self.expand(self.local_global), self.expand(zl))
        return xj, xg

    def job_sum(self, subscripts: str, blocks: FloatArray, per_block: FloatArray) -> FloatArray:
        """``np.einsum(subscripts, blocks, per_block)`` over every job (``subscripts`` is
        ``"nik,ni->k"`` or ``"nij,nik->jk"``: a sum over jobs ``n`` and rows ``i``), its bits
        included. A merged program's products are formed once per class and added job after
        job in Rust (:func:`shockwave._core.class_sum`), in einsum's order: that is checked once
        per process (:func:`ordered_sums_match_einsum`); where it fails, the classes' rows are
        repeated and einsum sums them."""
        if self.members is None:
            out: FloatArray = np.einsum(subscripts, blocks, per_block)
        elif not ordered_sums_match_einsum():
            out = np.einsum(subscripts, self.expand(blocks), self.expand(per_block))
        else:
            out = _ordered_sum(subscripts, blocks, per_block, self.members)
        return out

    def dot(self, a: tuple[FloatArray, FloatArray], b: tuple[FloatArray, FloatArray]) -> float:
        """Inner product of two vectors of the same space (over every job)."""
        return float(np.sum(self.expand(a[0] * b[0])) + np.sum(a[1] * b[1]))

    def norm(self, a: tuple[FloatArray, FloatArray]) -> float:
        """Euclidean norm (over every job)."""
        return float(np.sqrt(np.sum(self.expand(a[0] * a[0])) + np.sum(a[1] * a[1])))

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


def _ordered_sum(
    subscripts: str, blocks: FloatArray, per_block: FloatArray, members: IntArray
) -> FloatArray:
    """:meth:`BlockConeProgram.job_sum` by the classes' products, added in Rust."""
    n, rows, width = blocks.shape
    if subscripts == "nik,ni->k":
        terms = blocks * per_block[:, :, None]
        shape: tuple[int, ...] = (width,)
    elif subscripts == "nij,nik->jk":
        terms = (blocks[:, :, :, None] * per_block[:, :, None, :]).reshape(n, rows, -1)
        shape = (width, per_block.shape[2])
    else:
        raise ValueError(f"job_sum does not take {subscripts!r}")
    out = _core.class_sum(np.ascontiguousarray(terms), members.astype(np.int64, copy=False))
    return out.reshape(shape)


@cache
def ordered_sums_match_einsum() -> bool:
    """Whether :func:`_ordered_sum` gives numpy's ``einsum`` bits on this machine (numpy's
    einsum adds in order, from zero, multiply then add: checked on sums over a few hundred jobs
    of values spread over 16 orders of magnitude, where another order or a fused multiply-add
    would show)."""
    rng = np.random.default_rng(20261202)

    def spread(*shape: int) -> FloatArray:
        return rng.standard_normal(shape) * 10.0 ** rng.uniform(-8.0, 8.0, shape)

    members = rng.integers(0, 5, 300).astype(np.intp)
    blocks, vector, matrix = spread(5, 8, 4), spread(5, 8), spread(5, 8, 4)
    return all(
        np.array_equal(
            _ordered_sum(subscripts, blocks, other, members),
            np.einsum(subscripts, blocks[members], other[members]),
        )
        for subscripts, other in (("nik,ni->k", vector), ("nij,nik->jk", matrix))
    )


def _hash_multipliers(width: int) -> npt.NDArray[np.uint64]:
    """Fixed odd multipliers, one per column of a row hashed by :meth:`BlockConeProgram.merged`."""
    rng = np.random.default_rng(0x5EED)
    odd: npt.NDArray[np.uint64] = rng.integers(1, 2**63, size=width, dtype=np.uint64)
    odd *= np.uint64(2)
    odd += np.uint64(1)
    return odd


def _root(maxima: FloatArray) -> FloatArray:
    return np.where(np.abs(maxima) < _EQUILIBRATION_FLOOR, 1.0, np.sqrt(maxima))


def max_abs(a: tuple[FloatArray, FloatArray]) -> float:
    """Infinity norm."""
    return float(max(np.max(np.abs(a[0]), initial=0.0), np.max(np.abs(a[1]), initial=0.0)))
