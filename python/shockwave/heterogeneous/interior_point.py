"""ECOS's interior-point method, for the linear and second-order cone programs of Gavel's
policies, written from its paper (Domahidi, Chu, Boyd, "ECOS: An SOCP solver for embedded
systems", ECC 2013) with the constants and rules of ECOS 2.0.10 (the version Gavel's simulator
ran under cvxpy 1.5). No ECOS code: the algorithm, its constants and its stopping rules, re-stated.

Why ECOS's algorithm and not just any solver: Gavel's programs often have many optimal (or, for
its horizon search, feasible) points, and Gavel takes the one ECOS stops at. A different solver,
or the same central path followed differently, returns another point and the simulation drifts
(by up to 12 % in average JCT for ``min_total_duration_perf``). Following ECOS step by step
returns its point, to about ``1e-9`` on linear programs.

The method (all of it ECOS's):

* **equilibration**: three Ruiz passes on ``G`` (:meth:`BlockConeProgram.equilibrate`);
* **homogeneous self-dual embedding** with ``tau``, ``kappa`` (both 1 at the start);
* **initial point** (Vandenberghe's, as CVXOPT's): ``x`` minimising ``||G x - h||`` and ``s`` its
  residual, ``z`` the least-norm dual, each shifted into the cone by ``1 + max(-0.99, the largest
  violation)`` along the identity;
* **Nesterov-Todd scaling** of every cone; a **Mehrotra predictor-corrector** step: affine
  direction, centering ``sigma = (1 - alpha_affine)^3`` clipped to ``[1e-4, 1]``, combined
  direction with the second-order correction;
* **step length**: the longest step keeping the cones, ``tau`` and ``kappa`` feasible, clipped
  to ``[1e-6, 0.999]`` and scaled by 0.99;
* **linear systems** regularised by ``7e-8`` and refined (:mod:`.block_kkt`);
* **stopping**: optimal when the residuals are below ``1e-8`` and the gap below ``1e-8``
  (absolute or relative); infeasible when a certificate's residual is below ``1e-8``; after 100
  iterations, a failed step or a numerical breakdown, the best iterate is checked against the
  relaxed tolerances (``1e-4``, ``5e-5``, ``5e-5``) and reported as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from shockwave.heterogeneous.block_kkt import (
    STATIC_REGULARIZATION,
    BlockKKT,
    ConeWeights,
    identity_weights,
    shared_columns,
    soc_regularization,
)
from shockwave.heterogeneous.cone_program import (
    BlockConeProgram,
    FloatArray,
    Primal,
    Rows,
)

#: Divisions by a denominator below this use it instead (ECOS's ``SAFEDIV_POS``).
_SAFE_DENOMINATOR = 1e-13
#: Final step scaling (``GAMMA``); also ECOS's initial shift ``-GAMMA`` into the cones.
STEP_SCALE = 0.99
STEP_MIN, STEP_MAX = 1e-6, 0.999
SIGMA_MIN, SIGMA_MAX = 1e-4, 1.0
FEASIBILITY_TOLERANCE = 1e-8
ABSOLUTE_TOLERANCE = 1e-8
RELATIVE_TOLERANCE = 1e-8
INACCURATE_TOLERANCES = (1e-4, 5e-5, 5e-5)
MAX_ITERATIONS = 100
#: A primal residual growing by this factor in one iteration stops the method.
_RESIDUAL_SAFEGUARD = 500.0


class ExitFlag(IntEnum):
    """ECOS's exit codes (cvxpy maps them to its statuses)."""

    OPTIMAL = 0
    PRIMAL_INFEASIBLE = 1
    DUAL_INFEASIBLE = 2
    OPTIMAL_INACCURATE = 10
    PRIMAL_INFEASIBLE_INACCURATE = 11
    DUAL_INFEASIBLE_INACCURATE = 12
    MAX_ITERATIONS = -1
    NUMERICS = -2
    OUTSIDE_CONE = -3


