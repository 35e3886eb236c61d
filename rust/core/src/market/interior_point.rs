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
//! # Three passes per iteration
//!
//! The right-hand side of job `i` is affine in the barrier target `tau` and in the predictor's
//! second-order terms: `h_i = h0_i + tau h_tau_i + hc_i` (see [`InteriorPoint::prepare`]). So
//! an iteration reads the job-round entries three times:
//! 1. *prepare* (fused with the previous step's update): reciprocals, the `T x T` price system,
//!    and the price right-hand sides `sum n M^{-1} h0` and `sum n M^{-1} h_tau`;
//! 2. *predictor*: the affine direction, its step limits and complementarity (as a polynomial in
//!    the two step lengths, so no second pass is needed), and `sum n M^{-1} hc`;
//! 3. *corrector*: the final direction and its step limits.
//!
//! When the step taken is expected to bring the complementarity under the certificate's
//! threshold, the update is applied and certified in a light pass of its own first: the last
//! iteration then skips assembling a price system it would never use.
//!
//! Every per-job loop runs over a dense row of `T` entries (zero valuation = not purchasable,
//! masked to zero), and row sums use four interleaved lanes: contiguous, vectorisable and in a
//! fixed order (deterministic).
//!
//! # Numerics
//!
//! Near the optimum `sigma` tends to 0 on fractional entries and to infinity on entries at a
//! bound:
//! * the textbook Sherman-Morrison formula cancels catastrophically; `M_i^{-1}` is evaluated as
//!   `(M^{-1} g)_e = (g_e L_e - a_e R_e) / (sigma_e kappa)` with
//!   `kappa = 1/gamma + sum_f a_f^2/sigma_f`, `L_e = 1/gamma + sum_{f != e} a_f^2/sigma_f` and
//!   `R_e = sum_{f != e} a_f g_f / sigma_f` (the `e`-terms cancel exactly on paper). Only an
//!   entry holding more than half of `kappa` (at most one per job) would lose digits computing
//!   `L_e, R_e` as total minus own term; its sums are taken directly;
//! * `a_i . dx_i` is taken in closed form, `R / (gamma kappa)`: summing would cancel the large
//!   components of a job indifferent between rounds, which are orthogonal to `a_i`;
//! * the price system gets ill-conditioned (such indifferent jobs); each price step is corrected
//!   by iterative refinement against the supply residual of `(dx, dp)`, computed exactly in the
//!   same pass, and a step that cannot be made accurate stops the method (keeping its best
//!   certificate).
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
const CERTIFY_BELOW: f64 = 4.0;
/// After a certificate that fails, the next one waits until the barrier's estimate, scaled by
/// the ratio the failed certificate showed between the two, is below this multiple of `tol`.
const CERTIFY_MARGIN: f64 = 1.5;
/// Iterations in a row in which neither `mu` nor the supply residual fell by 2% before the
/// method gives up (stalled).
const STALL_LIMIT: usize = 8;
/// Certified iterations in a row that improved the gap by less than 1% before it gives up.
const IDLE_LIMIT: usize = 8;
/// Within `CERTIFY_NEAR` times the tolerance of the barrier's estimate, the certificate is also
/// evaluated every `CERTIFY_EVERY` iterations whatever that estimate says (it feeds the idle test
/// when the estimate and the gap disagree).
const CERTIFY_EVERY: usize = 10;
const CERTIFY_NEAR: f64 = 100.0;
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
/// Rows whose rank-one terms are subtracted from the price system in one sweep.
const SCHUR_BLOCK: usize = 4;
/// The window length whose row loops are compiled for that fixed length (the policy's
/// default).
const FIXED_WIDTH: usize = 20;
/// No dominant entry in a row.
const NONE: usize = usize::MAX;

/// Per-entry state, dense `buyers x rounds` (entries that are not purchasable hold
/// `x = 0, y = 1, z = v = 0` and zero reciprocals, which removes them from every sum).
#[derive(Default)]
struct Entries {
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
    v: Vec<f64>,
    /// Reciprocals of x, y and sigma of the current point (0 where not purchasable).
    ix: Vec<f64>,
    iy: Vec<f64>,
    isig: Vec<f64>,
    /// The current (corrector) share direction.
    dx: Vec<f64>,
    /// Second-order terms of the predictor over the bound: `dx dz / x` and `-dx dv / y`.
    cxi: Vec<f64>,
    cvi: Vec<f64>,
}

