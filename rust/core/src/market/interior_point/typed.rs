//! The passes of the interior-point method for a market with `K > 1` GPU types.
//!
//! # The Newton block of a job
//!
//! A job's shares `x_tk` (round `t`, type `k`) have the bounds `x >= 0` (multiplier `z`) and,
//! per round, the cap `y_t = 1 - sum_k x_tk >= 0` (multiplier `v_t`). Eliminating the
//! multipliers leaves, for each job, `M dx + n dp = h` with
//!
//! ```text
//! M = diag(zeta) + sum_t eta_t 1_t 1_t^T + gamma a a^T,   zeta = z / x,  eta = v / y,
//! h = coef a - n p + tau (1/x - 1/y) + (dy dv / y - dx dz / x)        (as with one type)
//! ```
//!
//! `1_t` the indicator of round `t`'s types: block diagonal by rounds (diagonal plus rank one in
//! each block), plus the job's rank one. With one type every block is `1 x 1`, `sigma = zeta +
//! eta`, and the scalar passes (`passes.rs`) apply.
//!
//! Write `B` for `M` without the utility term (`B_t = diag(zeta_t) + eta_t 1 1^T` per round),
//! `iz = 1 / zeta`, and for a round `S = sum iz`, `A2 = sum a^2 iz`,
//! `Pair = sum_{j < l} iz_j iz_l (a_j - a_l)^2` over its types (sums of positive terms). Then
//!
//! ```text
//! B^{-1} a = iz rho / (1 + eta S),     rho_k = a_k + eta sum_j iz_j (a_k - a_j),
//! Q_t = a_t^T B_t^{-1} a_t = (A2 + eta Pair) / (1 + eta S),   kappa = 1 / gamma + sum_t Q_t,
//! ```
//!
//! and `M^{-1}` is the rank-one update of `B^{-1}` by `B^{-1} a` over `kappa`. Evaluated that
//! way it cancels catastrophically where the job's shares are fractional (`iz` huge), as the
//! one-type method's textbook formula does. So each round is solved *given the rest of its job*:
//! with `L_t = kappa - Q_t` (summed directly for the round holding more than half of `kappa`)
//! and `R_t = sum_{s != t} a_s^T B_s^{-1} g_s`, round `t`'s block of `M^{-1} g` is
//!
//! ```text
//! dx_t = E_t^{-1} g_t - r_t R_t,   E_t = B_t + a_t a_t^T / L_t,   r_t = E_t^{-1} a_t / L_t,
//! ```
//!
//! and `E_t^{-1}` and `r_t` have closed forms whose every sum is of positive terms or of natural
//! differences (Cauchy-Binet on the diagonal plus the rank-two `[1, a]`):
//!
//! ```text
//! Delta = L (1 + eta S) + A2 + eta Pair
//! (E^{-1})_kk = iz_k (L (1 + eta S_-k) + A2_-k + eta Pair_-k) / Delta
//! (E^{-1})_kj = -iz_k iz_j (eta L + a_k a_j + eta sum_{l != k, j} iz_l (a_l - a_k)(a_l - a_j)) / Delta
//! r_k = iz_k rho_k / Delta
//! ```
//!
//! (`_-k`: the sum without type `k`, taken directly). `a . dx = P / (gamma kappa)` with
//! `P = sum_t a_t^T B_t^{-1} g_t = sum_t (B^{-1} a)_t . g_t`, in closed form as with one type. The
//! price system is `sum_i n_i^2 M_i^{-1}` over the goods: its within-round blocks are
//! `n^2 E_t^{-1}` (accumulated apart, accurately), the rest the rank one
//! `- n^2 / kappa (B^{-1} a)(B^{-1} a)^T`.
//!
//! # Layout
//!
//! Rows are type-major (`k T + t`), and the passes run over the rounds of a job with the `K`
//! types of each round unrolled (`K` is a compile-time constant): every loop is contiguous, in a
//! fixed order (deterministic) and vectorisable across rounds. The per-job passes touch only the
//! job's own rows and add its contributions to the per-good sums in job order.

use super::super::instance::Instance;
use super::super::linalg::lanes::{lane_dot, lane_sum, row, row_mut};
use super::row_inverse::{dominant_entry, subtract_outer_products};
use super::state::{Limits, Pass, PassResult, Pending};
use super::{live, width, InteriorPoint, NONE, SCHUR_BLOCK};