@dataclass(frozen=True)
class ConeSolution:
    """What the method returns: the primal point (in the program's layout, unscaled), ECOS's exit
    flag and the iterations run."""

    x_job: FloatArray
    x_global: FloatArray
    flag: ExitFlag
    iterations: int

    @property
    def optimal(self) -> bool:
        """cvxpy's ``"optimal"`` (exit flag 0)."""
        return self.flag is ExitFlag.OPTIMAL

    @property
    def failed(self) -> bool:
        """cvxpy's ``SolverError`` (a negative exit flag: no point is returned)."""
        return int(self.flag) < 0


def _safe_divide(x: FloatArray, y: FloatArray) -> FloatArray:
    small = y < _SAFE_DENOMINATOR
    return np.where(small, x / _SAFE_DENOMINATOR, x / np.where(small, 1.0, y))


class _Cones:
    """The cone of a program: its linear rows and second-order cones, in the row layout."""

    def __init__(self, program: BlockConeProgram) -> None:
        self.lp = program.lp_rows
        self.n = program.num_blocks
        self.k = program.num_cones
        self.p = program.soc_size
        self.coupling = int(program.coupling_h.shape[0])

    def cones(self, v: Rows) -> FloatArray:
        """The second-order cone parts of ``v``, ``(n, cones, p)`` (read only)."""
        return v[0][:, self.lp :].reshape(self.n, self.k, self.p)

    def join(self, lp: FloatArray, coupling: FloatArray, cones: FloatArray) -> Rows:
        local = np.empty((self.n, self.lp + self.k * self.p))
        local[:, : self.lp] = lp
        local[:, self.lp :] = cones.reshape(self.n, -1)
        return local, coupling

    def identity(self) -> Rows:
        cones = np.zeros((self.n, self.k, self.p))
        if self.k:
            cones[:, :, 0] = 1.0
        return self.join(np.ones((self.n, self.lp)), np.ones(self.coupling), cones)

    def bring_inside(self, r: Rows) -> Rows:
        """``r + (1 + alpha) e``, ``alpha`` the largest violation (at least ``-0.99``)."""
        alpha = -STEP_SCALE
        for part in (r[0][:, : self.lp], r[1]):
            bad = part[part <= 0.0]
            if bad.size:
                alpha = max(alpha, float(np.max(-bad)))
        if self.k:
            c = self.cones(r)
            residual = c[:, :, 0] - np.sqrt(np.sum(c[:, :, 1:] ** 2, axis=2))
            bad = residual[residual <= 0.0]
            if bad.size:
                alpha = max(alpha, float(np.max(-bad)))
        e = self.identity()
        return r[0] + (1.0 + alpha) * e[0], r[1] + (1.0 + alpha) * e[1]

    def product(self, u: Rows, v: Rows) -> Rows:
        """The Jordan product ``u o v``."""
        if not self.k:
            return u[0] * v[0], u[1] * v[1]
        cu, cv = self.cones(u), self.cones(v)
        out = np.empty_like(cu)
        out[:, :, 0] = np.sum(cu * cv, axis=2)
        out[:, :, 1:] = cu[:, :, :1] * cv[:, :, 1:] + cv[:, :, :1] * cu[:, :, 1:]
        lp = self.lp
        return self.join(u[0][:, :lp] * v[0][:, :lp], u[1] * v[1], out)

    def divide(self, u: Rows, w: Rows) -> Rows:
        """``v`` with ``u o v = w``."""
        lp = self.lp
        lp_part = _safe_divide(w[0][:, :lp], u[0][:, :lp])
        coupling = _safe_divide(w[1], u[1])
        if not self.k:
            return self.join(lp_part, coupling, np.zeros((self.n, 0, self.p)))
        cu, cw = self.cones(u), self.cones(w)
        u0, w0 = cu[:, :, 0], cw[:, :, 0]
        rho = u0 * u0 - np.sum(cu[:, :, 1:] ** 2, axis=2)
        zeta = np.sum(cu[:, :, 1:] * cw[:, :, 1:], axis=2)
        factor = _safe_divide(_safe_divide(zeta, u0) - w0, rho)
        out = np.empty_like(cu)
        out[:, :, 0] = _safe_divide(u0 * w0 - zeta, rho)
        out[:, :, 1:] = factor[:, :, None] * cu[:, :, 1:] + _safe_divide(
            cw[:, :, 1:], np.broadcast_to(u0[:, :, None], cw[:, :, 1:].shape)
        )
        return self.join(lp_part, coupling, out)