/// Per-buyer state.
#[derive(Default)]
struct Buyers {
    u: Vec<f64>,
    /// Ceiling slack and multiplier (unused without a ceiling).
    r: Vec<f64>,
    beta: Vec<f64>,
    /// `beta / r` and the ceiling residual `u + r - ubar` (0 without a ceiling).
    br: Vec<f64>,
    rc: Vec<f64>,
    /// `gamma = w / u^2 + beta / r` and `kappa = 1 / gamma + sum a^2 / sigma`.
    gamma: Vec<f64>,
    kappa: Vec<f64>,
    /// Coefficient of `a` in `h0`: `w / u - (beta / r) rc`.
    coef: Vec<f64>,
    /// The row's dominant entry ([`NONE`] if none) and its leave-one-out sum `L`.
    dominant: Vec<usize>,
    dominant_loo: Vec<f64>,
    /// Predictor's `dr dbeta`, and the corrector's ceiling steps.
    cr: Vec<f64>,
    dr: Vec<f64>,
    dbeta: Vec<f64>,
}

/// Per-round state.
#[derive(Default)]
struct Rounds {
    p: Vec<f64>,
    s: Vec<f64>,
    dp: Vec<f64>,
    ds: Vec<f64>,
    cs: Vec<f64>,
    /// Supply residual `sum n x + s - G` of the current point.
    rp: Vec<f64>,
    /// `sum_i n_i M_i^{-1} h` for `h0`, `h_tau` and `hc`.
    r0: Vec<f64>,
    rtau: Vec<f64>,
    rcorr: Vec<f64>,
    /// Round part of the current right-hand side, and `sum n dx` of the current direction.
    base: Vec<f64>,
    flow: Vec<f64>,
    rhs: Vec<f64>,
}

/// Scratch rows of length `T`.
#[derive(Default)]
struct Scratch {
    g: Vec<f64>,
    out: Vec<f64>,
    /// A second right-hand side and its solution (the pair solved together in `prepare`).
    g2: Vec<f64>,
    out2: Vec<f64>,
    /// The price system's diagonal, accumulated apart from its (strided) place in the matrix.
    diag: Vec<f64>,
    q: Vec<f64>,
    c1: Vec<f64>,
    c3: Vec<f64>,
    /// `d = a / sigma` of up to [`SCHUR_BLOCK`] rows and their `n^2 / kappa`, waiting to be
    /// subtracted from the price system together.
    schur_rows: Vec<f64>,
    schur_scales: [f64; SCHUR_BLOCK],
}

/// A step computed but not yet applied (applied by the next [`InteriorPoint::prepare`], fused
/// with its pass, or by [`InteriorPoint::apply_pending`]).
#[derive(Clone, Copy)]
struct Pending {
    primal: f64,
    dual: f64,
    target: f64,
}

pub(crate) struct InteriorPoint {
    e: Entries,
    b: Buyers,
    t: Rounds,
    w: Scratch,
    /// Starting prices (floored), kept for restarts, and whether each was floored.
    start_prices: Vec<f64>,
    unpriced: Vec<bool>,
    /// The `T x T` price system, factored in place, and a copy for retries.
    schur: Vec<f64>,
    schur_copy: Vec<f64>,
    complementarity_pairs: f64,
    /// Largest relative supply residual of the current iterate.
    infeasibility: f64,
    pending: Option<Pending>,
    /// Estimate of the total complementarity after the pending step.
    predicted_complementarity: f64,
    /// `sum x z + y v` over the entries at the current point (set by [`Self::prepare`]).
    entry_complementarity: f64,
}

/// Where the method starts: prices, a guess of each buyer's utility, and a duality gap that sets
/// the first barrier (`mu = gap / m`).
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

/// What a back-substitution pass found: step limits, the complementarity of the step as the
/// coefficients of `alpha_p`, `alpha_d` and `alpha_p alpha_d` (predictor only), and a sum that
/// is not finite when the direction is not.
struct PassResult {
    limits: Limits,
    poly: [f64; 3],
    check: f64,
}

/// Which direction a back-substitution pass computes.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    Predictor,
    Corrector { target: f64 },
}

