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
use super::parts::{EntryRows, Part, SCALARS};
use super::passes::{ceiling_corrector, ceiling_predictor, kappa_terms, utility_terms};
use super::row_inverse::sum_without;
use super::state::{Pass, Pending};
use super::{live, width};

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

/// One job's `M^{-1}`: the per-round data of [`prepare_jobs`].
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
        rests(per_round, self.dominant)
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

/// Each round's rest of its job, `R_t = sum_{s != t} per_round[s]`, in place of `per_round[t]`
/// (the dominant round's summed directly: total minus its own term would cancel). Returns the
/// total.
#[inline(always)]
fn rests(per_round: &mut [f64], dominant: usize) -> f64 {
    let total = lane_sum(per_round);
    let others_of_dominant = sum_without(per_round, dominant);
    for p in per_round.iter_mut() {
        *p = total - *p;
    }
    if dominant < per_round.len() {
        per_round[dominant] = others_of_dominant;
    }
    total
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

/// [`InteriorPoint::complementarity`]'s work on each job of a run: its `sum x z` and `sum y v`
/// (scalars 0 and 1).
#[inline(always)]
pub(super) fn entry_complementarity<const W: usize, const K: usize>(
    inst: &Instance,
    part: Part<'_>,
) {
    let rounds = width::<W>(inst);
    let goods = rounds * K;
    let mut scratch = vec![0.0; 2 * rounds];
    let (comp_x, comp_y) = scratch.split_at_mut(rounds);
    let (comp_x, comp_y) = (&mut comp_x[..rounds], &mut comp_y[..rounds]);
    for k in 0..part.jobs {
        let (x, z) = (
            split::<K>(row(part.e.x, k, goods), rounds),
            split::<K>(row(part.e.z, k, goods), rounds),
        );
        let (y, v) = (row(part.e.y, k, rounds), row(part.e.v, k, rounds));
        for tt in 0..rounds {
            let mut sum = 0.0;
            for j in 0..K {
                sum += x[j][tt] * z[j][tt];
            }
            comp_x[tt] = sum;
            comp_y[tt] = y[tt] * v[tt];
        }
        let sums = row_mut(part.out.scalars, k, SCALARS);
        sums[0] = lane_sum(comp_x);
        sums[1] = lane_sum(comp_y);
    }
}

/// Apply a step to job `k`'s rows of a part: `dz` and `dv` are recomputed from the stored
/// corrector terms exactly as the corrector pass computed them.
#[inline(always)]
pub(super) fn update_job<const W: usize, const K: usize>(
    inst: &Instance,
    e: &mut EntryRows<'_>,
    k: usize,
    step: Pending,
) {
    let rounds = width::<W>(inst);
    let goods = rounds * K;
    let (ix, cxi, dx) = (
        split::<K>(row(e.ix, k, goods), rounds),
        split::<K>(row(e.cxi, k, goods), rounds),
        split::<K>(row(e.dx, k, goods), rounds),
    );
    let (iy, cvi) = (row(e.iy, k, rounds), row(e.cvi, k, rounds));
    let x = split_mut::<K>(row_mut(e.x, k, goods), rounds);
    let z = split_mut::<K>(row_mut(e.z, k, goods), rounds);
    let (y, v) = (row_mut(e.y, k, rounds), row_mut(e.v, k, rounds));
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

/// [`InteriorPoint::prepare`]'s work on each job of a run (with GPU types): apply the pending step to its
/// rows, then its utility, reciprocals, per-round inverses (`hata`, `r`, `n`, `q` of the
/// typed state), `gamma`, `kappa` and dominant round; its `M^{-1} h0` and `M^{-1} h_tau` (in
/// `o1`, `o2`), its rounds' `n^2 E^{-1}` (in `o3`, laid out as the accumulated blocks) and its
/// `sum x z` and `sum y v` (scalars 0 and 1).
#[inline(always)]
pub(super) fn prepare_jobs<const W: usize, const K: usize>(
    inst: &Instance,
    p: &[f64],
    pending: Option<Pending>,
    mut part: Part<'_>,
) {
    let rounds = width::<W>(inst);
    let goods = rounds * K;
    let mut per_good = vec![0.0; 3 * goods];
    let (iz_row, rest) = per_good.split_at_mut(goods);
    let (g_row, g2_row) = rest.split_at_mut(goods);
    let (iz_row, g_row, g2_row) = (
        &mut iz_row[..goods],
        &mut g_row[..goods],
        &mut g2_row[..goods],
    );
    let mut per_round = vec![0.0; 8 * rounds];
    let mut rows = per_round.chunks_exact_mut(rounds);
    let mut next = || rows.next().unwrap_or_default();
    let (comp_x, comp_y, eta_r, ops_r) = (next(), next(), next(), next());
    let (a2_r, pair_r, pg, pg2) = (next(), next(), next(), next());
    let (comp_x, comp_y, eta_r, ops_r) = (
        &mut comp_x[..rounds],
        &mut comp_y[..rounds],
        &mut eta_r[..rounds],
        &mut ops_r[..rounds],
    );
    let (a2_r, pair_r, pg, pg2) = (
        &mut a2_r[..rounds],
        &mut pair_r[..rounds],
        &mut pg[..rounds],
        &mut pg2[..rounds],
    );
    let p = split::<K>(p, rounds);
    for k in 0..part.jobs {
        let job = part.first + k;
        if let Some(step) = pending {
            update_job::<W, K>(inst, &mut part.e, k, step);
        }
        let (e, b, kk) = (&mut part.e, &mut part.b, &mut part.k);
        let a_row = row(&inst.a, job, goods);
        let a = split::<K>(a_row, rounds);
        let n = inst.n[job];
        let (x_row, z_row) = (row(e.x, k, goods), row(e.z, k, goods));
        let (x, z) = (split::<K>(x_row, rounds), split::<K>(z_row, rounds));
        let (y, v) = (row(e.y, k, rounds), row(e.v, k, rounds));
        let u = inst.c[job] + lane_dot(a_row, x_row);
        let (ceiling, inv_gamma) = utility_terms(inst, job, (&mut *b, k), u);

        // Pass A: reciprocals (ix = 1/x, iz = x/z, iy = 1/y, eta = v/y, masked to 0 where
        // nothing is purchasable), each round's sums, B^{-1} a and Q.
        let ix = split_mut::<K>(row_mut(e.ix, k, goods), rounds);
        let iz = split_mut::<K>(&mut iz_row[..], rounds);
        let hata = split_mut::<K>(row_mut(kk.hata, k, goods), rounds);
        let rho = split_mut::<K>(row_mut(kk.r, k, goods), rounds);
        let iy = row_mut(e.iy, k, rounds);
        let q = row_mut(kk.q, k, rounds);
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
        let sums = row_mut(part.out.scalars, k, SCALARS);
        sums[0] = lane_sum(comp_x);
        sums[1] = lane_sum(comp_y);
        let (kappa, dominant) = kappa_terms((&mut *b, k), inv_gamma, q);
        let l_dominant = b.dominant_loo[k];

        // Pass B: each round's E^{-1} and r, and the right-hand sides with their halves
        // (B^{-1} a) . g.
        let coef = b.coef[k];
        let lift = if ceiling { -1.0 / b.r[k] } else { 0.0 };
        let mut inverse_rows = split_mut::<K>(row_mut(kk.n, k, goods * K), K * rounds);
        let inverse: [[&mut [f64]; K]; K] =
            std::array::from_fn(|j| split_mut::<K>(std::mem::take(&mut inverse_rows[j]), rounds));
        let (g, g2) = (
            split_mut::<K>(&mut g_row[..], rounds),
            split_mut::<K>(&mut g2_row[..], rounds),
        );
        let n2 = n * n;
        let blocks = row_mut(part.out.o3, k, goods * K);
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
                    blocks[(j * rounds + tt) * K + f] = n2 * e_inv[j][f];
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
        // Pass C: M^{-1} h0 and M^{-1} h_tau.
        let inverse = SlotInverse::<K>::new((kk.hata, kk.r, kk.n), k, rounds, dominant);
        rests(pg, dominant);
        rests(pg2, dominant);
        let (g, g2) = (split::<K>(g_row, rounds), split::<K>(g2_row, rounds));
        let o1 = split_mut::<K>(row_mut(part.out.o1, k, goods), rounds);
        let o2 = split_mut::<K>(row_mut(part.out.o2, k, goods), rounds);
        for tt in 0..rounds {
            let out = inverse.round(&at(&g, tt), pg[tt], tt);
            let out2 = inverse.round(&at(&g2, tt), pg2[tt], tt);
            for j in 0..K {
                o1[j][tt] = out[j];
                o2[j][tt] = out2[j];
            }
        }
    }
}

/// [`InteriorPoint::back_substitute`]'s work on each job of a run (with GPU types): its direction (in
/// `o1`), its step limits and `a.dx` (scalars 0 to 2), and in the predictor its second-order
/// terms, their sums (scalars 3 to 7) and `M^{-1} hc` (in `o2`), or in the corrector the
/// stored direction and ceiling steps.
#[inline(always)]
pub(super) fn back_substitute_jobs<const W: usize, const K: usize>(
    inst: &Instance,
    (p, dp): (&[f64], &[f64]),
    pass: Pass,
    part: Part<'_>,
) {
    let rounds = width::<W>(inst);
    let goods = rounds * K;
    let (e, b, kk, out) = (part.e, part.b, part.k, part.out);
    let mut per_good = vec![0.0; 2 * goods];
    let (g_row, hc_row) = per_good.split_at_mut(goods);
    let (g_row, hc_row) = (&mut g_row[..goods], &mut hc_row[..goods]);
    let mut per_round = vec![0.0; 3 * rounds];
    let (rest, per_round) = per_round.split_at_mut(rounds);
    let (c1, c3) = per_round.split_at_mut(rounds);
    let (rest, c1, c3) = (&mut rest[..rounds], &mut c1[..rounds], &mut c3[..rounds]);
    let (p, dp) = (split::<K>(p, rounds), split::<K>(dp, rounds));
    for k in 0..part.jobs {
        let job = part.first + k;
        let a = split::<K>(row(&inst.a, job, goods), rounds);
        let n = inst.n[job];
        let (z, ix) = (
            split::<K>(row(e.z, k, goods), rounds),
            split::<K>(row(e.ix, k, goods), rounds),
        );
        let (v, iy) = (row(e.v, k, rounds), row(e.iy, k, rounds));
        let cxi = split_mut::<K>(row_mut(e.cxi, k, goods), rounds);
        let cvi = row_mut(e.cvi, k, rounds);
        let dx_store = split_mut::<K>(row_mut(e.dx, k, goods), rounds);
        let ceiling = inst.ceil[job].is_finite();
        let inverse = SlotInverse::<K>::new((kk.hata, kk.r, kk.n), k, rounds, b.dominant[k]);
        let r = b.r[k];
        // g = h - n dp (see the scalar pass: the price step is subtracted last)
        let g_rows = split_mut::<K>(&mut g_row[..], rounds);
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
        let g = split::<K>(g_row, rounds);
        let total = inverse.rest(&g, rest);
        let du = total / (b.gamma[k] * b.kappa[k]);
        let (mut lp, mut ld) = (0.0f64, 0.0f64);
        let dx_out = split_mut::<K>(row_mut(out.o1, k, goods), rounds);
        let sums = row_mut(out.scalars, k, SCALARS);
        match pass {
            Pass::Predictor => {
                // dz = -z (1 + dx/x), dv = -v (1 - D/y) with D = sum_k dx (the round's
                // slack moves by -D)
                for tt in 0..rounds {
                    let dx = inverse.round(&at(&g, tt), rest[tt], tt);
                    let (mut s1, mut s3) = (0.0, 0.0);
                    for j in 0..K {
                        let d = dx[j];
                        dx_out[j][tt] = d;
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
                sums[3] = lane_sum(c1);
                sums[4] = lane_sum(c3);
                let cr = if ceiling {
                    ceiling_predictor(&b, k, du, (&mut lp, &mut ld), sums)
                } else {
                    0.0
                };
                b.cr[k] = cr;
                // M^{-1} hc, hc = dy dv / y - dx dz / x (+ a cr / r).
                let lift = if ceiling { cr / r } else { 0.0 };
                let hc_rows = split_mut::<K>(&mut hc_row[..], rounds);
                for tt in 0..rounds {
                    for j in 0..K {
                        hc_rows[j][tt] = cvi[tt] - cxi[j][tt] + lift * a[j][tt];
                    }
                }
                let hc = split::<K>(hc_row, rounds);
                inverse.rest(&hc, rest);
                let o2 = split_mut::<K>(row_mut(out.o2, k, goods), rounds);
                for tt in 0..rounds {
                    let out = inverse.round(&at(&hc, tt), rest[tt], tt);
                    for j in 0..K {
                        o2[j][tt] = out[j];
                    }
                }
            }
            Pass::Corrector { target } => {
                for tt in 0..rounds {
                    let dx = inverse.round(&at(&g, tt), rest[tt], tt);
                    for j in 0..K {
                        let d = dx[j];
                        dx_out[j][tt] = d;
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