class _Scaling:
    """The Nesterov-Todd scaling ``W`` at ``(s, z)`` (``W z = W^-1 s``); ``inside`` is False when
    ``s`` or ``z`` left its cone."""

    def __init__(self, cones: _Cones, s: Rows, z: Rows) -> None:
        self.cones = cones
        lp = cones.lp
        self.v_lp = _safe_divide(s[0][:, :lp], z[0][:, :lp])
        self.v_coupling = _safe_divide(s[1], z[1])
        self.w_lp, self.w_coupling = np.sqrt(self.v_lp), np.sqrt(self.v_coupling)
        self.inside = True
        if not cones.k:
            return
        cs, cz = cones.cones(s), cones.cones(z)
        s_res = cs[:, :, 0] ** 2 - np.sum(cs[:, :, 1:] ** 2, axis=2)
        z_res = cz[:, :, 0] ** 2 - np.sum(cz[:, :, 1:] ** 2, axis=2)
        if np.any(s_res <= 0.0) or np.any(z_res <= 0.0):
            self.inside = False
            return
        s_norm, z_norm = np.sqrt(s_res), np.sqrt(z_res)
        s_bar = _safe_divide(cs, np.broadcast_to(s_norm[:, :, None], cs.shape))
        z_bar = _safe_divide(cz, np.broadcast_to(z_norm[:, :, None], cz.shape))
        self.eta2 = _safe_divide(s_norm, z_norm)
        self.eta = np.sqrt(self.eta2)
        gamma = np.sqrt(0.5 * (1.0 + np.sum(s_bar * z_bar, axis=2)))
        half_over_gamma = _safe_divide(np.full_like(gamma, 0.5), gamma)
        self.a = half_over_gamma * (s_bar[:, :, 0] + z_bar[:, :, 0])
        self.q = half_over_gamma[:, :, None] * (s_bar[:, :, 1:] - z_bar[:, :, 1:])
        self.w = np.sum(self.q * self.q, axis=2)
        one_a = 1.0 + self.a
        self.c = one_a + _safe_divide(self.w, one_a)
        self.d = (
            1.0 + _safe_divide(np.full_like(one_a, 2.0), one_a) + _safe_divide(self.w, one_a**2)
        )
        # the sparse expansion of W^2 (ECOS's; the run stops if it does not exist)
        c2 = self.c**2
        d1 = 0.5 * (self.a**2 + self.w * (1.0 - _safe_divide(c2, 1.0 + self.w * self.d)))
        self.d1 = np.maximum(d1, 0.0)
        u0_sq = self.a**2 + self.w - self.d1
        self.u0 = np.sqrt(u0_sq)
        c2_over = _safe_divide(c2, u0_sq)
        if np.any(c2_over - self.d <= 0.0):
            self.inside = False
            return
        self.v1 = np.sqrt(c2_over - self.d)
        self.u1 = np.sqrt(c2_over)

    def apply(self, z: Rows) -> Rows:
        """``W z``."""
        cones = self.cones
        lp = cones.lp
        if not cones.k:
            return self.w_lp * z[0][:, :lp], self.w_coupling * z[1]
        cz = cones.cones(z)
        zeta = np.sum(self.q * cz[:, :, 1:], axis=2)
        factor = cz[:, :, 0] + _safe_divide(zeta, 1.0 + self.a)
        out = np.empty_like(cz)
        out[:, :, 0] = self.eta * (self.a * cz[:, :, 0] + zeta)
        out[:, :, 1:] = self.eta[:, :, None] * (cz[:, :, 1:] + factor[:, :, None] * self.q)
        return cones.join(self.w_lp * z[0][:, :lp], self.w_coupling * z[1], out)

    def weights(self, regularization: FloatArray, delta: float) -> ConeWeights:
        """``Phi = W^2 + delta R`` by blocks, the cones' in their sparse expansion."""
        cones = self.cones
        p = cones.p
        blocks = np.zeros((cones.n, cones.k, p + 2, p + 2))
        if cones.k:
            v = self.v1[:, :, None] * self.q
            u = self.u1[:, :, None] * self.q
            blocks[:, :, 0, 0] = self.d1
            blocks[:, :, np.arange(1, p), np.arange(1, p)] = 1.0
            blocks[:, :, 1:p, p] = v
            blocks[:, :, p, 1:p] = v
            blocks[:, :, p, p] = 1.0
            blocks[:, :, 0, p + 1] = self.u0
            blocks[:, :, p + 1, 0] = self.u0
            blocks[:, :, 1:p, p + 1] = u
            blocks[:, :, p + 1, 1:p] = u
            blocks[:, :, p + 1, p + 1] = -1.0
            blocks *= self.eta2[:, :, None, None]
            blocks += np.diag(regularization)
        return ConeWeights(self.v_lp + delta, self.v_coupling + delta, blocks)


