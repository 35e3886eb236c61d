//! A primal-dual interior-point method for the Eisenberg-Gale program, reduced to the prices.
//!
//! Variables: shares `x_it` with upper slacks `y_it = 1 - x_it`, their bound multipliers `z_it`,
//! `v_it`; per round the supply slack `s_t` and its multiplier, the price `p_t`; per job with a
//! ceiling the slack `r_i = ubar_i - u_i` and its multiplier `beta_i`. The KKT conditions are
//!
//! ```text
//! w_i a_it / u_i - n_i p_t - beta_i a_it + z_it - v_it = 0       (stationarity)
//! sum_i n_i x_it + s_t = G_t,   u_i + r_i = ubar_i                (feasibility)
//! x z = y v = s p = r beta = mu -> 0                               (complementarity)
//! ```
//!
//! and each iteration takes a Mehrotra predictor-corrector Newton step on them. Eliminating the
//! per-entry multipliers leaves, for each job, `M_i dx_i + n_i dp = h_i` with
//! `M_i = diag(sigma_i) + gamma_i a_i a_i^T` (`sigma = z/x + v/y`,
//! `gamma_i = w_i / u_i^2 + beta_i / r_i`): diagonal plus rank one, inverted in closed form
//! (Sherman-Morrison). Eliminating `dx` leaves one dense `T x T` system in the price step,
//! `(sum_i n_i^2 M_i^{-1} + diag(s/p)) dp = rhs`, solved by Cholesky. An iteration therefore costs
//! `O(N T^2)` arithmetic and `O(N T)` memory, independent of how many shares are fractional.
//!
//! Numerics near the optimum, where `sigma` tends to 0 on fractional entries and to infinity on
//! entries at a bound:
//! * the textbook Sherman-Morrison formula cancels catastrophically; `M_i^{-1}` is evaluated as
//!   `(M^{-1} g)_e = (g_e L_e - a_e R_e) / (sigma_e kappa)` with
//!   `kappa = 1/gamma + sum_f a_f^2/sigma_f`, `L_e = 1/gamma + sum_{f != e} a_f^2/sigma_f` and
//!   `R_e = sum_{f != e} a_f g_f / sigma_f` (the `e`-terms cancel exactly on paper). Only an
//!   entry holding more than half of `kappa` (at most one per job) would lose digits computing
//!   `L_e, R_e` as total minus own term; its sums are taken directly;
//! * `a_i . dx_i` is taken in closed form, `R / (gamma kappa)`: summing would cancel the large
//!   components of a job indifferent between rounds, which are orthogonal to `a_i`;
//! * the price system gets ill-conditioned (such indifferent jobs); each price step is corrected
//!   by iterative refinement against the supply residual of `(dx, dp)`, computed exactly, and a
//!   step that cannot be made accurate stops the method (keeping its best certificate).
//!
//! The method starts from the central point of given prices (each job's barrier best response),
//! so a good price guess saves most of the early iterations; it restarts with a larger barrier
//! when those prices make the best responses overshoot the supply. It stops on the duality-gap
//! certificate, never on its own measures, or when it stalls.

use super::certificate::Incumbent;
use super::instance::Instance;

/// Fraction of the distance to the boundary taken by a step.
const STEP_TO_BOUNDARY: f64 = 0.995;
/// The certificate is evaluated once the barrier's own gap estimate `m mu` falls below this
/// multiple of the tolerance (it costs about as much as one iteration).
const CERTIFY_BELOW: f64 = 10.0;
/// Iterations in a row in which neither `mu` nor the supply residual fell by 2% before the
/// method gives up (stalled).
const STALL_LIMIT: usize = 8;
/// Certified iterations in a row that improved the gap by less than 1% before it gives up.
const IDLE_LIMIT: usize = 8;
/// Whatever the barrier says, the certificate is evaluated every this many iterations.
const CERTIFY_EVERY: usize = 10;
/// A well-behaved run needs a few tens of iterations; this many means it is going in circles.
const MAX_ITERATIONS: usize = 300;
/// `RESTART_AFTER` primal steps in a row shorter than `RESTART_BELOW` right after a start restart
/// the method from a central point with a 10x larger barrier (at most `MAX_RESTARTS` times).
const RESTART_BELOW: f64 = 0.1;
const RESTART_AFTER: usize = 2;
const MAX_RESTARTS: usize = 2;
/// Iterative refinement of the price step stops once every round's supply residual is below
/// this fraction of its supply, or after `MAX_REFINEMENTS` corrections.
const REFINE_ABOVE: f64 = 1e-10;
const MAX_REFINEMENTS: usize = 3;
/// A direction whose relative supply residual is still above this (and above a tenth of the
/// iterate's own) after refinement is rejected.
const REFINE_GIVE_UP: f64 = 1e-5;
/// The barrier target never falls below this fraction of `tol / m`.
const MU_FLOOR: f64 = 0.05;

