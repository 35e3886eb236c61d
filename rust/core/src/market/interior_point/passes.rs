//! The two fused passes over the entries that make most of an iteration, for one GPU type:
//! [`InteriorPoint::prepare_scalar`] (apply the pending step, then the reciprocals, the `T x T`
//! price system and its right-hand sides) and [`InteriorPoint::back_substitute_scalar`] (a
//! direction's shares, its step limits and, in the predictor, the second-order terms), with the
//! complementarity and the lighter update pass. (`typed.rs` has the same passes for GPU types;
//! [`InteriorPoint::prepare`] and the others dispatch.)

use super::super::instance::Instance;
use super::super::linalg::lanes::{lane_dot, lane_sum, row, row_mut};
use super::row_inverse::{dominant_entry, subtract_outer_products, RowInverse};
use super::state::{Limits, Pass, PassResult, Pending};
use super::{live, width, InteriorPoint, NONE, SCHUR_BLOCK};

impl InteriorPoint {
    /// The total complementarity `sum x z + y v + s p + r beta` of the current point, summed as
    /// [`Self::prepare`] sums it.
    #[inline(always)]
    pub(super) fn complementarity_scalar<const W: usize>(&mut self, inst: &Instance) -> f64 {
        let rounds = width::<W>(inst);
        let (e, b, t) = (&self.e, &self.b, &self.t);
        let comp = &mut self.w.c1[..rounds];
        let (mut total, mut entry_total) = (0.0, 0.0);
        for k in 0..inst.buyers() {
            let (x, y) = (row(&e.x, k, rounds), row(&e.y, k, rounds));
            let (z, v) = (row(&e.z, k, rounds), row(&e.v, k, rounds));
            if inst.ceil[k].is_finite() {
                total += b.r[k] * b.beta[k];
            }
            for j in 0..rounds {
                comp[j] = x[j] * z[j] + y[j] * v[j];
            }
            entry_total += lane_sum(comp);
        }
        total += entry_total;
        for tt in 0..rounds {
            if inst.good_used[tt] {
                total += t.s[tt] * t.p[tt];
            }
        }
        total
    }

    /// Apply the pending step to the per-round and per-buyer variables (the entries are updated
    /// by the caller).
    #[inline(always)]
    pub(super) fn apply_pending_scalars(&mut self, inst: &Instance, step: Pending) {
        let (b, t) = (&mut self.b, &mut self.t);
        for tt in 0..inst.goods() {
            if inst.good_used[tt] {
                t.s[tt] += step.primal * t.ds[tt];
                t.p[tt] += step.dual * t.dp[tt];
            }
        }
        for k in 0..inst.buyers() {
            if inst.ceil[k].is_finite() {
                b.r[k] += step.primal * b.dr[k];
                b.beta[k] += step.dual * b.dbeta[k];
            }
        }
    }

    /// Apply the pending step, if any, in a pass of its own.
    #[inline(always)]
    pub(super) fn apply_pending_scalar(&mut self, inst: &Instance) {
        if let Some(step) = self.pending.take() {
            self.apply_pending_scalars(inst, step);
            let e = &mut self.e;
            for i in 0..inst.entries() {
                update_entry(
                    step,
                    (&mut e.x[i], &mut e.y[i], &mut e.z[i], &mut e.v[i]),
                    (e.ix[i], e.iy[i], e.cxi[i], e.cvi[i], e.dx[i]),
                );
            }
        }
    }