def _step_length(cones: _Cones, lam: Rows, ds: Rows, dz: Rows, tau: float, dtau: float,
                 kappa: float, dkappa: float) -> float:  # fmt: skip
    """ECOS's line search on scaled directions (Vandenberghe's rule for the cones)."""
    lp = cones.lp
    lp_lam = np.concatenate([lam[0][:, :lp].ravel(), lam[1]])
    if lp_lam.size:
        rho = float(np.min(np.concatenate([ds[0][:, :lp].ravel(), ds[1]]) / lp_lam))
        sigma = float(np.min(np.concatenate([dz[0][:, :lp].ravel(), dz[1]]) / lp_lam))
        worst = sigma if -sigma > -rho else rho
        alpha = 1.0 / -worst if worst < 0.0 else 1.0 / _SAFE_DENOMINATOR
    else:
        alpha = 10.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for value, change in ((tau, dtau), (kappa, dkappa)):
            limit = -value / change
            if limit > 0.0 and limit < alpha:
                alpha = limit
    if cones.k:
        cl, cs, cz = cones.cones(lam), cones.cones(ds), cones.cones(dz)
        norm2 = cl[:, :, 0] ** 2 - np.sum(cl[:, :, 1:] ** 2, axis=2)
        keep = norm2 > 0.0
        if np.any(keep):
            cl, cs, cz, norm2 = cl[keep], cs[keep], cz[keep], norm2[keep]
            ln = np.sqrt(norm2)
            bar = cl / ln[:, None]
            inverse = 1.0 / ln
            steps = []
            for d in (cs, cz):
                along = bar[:, 0] * d[:, 0] - np.sum(bar[:, 1:] * d[:, 1:], axis=1)
                first = inverse * along
                factor = (along + d[:, 0]) / (bar[:, 0] + 1.0)
                rest = inverse[:, None] * (d[:, 1:] - factor[:, None] * bar[:, 1:])
                steps.append(np.sqrt(np.sum(rest * rest, axis=1)) - first)
            largest = float(np.max(np.maximum(steps[0], steps[1]), initial=0.0))
            if largest > 0.0 and 1.0 / largest < alpha:
                alpha = 1.0 / largest
    return min(max(alpha, STEP_MIN), STEP_MAX)


@dataclass
class _Stats:
    gap: float
    mu: float
    kappa_over_tau: float
    pcost: float
    relgap: float
    pres: float
    dres: float
    pinfres: float
    dinfres: float

    def better_than(self, other: _Stats) -> bool:
        """ECOS's comparison of two iterates (for its best-iterate safeguard)."""
        gaps = self.gap > 0 and other.gap > 0 and self.gap < other.gap
        mus = self.mu > 0 and self.mu < other.mu
        if not math.isnan(self.pinfres) and self.kappa_over_tau > 1:
            if not math.isnan(other.pinfres):
                return gaps and self.pinfres > 0 and self.pinfres < other.pres and mus
            return gaps and mus
        return (gaps and self.pres > 0 and self.pres < other.pres and self.dres > 0
                and self.dres < other.dres and self.kappa_over_tau > 0
                and self.kappa_over_tau < other.kappa_over_tau and mus)  # fmt: skip


@dataclass
class _Iterate:
    x: Primal
    s: Rows
    z: Rows
    tau: float
    kappa: float
    cx: float
    hz: float
    stats: _Stats