/// Per-entry state (one entry per purchasable job-round pair).
#[derive(Default)]
struct Entries {
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
    v: Vec<f64>,
    /// Reciprocals of x, y, z, v and sigma, refreshed once per iteration (so that the solves
    /// multiply instead of divide).
    ix: Vec<f64>,
    iy: Vec<f64>,
    iz: Vec<f64>,
    iv: Vec<f64>,
    isig: Vec<f64>,
    /// `L_e = 1/gamma + sum_{f != e} a_f^2 / sigma_f` (leave-one-out).
    loo: Vec<f64>,
    /// Dual residual `w a / u - n p - beta a + z - v`.
    rd: Vec<f64>,
    /// Right-hand side of the current solve, then `h - n dp`.
    h: Vec<f64>,
    dx: Vec<f64>,
    dz: Vec<f64>,
    dv: Vec<f64>,
    /// Second-order corrections `dx dz` and `dy dv` of the predictor.
    cx: Vec<f64>,
    cv: Vec<f64>,
}

/// Per-buyer state.
#[derive(Default)]
struct Buyers {
    u: Vec<f64>,
    /// Ceiling slack and multiplier (unused without a ceiling).
    r: Vec<f64>,
    beta: Vec<f64>,
    kappa: Vec<f64>,
    /// The buyer's dominant entry (see [`dominant_entry`]), as an offset in its row.
    dominant: Vec<Option<usize>>,
    /// `gamma = w / u^2 + beta / r`.
    gamma: Vec<f64>,
    /// `a . dx` of the current direction.
    du: Vec<f64>,
    /// `beta / r`.
    br: Vec<f64>,
    rc: Vec<f64>,
    qc: Vec<f64>,
    dr: Vec<f64>,
    dbeta: Vec<f64>,
    cr: Vec<f64>,
}

/// Per-round state.
#[derive(Default)]
struct Rounds {
    p: Vec<f64>,
    s: Vec<f64>,
    dp: Vec<f64>,
    ds: Vec<f64>,
    cs: Vec<f64>,
    rp: Vec<f64>,
    /// Round part of the right-hand side of the current solve.
    base: Vec<f64>,
    rhs: Vec<f64>,
}

pub(crate) struct InteriorPoint {
    e: Entries,
    b: Buyers,
    t: Rounds,
    /// Starting prices (floored), kept for restarts.
    start_prices: Vec<f64>,
    /// The `T x T` price system, factored in place, and a copy for retries.
    schur: Vec<f64>,
    schur_copy: Vec<f64>,
    /// Scratch of length `T` (a dense copy of one buyer's row).
    dense_row: Vec<f64>,
    /// Scratch of the longest row's length + 1 (prefix sums).
    prefix: Vec<f64>,
    complementarity_pairs: f64,
    /// Largest relative supply residual of the current iterate.
    infeasibility: f64,
}

/// Where the method starts: prices, a guess of each buyer's utility, and the duality gap of that
/// guess (which sets the first barrier).
pub(crate) struct Start<'a> {
    pub prices: &'a [f64],
    pub utilities: &'a [f64],
    pub gap: f64,
}

/// How a run of the interior-point method ended.
pub(crate) struct Run {
    pub iterations: usize,
}

/// Step limits: the largest `alpha` keeping `value + alpha delta >= 0` is `1 / max(-delta /
/// value)`; tracking the maximum of `-delta * (1 / value)` avoids divisions.
#[derive(Clone, Copy)]
struct Limits {
    primal: f64,
    dual: f64,
}

impl Limits {
    fn new() -> Self {
        Self {
            primal: 0.0,
            dual: 0.0,
        }
    }

    /// Steps in (0, 1].
    fn steps(self) -> (f64, f64) {
        (1.0 / self.primal.max(1.0), 1.0 / self.dual.max(1.0))
    }
}

