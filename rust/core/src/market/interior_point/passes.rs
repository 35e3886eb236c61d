//! The passes over the entries that make most of an iteration: [`InteriorPoint::prepare`]
//! (apply the pending step, then the reciprocals, the price system and its right-hand sides) and
//! [`InteriorPoint::back_substitute`] (a direction's shares, its step limits and, in the
//! predictor, the second-order terms), with the complementarity and the lighter update pass.
//! Their loops over the jobs and sums over jobs serve one GPU type and several; each job's own
//! work is here for one type and in `typed.rs` for several, chosen at compile time.

use std::ops::Range;

use super::super::instance::Instance;
use super::super::linalg::lanes::{lane_dot, lane_sum, row, row_mut};
use super::parts::{on_threads, privately, round_runs, BuyerRows, Outputs, Part, Widths, SCALARS};
use super::row_inverse::{dominant_entry, subtract_outer_products, RowInverse};
use super::state::{Buyers, Limits, Pass, PassResult, Pending};
use super::typed;
use super::{goods, live, width, InteriorPoint, NONE, SCHUR_BLOCK};
use crate::threads::split_runs;

impl InteriorPoint {
    /// The total complementarity `sum x z + y v + s p + r beta` of the current point, summed as
    /// [`Self::prepare`] sums it (with `K` GPU types: `sum x z + sum y v + s p + r beta`).
    #[inline(always)]
    pub(super) fn complementarity<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
    ) -> f64 {
        let widths = Widths::of::<K>(width::<W>(inst));
        let (threads, avx2) = (self.split.threads, self.split.avx2);
        let (mut total, mut entry_total) = (0.0, 0.0);
        for chunk in self.split.chunks(inst.buyers()) {
            let part = Part::new(
                (&mut self.e, &mut self.b, &mut self.k),
                &mut self.out,
                chunk.clone(),
                widths,
            );
            on_threads(
                part.divide(threads, widths),
                avx2,
                #[inline(always)]
                |part| {
                    if K == 1 {
                        entry_complementarity::<W>(inst, part);
                    } else {
                        typed::entry_complementarity::<W, K>(inst, part);
                    }
                },
            );
            add_complementarity::<K>(
                inst,
                (&self.b, &self.out),
                chunk,
                (&mut total, &mut entry_total),
            );
        }
        total += entry_total;
        let t = &self.t;
        for tt in 0..goods::<W, K>(inst) {
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
    pub(super) fn apply_pending<const W: usize, const K: usize>(&mut self, inst: &Instance) {
        if let Some(step) = self.pending.take() {
            self.apply_pending_scalars(inst, step);
            let widths = Widths::of::<K>(width::<W>(inst));
            let part = Part::new(
                (&mut self.e, &mut self.b, &mut self.k),
                &mut self.out,
                0..inst.buyers(),
                widths,
            );
            on_threads(
                part.divide(self.split.threads, widths),
                self.split.avx2,
                #[inline(always)]
                |mut part| {
                    if K == 1 {
                        let (e, entries) = (part.e, part.jobs * width::<W>(inst));
                        for i in 0..entries {
                            update_entry(
                                step,
                                (&mut e.x[i], &mut e.y[i], &mut e.z[i], &mut e.v[i]),
                                (e.ix[i], e.iy[i], e.cxi[i], e.cvi[i], e.dx[i]),
                            );
                        }
                    } else {
                        for k in 0..part.jobs {
                            typed::update_job::<W, K>(inst, &mut part.e, k, step);
                        }
                    }
                },
            );
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
    ///
    /// Each job's own work runs on runs of jobs ([`prepare_jobs`], with GPU types
    /// [`typed::prepare_jobs`]), then the sums over jobs on runs of goods, each element
    /// accumulated in the jobs' order.
    #[inline(always)]
    pub(super) fn prepare<const W: usize, const K: usize>(&mut self, inst: &Instance) -> f64 {
        let rounds = width::<W>(inst);
        let goods = rounds * K;
        let widths = Widths::of::<K>(rounds);
        let pending = self.pending.take();
        if let Some(step) = pending {
            self.apply_pending_scalars(inst, step);
        }
        let (threads, avx2) = (self.split.threads, self.split.avx2);
        self.t.rp.fill(0.0);
        self.t.r0.fill(0.0);
        self.t.rtau.fill(0.0);
        self.schur.fill(0.0);
        // The price system's within-round blocks (with one type its diagonal), accumulated
        // apart from their strided places in the matrix, out of the state while it is read.
        let mut blocks = std::mem::take(&mut self.k.block);
        blocks.fill(0.0);
        let (mut total, mut entry_total) = (0.0, 0.0);
        let runs = round_runs(goods, threads);
        for chunk in self.split.chunks(inst.buyers()) {
            let part = Part::new(
                (&mut self.e, &mut self.b, &mut self.k),
                &mut self.out,
                chunk.clone(),
                widths,
            );
            let p = &self.t.p[..goods];
            on_threads(
                part.divide(threads, widths),
                avx2,
                #[inline(always)]
                |part| {
                    if K == 1 {
                        prepare_jobs::<W>(inst, p, pending, part);
                    } else {
                        typed::prepare_jobs::<W, K>(inst, p, pending, part);
                    }
                },
            );
            let (e, b, kk, out) = (&self.e, &self.b, &self.k, &self.out);
            add_complementarity::<K>(
                inst,
                (b, out),
                chunk.clone(),
                (&mut total, &mut entry_total),
            );
            let t = &mut self.t;
            let tasks: Vec<_> = split_runs(&mut t.rp[..goods], &runs, 1)
                .into_iter()
                .zip(split_runs(&mut t.r0[..goods], &runs, 1))
                .zip(split_runs(&mut t.rtau[..goods], &runs, 1))
                .zip(split_runs(&mut blocks[..], &runs, K))
                .zip(split_runs(&mut self.schur[..], &runs, goods))
                .zip(runs.iter().cloned())
                .collect();
            let private = tasks.len() > 1;
            on_threads(
                tasks,
                avx2,
                #[inline(always)]
                |(((((rp, r0), rtau), block), schur), run)| {
                    let goods = super::goods::<W, K>(inst);
                    let sums = [rp, r0, rtau, block, schur];
                    privately(
                        private,
                        sums,
                        #[inline(always)]
                        |[rp, r0, rtau, block, schur]| {
                            for (k, job) in chunk.clone().enumerate() {
                                let n = inst.n[job];
                                let x = &row(&e.x, job, goods)[run.clone()];
                                let o1 = &row(&out.o1, k, goods)[run.clone()];
                                let o2 = &row(&out.o2, k, goods)[run.clone()];
                                for j in 0..run.len() {
                                    rp[j] += n * x[j];
                                    r0[j] += n * o1[j];
                                    rtau[j] += n * o2[j];
                                }
                                let o3 = &row(&out.o3, k, goods * K)[run.start * K..run.end * K];
                                for j in 0..o3.len() {
                                    block[j] += o3[j];
                                }
                            }
                            let rank_ones = (schur, run);
                            if K == 1 {
                                // d = a / sigma
                                subtract_rank_ones::<W>(
                                    inst,
                                    b,
                                    chunk.clone(),
                                    rank_ones,
                                    #[inline(always)]
                                    |d, job| {
                                        let (a, isig) =
                                            (row(&inst.a, job, goods), row(&e.isig, job, goods));
                                        for tt in 0..goods {
                                            d[tt] = a[tt] * isig[tt];
                                        }
                                    },
                                );
                            } else {
                                // d = B^{-1} a
                                subtract_rank_ones::<0>(
                                    inst,
                                    b,
                                    chunk.clone(),
                                    rank_ones,
                                    #[inline(always)]
                                    |d, job| {
                                        d.copy_from_slice(row(&kk.hata, job, goods));
                                    },
                                );
                            }
                        },
                    );
                },
            );
        }
        self.entry_complementarity = entry_total;
        total += entry_total;
        // The within-round blocks, then the supply slacks on the diagonal.
        let (schur, t) = (&mut self.schur, &mut self.t);
        for j in 0..K {
            for f in j..K {
                for tt in 0..rounds {
                    schur[(j * rounds + tt) * goods + f * rounds + tt] =
                        blocks[(j * rounds + tt) * K + f];
                }
            }
        }
        for tt in 0..goods {
            t.rp[tt] += t.s[tt] - inst.supply[tt];
            let diag = &mut schur[tt * goods + tt];
            if inst.good_used[tt] {
                *diag += t.s[tt] / t.p[tt];
                total += t.s[tt] * t.p[tt];
            } else {
                *diag = 1.0;
            }
            for l in 0..tt {
                schur[tt * goods + l] = schur[l * goods + tt];
            }
        }
        self.k.block = blocks;
        total
    }

    /// Back-substitute the price step in `t.dp`: `dx = M^{-1} (h - n dp)` per buyer, the supply
    /// residual's `sum n dx` in `t.flow`, the step limits, and (predictor) the second-order terms
    /// and their price right-hand side `t.rcorr`, or (corrector) the stored direction. Each
    /// job's own work runs on runs of jobs ([`back_substitute_jobs`], with GPU types
    /// [`typed::back_substitute_jobs`]), then the sums over jobs on runs of goods.
    #[inline(always)]
    pub(super) fn back_substitute<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        pass: Pass,
    ) -> PassResult {
        let goods = goods::<W, K>(inst);
        let widths = Widths::of::<K>(width::<W>(inst));
        let (threads, avx2) = (self.split.threads, self.split.avx2);
        let t = &mut self.t;
        t.flow.fill(0.0);
        if pass == Pass::Predictor {
            t.rcorr.fill(0.0);
        }
        let mut found = PassResult {
            limits: Limits::new(),
            // The entries' x z + y v enter the coefficient of alpha_d with a minus sign.
            poly: [0.0, -self.entry_complementarity, 0.0],
            check: 0.0,
        };
        let runs = round_runs(goods, threads);
        for chunk in self.split.chunks(inst.buyers()) {
            let part = Part::new(
                (&mut self.e, &mut self.b, &mut self.k),
                &mut self.out,
                chunk.clone(),
                widths,
            );
            let (p, dp) = (&t.p[..goods], &t.dp[..goods]);
            on_threads(
                part.divide(threads, widths),
                avx2,
                #[inline(always)]
                |part| {
                    if K == 1 {
                        back_substitute_jobs::<W>(inst, (p, dp), pass, part);
                    } else {
                        typed::back_substitute_jobs::<W, K>(inst, (p, dp), pass, part);
                    }
                },
            );
            let out = &self.out;
            for (k, job) in chunk.clone().enumerate() {
                let [lp, ld, du, c1, c3, cb, rdb, cr] = scalars(&out.scalars, k);
                if pass == Pass::Predictor {
                    found.poly[0] += c1;
                    found.poly[1] -= c1;
                    found.poly[2] += c3;
                    if inst.ceil[job].is_finite() {
                        found.poly[0] += cb;
                        found.poly[1] += rdb;
                        found.poly[2] += cr;
                    }
                }
                found.limits.primal = found.limits.primal.max(lp);
                found.limits.dual = found.limits.dual.max(ld);
                found.check += du + lp + ld;
            }
            let tasks: Vec<_> = split_runs(&mut t.flow[..goods], &runs, 1)
                .into_iter()
                .zip(split_runs(&mut t.rcorr[..goods], &runs, 1))
                .zip(runs.iter().cloned())
                .collect();
            let private = tasks.len() > 1;
            on_threads(
                tasks,
                avx2,
                #[inline(always)]
                |((flow, rcorr), run)| {
                    let goods = super::goods::<W, K>(inst);
                    privately(
                        private,
                        [flow, rcorr],
                        #[inline(always)]
                        |[flow, rcorr]| {
                            for (k, job) in chunk.clone().enumerate() {
                                let n = inst.n[job];
                                let dx = &row(&out.o1, k, goods)[run.clone()];
                                for j in 0..run.len() {
                                    flow[j] += n * dx[j];
                                }
                                if pass == Pass::Predictor {
                                    let dx = &row(&out.o2, k, goods)[run.clone()];
                                    for j in 0..run.len() {
                                        rcorr[j] += n * dx[j];
                                    }
                                }
                            }
                        },
                    );
                },
            );
        }

        let (target, corr) = match pass {
            Pass::Predictor => (0.0, 0.0),
            Pass::Corrector { target } => (target, 1.0),
        };
        let (limits, poly) = (&mut found.limits, &mut found.poly);
        for tt in 0..goods {
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
        found
    }
}

/// Each job of `chunk`'s ceiling term `r beta` into `total` and its entries' complementarity
/// (the first scalar of its chunk outputs; with GPU types the first two, `sum x z` and
/// `sum y v`) into `entries`, in the jobs' order.
#[inline(always)]
fn add_complementarity<const K: usize>(
    inst: &Instance,
    (b, out): (&Buyers, &Outputs),
    chunk: Range<usize>,
    (total, entries): (&mut f64, &mut f64),
) {
    let per_job = if K == 1 { 1 } else { 2 };
    for (k, job) in chunk.enumerate() {
        if inst.ceil[job].is_finite() {
            *total += b.r[job] * b.beta[job];
        }
        for value in &out.scalars[k * SCALARS..k * SCALARS + per_job] {
            *entries += value;
        }
    }
}

/// [`InteriorPoint::complementarity`]'s work on each job of a run: its `sum x z + y v` (scalar 0).
#[inline(always)]
fn entry_complementarity<const W: usize>(inst: &Instance, part: Part<'_>) {
    let rounds = width::<W>(inst);
    let mut comp = vec![0.0; rounds];
    for k in 0..part.jobs {
        let (x, y) = (row(part.e.x, k, rounds), row(part.e.y, k, rounds));
        let (z, v) = (row(part.e.z, k, rounds), row(part.e.v, k, rounds));
        for j in 0..rounds {
            comp[j] = x[j] * z[j] + y[j] * v[j];
        }
        part.out.scalars[k * SCALARS] = lane_sum(&comp);
    }
}

/// Job `k`'s [`SCALARS`] per-job values of a chunk.
#[inline(always)]
fn scalars(values: &[f64], k: usize) -> [f64; SCALARS] {
    let mut out = [0.0; SCALARS];
    out.copy_from_slice(row(values, k, SCALARS));
    out
}

/// [`InteriorPoint::prepare`]'s work on each job of a run: apply the pending step to its
/// entries, then its reciprocals, utility, `gamma`, `kappa` and dominant entry; its contributions
/// to the price system's diagonal (`o3`) and to the price right-hand sides (`M^{-1} h0` in `o1`,
/// `M^{-1} h_tau` in `o2`), and its `sum x z + y v` (scalar 0).
#[inline(always)]
fn prepare_jobs<const W: usize>(
    inst: &Instance,
    p: &[f64],
    pending: Option<Pending>,
    part: Part<'_>,
) {
    let rounds = width::<W>(inst);
    let (e, mut b, out) = (part.e, part.b, part.out);
    let mut scratch = vec![0.0; 4 * rounds];
    let (g, rest) = scratch.split_at_mut(rounds);
    let (g2, rest) = rest.split_at_mut(rounds);
    let (q, comp) = rest.split_at_mut(rounds);
    let (g, g2, q, comp) = (
        &mut g[..rounds],
        &mut g2[..rounds],
        &mut q[..rounds],
        &mut comp[..rounds],
    );
    for k in 0..part.jobs {
        let job = part.first + k;
        let a = row(&inst.a, job, rounds);
        let n = inst.n[job];
        let (x, y) = (row_mut(e.x, k, rounds), row_mut(e.y, k, rounds));
        let (z, v) = (row_mut(e.z, k, rounds), row_mut(e.v, k, rounds));
        let (ix, iy) = (row_mut(e.ix, k, rounds), row_mut(e.iy, k, rounds));
        let isig = row_mut(e.isig, k, rounds);
        if let Some(step) = pending {
            let (dx, cxi, cvi) = (
                row(e.dx, k, rounds),
                row(e.cxi, k, rounds),
                row(e.cvi, k, rounds),
            );
            for j in 0..rounds {
                update_entry(
                    step,
                    (&mut x[j], &mut y[j], &mut z[j], &mut v[j]),
                    (ix[j], iy[j], cxi[j], cvi[j], dx[j]),
                );
            }
        }
        let u = inst.c[job] + lane_dot(a, x);
        let (ceiling, inv_gamma) = utility_terms(inst, job, (&mut b, k), u);
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
        out.scalars[k * SCALARS] = lane_sum(comp);
        let (kappa, dominant) = kappa_terms((&mut b, k), inv_gamma, q);
        let inverse = RowInverse::new(a, isig, kappa, dominant, b.dominant_loo[k]);
        let n2 = n * n;
        // Diagonal: n^2 L / (sigma kappa) (the off-diagonal terms: [`schur_rows`]).
        let diag = row_mut(out.o3, k, rounds);
        for tt in 0..rounds {
            // L = kappa - q off the dominant entry.
            let loo = if tt == dominant {
                b.dominant_loo[k]
            } else {
                kappa - q[tt]
            };
            diag[tt] = n2 * (loo * isig[tt] * inverse.inv_kappa);
        }
        // M^{-1} h0, h0 = coef a - n p, and M^{-1} h_tau, h_tau = 1/x - 1/y (- a / r).
        let coef = b.coef[k];
        let lift = if ceiling { -1.0 / b.r[k] } else { 0.0 };
        for j in 0..rounds {
            g[j] = coef * a[j] - n * p[j];
            g2[j] = ix[j] - iy[j] + lift * a[j];
        }
        let (o1, o2) = (row_mut(out.o1, k, rounds), row_mut(out.o2, k, rounds));
        inverse.apply_pair((g, g2), (o1, o2));
    }
}

/// The rank ones `- n^2 / kappa d d^T` of the jobs `jobs` on the price system's rows `run`
/// (`schur` holds those rows; `fill` writes a job's `d` over the goods), four jobs at a time
/// (blocks of four from job 0; in a last, shorter block the missing jobs weigh 0 and keep the
/// rows of the block before, as the fused loop left them). With `W > 0` the rows are `W` long.
#[inline(always)]
fn subtract_rank_ones<const W: usize>(
    inst: &Instance,
    b: &Buyers,
    jobs: Range<usize>,
    (schur, run): (&mut [f64], Range<usize>),
    fill: impl Fn(&mut [f64], usize),
) {
    let goods = inst.goods();
    let mut d = vec![0.0; SCHUR_BLOCK * goods];
    let mut scales = [0.0; SCHUR_BLOCK];
    if jobs.start >= SCHUR_BLOCK {
        for (slot, d) in d.chunks_exact_mut(goods).enumerate() {
            fill(d, jobs.start - SCHUR_BLOCK + slot);
        }
    }
    for block in jobs.clone().step_by(SCHUR_BLOCK) {
        for (slot, (d, scale)) in d.chunks_exact_mut(goods).zip(&mut scales).enumerate() {
            let job = block + slot;
            if job < jobs.end {
                fill(d, job);
                let n = inst.n[job];
                *scale = n * n / b.kappa[job];
            } else {
                *scale = 0.0;
            }
        }
        subtract_outer_products::<W>(schur, goods, run.clone(), &d, &scales);
    }
}

/// [`InteriorPoint::back_substitute`]'s work on each job of a run: its direction (in
/// `o1`, the supply residual's terms), its step limits and `a.dx` (scalars 0 to 2), and in the
/// predictor its second-order terms, their sums over the entries (scalars 3 to 7) and
/// `M^{-1} hc` (in `o2`), or in the corrector the stored direction and ceiling steps.
#[inline(always)]
fn back_substitute_jobs<const W: usize>(
    inst: &Instance,
    (p, dp): (&[f64], &[f64]),
    pass: Pass,
    part: Part<'_>,
) {
    let rounds = width::<W>(inst);
    let (e, b, out) = (part.e, part.b, part.out);
    let mut scratch = vec![0.0; 3 * rounds];
    let (g, rest) = scratch.split_at_mut(rounds);
    let (c1, c3) = rest.split_at_mut(rounds);
    let (g, c1, c3) = (&mut g[..rounds], &mut c1[..rounds], &mut c3[..rounds]);
    for k in 0..part.jobs {
        let job = part.first + k;
        let a = row(&inst.a, job, rounds);
        let n = inst.n[job];
        let (z, v) = (row(e.z, k, rounds), row(e.v, k, rounds));
        let (ix, iy) = (row(e.ix, k, rounds), row(e.iy, k, rounds));
        let isig = row(e.isig, k, rounds);
        let (cxi, cvi) = (row_mut(e.cxi, k, rounds), row_mut(e.cvi, k, rounds));
        let dx_store = row_mut(e.dx, k, rounds);
        let ceiling = inst.ceil[job].is_finite();
        let inverse = RowInverse::new(a, isig, b.kappa[k], b.dominant[k], b.dominant_loo[k]);
        let r = b.r[k];
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
                    let h = (coef * a[j] - n * p[j]) + target * (ix[j] - iy[j]) + cvi[j] - cxi[j];
                    g[j] = h - n * dp[j];
                }
            }
        }
        let dx = row_mut(out.o1, k, rounds);
        let total = inverse.apply(g, dx);
        // a.dx in closed form: summing a_e dx_e would cancel the large components of a tie
        // (equal bang per buck in two rounds), which are orthogonal to a.
        let du = total / (b.gamma[k] * b.kappa[k]);
        let (mut lp, mut ld) = (0.0f64, 0.0f64);
        let sums = row_mut(out.scalars, k, SCALARS);
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
                sums[3] = lane_sum(c1);
                sums[4] = lane_sum(c3);
                let cr = if ceiling {
                    ceiling_predictor(&b, k, du, (&mut lp, &mut ld), sums)
                } else {
                    0.0
                };
                b.cr[k] = cr;
                // M^{-1} hc, hc = -dx dz / x - dx dv / y (+ a cr / r).
                let lift = if ceiling { cr / r } else { 0.0 };
                for j in 0..rounds {
                    g[j] = cvi[j] - cxi[j] + lift * a[j];
                }
                inverse.apply(g, row_mut(out.o2, k, rounds));
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
                (b.dr[k], b.dbeta[k]) = if ceiling {
                    ceiling_corrector(&b, k, du, target, (&mut lp, &mut ld))
                } else {
                    (0.0, 0.0)
                };
            }
        }
        sums[0] = lp;
        sums[1] = ld;
        sums[2] = du;
    }
}