    /// Apply the pending step, then compute the reciprocals, the assembled (unfactored) price
    /// system and the price right-hand sides of `h0` and `h_tau` of the current point, where
    ///
    /// ```text
    /// h = (w/u - (beta/r) rc - tau/r + cr/r) a - n p + tau (1/x - 1/y) + (-dx dv/y - dx dz/x)
    ///   = h0 + tau h_tau + hc
    /// ```
    ///
    /// (the `1/r` terms only with a ceiling; `cr`, `dx dz`, `dx dv` are the predictor's
    /// second-order terms, zero in the predictor itself). Returns the total complementarity
    /// `sum x z + y v + s p + r beta`.
    #[inline(always)]
    pub(super) fn prepare_scalar<const W: usize>(&mut self, inst: &Instance) -> f64 {
        let rounds = width::<W>(inst);
        let pending = self.pending.take();
        if let Some(step) = pending {
            self.apply_pending_scalars(inst, step);
        }
        let (e, b, t, w) = (&mut self.e, &mut self.b, &mut self.t, &mut self.w);
        let schur = &mut self.schur;
        t.rp.fill(0.0);
        t.r0.fill(0.0);
        t.rtau.fill(0.0);
        schur.fill(0.0);
        let mut total = 0.0;
        let (p, rp) = (&t.p[..rounds], &mut t.rp[..rounds]);
        let (r0, rtau) = (&mut t.r0[..rounds], &mut t.rtau[..rounds]);
        let (g, out) = (&mut w.g[..rounds], &mut w.out[..rounds]);
        let (g2, out2) = (&mut w.g2[..rounds], &mut w.out2[..rounds]);
        let diag = &mut w.diag[..rounds];
        diag.fill(0.0);
        let (q, comp) = (&mut w.q[..rounds], &mut w.c1[..rounds]);
        let (schur_rows, schur_scales) = (&mut w.schur_rows, &mut w.schur_scales);
        let mut entry_total = 0.0;
        for k in 0..inst.buyers() {
            let a = row(&inst.a, k, rounds);
            let n = inst.n[k];
            let (x, y) = (row_mut(&mut e.x, k, rounds), row_mut(&mut e.y, k, rounds));
            let (z, v) = (row_mut(&mut e.z, k, rounds), row_mut(&mut e.v, k, rounds));
            let (ix, iy) = (row_mut(&mut e.ix, k, rounds), row_mut(&mut e.iy, k, rounds));
            let isig = row_mut(&mut e.isig, k, rounds);
            if let Some(step) = pending {
                let (dx, cxi, cvi) = (
                    row(&e.dx, k, rounds),
                    row(&e.cxi, k, rounds),
                    row(&e.cvi, k, rounds),
                );
                for j in 0..rounds {
                    update_entry(
                        step,
                        (&mut x[j], &mut y[j], &mut z[j], &mut v[j]),
                        (ix[j], iy[j], cxi[j], cvi[j], dx[j]),
                    );
                }
            }
            let u = inst.c[k] + lane_dot(a, x);
            b.u[k] = u;
            for j in 0..rounds {
                rp[j] += n * x[j];
            }
            let ceiling = inst.ceil[k].is_finite();
            if ceiling {
                b.br[k] = b.beta[k] / b.r[k];
                b.rc[k] = u + b.r[k] - inst.ceil[k];
                total += b.r[k] * b.beta[k];
            } else {
                b.br[k] = 0.0;
                b.rc[k] = 0.0;
            }
            b.coef[k] = inst.w[k] / u - b.br[k] * b.rc[k];
            let gamma = inst.w[k] / (u * u) + b.br[k];
            b.gamma[k] = gamma;
            let inv_gamma = 1.0 / gamma;
            for j in 0..rounds {
                // Branch-free masking: `m` is 1 on purchasable entries (then every reciprocal is
                // the plain one, bit for bit) and 0 on the others, whose stored x = z = v = 0,
                // y = 1 make every denominator 1 and every reciprocal 0.
                let m = live(a[j]);
                let rx = m / (x[j] + (1.0 - m));
                let ry = m / y[j];
                ix[j] = rx;
                iy[j] = ry;
                let is = m / (z[j] * rx + v[j] * ry + (1.0 - m));
                isig[j] = is;
                q[j] = a[j] * a[j] * is;
                comp[j] = x[j] * z[j] + y[j] * v[j];
            }
            entry_total += lane_sum(comp);
            let kappa = inv_gamma + lane_sum(q);
            b.kappa[k] = kappa;
            let dominant = dominant_entry(q, kappa);
            b.dominant[k] = dominant;
            if dominant != NONE {
                // L of the dominant entry, summed directly (kappa - q would cancel).
                let own = std::mem::replace(&mut q[dominant], 0.0);
                b.dominant_loo[k] = inv_gamma + lane_sum(q);
                q[dominant] = own;
            }
            let inverse = RowInverse::new(a, isig, kappa, dominant, b.dominant_loo[k]);
            let (n2, scale) = (n * n, n * n / kappa);
            // Diagonal: n^2 L / (sigma kappa); off the diagonal: - n^2 d d^T / kappa with
            // d = a / sigma, subtracted four rows at a time.
            let slot = k % SCHUR_BLOCK;
            let d = &mut schur_rows[slot * rounds..(slot + 1) * rounds];
            for tt in 0..rounds {
                // L = kappa - q off the dominant entry.
                let loo = if tt == dominant {
                    b.dominant_loo[k]
                } else {
                    kappa - q[tt]
                };
                diag[tt] += n2 * (loo * isig[tt] * inverse.inv_kappa);
                d[tt] = a[tt] * isig[tt];
            }
            schur_scales[slot] = scale;
            if slot == SCHUR_BLOCK - 1 || k + 1 == inst.buyers() {
                schur_scales[slot + 1..].fill(0.0);
                subtract_outer_products::<W>(schur, rounds, schur_rows, schur_scales);
            }
            // sum n M^{-1} h0, h0 = coef a - n p, and sum n M^{-1} h_tau,
            // h_tau = 1/x - 1/y (- a / r).
            let coef = b.coef[k];
            let lift = if ceiling { -1.0 / b.r[k] } else { 0.0 };
            for j in 0..rounds {
                g[j] = coef * a[j] - n * p[j];
                g2[j] = ix[j] - iy[j] + lift * a[j];
            }
            inverse.apply_pair((g, g2), (out, out2));
            for j in 0..rounds {
                r0[j] += n * out[j];
                rtau[j] += n * out2[j];
            }
        }
        self.entry_complementarity = entry_total;
        total += entry_total;
        for tt in 0..rounds {
            schur[tt * rounds + tt] = w.diag[tt];
        }
        for tt in 0..rounds {
            t.rp[tt] += t.s[tt] - inst.supply[tt];
            let diag = &mut schur[tt * rounds + tt];
            if inst.good_used[tt] {
                *diag += t.s[tt] / t.p[tt];
                total += t.s[tt] * t.p[tt];
            } else {
                *diag = 1.0;
            }
            for l in 0..tt {
                schur[tt * rounds + l] = schur[l * rounds + tt];
            }
        }
        total
    }