impl InteriorPoint {
    pub fn new(inst: &Instance) -> Self {
        let (entries, buyers, rounds) = (inst.entries(), inst.buyers(), inst.rounds);
        let longest_row = (0..buyers)
            .map(|b| inst.start[b + 1] - inst.start[b])
            .max()
            .unwrap_or(0);
        let used_rounds = inst.round_used.iter().filter(|&&u| u).count();
        let ceilings = inst.ceil.iter().filter(|c| c.is_finite()).count();
        let e = || vec![0.0; entries];
        let b = || vec![0.0; buyers];
        let t = || vec![0.0; rounds];
        Self {
            e: Entries {
                x: e(),
                y: e(),
                z: e(),
                v: e(),
                ix: e(),
                iy: e(),
                iz: e(),
                iv: e(),
                isig: e(),
                loo: e(),
                rd: e(),
                h: e(),
                dx: e(),
                dz: e(),
                dv: e(),
                cx: e(),
                cv: e(),
            },
            b: Buyers {
                u: b(),
                r: b(),
                beta: b(),
                kappa: b(),
                dominant: vec![None; buyers],
                gamma: b(),
                du: b(),
                br: b(),
                rc: b(),
                qc: b(),
                dr: b(),
                dbeta: b(),
                cr: b(),
            },
            t: Rounds {
                p: t(),
                s: t(),
                dp: t(),
                ds: t(),
                cs: t(),
                rp: t(),
                base: t(),
                rhs: t(),
            },
            start_prices: t(),
            schur: vec![0.0; rounds * rounds],
            schur_copy: vec![0.0; rounds * rounds],
            dense_row: t(),
            prefix: vec![0.0; longest_row + 1],
            complementarity_pairs: (2 * entries + used_rounds + ceilings) as f64,
            infeasibility: f64::INFINITY,
        }
    }

    /// Run from the central point of the start's prices (floored to be positive) whose barrier
    /// matches the start's duality gap, for at most `max_iter` iterations or until `best`
    /// certifies a relative gap `<= tol`.
    pub fn run(
        &mut self,
        inst: &Instance,
        start: &Start<'_>,
        tol: f64,
        max_iter: usize,
        best: &mut Incumbent,
    ) -> Run {
        let (prices, utilities) = (start.prices, start.utilities);
        let highest = prices.iter().copied().fold(0.0, f64::max);
        let total_supply: f64 = inst.supply.iter().sum();
        let floor = if highest > 0.0 {
            1e-3 * highest
        } else {
            1.0 / total_supply.max(1.0)
        };
        for (t, (p, &price)) in self.start_prices.iter_mut().zip(prices).enumerate() {
            *p = if inst.round_used[t] {
                price.max(floor)
            } else {
                0.0
            };
        }
        let mut mu_start = start.gap / self.complementarity_pairs;
        let mut restarts = 0;
        let mut fresh = true;
        let mut short_steps = 0;
        let mut mu = f64::INFINITY;
        let mut stalled = 0;
        let mut worst_residual = f64::INFINITY;
        let mut idle = 0;
        let mut best_gap = f64::INFINITY;
        let mut iterations = 0;
        while iterations < max_iter.min(MAX_ITERATIONS) {
            if fresh {
                self.t.p.copy_from_slice(&self.start_prices);
                self.central_point(inst, mu_start, utilities);
                mu = mu_start;
                worst_residual = f64::INFINITY;
                stalled = 0;
                short_steps = 0;
            }
            let mu_now = self.prepare(inst) / self.complementarity_pairs;
            let due = mu_now * self.complementarity_pairs <= CERTIFY_BELOW * tol
                || iterations % CERTIFY_EVERY == CERTIFY_EVERY - 1;
            if due {
                let gap = best.offer(inst, &self.e.x, &self.t.p);
                if gap <= tol {
                    return Run { iterations };
                }
                // Near the end only the certificate counts: stop when it no longer improves.
                idle = if gap < 0.99 * best_gap { 0 } else { idle + 1 };
                best_gap = best_gap.min(gap);
                if idle >= IDLE_LIMIT {
                    break;
                }
            }
            iterations += 1;
            let infeasibility = self.primal_infeasibility(inst);
            self.infeasibility = infeasibility;
            let progress = mu_now <= 0.98 * mu || infeasibility <= 0.98 * worst_residual;
            stalled = if progress { 0 } else { stalled + 1 };
            mu = mu_now;
            worst_residual = infeasibility;
            if stalled >= STALL_LIMIT
                || !cholesky(&mut self.schur, &mut self.schur_copy, inst.rounds)
            {
                break;
            }
            let Some(primal_step) = self.step(inst, mu, tol) else {
                break;
            };
            // Prices whose best responses overshoot the supply badly pin the first steps to the
            // boundary: then restart from a smoother central point (10x the barrier).
            short_steps = if primal_step < RESTART_BELOW {
                short_steps + 1
            } else {
                usize::MAX / 2
            };
            fresh = short_steps == RESTART_AFTER && restarts < MAX_RESTARTS;
            if fresh {
                restarts += 1;
                mu_start *= 10.0;
            }
        }
        best.offer(inst, &self.e.x, &self.t.p);
        Run { iterations }
    }