def _exit(it: _Iterate, inaccurate: bool) -> ExitFlag | None:
    """ECOS's exit tests at full or relaxed precision; ``None`` if none holds."""
    feas, absolute, relative = (INACCURATE_TOLERANCES if inaccurate
                                else (FEASIBILITY_TOLERANCE, ABSOLUTE_TOLERANCE,
                                      RELATIVE_TOLERANCE))  # fmt: skip
    offset = 10 if inaccurate else 0
    st = it.stats
    if ((-it.cx > 0 or -it.hz >= -absolute) and st.pres < feas and st.dres < feas
            and (st.gap < absolute or st.relgap < relative)):  # fmt: skip
        return ExitFlag(offset + 0)
    if not math.isnan(st.dinfres) and st.dinfres < feas and it.tau < it.kappa:
        return ExitFlag(offset + 2)
    if ((not math.isnan(st.pinfres) and st.pinfres < feas and it.tau < it.kappa)
            or (it.tau < FEASIBILITY_TOLERANCE and it.kappa < FEASIBILITY_TOLERANCE
                and st.pinfres < FEASIBILITY_TOLERANCE)):  # fmt: skip
        return ExitFlag(offset + 1)
    return None


def _exit_or(it: _Iterate, failure: ExitFlag) -> ExitFlag:
    """The relaxed-precision exit of a stopped run, or ``failure``."""
    flag = _exit(it, True)
    return failure if flag is None else flag