impl InteriorPoint {
    pub fn new(inst: &Instance) -> Self {
        let (entries, buyers, rounds) = (inst.entries(), inst.buyers(), inst.rounds);
        let live = inst.a.iter().filter(|&&a| a > 0.0).count();
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
                isig: e(),
                dx: e(),
                cxi: e(),
                cvi: e(),
            },
            b: Buyers {
                u: b(),
                r: b(),
                beta: b(),
                br: b(),
                rc: b(),
                gamma: b(),
                kappa: b(),
                coef: b(),
                dominant: vec![NONE; buyers],
                dominant_loo: b(),
                cr: b(),
                dr: b(),
                dbeta: b(),
            },
            t: Rounds {
                p: t(),
                s: t(),
                dp: t(),
                ds: t(),
                cs: t(),
                rp: t(),
                r0: t(),
                rtau: t(),
                rcorr: t(),
                base: t(),
                flow: t(),
                rhs: t(),
            },
            w: Scratch {
                g: t(),
                out: t(),
                g2: t(),
                out2: t(),
                diag: t(),
                q: t(),
                c1: t(),
                c3: t(),
                schur_rows: vec![0.0; SCHUR_BLOCK * rounds],
                schur_scales: [0.0; SCHUR_BLOCK],
            },
            start_prices: t(),
            unpriced: vec![false; rounds],
            schur: vec![0.0; rounds * rounds],
            schur_copy: vec![0.0; rounds * rounds],
            complementarity_pairs: (2 * live + used_rounds + ceilings) as f64,
            infeasibility: f64::INFINITY,
            pending: None,
            predicted_complementarity: f64::INFINITY,
            entry_complementarity: 0.0,
        }
    }

    /// Run from the central point of the start's prices (see [`Self::run_width`]). With
    /// `simd`, on an x86-64 CPU that has AVX2 (detected at run time), the same code is compiled
    /// with AVX2 enabled: wider vectors, the same operations in the same order and no fused
    /// multiply-add, so the same bits as without.
    pub fn run(
        &mut self,
        inst: &Instance,
        start: &Start<'_>,
        tol: f64,
        max_iter: usize,
        best: &mut Incumbent,
        simd: bool,
    ) -> Run {
        #[cfg(target_arch = "x86_64")]
        if simd && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            #[allow(unsafe_code)]
            return unsafe { self.run_avx2(inst, start, tol, max_iter, best) };
        }
        let _ = simd;
        self.run_fixed(inst, start, tol, max_iter, best)
    }

    /// [`Self::run_fixed`] compiled with AVX2 (everything it calls in this module is inlined).
    ///
    /// # Safety
    /// Only on a CPU that supports AVX2.
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2(
        &mut self,
        inst: &Instance,
        start: &Start<'_>,
        tol: f64,
        max_iter: usize,
        best: &mut Incumbent,
    ) -> Run {
        self.run_fixed(inst, start, tol, max_iter, best)
    }

    /// The row loops are compiled for a fixed window of [`FIXED_WIDTH`] rounds (unrolled whole)
    /// when the market has that many.
    #[inline(always)]
    fn run_fixed(
        &mut self,
        inst: &Instance,
        start: &Start<'_>,
        tol: f64,
        max_iter: usize,
        best: &mut Incumbent,
    ) -> Run {
        if inst.rounds == FIXED_WIDTH {
            self.run_width::<FIXED_WIDTH>(inst, start, tol, max_iter, best)
        } else {
            self.run_width::<0>(inst, start, tol, max_iter, best)
        }
    }

    /// Run from the central point of the start's prices (floored to be positive) whose barrier
    /// matches the start's duality gap, for at most `max_iter` iterations or until `best`
    /// certifies a relative gap `<= tol`.
    #[inline(always)]
    fn run_width<const W: usize>(
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
            self.unpriced[t] = inst.round_used[t] && price < floor;
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
        let mut certify_below = CERTIFY_BELOW * tol;
        let mut iterations = 0;
        while iterations < max_iter.min(MAX_ITERATIONS) {
            if fresh {
                self.pending = None;
                self.t.p.copy_from_slice(&self.start_prices);
                self.central_point::<W>(inst, mu_start, utilities);
                mu = mu_start;
                worst_residual = f64::INFINITY;
                stalled = 0;
                short_steps = 0;
            }
            // When the step just taken should bring the barrier's estimate under the certificate's
            // threshold, apply it and certify before assembling the price system: if the
            // certificate holds, the assembly (most of an iteration's first pass) is not needed.
            // The same sums in the same order as `prepare`, so the same bits either way.
            let light = self.pending.is_some() && self.predicted_complementarity <= certify_below;
            let total = if light {
                self.apply_pending(inst);
                self.complementarity::<W>(inst)
            } else {
                self.prepare::<W>(inst)
            };
            let mu_now = total / self.complementarity_pairs;
            let complementarity = mu_now * self.complementarity_pairs;
            let due = complementarity <= certify_below
                || (iterations % CERTIFY_EVERY == CERTIFY_EVERY - 1
                    && complementarity <= CERTIFY_NEAR * tol);
            if due {
                let gap = best.offer(inst, &self.e.x, &self.t.p);
                if gap <= tol {
                    return Run { iterations };
                }
                // The gap tracks the barrier's estimate up to a factor that varies by market:
                // certify again once the estimate, corrected by that factor, reaches `tol`.
                certify_below = certify_below.min(CERTIFY_MARGIN * complementarity * tol / gap);
                // Near the end only the certificate counts: stop when it no longer improves.
                idle = if gap < 0.99 * best_gap { 0 } else { idle + 1 };
                best_gap = best_gap.min(gap);
                if idle >= IDLE_LIMIT {
                    break;
                }
            }
            if light {
                self.prepare::<W>(inst);
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
            let Some(primal_step) = self.step::<W>(inst, mu, tol) else {
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
        self.apply_pending(inst);
        best.offer(inst, &self.e.x, &self.t.p);
        Run { iterations }
    }

    /// Each buyer's barrier best response to the current prices, and multipliers that make the
    /// point exactly central: `x z = y v = r beta = s p = mu`.
    #[inline(always)]
    fn central_point<const W: usize>(&mut self, inst: &Instance, mu: f64, utilities: &[f64]) {
        let rounds = width::<W>(inst);
        let (e, b, t, w) = (&mut self.e, &mut self.b, &mut self.t, &mut self.w);
        for k in 0..inst.buyers() {
            let (x, y) = (row_mut(&mut e.x, k, rounds), row_mut(&mut e.y, k, rounds));
            let scratch = (&mut w.g[..], &mut w.out[..]);
            let u = central_response::<W>(inst, k, &t.p, mu, utilities[k], x, y, scratch);
            b.u[k] = u;
            let a = row(&inst.a, k, rounds);
            let (z, v) = (row_mut(&mut e.z, k, rounds), row_mut(&mut e.v, k, rounds));
            for j in 0..rounds {
                let live = a[j] > 0.0;
                z[j] = if live { mu / x[j] } else { 0.0 };
                v[j] = if live { mu / y[j] } else { 0.0 };
            }
            if inst.ceil[k].is_finite() {
                b.r[k] = inst.ceil[k] - u;
                b.beta[k] = mu / b.r[k];
            } else {
                b.r[k] = 1.0;
                b.beta[k] = 0.0;
            }
        }
        // A round that started without a price (floored) and whose best responses leave more
        // room than `mu / p` starts with that room as its slack and the price that keeps it
        // central, `mu / room`: a round nobody fills would otherwise start far from feasible, and
        // the first steps would raise its price before the method could find out that it is
        // free. Likewise a round whose price is so low that `mu / p` exceeds its whole supply
        // (budgets spanning 17 orders of magnitude, where the rich jobs hold whole gangs and the
        // poor ones set the price, gave slacks 1e9 times the supply) starts with the whole supply
        // as its slack and the price `mu / G`: unsold supply cannot exceed the supply, and the
        // method otherwise spent its iterations shrinking that slack and stopped idle.
        t.rp.fill(0.0);
        for k in 0..inst.buyers() {
            let n = inst.n[k];
            for (used, &x) in t.rp.iter_mut().zip(row(&e.x, k, rounds)) {
                *used += n * x;
            }
        }
        for tt in 0..rounds {
            if inst.round_used[tt] {
                let room = inst.supply[tt] - t.rp[tt];
                let central = mu / t.p[tt];
                if self.unpriced[tt] && room > central {
                    t.s[tt] = room;
                    t.p[tt] = mu / room;
                } else if central > inst.supply[tt] {
                    t.s[tt] = inst.supply[tt];
                    t.p[tt] = mu / inst.supply[tt];
                } else {
                    t.s[tt] = central;
                }
            } else {
                t.s[tt] = inst.supply[tt];
            }
        }
    }

    /// The total complementarity `sum x z + y v + s p + r beta` of the current point, summed as
    /// [`Self::prepare`] sums it.
    #[inline(always)]
    fn complementarity<const W: usize>(&mut self, inst: &Instance) -> f64 {
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
            if inst.round_used[tt] {
                total += t.s[tt] * t.p[tt];
            }
        }
        total
    }

    /// Largest supply residual relative to the round's supply (after [`Self::prepare`]).
    #[inline(always)]
    fn primal_infeasibility(&self, inst: &Instance) -> f64 {
        (0..inst.rounds)
            .filter(|&t| inst.round_used[t])
            .map(|t| self.t.rp[t].abs() / inst.supply[t])
            .fold(0.0, f64::max)
    }

    /// Apply the pending step to the per-round and per-buyer variables (the entries are updated
    /// by the caller).
    #[inline(always)]
    fn apply_pending_scalars(&mut self, inst: &Instance, step: Pending) {
        let (b, t) = (&mut self.b, &mut self.t);
        for tt in 0..inst.rounds {
            if inst.round_used[tt] {
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
    fn apply_pending(&mut self, inst: &Instance) {
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
    fn prepare<const W: usize>(&mut self, inst: &Instance) -> f64 {
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

    /// Back-substitute the price step in `t.dp`: `dx = M^{-1} (h - n dp)` per buyer, the supply
    /// residual's `sum n dx` in `t.flow`, the step limits, and (predictor) the second-order terms
    /// and their price right-hand side `t.rcorr`, or (corrector) the stored direction.
    #[inline(always)]
    fn back_substitute<const W: usize>(&mut self, inst: &Instance, pass: Pass) -> PassResult {
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
            if inst.round_used[tt] {
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

    /// Solve for the price step of the right-hand side in `t.rhs` (round part `t.base`),
    /// back-substitute, and refine the price step against the exactly computed supply residual
    /// of `(dx, dp)`. `None` if the direction is not finite or cannot be made accurate.
    #[inline(always)]
    fn direction<const W: usize>(&mut self, inst: &Instance, pass: Pass) -> Option<PassResult> {
        let rounds = width::<W>(inst);
        self.t.dp.copy_from_slice(&self.t.rhs);
        cholesky_solve(&self.schur, rounds, &mut self.t.dp);
        // The price system is ill-conditioned near the optimum, but the supply residual of
        // (dx, dp) can be computed accurately and corrected with the same factor.
        for refinement in 0..=MAX_REFINEMENTS {
            if !self.t.dp.iter().all(|d| d.is_finite()) {
                return None;
            }
            let result = self.back_substitute::<W>(inst, pass);
            let t = &mut self.t;
            // Residual base + sum n dx - (s/p) dp of the supply equations.
            let mut worst: f64 = 0.0;
            for tt in 0..rounds {
                t.rhs[tt] = if inst.round_used[tt] {
                    let residual = t.base[tt] + t.flow[tt] - t.s[tt] / t.p[tt] * t.dp[tt];
                    worst = worst.max(residual.abs() / inst.supply[tt]);
                    residual
                } else {
                    0.0
                };
            }
            let finite = result.check.is_finite()
                && result.limits.primal.is_finite()
                && result.limits.dual.is_finite();
            if !finite {
                return None;
            }
            if worst <= REFINE_ABOVE {
                return Some(result);
            }
            if refinement == MAX_REFINEMENTS {
                if worst > REFINE_GIVE_UP.max(0.1 * self.infeasibility) {
                    // The price system is too ill-conditioned for this direction to be trusted
                    // (seen with budgets spanning 1 to 3^12 and gaps near 1e-8): an inexact
                    // step is fine while the iterate is far from feasible, not near the end.
                    // Stop, keeping the best certified answer.
                    return None;
                }
                return Some(result);
            }
            cholesky_solve(&self.schur, rounds, &mut t.rhs);
            for (dp, &delta) in t.dp.iter_mut().zip(&t.rhs) {
                *dp += delta;
            }
        }
        None
    }

    /// One predictor-corrector step, left pending (applied by the next [`Self::prepare`]);
    /// returns the primal step length, or `None` if a direction could not be computed.
    #[inline(always)]
    fn step<const W: usize>(&mut self, inst: &Instance, mu: f64, tol: f64) -> Option<f64> {
        let rounds = width::<W>(inst);
        let t = &mut self.t;
        for tt in 0..rounds {
            t.base[tt] = if inst.round_used[tt] {
                t.rp[tt] - t.s[tt]
            } else {
                0.0
            };
            t.rhs[tt] = t.base[tt] + t.r0[tt];
        }
        let predictor = self.direction::<W>(inst, Pass::Predictor)?;
        let (ap, ad) = predictor.limits.steps();
        let [c1, c2, c3] = predictor.poly;
        let complementarity = mu * self.complementarity_pairs;
        let total = complementarity + ap * c1 + ad * c2 + ap * ad * c3;
        let t = &mut self.t;
        for tt in 0..rounds {
            t.cs[tt] = t.ds[tt] * t.dp[tt];
        }
        let mu_affine = total / self.complementarity_pairs;
        let centering = (mu_affine / mu).clamp(0.0, 1.0).powi(3);
        // Never aim the barrier below what the tolerance needs: past that point only the
        // residuals stand between the iterate and the certificate, and a smaller barrier only
        // worsens the conditioning.
        let target = (centering * mu).max(MU_FLOOR * tol / self.complementarity_pairs);
        for tt in 0..rounds {
            t.base[tt] = if inst.round_used[tt] {
                t.rp[tt] + (target - t.cs[tt]) / t.p[tt] - t.s[tt]
            } else {
                0.0
            };
            t.rhs[tt] = t.base[tt] + t.r0[tt] + target * t.rtau[tt] + t.rcorr[tt];
        }
        let corrector = self.direction::<W>(inst, Pass::Corrector { target })?;
        let (ap, ad) = corrector.limits.steps();
        let (ap, ad) = (
            (STEP_TO_BOUNDARY * ap).min(1.0),
            (STEP_TO_BOUNDARY * ad).min(1.0),
        );
        self.pending = Some(Pending {
            primal: ap,
            dual: ad,
            target,
        });
        // First order in the step: the complementarity moves from its value towards the target.
        let along = ap.min(ad);
        self.predicted_complementarity =
            (1.0 - along) * complementarity + along * target * self.complementarity_pairs;
        Some(ap)
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

/// One buyer's `M^{-1}`, `M = diag(sigma) + gamma a a^T`, in the leave-one-out form
/// `(M^{-1} g)_e = (g_e L_e - a_e R_e) / (sigma_e kappa)` with `L_e = kappa - a_e^2 / sigma_e`
/// (summed directly for the dominant entry) and `R_e = sum_{f != e} a_f g_f / sigma_f`.
struct RowInverse<'a> {
    a: &'a [f64],
    isig: &'a [f64],
    kappa: f64,
    inv_kappa: f64,
    dominant: usize,
    dominant_loo: f64,
}

impl<'a> RowInverse<'a> {
    #[inline(always)]
    fn new(a: &'a [f64], isig: &'a [f64], kappa: f64, dominant: usize, dominant_loo: f64) -> Self {
        Self {
            a,
            isig,
            kappa,
            inv_kappa: 1.0 / kappa,
            dominant,
            dominant_loo,
        }
    }

    /// `out = M^{-1} g`, with `R_e` taken as the total minus the own term except for the
    /// dominant entry, whose `R` is summed directly. Returns `sum_e a_e g_e / sigma_e`.
    #[inline(always)]
    fn apply(&self, g: &[f64], out: &mut [f64]) -> f64 {
        let len = out.len();
        let (a, g, isig) = (&self.a[..len], &g[..len], &self.isig[..len]);
        for j in 0..len {
            out[j] = a[j] * g[j] * isig[j];
        }
        let total = lane_sum(out);
        let others_of_dominant = self.others_of_dominant(out);
        let (kappa, inv_kappa) = (self.kappa, self.inv_kappa);
        for j in 0..len {
            let loo = kappa - a[j] * a[j] * isig[j];
            out[j] = (g[j] * loo - a[j] * (total - out[j])) * isig[j] * inv_kappa;
        }
        self.fix_dominant(g, out, others_of_dominant);
        total
    }

    /// [`Self::apply`] to two right-hand sides in one sweep (the same arithmetic, so the same
    /// bits, as two calls).
    #[inline(always)]
    fn apply_pair(&self, (g, h): (&[f64], &[f64]), (out, out2): (&mut [f64], &mut [f64])) {
        let len = out.len();
        let (a, g, h, isig) = (&self.a[..len], &g[..len], &h[..len], &self.isig[..len]);
        let out2 = &mut out2[..len];
        for j in 0..len {
            out[j] = a[j] * g[j] * isig[j];
            out2[j] = a[j] * h[j] * isig[j];
        }
        let (total, total2) = (lane_sum(out), lane_sum(out2));
        let others = self.others_of_dominant(out);
        let others2 = self.others_of_dominant(out2);
        let (kappa, inv_kappa) = (self.kappa, self.inv_kappa);
        for j in 0..len {
            let loo = kappa - a[j] * a[j] * isig[j];
            out[j] = (g[j] * loo - a[j] * (total - out[j])) * isig[j] * inv_kappa;
            out2[j] = (h[j] * loo - a[j] * (total2 - out2[j])) * isig[j] * inv_kappa;
        }
        self.fix_dominant(g, out, others);
        self.fix_dominant(h, out2, others2);
    }

    /// `R` of the dominant entry, summed directly from the terms `a g / sigma` in `terms` (0
    /// without a dominant entry).
    #[inline(always)]
    fn others_of_dominant(&self, terms: &mut [f64]) -> f64 {
        let jd = self.dominant;
        if jd < terms.len() {
            let own = std::mem::replace(&mut terms[jd], 0.0);
            let others = lane_sum(terms);
            terms[jd] = own;
            others
        } else {
            0.0
        }
    }

    /// The dominant entry's output from its directly summed `L` and `R`.
    #[inline(always)]
    fn fix_dominant(&self, g: &[f64], out: &mut [f64], others_of_dominant: f64) {
        let jd = self.dominant;
        if jd < out.len() {
            let (a, isig) = (self.a[jd], self.isig[jd]);
            out[jd] = (g[jd] * self.dominant_loo - a * others_of_dominant) * isig * self.inv_kappa;
        }
    }
}

/// `S -= sum_l scales_l d_l d_l^T` on the upper triangle of the `rounds x rounds` matrix `S`, for
/// the [`SCHUR_BLOCK`] rows `d_l` of `rows` (one read and write of `S` per block of rows).
#[inline(always)]
fn subtract_outer_products<const W: usize>(
    schur: &mut [f64],
    rounds: usize,
    rows: &[f64],
    scales: &[f64; SCHUR_BLOCK],
) {
    let rounds = if W == 0 { rounds } else { W };
    let (d0, rest) = rows.split_at(rounds);
    let (d1, rest) = rest.split_at(rounds);
    let (d2, d3) = rest.split_at(rounds);
    let d3 = &d3[..rounds];
    for tt in 0..rounds {
        let (c0, c1) = (scales[0] * d0[tt], scales[1] * d1[tt]);
        let (c2, c3) = (scales[2] * d2[tt], scales[3] * d3[tt]);
        let row = &mut schur[tt * rounds + tt + 1..(tt + 1) * rounds];
        let tail = tt + 1..rounds;
        let (e0, e1, e2, e3) = (
            &d0[tail.clone()],
            &d1[tail.clone()],
            &d2[tail.clone()],
            &d3[tail],
        );
        for ((((s, &f0), &f1), &f2), &f3) in row.iter_mut().zip(e0).zip(e1).zip(e2).zip(e3) {
            *s -= (c0 * f0 + c1 * f1) + (c2 * f2 + c3 * f3);
        }
    }
}

/// The entry whose `q = a^2 / sigma` exceeds half of `kappa`, if any (at most one can): only for
/// it does `kappa - q` cancel catastrophically. [`NONE`] if there is none.
#[inline(always)]
fn dominant_entry(q: &[f64], kappa: f64) -> usize {
    let mut best = NONE;
    let mut largest = 0.5 * kappa;
    for (j, &value) in q.iter().enumerate() {
        if value > largest {
            largest = value;
            best = j;
        }
    }
    best
}

/// The row length: `W` when the loops are compiled for it (then `inst.rounds == W`), else the
/// market's.
#[inline(always)]
fn width<const W: usize>(inst: &Instance) -> usize {
    if W == 0 {
        inst.rounds
    } else {
        W
    }
}

/// 1 on a purchasable entry (positive valuation), 0 on the others.
#[inline(always)]
fn live(a: f64) -> f64 {
    if a > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// Row `k` of a dense `rows x len` matrix (its length known to the optimiser: no bounds checks in
/// the row loops).
#[inline(always)]
fn row(values: &[f64], k: usize, len: usize) -> &[f64] {
    &values[k * len..][..len]
}

#[inline(always)]
fn row_mut(values: &mut [f64], k: usize, len: usize) -> &mut [f64] {
    &mut values[k * len..][..len]
}

/// Sum in four interleaved lanes: a fixed order (deterministic) that vectorises, unlike a
/// running sum.
#[inline(always)]
fn lane_sum(values: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let mut chunks = values.chunks_exact(4);
    for c in &mut chunks {
        lanes[0] += c[0];
        lanes[1] += c[1];
        lanes[2] += c[2];
        lanes[3] += c[3];
    }
    let mut tail = 0.0;
    for &value in chunks.remainder() {
        tail += value;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// `sum a_j b_j` in four interleaved lanes (see [`lane_sum`]).
#[inline(always)]
fn lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let (mut ca, mut cb) = (a.chunks_exact(4), b.chunks_exact(4));
    for (p, q) in (&mut ca).zip(&mut cb) {
        lanes[0] += p[0] * q[0];
        lanes[1] += p[1] * q[1];
        lanes[2] += p[2] * q[2];
        lanes[3] += p[3] * q[3];
    }
    let mut tail = 0.0;
    for (&p, &q) in ca.remainder().iter().zip(cb.remainder()) {
        tail += p * q;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// Buyer `b`'s best response to prices `p` under the barrier `mu`:
/// `max w log u + mu sum (log x + log(1 - x)) + mu log(ubar - u) - n p.x`.
/// For a fixed `u` every share solves a quadratic; `u` itself is the root of the decreasing
/// `h(u) = c + a.x(u) - u`, found by safeguarded Newton from `guess`. Writes `x` and `y = 1 - x`
/// on the row (`x = 0`, `y = 1` where not purchasable) and returns `u`. `gain` and `slope` are
/// scratch rows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn central_response<const W: usize>(
    inst: &Instance,
    b: usize,
    p: &[f64],
    mu: f64,
    guess: f64,
    x: &mut [f64],
    y: &mut [f64],
    (gain, slope): (&mut [f64], &mut [f64]),
) -> f64 {
    let rounds = width::<W>(inst);
    let a = row(&inst.a, b, rounds);
    let (p, x, y) = (&p[..rounds], &mut x[..rounds], &mut y[..rounds]);
    let (gain, slope) = (&mut gain[..rounds], &mut slope[..rounds]);
    let (w, n, c, ceil) = (inst.w[b], inst.n[b], inst.c[b], inst.ceil[b]);
    let reach: f64 = c + a.iter().sum::<f64>();
    let (mut lo, mut hi) = (c, reach.min(ceil));
    // x(k) = 2 mu / (2 mu - k + R), y = 2 mu / (2 mu + k + R), R = sqrt(k^2 + 4 mu^2), the
    // roots of k + mu/x - mu/y = 0 with x + y = 1; dx/dk = 2 mu / ((2 mu + R)^2 + k^2). Each
    // formula cancels on one side (x for k > 0, where R - k ~ 2 mu^2 / k is lost against k when
    // mu is small, seen putting x + y 1e-8 away from 1), so only the smaller of the two is taken
    // from its formula and the other is 1 minus it: the Newton steps keep x + y fixed, so an
    // error there would never be corrected.
    let response = Response {
        a,
        p,
        w,
        n,
        c,
        ceil,
        mu,
    };
    let width = hi - lo;
    let mut u = guess.clamp(lo + 1e-3 * width, hi - 1e-3 * width);
    // Whether the row holds the shares of the current `u` (then no final evaluation is needed).
    let mut written = false;
    for _ in 0..200 {
        let (h, dh) = response.evaluate(u, (x, y), (gain, slope));
        written = true;
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
        written = false;
        if hi - lo <= 1e-14 * hi {
            break;
        }
    }
    if !written {
        response.evaluate(u, (x, y), (gain, slope));
    }
    u
}

/// One buyer's row in [`central_response`]: its data and the barrier.
struct Response<'a> {
    a: &'a [f64],
    p: &'a [f64],
    w: f64,
    n: f64,
    c: f64,
    ceil: f64,
    mu: f64,
}

impl Response<'_> {
    /// The shares of utility `u` on the row (`x`, `y`), and `h(u) = c + a.x(u) - u` with its
    /// derivative. `gain` and `slope` are scratch rows. A method rather than a closure so that it
    /// is inlined, and compiled with the caller's target features.
    #[inline(always)]
    fn evaluate(
        &self,
        u: f64,
        (x, y): (&mut [f64], &mut [f64]),
        (gain, slope): (&mut [f64], &mut [f64]),
    ) -> (f64, f64) {
        let (a, p, w, n, mu, ceil) = (self.a, self.p, self.w, self.n, self.mu, self.ceil);
        let (two_mu, four_mu2) = (2.0 * mu, 4.0 * mu * mu);
        let (g, dg) = if ceil.is_finite() {
            let room = ceil - u;
            (w / u - mu / room, -w / (u * u) - mu / (room * room))
        } else {
            (w / u, -w / (u * u))
        };
        for j in 0..x.len() {
            let m = live(a[j]);
            let k = g * a[j] - n * p[j];
            let root = (k * k + four_mu2).sqrt();
            let low = two_mu / ((two_mu + k.abs()) + root);
            let (xe, ye) = if k > 0.0 {
                (1.0 - low, low)
            } else {
                (low, 1.0 - low)
            };
            x[j] = m * xe;
            y[j] = m * ye + (1.0 - m);
            gain[j] = a[j] * xe;
            let spread = two_mu + root;
            slope[j] = a[j] * a[j] * (two_mu / (spread * spread + k * k));
        }
        (self.c + lane_sum(gain) - u, lane_sum(slope) * dg - 1.0)
    }
}

/// In-place Cholesky factorisation (lower triangle) of the `n x n` matrix `a`; when a pivot is
/// not positive the diagonal is lifted by a small multiple of its largest entry and the
/// factorisation retried (`original` is scratch of the same size). False if it still fails.
#[inline(always)]
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

#[inline(always)]
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
#[inline(always)]
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