    /// Each buyer's barrier best response to the current prices, and multipliers that make the
    /// point exactly central: `x z = y v = r beta = s p = mu`.
    fn central_point(&mut self, inst: &Instance, mu: f64, utilities: &[f64]) {
        let (e, b, t) = (&mut self.e, &mut self.b, &mut self.t);
        for k in 0..inst.buyers() {
            let range = inst.start[k]..inst.start[k + 1];
            let u = central_response(inst, k, &t.p, mu, utilities[k], &mut e.x, &mut e.y);
            b.u[k] = u;
            for i in range {
                e.z[i] = mu / e.x[i];
                e.v[i] = mu / e.y[i];
            }
            if inst.ceil[k].is_finite() {
                b.r[k] = inst.ceil[k] - u;
                b.beta[k] = mu / b.r[k];
            } else {
                b.r[k] = 1.0;
                b.beta[k] = 0.0;
            }
        }
        for (k, (s, &p)) in t.s.iter_mut().zip(&t.p).enumerate() {
            *s = if inst.round_used[k] {
                mu / p
            } else {
                inst.supply[k]
            };
        }
    }

    /// Largest supply residual relative to the round's supply (after [`Self::prepare`]).
    fn primal_infeasibility(&self, inst: &Instance) -> f64 {
        (0..inst.rounds)
            .filter(|&t| inst.round_used[t])
            .map(|t| self.t.rp[t].abs() / inst.supply[t])
            .fold(0.0, f64::max)
    }

