"""The interior-point method's linear systems for a :class:`BlockConeProgram`, solved by blocks.

Each iteration solves the regularised KKT system ECOS solves (Domahidi, Chu, Boyd, ECC 2013:
static regularisation ``delta`` on the diagonal, iterative refinement)::

    [ delta I     G'  ] [dx]   [r_x]
    [   G       -Phi  ] [dz] = [r_z],    Phi = W^2 + delta R

``W^2`` the Nesterov-Todd scaling of the cones (the identity for the initial point's systems),
``R`` ECOS's sign pattern of the regularisation (``+1`` on every row, ``-1`` on the last row of
each second-order cone). As in ECOS, a second-order cone's ``W^2`` (dense, and numerically
singular near an optimum) is never formed: its sparse expansion with two extra unknowns per cone,
``eta^2 [[D, v, u], [v', 1, 0], [u', 0, -1]]`` (``D = diag(d1, 1, ..., 1)``, ``v = (0, v1 q)``,
``u = (u0, u1 q)``), stands in for it, and eliminating the extra unknowns gives back ``W^2``.

In the per-job layout the system is block-angular: each job's variables, local rows and extra
unknowns form a small augmented block ``K_i``; the global variables and the coupling rows (a
handful) join them all. The blocks are inverted one by one (LU with pivoting) and the shared
unknowns solved from their Schur complement, ``O(n L^3)`` with ``L`` the block size; the
solution is then refined on the full system with ECOS's rules. In a merged program
(:meth:`BlockConeProgram.merged`) a class of identical jobs has one block, factored once; the
Schur complement and the other sums over jobs still run over every job.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave.heterogeneous.cone_program import (
    BlockConeProgram,
    FloatArray,
    Primal,
    Rows,
    max_abs,
)

#: ECOS's static regularisation (``DELTASTAT``).
STATIC_REGULARIZATION = 7e-8
#: ECOS's iterative refinement: at most this many steps (``NITREF``), ...
REFINEMENT_STEPS = 9
#: ... stopping below this error relative to ``1 + ||rhs||_inf`` (``LINSYSACC``) ...
REFINEMENT_ACCURACY = 1e-14
#: ... or when a step reduces the error by less than this factor (``IRERRFACT``).
REFINEMENT_FACTOR = 6.0


@dataclass(frozen=True)
class ConeWeights:
    """``Phi`` by blocks: linear rows ``(n, lp)`` and ``(C,)``; each second-order cone's expanded
    block ``(n, cones, p + 2, p + 2)`` (its rows, then its two extra unknowns)."""

    local_lp: FloatArray
    coupling: FloatArray
    cones: FloatArray


def soc_regularization(program: BlockConeProgram) -> FloatArray:
    """ECOS's regularisation on an expanded cone block: ``delta`` on the cone's rows but
    ``-delta`` on its last row, none on the extra unknowns."""
    pattern = np.zeros(program.soc_size + 2)
    if program.soc_size:
        pattern[: program.soc_size] = STATIC_REGULARIZATION
        pattern[program.soc_size - 1] = -STATIC_REGULARIZATION
    return pattern


def identity_weights(program: BlockConeProgram) -> ConeWeights:
    """``Phi`` of the initial point's systems: ``I`` plus the regularisation (the extra unknowns
    of the cones decoupled)."""
    n, p, cones = program.num_blocks, program.soc_size, program.num_cones
    block = np.diag(1.0 + soc_regularization(program)) if cones else np.zeros((p + 2, p + 2))
    return ConeWeights(
        local_lp=np.full((n, program.lp_rows), 1.0 + STATIC_REGULARIZATION),
        coupling=np.full(program.coupling_h.shape[0], 1.0 + STATIC_REGULARIZATION),
        cones=np.broadcast_to(block, (n, cones, p + 2, p + 2)).copy(),
    )


def shared_columns(program: BlockConeProgram) -> FloatArray:
    """How the shared unknowns (global variables, coupling ``dz``) enter each block's equations,
    ``H_i`` ``(blocks, size, g + c)``: fixed by the program, so built once per solve."""
    n, r, b = program.local_job.shape
    g = program.global_c.shape[0]
    c = program.coupling_h.shape[0]
    shared = np.zeros((n, b + r + 2 * program.num_cones, g + c))
    shared[:, b : b + r, :g] = program.local_global
    shared[:, :b, g:] = np.transpose(program.coupling, (1, 2, 0))
    return shared


class BlockKKT:
    """The factored system for one ``Phi`` (``shared``: the program's :func:`shared_columns`);
    :meth:`solve` returns ``(dx, dz)``."""

    def __init__(
        self,
        program: BlockConeProgram,
        weights: ConeWeights,
        shared: FloatArray,
    ) -> None:
        self.program = program
        delta = STATIC_REGULARIZATION
        lp, p, cones = program.lp_rows, program.soc_size, program.num_cones
        n, r, b = program.local_job.shape
        g = program.global_c.shape[0]
        size = b + r + 2 * cones
        self.sizes = (b, r, g)
        local = np.zeros((n, size, size))
        local[:, :b, :b] = delta * np.eye(b)
        local[:, :b, b : b + r] = np.swapaxes(program.local_job, 1, 2)
        local[:, b : b + r, :b] = program.local_job
        rows = np.arange(b, b + lp)
        local[:, rows, rows] = -weights.local_lp
        for cone in range(cones):
            at = np.concatenate([b + lp + cone * p + np.arange(p), b + r + 2 * cone + np.arange(2)])
            local[:, at[:, None], at[None, :]] = -weights.cones[:, cone]
        self.local = local
        self.shared = shared
        self.diagonal = np.concatenate([np.full(g, delta), -weights.coupling])
        self.local_inverse = np.linalg.inv(local)
        self.inverse_shared = np.einsum("nij,njk->nik", self.local_inverse, shared)
        # blocks once per class; the sums over jobs over every job (BlockConeProgram.job_sum)
        schur = np.diag(self.diagonal) - program.job_sum("nij,nik->jk", shared, self.inverse_shared)
        self.schur_inverse = np.linalg.inv(schur) if self.diagonal.shape[0] else schur

    def _direct(
        self, local_rhs: FloatArray, shared_rhs: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        solved = np.einsum("nij,nj->ni", self.local_inverse, local_rhs)
        rhs = shared_rhs - self.program.job_sum("nik,ni->k", self.shared, solved)
        shared = self.schur_inverse @ rhs
        solved -= self.inverse_shared @ shared
        return solved, shared

    def _residual(
        self, local_rhs: FloatArray, shared_rhs: FloatArray, w: FloatArray, y: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        local = local_rhs - np.einsum("nij,nj->ni", self.local, w) - self.shared @ y
        shared = shared_rhs - self.program.job_sum("nik,ni->k", self.shared, w) - self.diagonal * y
        return local, shared

    def solve(self, rx: Primal, rz: Rows) -> tuple[Primal, Rows]:
        """``(dx, dz)``, refined on the full system with ECOS's rules (at most 9 steps, until
        the error is below ``1e-14 (1 + ||rhs||_inf)``, undoing a step that made it worse)."""
        b, r, g = self.sizes
        n = rx[0].shape[0]
        local_rhs = np.concatenate([rx[0], rz[0], np.zeros((n, self.local.shape[1] - b - r))], 1)
        shared_rhs = np.concatenate([rx[1], rz[1]])
        threshold = (1.0 + max(max_abs(rx), max_abs(rz))) * REFINEMENT_ACCURACY
        w, y = self._direct(local_rhs, shared_rhs)
        previous = np.nan
        correction: tuple[FloatArray, FloatArray] | None = None
        for step in range(REFINEMENT_STEPS + 1):
            e_local, e_shared = self._residual(local_rhs, shared_rhs, w, y)
            error = max_abs((e_local, e_shared))
            if step > 0 and error > previous and correction is not None:
                w, y = w - correction[0], y - correction[1]
                break
            if (step == REFINEMENT_STEPS or error < threshold
                    or (step > 0 and previous < REFINEMENT_FACTOR * error)):  # fmt: skip
                break
            previous = error
            correction = self._direct(e_local, e_shared)
            w, y = w + correction[0], y + correction[1]
        return (w[:, :b], y[:g]), (w[:, b : b + r], y[g:])