/// The `K` rows (one per type) of a type-major row of `K rounds` entries.
#[inline(always)]
fn split<const K: usize>(values: &[f64], rounds: usize) -> [&[f64]; K] {
    std::array::from_fn(|k| &values[k * rounds..][..rounds])
}

/// [`split`], mutable.
#[inline(always)]
fn split_mut<const K: usize>(values: &mut [f64], rounds: usize) -> [&mut [f64]; K] {
    let mut rest = values;
    std::array::from_fn(|_| {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(rounds);
        rest = tail;
        head
    })
}

/// The values of the `K` rows at round `t`.
#[inline(always)]
fn at<const K: usize>(rows: &[&[f64]; K], t: usize) -> [f64; K] {
    std::array::from_fn(|k| rows[k][t])
}

/// One job's `M^{-1}`: the per-round data of [`InteriorPoint::prepare_typed`].
struct SlotInverse<'a, const K: usize> {
    rounds: usize,
    hata: [&'a [f64]; K],
    r: [&'a [f64]; K],
    /// `E^{-1}` of each round: entry `(k, j)` in row `k K + j` of `K K` rows.
    n: [[&'a [f64]; K]; K],
    dominant: usize,
}

impl<'a, const K: usize> SlotInverse<'a, K> {
    /// Job `b`'s, from the per-job arrays `hata`, `r` and `n`.
    #[inline(always)]
    fn new(
        (hata, r, n): (&'a [f64], &'a [f64], &'a [f64]),
        b: usize,
        rounds: usize,
        dominant: usize,
    ) -> Self {
        let goods = rounds * K;
        let n = row(n, b, goods * K);
        Self {
            rounds,
            hata: split::<K>(row(hata, b, goods), rounds),
            r: split::<K>(row(r, b, goods), rounds),
            n: std::array::from_fn(|k| split::<K>(&n[k * K * rounds..][..K * rounds], rounds)),
            dominant,
        }
    }

    /// First half of `M^{-1} g`: `per_round[t] = (B^{-1} a)_t . g_t`; then each round's `R_t`
    /// (the rest of the job) in `per_round`. Returns `P = sum_t (B^{-1} a)_t . g_t`.
    #[inline(always)]
    fn rest(&self, g: &[&[f64]; K], per_round: &mut [f64]) -> f64 {
        let rounds = self.rounds;
        let per_round = &mut per_round[..rounds];
        for t in 0..rounds {
            let mut sum = 0.0;
            for k in 0..K {
                sum += self.hata[k][t] * g[k][t];
            }
            per_round[t] = sum;
        }
        let total = lane_sum(per_round);
        let others_of_dominant = if self.dominant < rounds {
            let own = std::mem::replace(&mut per_round[self.dominant], 0.0);
            let others = lane_sum(per_round);
            per_round[self.dominant] = own;
            others
        } else {
            0.0
        };
        for p in per_round.iter_mut() {
            *p = total - *p;
        }
        if self.dominant < rounds {
            per_round[self.dominant] = others_of_dominant;
        }
        total
    }

    /// Round `t` of `M^{-1} g` given its `R_t`.
    #[inline(always)]
    fn round(&self, g: &[f64; K], rest: f64, t: usize) -> [f64; K] {
        std::array::from_fn(|k| {
            let mut out = -self.r[k][t] * rest;
            for j in 0..K {
                out += self.n[k][j][t] * g[j];
            }
            out
        })
    }
}

/// 1 where some type of the round is purchasable, else 0.
#[inline(always)]
fn live_round<const K: usize>(a: &[f64; K]) -> f64 {
    let mut any = 0.0f64;
    for &value in a {
        any = any.max(live(value));
    }
    any
}

/// The round's data that does not depend on the rest of the job (see the module documentation).
struct Round<const K: usize> {
    iz: [f64; K],
    eta: f64,
    ops: f64,
    a2: f64,
    pair: f64,
    rho: [f64; K],
}

impl<const K: usize> Round<K> {
    #[inline(always)]
    fn new(a: &[f64; K], iz: [f64; K], eta: f64) -> Self {
        let (mut s, mut a2, mut pair) = (0.0, 0.0, 0.0);
        for k in 0..K {
            s += iz[k];
            a2 += a[k] * a[k] * iz[k];
            for j in k + 1..K {
                let d = a[k] - a[j];
                pair += iz[k] * iz[j] * (d * d);
            }
        }
        let rho = std::array::from_fn(|k| {
            let mut sum = 0.0;
            for j in 0..K {
                if j != k {
                    sum += iz[j] * (a[k] - a[j]);
                }
            }
            a[k] + eta * sum
        });
        Self {
            iz,
            eta,
            ops: 1.0 + eta * s,
            a2,
            pair,
            rho,
        }
    }

    /// `Q = a^T B^{-1} a`.
    #[inline(always)]
    fn q(&self) -> f64 {
        (self.a2 + self.eta * self.pair) / self.ops
    }

    /// `E^{-1}` (row-major `K x K`) and `r`, given `L`.
    #[inline(always)]
    fn inverse(&self, a: &[f64; K], l: f64) -> ([[f64; K]; K], [f64; K]) {
        let (iz, eta) = (&self.iz, self.eta);
        let delta = 1.0 / (l * self.ops + self.a2 + eta * self.pair);
        let mut inverse = [[0.0; K]; K];
        for k in 0..K {
            // the sums without type k
            let (mut s, mut a2, mut pair) = (0.0, 0.0, 0.0);
            for j in 0..K {
                if j == k {
                    continue;
                }
                s += iz[j];
                a2 += a[j] * a[j] * iz[j];
                for f in j + 1..K {
                    if f != k {
                        let d = a[j] - a[f];
                        pair += iz[j] * iz[f] * (d * d);
                    }
                }
            }
            inverse[k][k] = iz[k] * (l * (1.0 + eta * s) + a2 + eta * pair) * delta;
            for j in k + 1..K {
                let mut sum = 0.0;
                for f in 0..K {
                    if f != k && f != j {
                        sum += iz[f] * ((a[f] - a[k]) * (a[f] - a[j]));
                    }
                }
                let beta = eta * l + a[k] * a[j] + eta * sum;
                let value = -(iz[k] * iz[j]) * beta * delta;
                inverse[k][j] = value;
                inverse[j][k] = value;
            }
        }
        let r = std::array::from_fn(|k| iz[k] * self.rho[k] * delta);
        (inverse, r)
    }
}

/// The round sums `D_t = sum_k dx_tk`.
#[inline(always)]
fn round_sum<const K: usize>(values: &[f64; K]) -> f64 {
    let mut sum = values[0];
    for &v in &values[1..] {
        sum += v;
    }
    sum
}

impl InteriorPoint {
    /// The total complementarity `sum x z + sum y v + s p + r beta`, summed as
    /// [`Self::prepare_typed`] sums it.
    #[inline(always)]
    pub(super) fn complementarity_typed<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
    ) -> f64 {
        let rounds = width::<W>(inst);
        let goods = rounds * K;
        let (e, b, t) = (&self.e, &self.b, &self.t);
        let (comp_x, comp_y) = (&mut self.w.c1[..rounds], &mut self.w.c3[..rounds]);
        let (mut total, mut entry_total) = (0.0, 0.0);
        for k in 0..inst.buyers() {
            let (x, z) = (
                split::<K>(row(&e.x, k, goods), rounds),
                split::<K>(row(&e.z, k, goods), rounds),
            );
            let (y, v) = (row(&e.y, k, rounds), row(&e.v, k, rounds));
            if inst.ceil[k].is_finite() {
                total += b.r[k] * b.beta[k];
            }
            for tt in 0..rounds {
                let mut sum = 0.0;
                for j in 0..K {
                    sum += x[j][tt] * z[j][tt];
                }
                comp_x[tt] = sum;
                comp_y[tt] = y[tt] * v[tt];
            }
            entry_total += lane_sum(comp_x);
            entry_total += lane_sum(comp_y);
        }
        total += entry_total;
        for tt in 0..goods {
            if inst.good_used[tt] {
                total += t.s[tt] * t.p[tt];
            }
        }
        total
    }

    /// Apply the pending step to job `k`'s rows: `dz` and `dv` are recomputed from the stored
    /// corrector terms exactly as the corrector pass computed them.
    #[inline(always)]
    fn update_typed<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        k: usize,
        step: Pending,
    ) {
        let rounds = width::<W>(inst);
        let goods = rounds * K;
        let e = &mut self.e;
        let (ix, cxi, dx) = (
            split::<K>(row(&e.ix, k, goods), rounds),
            split::<K>(row(&e.cxi, k, goods), rounds),
            split::<K>(row(&e.dx, k, goods), rounds),
        );
        let (iy, cvi) = (row(&e.iy, k, rounds), row(&e.cvi, k, rounds));
        let x = split_mut::<K>(row_mut(&mut e.x, k, goods), rounds);
        let z = split_mut::<K>(row_mut(&mut e.z, k, goods), rounds);
        let (y, v) = (
            &mut e.y[k * rounds..(k + 1) * rounds],
            &mut e.v[k * rounds..(k + 1) * rounds],
        );
        for t in 0..rounds {
            let d = round_sum(&at(&dx, t));
            let dv = step.target * iy[t] - cvi[t] - v[t] + v[t] * iy[t] * d;
            y[t] -= step.primal * d;
            v[t] += step.dual * dv;
            for j in 0..K {
                let (x, z) = (&mut x[j][t], &mut z[j][t]);
                let dz = step.target * ix[j][t] - cxi[j][t] - *z - *z * ix[j][t] * dx[j][t];
                *x += step.primal * dx[j][t];
                *z += step.dual * dz;
            }
        }
    }

    /// Apply the pending step, if any, in a pass of its own.
    #[inline(always)]
    pub(super) fn apply_pending_typed<const W: usize, const K: usize>(&mut self, inst: &Instance) {
        if let Some(step) = self.pending.take() {
            self.apply_pending_scalars(inst, step);
            for k in 0..inst.buyers() {
                self.update_typed::<W, K>(inst, k, step);
            }
        }
    }

    /// [`Self::prepare_scalar`] with GPU types: apply the pending step, then per job the
    /// reciprocals, the per-round inverses of the module documentation, the price system (over
    /// the `T K` goods) and the price right-hand sides of `h0` and `h_tau`. Returns the total
    /// complementarity.
    #[inline(always)]
    pub(super) fn prepare_typed<const W: usize, const K: usize>(&mut self, inst: &Instance) -> f64 {
        let rounds = width::<W>(inst);
        let goods = rounds * K;
        let pending = self.pending.take();
        if let Some(step) = pending {
            self.apply_pending_scalars(inst, step);
        }
        self.t.rp.fill(0.0);
        self.t.r0.fill(0.0);
        self.t.rtau.fill(0.0);
        self.schur.fill(0.0);
        self.k.block.fill(0.0);
        let mut total = 0.0;
        let mut entry_total = 0.0;
        for k in 0..inst.buyers() {
            if let Some(step) = pending {
                self.update_typed::<W, K>(inst, k, step);
            }
            let (e, b, t, w, kk) = (
                &mut self.e,
                &mut self.b,
                &mut self.t,
                &mut self.w,
                &mut self.k,
            );
            let a_row = row(&inst.a, k, goods);
            let a = split::<K>(a_row, rounds);
            let n = inst.n[k];
            let (x_row, z_row) = (row(&e.x, k, goods), row(&e.z, k, goods));
            let (x, z) = (split::<K>(x_row, rounds), split::<K>(z_row, rounds));
            let (y, v) = (row(&e.y, k, rounds), row(&e.v, k, rounds));
            let u = inst.c[k] + lane_dot(a_row, x_row);
            b.u[k] = u;
            for j in 0..goods {
                t.rp[j] += n * x_row[j];
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

            // Pass A: reciprocals (ix = 1/x, iz = x/z, iy = 1/y, eta = v/y, masked to 0 where
            // nothing is purchasable), each round's sums, B^{-1} a and Q.
            let ix = split_mut::<K>(row_mut(&mut e.ix, k, goods), rounds);
            let iz = split_mut::<K>(&mut w.q[..goods], rounds);
            let hata = split_mut::<K>(row_mut(&mut kk.hata, k, goods), rounds);
            let rho = split_mut::<K>(row_mut(&mut kk.r, k, goods), rounds);
            let iy = row_mut(&mut e.iy, k, rounds);
            let q = row_mut(&mut kk.q, k, rounds);
            let (eta_r, ops_r) = (&mut kk.eta[..rounds], &mut kk.ops[..rounds]);
            let (a2_r, pair_r) = (&mut kk.a2[..rounds], &mut kk.pair[..rounds]);
            let (comp_x, comp_y) = (&mut w.c1[..rounds], &mut w.c3[..rounds]);
            for tt in 0..rounds {
                let (at_a, at_x, at_z) = (at(&a, tt), at(&x, tt), at(&z, tt));
                let mut zeta_inv = [0.0; K];
                let mut sum = 0.0;
                for j in 0..K {
                    let m = live(at_a[j]);
                    ix[j][tt] = m / (at_x[j] + (1.0 - m));
                    zeta_inv[j] = m * at_x[j] / (at_z[j] + (1.0 - m));
                    iz[j][tt] = zeta_inv[j];
                    sum += at_x[j] * at_z[j];
                }
                comp_x[tt] = sum;
                let m = live_round(&at_a);
                let ry = m / (y[tt] + (1.0 - m));
                iy[tt] = ry;
                let eta = v[tt] * ry;
                comp_y[tt] = y[tt] * v[tt];
                let round = Round::new(&at_a, zeta_inv, eta);
                q[tt] = round.q();
                let inv_ops = 1.0 / round.ops;
                for j in 0..K {
                    rho[j][tt] = round.rho[j];
                    hata[j][tt] = zeta_inv[j] * round.rho[j] * inv_ops;
                }
                eta_r[tt] = eta;
                ops_r[tt] = round.ops;
                a2_r[tt] = round.a2;
                pair_r[tt] = round.pair;
            }
            entry_total += lane_sum(comp_x);
            entry_total += lane_sum(comp_y);
            let kappa = inv_gamma + lane_sum(q);
            b.kappa[k] = kappa;
            let dominant = dominant_entry(q, kappa);
            b.dominant[k] = dominant;
            if dominant != NONE {
                // L of the dominant round, summed directly (kappa - Q would cancel).
                let own = std::mem::replace(&mut q[dominant], 0.0);
                b.dominant_loo[k] = inv_gamma + lane_sum(q);
                q[dominant] = own;
            }
            let l_dominant = b.dominant_loo[k];

            // Pass B: each round's E^{-1} and r, the price system's blocks, and the right-hand
            // sides with their halves (B^{-1} a) . g.
            let coef = b.coef[k];
            let lift = if ceiling { -1.0 / b.r[k] } else { 0.0 };
            let p = split::<K>(&t.p[..goods], rounds);
            let mut inverse_rows = split_mut::<K>(row_mut(&mut kk.n, k, goods * K), K * rounds);
            let inverse: [[&mut [f64]; K]; K] = std::array::from_fn(|j| {
                split_mut::<K>(std::mem::take(&mut inverse_rows[j]), rounds)
            });
            let mut block_rows = split_mut::<K>(&mut kk.block[..goods * K], K * rounds);
            let block: [[&mut [f64]; K]; K] =
                std::array::from_fn(|j| split_mut::<K>(std::mem::take(&mut block_rows[j]), rounds));
            let n2 = n * n;
            let (g, g2) = (
                split_mut::<K>(&mut w.g[..goods], rounds),
                split_mut::<K>(&mut w.g2[..goods], rounds),
            );
            let (pg, pg2) = (&mut kk.p1[..rounds], &mut kk.p2[..rounds]);
            for tt in 0..rounds {
                let at_a = at(&a, tt);
                let l = if tt == dominant {
                    l_dominant
                } else {
                    kappa - q[tt]
                };
                let round = Round {
                    iz: std::array::from_fn(|j| iz[j][tt]),
                    eta: eta_r[tt],
                    ops: ops_r[tt],
                    a2: a2_r[tt],
                    pair: pair_r[tt],
                    rho: std::array::from_fn(|j| rho[j][tt]),
                };
                let (e_inv, r) = round.inverse(&at_a, l);
                let (mut s1, mut s2) = (0.0, 0.0);
                for j in 0..K {
                    rho[j][tt] = r[j];
                    for f in 0..K {
                        inverse[j][f][tt] = e_inv[j][f];
                        if f >= j {
                            block[j][f][tt] += n2 * e_inv[j][f];
                        }
                    }
                    let gj = coef * at_a[j] - n * p[j][tt];
                    let g2j = ix[j][tt] - iy[tt] + lift * at_a[j];
                    g[j][tt] = gj;
                    g2[j][tt] = g2j;
                    s1 += hata[j][tt] * gj;
                    s2 += hata[j][tt] * g2j;
                }
                pg[tt] = s1;
                pg2[tt] = s2;
            }
            // The rank one - n^2 / kappa (B^{-1} a)(B^{-1} a)^T, four jobs at a time.
            let slot = k % SCHUR_BLOCK;
            let (schur_rows, schur_scales) = (&mut w.schur_rows, &mut w.schur_scales);
            schur_rows[slot * goods..(slot + 1) * goods].copy_from_slice(row(&kk.hata, k, goods));
            schur_scales[slot] = n2 / kappa;
            if slot == SCHUR_BLOCK - 1 || k + 1 == inst.buyers() {
                schur_scales[slot + 1..].fill(0.0);
                subtract_outer_products::<0>(
                    &mut self.schur,
                    goods,
                    0..goods,
                    schur_rows,
                    schur_scales,
                );
            }
            // Pass C: sum n M^{-1} h0 and sum n M^{-1} h_tau.
            let inverse = SlotInverse::<K>::new((&kk.hata, &kk.r, &kk.n), k, rounds, dominant);
            for rest in [&mut kk.p1, &mut kk.p2] {
                let per_round = &mut rest[..rounds];
                let total = lane_sum(per_round);
                let others = if dominant < rounds {
                    let own = std::mem::replace(&mut per_round[dominant], 0.0);
                    let others = lane_sum(per_round);
                    per_round[dominant] = own;
                    others
                } else {
                    0.0
                };
                for p in per_round.iter_mut() {
                    *p = total - *p;
                }
                if dominant < rounds {
                    per_round[dominant] = others;
                }
            }
            let (g, g2) = (
                split::<K>(&w.g[..goods], rounds),
                split::<K>(&w.g2[..goods], rounds),
            );
            let (r0, rtau) = (
                split_mut::<K>(&mut t.r0[..goods], rounds),
                split_mut::<K>(&mut t.rtau[..goods], rounds),
            );
            let (rest1, rest2) = (&kk.p1[..rounds], &kk.p2[..rounds]);
            for tt in 0..rounds {
                let out = inverse.round(&at(&g, tt), rest1[tt], tt);
                let out2 = inverse.round(&at(&g2, tt), rest2[tt], tt);
                for j in 0..K {
                    r0[j][tt] += n * out[j];
                    rtau[j][tt] += n * out2[j];
                }
            }
        }
        self.entry_complementarity = entry_total;
        total += entry_total;
        // The within-round blocks, then the supply slacks on the diagonal.
        let (schur, t) = (&mut self.schur, &mut self.t);
        for j in 0..K {
            for f in j..K {
                let block = &self.k.block[(j * K + f) * rounds..(j * K + f + 1) * rounds];
                for tt in 0..rounds {
                    schur[(j * rounds + tt) * goods + f * rounds + tt] = block[tt];
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
        total
    }

    /// [`Self::back_substitute_scalar`] with GPU types.
    #[inline(always)]
    pub(super) fn back_substitute_typed<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        pass: Pass,
    ) -> PassResult {
        let rounds = width::<W>(inst);
        let goods = rounds * K;
        let (e, b, t, w, kk) = (&mut self.e, &mut self.b, &mut self.t, &mut self.w, &self.k);
        t.flow.fill(0.0);
        if pass == Pass::Predictor {
            t.rcorr.fill(0.0);
        }
        let mut limits = Limits::new();
        let mut poly = [0.0, -self.entry_complementarity, 0.0];
        let mut check = 0.0;
        let p = split::<K>(&t.p[..goods], rounds);
        let dp = split::<K>(&t.dp[..goods], rounds);
        let flow = split_mut::<K>(&mut t.flow[..goods], rounds);
        let rcorr = split_mut::<K>(&mut t.rcorr[..goods], rounds);
        let (c1, c3) = (&mut w.c1[..rounds], &mut w.c3[..rounds]);
        let rest = &mut w.diag[..rounds];
        for k in 0..inst.buyers() {
            let a = split::<K>(row(&inst.a, k, goods), rounds);
            let n = inst.n[k];
            let (z, ix) = (
                split::<K>(row(&e.z, k, goods), rounds),
                split::<K>(row(&e.ix, k, goods), rounds),
            );
            let (v, iy) = (row(&e.v, k, rounds), row(&e.iy, k, rounds));
            let cxi = split_mut::<K>(row_mut(&mut e.cxi, k, goods), rounds);
            let cvi = row_mut(&mut e.cvi, k, rounds);
            let dx_store = split_mut::<K>(row_mut(&mut e.dx, k, goods), rounds);
            let ceiling = inst.ceil[k].is_finite();
            let inverse = SlotInverse::<K>::new((&kk.hata, &kk.r, &kk.n), k, rounds, b.dominant[k]);
            let (r, beta, br) = (b.r[k], b.beta[k], b.br[k]);
            // g = h - n dp (see the scalar pass: the price step is subtracted last)
            let g_rows = split_mut::<K>(&mut w.g[..goods], rounds);
            match pass {
                Pass::Predictor => {
                    let coef = b.coef[k];
                    for tt in 0..rounds {
                        for j in 0..K {
                            g_rows[j][tt] = (coef * a[j][tt] - n * p[j][tt]) - n * dp[j][tt];
                        }
                    }
                }
                Pass::Corrector { target } => {
                    let coef = if ceiling {
                        b.coef[k] + (b.cr[k] - target) / r
                    } else {
                        b.coef[k]
                    };
                    for tt in 0..rounds {
                        for j in 0..K {
                            let h = (coef * a[j][tt] - n * p[j][tt])
                                + target * (ix[j][tt] - iy[tt])
                                + cvi[tt]
                                - cxi[j][tt];
                            g_rows[j][tt] = h - n * dp[j][tt];
                        }
                    }
                }
            }
            let g = split::<K>(&w.g[..goods], rounds);
            let total = inverse.rest(&g, rest);
            let du = total / (b.gamma[k] * b.kappa[k]);
            let (mut lp, mut ld) = (0.0f64, 0.0f64);
            match pass {
                Pass::Predictor => {
                    // dz = -z (1 + dx/x), dv = -v (1 - D/y) with D = sum_k dx (the round's
                    // slack moves by -D)
                    let hc = split_mut::<K>(&mut w.out[..goods], rounds);
                    for tt in 0..rounds {
                        let dx = inverse.round(&at(&g, tt), rest[tt], tt);
                        let (mut s1, mut s3) = (0.0, 0.0);
                        for j in 0..K {
                            let d = dx[j];
                            flow[j][tt] += n * d;
                            let (zj, ixj) = (z[j][tt], ix[j][tt]);
                            let px = -d * ixj;
                            let dz = -zj - zj * ixj * d;
                            let qz = 1.0 - px;
                            lp = if px > lp { px } else { lp };
                            ld = if qz > ld { qz } else { ld };
                            s1 += d * zj;
                            s3 += d * dz;
                            cxi[j][tt] = d * dz * ixj;
                        }
                        let d = round_sum(&dx);
                        let py = d * iy[tt];
                        let dv = -v[tt] + v[tt] * iy[tt] * d;
                        let qv = 1.0 - py;
                        lp = if py > lp { py } else { lp };
                        ld = if qv > ld { qv } else { ld };
                        c1[tt] = s1 - d * v[tt];
                        c3[tt] = s3 - d * dv;
                        cvi[tt] = -d * dv * iy[tt];
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
                    // sum n M^{-1} hc, hc = dy dv / y - dx dz / x (+ a cr / r).
                    let lift = if ceiling { cr / r } else { 0.0 };
                    for tt in 0..rounds {
                        for j in 0..K {
                            hc[j][tt] = cvi[tt] - cxi[j][tt] + lift * a[j][tt];
                        }
                    }
                    let hc = split::<K>(&w.out[..goods], rounds);
                    inverse.rest(&hc, rest);
                    for tt in 0..rounds {
                        let out = inverse.round(&at(&hc, tt), rest[tt], tt);
                        for j in 0..K {
                            rcorr[j][tt] += n * out[j];
                        }
                    }
                }
                Pass::Corrector { target } => {
                    for tt in 0..rounds {
                        let dx = inverse.round(&at(&g, tt), rest[tt], tt);
                        for j in 0..K {
                            let d = dx[j];
                            flow[j][tt] += n * d;
                            dx_store[j][tt] = d;
                            let (zj, ixj) = (z[j][tt], ix[j][tt]);
                            let dz = target * ixj - cxi[j][tt] - zj - zj * ixj * d;
                            let px = -d * ixj;
                            let m = live(a[j][tt]);
                            let qz = -dz * (m / (zj + (1.0 - m)));
                            lp = if px > lp { px } else { lp };
                            ld = if qz > ld { qz } else { ld };
                        }
                        let d = round_sum(&dx);
                        let dv = target * iy[tt] - cvi[tt] - v[tt] + v[tt] * iy[tt] * d;
                        let py = d * iy[tt];
                        let m = live_round(&at(&a, tt));
                        let qv = -dv * (m / (v[tt] + (1.0 - m)));
                        lp = if py > lp { py } else { lp };
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
        PassResult {
            limits,
            poly,
            check,
        }
    }
}