    /// Back-substitute the price step in `t.dp`: `dx = M^{-1} (h - n dp)` per buyer, the supply
    /// residual's `sum n dx` in `t.flow`, the step limits, and (predictor) the second-order terms
    /// and their price right-hand side `t.rcorr`, or (corrector) the stored direction.
    #[inline(always)]
    pub(super) fn back_substitute_scalar<const W: usize>(
        &mut self,
        inst: &Instance,
        pass: Pass,
    ) -> PassResult {
        let rounds = width::<W>(inst);
        let (e, b, t, w) = (&mut self.e, &mut self.b, &mut self.t, &mut self.w);
        t.flow.fill(0.0);
        if pass == Pass::Predictor {
            t.rcorr.fill(0.0);
        }
        let mut limits = Limits::new();
        // The entries' x z + y v enter the coefficient of alpha_d with a minus sign.
        let mut poly = [0.0, -self.entry_complementarity, 0.0];
        let mut check = 0.0;
        let (p, dp) = (&t.p[..rounds], &t.dp[..rounds]);
        let (flow, rcorr) = (&mut t.flow[..rounds], &mut t.rcorr[..rounds]);
        let (g, dx) = (&mut w.g[..rounds], &mut w.out[..rounds]);
        let (c1, c3) = (&mut w.c1[..rounds], &mut w.c3[..rounds]);
        for k in 0..inst.buyers() {
            let a = row(&inst.a, k, rounds);
            let n = inst.n[k];
            let (z, v) = (row(&e.z, k, rounds), row(&e.v, k, rounds));
            let (ix, iy) = (row(&e.ix, k, rounds), row(&e.iy, k, rounds));
            let isig = row(&e.isig, k, rounds);
            let (cxi, cvi) = (
                row_mut(&mut e.cxi, k, rounds),
                row_mut(&mut e.cvi, k, rounds),
            );
            let dx_store = row_mut(&mut e.dx, k, rounds);
            let ceiling = inst.ceil[k].is_finite();
            let inverse = RowInverse::new(a, isig, b.kappa[k], b.dominant[k], b.dominant_loo[k]);
            let (r, beta, br) = (b.r[k], b.beta[k], b.br[k]);
            // g = h - n dp, with h evaluated exactly as in every other call of this pass (the
            // same bits) and the price step subtracted last: iterative refinement moves `dp` by
            // tiny amounts, and rounding `p + dp` afresh would add a new error on each try that
            // `M^{-1}` amplifies by `1 / sigma` on fractional entries (up to ~1/mu), so the
            // refined residual would never settle (seen stalling at a gap of 2e-7).
            match pass {
                Pass::Predictor => {
                    let coef = b.coef[k];
                    for j in 0..rounds {
                        g[j] = (coef * a[j] - n * p[j]) - n * dp[j];
                    }
                }
                Pass::Corrector { target } => {
                    let coef = if ceiling {
                        b.coef[k] + (b.cr[k] - target) / r
                    } else {
                        b.coef[k]
                    };
                    for j in 0..rounds {
                        let h =
                            (coef * a[j] - n * p[j]) + target * (ix[j] - iy[j]) + cvi[j] - cxi[j];
                        g[j] = h - n * dp[j];
                    }
                }
            }
            let total = inverse.apply(g, dx);
            // a.dx in closed form: summing a_e dx_e would cancel the large components of a tie
            // (equal bang per buck in two rounds), which are orthogonal to a.
            let du = total / (b.gamma[k] * b.kappa[k]);
            for j in 0..rounds {
                flow[j] += n * dx[j];
            }
            let (mut lp, mut ld) = (0.0f64, 0.0f64);
            match pass {
                Pass::Predictor => {
                    // dz = -z (1 + dx/x) and dv = -v (1 - dx/y), so the dual limits are
                    // 1 + dx/x and 1 - dx/y, and x dz + y dv = -(x z + y v) - dx (z - v).
                    for j in 0..rounds {
                        let d = dx[j];
                        let (px, py) = (-d * ix[j], d * iy[j]);
                        let dz = -z[j] - z[j] * ix[j] * d;
                        let dv = -v[j] + v[j] * iy[j] * d;
                        let (qz, qv) = (1.0 - px, 1.0 - py);
                        lp = if px > lp { px } else { lp };
                        lp = if py > lp { py } else { lp };
                        ld = if qz > ld { qz } else { ld };
                        ld = if qv > ld { qv } else { ld };
                        c1[j] = d * (z[j] - v[j]);
                        c3[j] = d * (dz - dv);
                        cxi[j] = d * dz * ix[j];
                        cvi[j] = -d * dv * iy[j];
                    }
                    let entries_c1 = lane_sum(c1);
                    poly[0] += entries_c1;
                    poly[1] -= entries_c1;
                    poly[2] += lane_sum(c3);
                    let mut cr = 0.0;
                    if ceiling {
                        let dbeta = br * (du - (r - b.rc[k]));
                        let dr = (-r * beta - r * dbeta) / beta;
                        lp = lp.max(-dr / r);
                        ld = ld.max(-dbeta / beta);
                        cr = dr * dbeta;
                        poly[0] += dr * beta;
                        poly[1] += r * dbeta;
                        poly[2] += cr;
                    }
                    b.cr[k] = cr;
                    // sum n M^{-1} hc, hc = -dx dz / x - dx dv / y (+ a cr / r).
                    let lift = if ceiling { cr / r } else { 0.0 };
                    for j in 0..rounds {
                        g[j] = cvi[j] - cxi[j] + lift * a[j];
                    }
                    inverse.apply(g, dx);
                    for j in 0..rounds {
                        rcorr[j] += n * dx[j];
                    }
                }
                Pass::Corrector { target } => {
                    for j in 0..rounds {
                        let d = dx[j];
                        dx_store[j] = d;
                        let dz = target * ix[j] - cxi[j] - z[j] - z[j] * ix[j] * d;
                        let dv = target * iy[j] - cvi[j] - v[j] + v[j] * iy[j] * d;
                        let (px, py) = (-d * ix[j], d * iy[j]);
                        let m = live(a[j]);
                        let qz = -dz * (m / (z[j] + (1.0 - m)));
                        let qv = -dv * (m / (v[j] + (1.0 - m)));
                        lp = if px > lp { px } else { lp };
                        lp = if py > lp { py } else { lp };
                        ld = if qz > ld { qz } else { ld };
                        ld = if qv > ld { qv } else { ld };
                    }
                    if ceiling {
                        let cr = b.cr[k];
                        let qc = -b.rc[k] - (target - cr) / beta + r;
                        let dbeta = br * (du - qc);
                        let dr = (target - cr - r * beta - r * dbeta) / beta;
                        b.dbeta[k] = dbeta;
                        b.dr[k] = dr;
                        lp = lp.max(-dr / r);
                        ld = ld.max(-dbeta / beta);
                    } else {
                        b.dbeta[k] = 0.0;
                        b.dr[k] = 0.0;
                    }
                }
            }
            limits.primal = limits.primal.max(lp);
            limits.dual = limits.dual.max(ld);
            check += du + lp + ld;
        }

        let (target, corr) = match pass {
            Pass::Predictor => (0.0, 0.0),
            Pass::Corrector { target } => (target, 1.0),
        };
        for tt in 0..rounds {
            if inst.good_used[tt] {
                let (s, p, dp) = (t.s[tt], t.p[tt], t.dp[tt]);
                let ds = (target - corr * t.cs[tt] - s * p - s * dp) / p;
                t.ds[tt] = ds;
                limits.primal = limits.primal.max(-ds / s);
                limits.dual = limits.dual.max(-dp / p);

                if pass == Pass::Predictor {
                    poly[0] += ds * p;
                    poly[1] += s * dp;
                    poly[2] += ds * dp;
                }
            } else {
                t.ds[tt] = 0.0;
            }
        }
        PassResult {
            limits,
            poly,
            check,
        }
    }
}

/// Apply a step to one entry: `dz`, `dv` are recomputed from the stored corrector terms exactly
/// as the corrector pass computed them.
#[inline(always)]
fn update_entry(
    step: Pending,
    (x, y, z, v): (&mut f64, &mut f64, &mut f64, &mut f64),
    (ix, iy, cxi, cvi, dx): (f64, f64, f64, f64, f64),
) {
    let dz = step.target * ix - cxi - *z - *z * ix * dx;
    let dv = step.target * iy - cvi - *v + *v * iy * dx;
    *x += step.primal * dx;
    *y -= step.primal * dx;
    *z += step.dual * dz;
    *v += step.dual * dv;
}