    /// Residuals, reciprocals and the assembled (unfactored) price system of the current
    /// point; returns the total complementarity `sum x z + y v + s p + r beta`.
    fn prepare(&mut self, inst: &Instance) -> f64 {
        let rounds = inst.rounds;
        let (e, b, t) = (&mut self.e, &mut self.b, &mut self.t);
        let (schur, dense_row, gathered) = (&mut self.schur, &mut self.dense_row, &mut self.prefix);
        t.rp.fill(0.0);
        schur.fill(0.0);
        let mut total = 0.0;
        for k in 0..inst.buyers() {
            let range = inst.start[k]..inst.start[k + 1];
            let len = range.len();
            let (a, col) = (&inst.a[range.clone()], &inst.col[range.clone()]);
            let n = inst.n[k];
            let (x, y) = (&e.x[range.clone()], &e.y[range.clone()]);
            let (z, v) = (&e.z[range.clone()], &e.v[range.clone()]);
            let prices = &mut gathered[..len];
            for (price, &tt) in prices.iter_mut().zip(col) {
                *price = t.p[tt];
            }
            let mut gain = 0.0;
            for ((&a, &tt), &x) in a.iter().zip(col).zip(x) {
                gain += a * x;
                t.rp[tt] += n * x;
            }
            let u = inst.c[k] + gain;
            b.u[k] = u;
            if inst.ceil[k].is_finite() {
                b.br[k] = b.beta[k] / b.r[k];
                b.rc[k] = u + b.r[k] - inst.ceil[k];
                total += b.r[k] * b.beta[k];
            } else {
                b.br[k] = 0.0;
                b.rc[k] = 0.0;
            }
            let marginal = inst.w[k] / u - b.beta[k];
            b.gamma[k] = inst.w[k] / (u * u) + b.br[k];
            let inv_gamma = 1.0 / b.gamma[k];
            let (ix, iy) = (&mut e.ix[range.clone()], &mut e.iy[range.clone()]);
            let (iz, iv) = (&mut e.iz[range.clone()], &mut e.iv[range.clone()]);
            let (rd, isig) = (&mut e.rd[range.clone()], &mut e.isig[range.clone()]);
            let loo = &mut e.loo[range];
            for j in 0..len {
                let (rx, ry) = (1.0 / x[j], 1.0 / y[j]);
                ix[j] = rx;
                iy[j] = ry;
                iz[j] = 1.0 / z[j];
                iv[j] = 1.0 / v[j];
                rd[j] = marginal * a[j] - n * prices[j] + z[j] - v[j];
                let is = 1.0 / (z[j] * rx + v[j] * ry);
                isig[j] = is;
                loo[j] = a[j] * a[j] * is;
            }
            let mut q_total = 0.0;
            for j in 0..len {
                q_total += loo[j];
                total += x[j] * z[j] + y[j] * v[j];
            }
            let kappa = inv_gamma + q_total;
            b.kappa[k] = kappa;
            let dominant = dominant_entry(loo, kappa);
            b.dominant[k] = dominant;
            // loo holds q = a^2 / sigma; turn it into L = kappa - q (exact for all but a
            // dominant entry, whose L is summed directly).
            let mut others = inv_gamma;
            if let Some(jd) = dominant {
                for (j, &q) in loo.iter().enumerate() {
                    if j != jd {
                        others += q;
                    }
                }
            }
            for l in loo.iter_mut() {
                *l = kappa - *l;
            }
            if let Some(jd) = dominant {
                loo[jd] = others;
            }
            let n2 = n * n;
            let scale = n2 / kappa;
            for ((&l, &is), &tt) in loo.iter().zip(isig.iter()).zip(col) {
                schur[tt * rounds + tt] += scale * l * is;
            }
            // - n^2 d d^T / kappa off the diagonal, d = a / sigma (upper triangle only).
            if 2 * len >= rounds {
                dense_row.fill(0.0);
                for ((&a, &is), &tt) in a.iter().zip(isig.iter()).zip(col) {
                    dense_row[tt] = a * is;
                }
                for tt in 0..rounds {
                    let dt = scale * dense_row[tt];
                    if dt == 0.0 {
                        continue;
                    }
                    let row = &mut schur[tt * rounds + tt + 1..(tt + 1) * rounds];
                    for (s_ts, &ds) in row.iter_mut().zip(&dense_row[tt + 1..]) {
                        *s_ts -= dt * ds;
                    }
                }
            } else {
                for j in 0..len {
                    let dj = scale * a[j] * isig[j];
                    let base = col[j] * rounds;
                    for l in j + 1..len {
                        schur[base + col[l]] -= dj * a[l] * isig[l];
                    }
                }
            }
        }
        for tt in 0..rounds {
            t.rp[tt] += t.s[tt] - inst.supply[tt];
            let diag = &mut schur[tt * rounds + tt];
            if inst.round_used[tt] {
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

    /// Newton direction for target `target` (0 for the affine predictor); `corrected` adds the
    /// second-order terms stored in `cx, cv, cs, cr`. Returns the largest primal and dual steps
    /// in (0, 1], or `None` if the direction is not finite.
    fn direction(&mut self, inst: &Instance, target: f64, corrected: bool) -> Option<(f64, f64)> {
        let k_corr = if corrected { 1.0 } else { 0.0 };
        let (e, b, t) = (&mut self.e, &mut self.b, &mut self.t);
        let row = &mut self.prefix;
        for tt in 0..inst.rounds {
            t.base[tt] = if inst.round_used[tt] {
                t.rp[tt] + (target - k_corr * t.cs[tt]) / t.p[tt] - t.s[tt]
            } else {
                0.0
            };
        }
        t.rhs.copy_from_slice(&t.base);
        // rhs += sum_b n_b M_b^{-1} h_b
        for k in 0..inst.buyers() {
            let range = inst.start[k]..inst.start[k + 1];
            let len = range.len();
            let (a, col) = (&inst.a[range.clone()], &inst.col[range.clone()]);
            let lift = if inst.ceil[k].is_finite() {
                b.qc[k] = -b.rc[k] - (target - k_corr * b.cr[k]) / b.beta[k] + b.r[k];
                b.br[k] * b.qc[k]
            } else {
                b.qc[k] = 0.0;
                0.0
            };
            let h = &mut e.h[range.clone()];
            let (rd, ix, iy) = (
                &e.rd[range.clone()],
                &e.ix[range.clone()],
                &e.iy[range.clone()],
            );
            let (z, v) = (&e.z[range.clone()], &e.v[range.clone()]);
            let (cx, cv) = (&e.cx[range.clone()], &e.cv[range.clone()]);
            for j in 0..len {
                h[j] = rd[j] + (target - k_corr * cx[j]) * ix[j]
                    - z[j]
                    - (target - k_corr * cv[j]) * iy[j]
                    + v[j]
                    + a[j] * lift;
            }
            let out = &mut row[..len];
            apply_inverse(
                a,
                h,
                &e.isig[range.clone()],
                &e.loo[range],
                (b.kappa[k], b.dominant[k]),
                out,
            );
            let n = inst.n[k];
            for (&value, &tt) in out.iter().zip(col) {
                t.rhs[tt] += n * value;
            }
        }
        t.dp.copy_from_slice(&t.rhs);
        cholesky_solve(&self.schur, inst.rounds, &mut t.dp);
        // dx = M^{-1} (h - n dp) per buyer, then iterative refinement of dp: the price system is
        // ill-conditioned near the optimum, but the supply residual of (dx, dp) can be computed
        // accurately and corrected with the same factor.
        for refinement in 0..=MAX_REFINEMENTS {
            if !t.dp.iter().all(|d| d.is_finite()) {
                return None;
            }
            t.rhs.copy_from_slice(&t.base);
            for k in 0..inst.buyers() {
                let range = inst.start[k]..inst.start[k + 1];
                let len = range.len();
                let (a, col) = (&inst.a[range.clone()], &inst.col[range.clone()]);
                let n = inst.n[k];
                let g = &mut row[..len];
                for ((g, &h), &tt) in g.iter_mut().zip(&e.h[range.clone()]).zip(col) {
                    *g = h - n * t.dp[tt];
                }
                let dx = &mut e.dx[range.clone()];
                let total = apply_inverse(
                    a,
                    g,
                    &e.isig[range.clone()],
                    &e.loo[range],
                    (b.kappa[k], b.dominant[k]),
                    dx,
                );
                // a.dx in closed form: summing a_e dx_e would cancel the large components of a
                // tie (equal bang per buck in two rounds), which are orthogonal to a.
                b.du[k] = total / (b.gamma[k] * b.kappa[k]);
                for (&d, &tt) in dx.iter().zip(col) {
                    t.rhs[tt] += n * d;
                }
            }
            // rhs now holds the supply residual sum n dx - (s/p) dp - e (up to the dp term).
            let mut worst: f64 = 0.0;
            for tt in 0..inst.rounds {
                if inst.round_used[tt] {
                    t.rhs[tt] -= t.s[tt] / t.p[tt] * t.dp[tt];
                    worst = worst.max(t.rhs[tt].abs() / inst.supply[tt]);
                } else {
                    t.rhs[tt] = 0.0;
                }
            }
            if worst <= REFINE_ABOVE {
                break;
            }
            if refinement == MAX_REFINEMENTS {
                if worst > REFINE_GIVE_UP.max(0.1 * self.infeasibility) {
                    // The price system is too ill-conditioned for this direction to be trusted
                    // (seen with budgets spanning 1 to 3^12 and gaps near 1e-8): an inexact
                    // step is fine while the iterate is far from feasible, not near the end.
                    // Stop, keeping the best certified answer.
                    return None;
                }
                break;
            }
            cholesky_solve(&self.schur, inst.rounds, &mut t.rhs);
            for (dp, &delta) in t.dp.iter_mut().zip(&t.rhs) {
                *dp += delta;
            }
        }
        let mut limits = Limits::new();
        let mut check = 0.0;
        for k in 0..inst.buyers() {
            let range = inst.start[k]..inst.start[k + 1];
            let len = range.len();
            let dx = &e.dx[range.clone()];
            let (ix, iy) = (&e.ix[range.clone()], &e.iy[range.clone()]);
            let (iz, iv) = (&e.iz[range.clone()], &e.iv[range.clone()]);
            let (z, v) = (&e.z[range.clone()], &e.v[range.clone()]);
            let (cx, cv) = (&e.cx[range.clone()], &e.cv[range.clone()]);
            let dz = &mut e.dz[range.clone()];
            let dv = &mut e.dv[range];
            let du = b.du[k];
            let (mut lp, mut ld) = (0.0f64, 0.0f64);
            for j in 0..len {
                let d = dx[j];
                let dzj = (target - k_corr * cx[j]) * ix[j] - z[j] - z[j] * ix[j] * d;
                let dvj = (target - k_corr * cv[j]) * iy[j] - v[j] + v[j] * iy[j] * d;
                dz[j] = dzj;
                dv[j] = dvj;
                let (px, py) = (-d * ix[j], d * iy[j]);
                let (qz, qv) = (-dzj * iz[j], -dvj * iv[j]);
                lp = if px > lp { px } else { lp };
                lp = if py > lp { py } else { lp };
                ld = if qz > ld { qz } else { ld };
                ld = if qv > ld { qv } else { ld };
            }
            limits.primal = limits.primal.max(lp);
            limits.dual = limits.dual.max(ld);
            check += du + lp + ld;
            if inst.ceil[k].is_finite() {
                b.dbeta[k] = b.br[k] * (du - b.qc[k]);
                b.dr[k] = (target - k_corr * b.cr[k] - b.r[k] * b.beta[k] - b.r[k] * b.dbeta[k])
                    / b.beta[k];
                limits.primal = limits.primal.max(-b.dr[k] / b.r[k]);
                limits.dual = limits.dual.max(-b.dbeta[k] / b.beta[k]);
            } else {
                b.dbeta[k] = 0.0;
                b.dr[k] = 0.0;
            }
        }
        for tt in 0..inst.rounds {
            if inst.round_used[tt] {
                let ds =
                    (target - k_corr * t.cs[tt] - t.s[tt] * t.p[tt] - t.s[tt] * t.dp[tt]) / t.p[tt];
                t.ds[tt] = ds;
                limits.primal = limits.primal.max(-ds / t.s[tt]);
                limits.dual = limits.dual.max(-t.dp[tt] / t.p[tt]);
            } else {
                t.ds[tt] = 0.0;
            }
        }
        if check.is_finite() && limits.primal.is_finite() && limits.dual.is_finite() {
            Some(limits.steps())
        } else {
            None
        }
    }

    /// One predictor-corrector step; returns the primal step length, or `None` if a direction
    /// could not be computed.
    fn step(&mut self, inst: &Instance, mu: f64, tol: f64) -> Option<f64> {
        let (ap, ad) = self.direction(inst, 0.0, false)?;
        let mut total = 0.0;
        {
            let e = &mut self.e;
            for i in 0..inst.entries() {
                let (dx, dz, dv) = (e.dx[i], e.dz[i], e.dv[i]);
                total += (e.x[i] + ap * dx) * (e.z[i] + ad * dz)
                    + (e.y[i] - ap * dx) * (e.v[i] + ad * dv);
                e.cx[i] = dx * dz;
                e.cv[i] = -dx * dv;
            }
        }
        let (b, t) = (&mut self.b, &mut self.t);
        for tt in 0..inst.rounds {
            if inst.round_used[tt] {
                total += (t.s[tt] + ap * t.ds[tt]) * (t.p[tt] + ad * t.dp[tt]);
            }
            t.cs[tt] = t.ds[tt] * t.dp[tt];
        }
        for k in 0..inst.buyers() {
            if inst.ceil[k].is_finite() {
                total += (b.r[k] + ap * b.dr[k]) * (b.beta[k] + ad * b.dbeta[k]);
            }
            b.cr[k] = b.dr[k] * b.dbeta[k];
        }
        let mu_affine = total / self.complementarity_pairs;
        let centering = (mu_affine / mu).clamp(0.0, 1.0).powi(3);
        // Never aim the barrier below what the tolerance needs: past that point only the
        // residuals stand between the iterate and the certificate, and a smaller barrier only
        // worsens the conditioning.
        let target = (centering * mu).max(MU_FLOOR * tol / self.complementarity_pairs);
        let (ap, ad) = self.direction(inst, target, true)?;
        let (ap, ad) = (
            (STEP_TO_BOUNDARY * ap).min(1.0),
            (STEP_TO_BOUNDARY * ad).min(1.0),
        );
        let (e, b, t) = (&mut self.e, &mut self.b, &mut self.t);
        for i in 0..inst.entries() {
            e.x[i] += ap * e.dx[i];
            e.y[i] -= ap * e.dx[i];
            e.z[i] += ad * e.dz[i];
            e.v[i] += ad * e.dv[i];
        }
        for tt in 0..inst.rounds {
            if inst.round_used[tt] {
                t.s[tt] += ap * t.ds[tt];
                t.p[tt] += ad * t.dp[tt];
            }
        }
        for k in 0..inst.buyers() {
            if inst.ceil[k].is_finite() {
                b.r[k] += ap * b.dr[k];
                b.beta[k] += ad * b.dbeta[k];
            }
        }
        Some(ap)
    }
}

/// The entry whose `a^2 / sigma` exceeds half of `kappa`, if any (at most one can). Only for it
/// does `kappa - a^2 / sigma` cancel catastrophically, so only its leave-one-out sums are summed
/// directly.
fn dominant_entry(q: &[f64], kappa: f64) -> Option<usize> {
    let mut best = None;
    let mut largest = 0.5 * kappa;
    for (j, &value) in q.iter().enumerate() {
        if value > largest {
            largest = value;
            best = Some(j);
        }
    }
    best
}

/// `out = M^{-1} g` for one buyer, `M = diag(sigma) + gamma a a^T`:
/// `out_e = (g_e L_e - a_e R_e) / (sigma_e kappa)` with `R_e = sum_{f != e} a_f g_f / sigma_f`.
/// `R_e` is the total minus the own term, except for a dominant entry (see [`dominant_entry`]),
/// whose `R` is summed directly. Returns `sum_e a_e g_e / sigma_e`.
fn apply_inverse(
    a: &[f64],
    g: &[f64],
    isig: &[f64],
    loo: &[f64],
    (kappa, dominant): (f64, Option<usize>),
    out: &mut [f64],
) -> f64 {
    let len = out.len();
    let (a, g, isig, loo) = (&a[..len], &g[..len], &isig[..len], &loo[..len]);
    let mut total = 0.0;
    for j in 0..len {
        let own = a[j] * g[j] * isig[j];
        out[j] = own;
        total += own;
    }
    let inv_kappa = 1.0 / kappa;
    let mut others_of_dominant = 0.0;
    if let Some(jd) = dominant {
        for (j, &own) in out.iter().enumerate() {
            if j != jd {
                others_of_dominant += own;
            }
        }
    }
    for j in 0..len {
        let others = total - out[j];
        out[j] = (g[j] * loo[j] - a[j] * others) * isig[j] * inv_kappa;
    }
    if let Some(jd) = dominant {
        out[jd] = (g[jd] * loo[jd] - a[jd] * others_of_dominant) * isig[jd] * inv_kappa;
    }
    total
}

/// Buyer `b`'s best response to prices `p` under the barrier `mu`:
/// `max w log u + mu sum (log x + log(1 - x)) + mu log(ubar - u) - n p.x`.
/// For a fixed `u` every share solves a quadratic; `u` itself is the root of the decreasing
/// `h(u) = c + a.x(u) - u`, found by safeguarded Newton from `guess`. Writes `x` and `y = 1 - x`
/// on the row and returns `u`.
pub(crate) fn central_response(
    inst: &Instance,
    b: usize,
    p: &[f64],
    mu: f64,
    guess: f64,
    x: &mut [f64],
    y: &mut [f64],
) -> f64 {
    let range = inst.start[b]..inst.start[b + 1];
    let (w, n, c, ceil) = (inst.w[b], inst.n[b], inst.c[b], inst.ceil[b]);
    let reach: f64 = c + inst.a[range.clone()].iter().sum::<f64>();
    let (mut lo, mut hi) = (c, reach.min(ceil));
    let evaluate = |u: f64, x: &mut [f64], y: &mut [f64]| {
        let (g, slope) = if ceil.is_finite() {
            let room = ceil - u;
            (w / u - mu / room, -w / (u * u) - mu / (room * room))
        } else {
            (w / u, -w / (u * u))
        };
        let (mut h, mut dh) = (c - u, 0.0);
        for e in range.clone() {
            let k = g * inst.a[e] - n * p[inst.col[e]];
            let root = (k * k + 4.0 * mu * mu).sqrt();
            let xe = 2.0 * mu / ((2.0 * mu - k) + root);
            let ye = 2.0 * mu / ((2.0 * mu + k) + root);
            x[e] = xe;
            y[e] = ye;
            h += inst.a[e] * xe;
            let (x2, y2) = (xe * xe, ye * ye);
            dh += inst.a[e] * inst.a[e] * x2 * y2 / (mu * (x2 + y2));
        }
        (h, dh * slope - 1.0)
    };
    let width = hi - lo;
    let mut u = guess.clamp(lo + 1e-3 * width, hi - 1e-3 * width);
    for _ in 0..200 {
        let (h, dh) = evaluate(u, x, y);
        if h == 0.0 {
            break;
        }
        if h > 0.0 {
            lo = u;
        } else {
            hi = u;
        }
        let newton = u - h / dh;
        if (newton - u).abs() <= 1e-10 * u {
            break;
        }
        u = if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if hi - lo <= 1e-14 * hi {
            break;
        }
    }
    evaluate(u, x, y);
    u
}

/// In-place Cholesky factorisation (lower triangle) of the `n x n` matrix `a`; when a pivot is
/// not positive the diagonal is lifted by a small multiple of its largest entry and the
/// factorisation retried (`original` is scratch of the same size). False if it still fails.
fn cholesky(a: &mut [f64], original: &mut [f64], n: usize) -> bool {
    let scale = (0..n).map(|i| a[i * n + i].abs()).fold(0.0, f64::max);
    if !scale.is_finite() {
        return false;
    }
    original.copy_from_slice(a);
    let mut lift = 0.0;
    for _ in 0..8 {
        if lift > 0.0 {
            a.copy_from_slice(original);
            for i in 0..n {
                a[i * n + i] += lift;
            }
        }
        if cholesky_in_place(a, n) {
            return true;
        }
        lift = if lift == 0.0 {
            1e-14 * scale
        } else {
            lift * 100.0
        };
    }
    false
}

fn cholesky_in_place(a: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        if d.is_nan() || d <= 0.0 || d.is_infinite() {
            return false;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    true
}

/// Solve `L L^T x = b` in place with the factor from [`cholesky`].
fn cholesky_solve(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}