/// Job `job`'s (row `k` of a part) terms of utility `u`: with a ceiling `beta / r` and the
/// ceiling residual, then `coef` and `gamma` (module documentation of `mod.rs`). Returns
/// whether the job has a ceiling, and `1 / gamma`.
#[inline(always)]
pub(super) fn utility_terms(
    inst: &Instance,
    job: usize,
    (b, k): (&mut BuyerRows<'_>, usize),
    u: f64,
) -> (bool, f64) {
    b.u[k] = u;
    let ceiling = inst.ceil[job].is_finite();
    if ceiling {
        b.br[k] = b.beta[k] / b.r[k];
        b.rc[k] = u + b.r[k] - inst.ceil[job];
    } else {
        b.br[k] = 0.0;
        b.rc[k] = 0.0;
    }
    b.coef[k] = inst.w[job] / u - b.br[k] * b.rc[k];
    let gamma = inst.w[job] / (u * u) + b.br[k];
    b.gamma[k] = gamma;
    (ceiling, 1.0 / gamma)
}

/// Row `k`'s `kappa = 1 / gamma + sum q` (`q`: each entry's, or with GPU types each round's,
/// share of it) and its dominant entry (or round), whose leave-one-out sum `L` is summed
/// directly (`kappa - q` would cancel). Returns `kappa` and the dominant entry ([`NONE`] if none).
#[inline(always)]
pub(super) fn kappa_terms(
    (b, k): (&mut BuyerRows<'_>, usize),
    inv_gamma: f64,
    q: &mut [f64],
) -> (f64, usize) {
    let kappa = inv_gamma + lane_sum(q);
    b.kappa[k] = kappa;
    let dominant = dominant_entry(q, kappa);
    b.dominant[k] = dominant;
    if dominant != NONE {
        let own = std::mem::replace(&mut q[dominant], 0.0);
        b.dominant_loo[k] = inv_gamma + lane_sum(q);
        q[dominant] = own;
    }
    (kappa, dominant)
}

/// The ceiling's predictor step of job `k` of a part whose `a.dx` is `du`: its slack's and
/// multiplier's limits into `(lp, ld)`, their complementarity terms into `sums[5..8]`; returns
/// `dr dbeta`.
#[inline(always)]
pub(super) fn ceiling_predictor(
    b: &BuyerRows<'_>,
    k: usize,
    du: f64,
    (lp, ld): (&mut f64, &mut f64),
    sums: &mut [f64],
) -> f64 {
    let (r, beta, br) = (b.r[k], b.beta[k], b.br[k]);
    let dbeta = br * (du - (r - b.rc[k]));
    let dr = (-r * beta - r * dbeta) / beta;
    *lp = lp.max(-dr / r);
    *ld = ld.max(-dbeta / beta);
    let cr = dr * dbeta;
    sums[5] = dr * beta;
    sums[6] = r * dbeta;
    sums[7] = cr;
    cr
}

/// The ceiling's corrector step `(dr, dbeta)` of job `k` of a part whose `a.dx` is `du`, for
/// the barrier target `target`; their limits into `(lp, ld)`.
#[inline(always)]
pub(super) fn ceiling_corrector(
    b: &BuyerRows<'_>,
    k: usize,
    du: f64,
    target: f64,
    (lp, ld): (&mut f64, &mut f64),
) -> (f64, f64) {
    let (r, beta, br, cr) = (b.r[k], b.beta[k], b.br[k], b.cr[k]);
    let qc = -b.rc[k] - (target - cr) / beta + r;
    let dbeta = br * (du - qc);
    let dr = (target - cr - r * beta - r * dbeta) / beta;
    *lp = lp.max(-dr / r);
    *ld = ld.max(-dbeta / beta);
    (dr, dbeta)
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