def solve_cone_program(original: BlockConeProgram, *, merge: bool = True) -> ConeSolution:
    """Solve ``original`` as ECOS 2.0.10 does (module notes); never raises on numerical trouble:
    the exit flag says how it ended. ``merge``: identical jobs held once
    (:meth:`BlockConeProgram.merged`, the same bits); False factors every job's block itself."""
    program, (col_j, col_g), _ = (original.merged() if merge else original).equilibrate()
    dot, norm = program.dot, program.norm
    cones = _Cones(program)
    delta = STATIC_REGULARIZATION
    regularization = soc_regularization(program)
    c: Primal = (program.job_c, program.global_c)
    h: Rows = (program.local_h, program.coupling_h)
    zero_x: Primal = (np.zeros_like(c[0]), np.zeros_like(c[1]))
    zero_z: Rows = (np.zeros_like(h[0]), np.zeros_like(h[1]))
    degree = program.degree
    resx0 = max(1.0, norm(c))
    resz0 = max(1.0, norm(h))
    shared = shared_columns(program)
    start = BlockKKT(program, identity_weights(program), shared)
    x, minus_r = start.solve(zero_x, h)
    s = cones.bring_inside((-minus_r[0], -minus_r[1]))
    _, z0 = start.solve((-c[0], -c[1]), zero_z)
    z = cones.bring_inside(z0)
    tau = kappa = 1.0
    step = 0.0
    best: _Iterate | None = None
    previous_pres = math.nan
    current: _Iterate
    flag: ExitFlag | None = None
    iteration = 0
    for iteration in range(MAX_ITERATIONS + 1):
        gtz = program.apply_transpose(z)
        hresx = norm(gtz)
        rx = (-gtz[0] - tau * c[0], -gtz[1] - tau * c[1])
        gx = program.apply(x)
        hz_res = (s[0] + gx[0], s[1] + gx[1])
        hresz = norm(hz_res)
        rz = (hz_res[0] - tau * h[0], hz_res[1] - tau * h[1])
        cx, hz = dot(c, x), dot(h, z)
        rt = kappa + cx + hz
        nx, ns, nz = norm(x), norm(s), norm(z)
        gap = dot(s, z)
        mu = (gap + kappa * tau) / (degree + 1)
        pcost, dcost = cx / tau, -hz / tau
        relgap = gap / -pcost if pcost < 0 else (gap / dcost if dcost > 0 else math.nan)
        pres = norm(rz) / max(resz0 + nx + ns, 1.0) / tau
        dres = norm(rx) / max(resx0 + nz, 1.0) / tau
        pinfres = hresx / max(nz, 1.0) if hz / max(nz, 1.0) < -RELATIVE_TOLERANCE else math.nan
        dinfres = hresz / max(nx + ns, 1.0) if cx / max(nx, 1.0) < -RELATIVE_TOLERANCE else math.nan
        stats = _Stats(gap, mu, kappa / tau, pcost, relgap, pres, dres, pinfres, dinfres)
        current = _Iterate(x, s, z, tau, kappa, cx, hz, stats)
        if iteration > 0 and (pres > _RESIDUAL_SAFEGUARD * previous_pres or gap < 0):
            assert best is not None
            current = best
            flag = _exit_or(current, ExitFlag.NUMERICS)
            break
        previous_pres = pres
        flag = _exit(current, False)
        if flag is not None:
            break
        if iteration > 0 and step == STEP_MIN * STEP_SCALE:
            assert best is not None
            current = best
            flag = _exit_or(current, ExitFlag.NUMERICS)
            break
        if iteration == MAX_ITERATIONS or math.isnan(pcost):
            assert best is not None
            if not stats.better_than(best.stats):
                current = best
            fallback = ExitFlag.MAX_ITERATIONS if not math.isnan(pcost) else ExitFlag.NUMERICS
            flag = _exit_or(current, fallback)
            break
        if best is None or stats.better_than(best.stats):
            best = current
        scaling = _Scaling(cones, s, z)
        if not scaling.inside:
            assert best is not None
            current = best
            flag = _exit_or(current, ExitFlag.OUTSIDE_CONE)
            break
        lam = scaling.apply(z)
        kkt = BlockKKT(program, scaling.weights(regularization, delta), shared)
        dx1, dz1 = kkt.solve((-c[0], -c[1]), h)
        rhs_z = (s[0] - rz[0], s[1] - rz[1])
        dx2, dz2 = kkt.solve(rx, rhs_z)
        denominator = kappa / tau - dot(c, dx1) - dot(h, dz1)
        dtau_aff = (rt - kappa + dot(c, dx2) + dot(h, dz2)) / denominator
        dz_aff = (dz2[0] + dtau_aff * dz1[0], dz2[1] + dtau_aff * dz1[1])
        w_dz = scaling.apply(dz_aff)
        ds_w = (-w_dz[0] - lam[0], -w_dz[1] - lam[1])
        dkappa_aff = -kappa - kappa / tau * dtau_aff
        step_aff = _step_length(cones, lam, ds_w, w_dz, tau, dtau_aff, kappa, dkappa_aff)
        sigma = min(max((1.0 - step_aff) ** 3, SIGMA_MIN), SIGMA_MAX)
        e = cones.identity()
        ll, sw = cones.product(lam, lam), cones.product(ds_w, w_dz)
        ds1 = (ll[0] + sw[0] - sigma * mu * e[0], ll[1] + sw[1] - sigma * mu * e[1])
        ratio = cones.divide(lam, ds1)
        w_ratio = scaling.apply(ratio)
        keep = 1.0 - sigma
        dx3, dz3 = kkt.solve(
            (keep * rx[0], keep * rx[1]),
            (-keep * rz[0] + w_ratio[0], -keep * rz[1] + w_ratio[1]),
        )
        bkappa = kappa * tau + dkappa_aff * dtau_aff - sigma * mu
        dtau = (keep * rt - bkappa / tau + dot(c, dx3) + dot(h, dz3)) / denominator
        dx = (dx3[0] + dtau * dx1[0], dx3[1] + dtau * dx1[1])
        dz = (dz3[0] + dtau * dz1[0], dz3[1] + dtau * dz1[1])
        w_dz = scaling.apply(dz)
        ds_w = (-(ratio[0] + w_dz[0]), -(ratio[1] + w_dz[1]))
        dkappa = -(bkappa + kappa * dtau) / tau
        step = _step_length(cones, lam, ds_w, w_dz, tau, dtau, kappa, dkappa) * STEP_SCALE
        ds = scaling.apply(ds_w)
        x = (x[0] + step * dx[0], x[1] + step * dx[1])
        z = (z[0] + step * dz[0], z[1] + step * dz[1])
        s = (s[0] + step * ds[0], s[1] + step * ds[1])
        kappa += step * dkappa
        tau += step * dtau
    assert flag is not None
    return ConeSolution(
        x_job=program.expand(current.x[0] / (col_j * current.tau)),
        x_global=current.x[1] / (col_g * current.tau),
        flag=flag,
        iterations=iteration,
    )
