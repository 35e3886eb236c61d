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

//!
//! # Files
//!
//! * this file: the method's state, its iteration loop ([`InteriorPoint::run`]) and the
//!   predictor-corrector step with iterative refinement of the price step;
//! * `state.rs`: the per-entry, per-buyer and per-round arrays and the step bookkeeping;
//! * `passes.rs`: the two fused passes over the entries (`prepare`: reciprocals, the price
//!   system and its right-hand sides; `back_substitute`: directions and step limits), their
//!   loops over jobs for one GPU type and several, and each job's own work with one type;
//! * `typed.rs`: each job's own work with GPU types; `parts.rs`: the split over threads
//!   (`../../threads.rs`: the worker pool);
//! * `row_inverse.rs`: one buyer's Sherman-Morrison inverse and the rank-one updates of the price
//!   system;
//! * `central.rs`: the central point of given prices (each buyer's barrier best response);
//! * `../linalg/`: the dense Cholesky factorisation of the price system and lane reductions.

mod central;
mod parts;
#[cfg(test)]
mod pass_costs;
mod passes;
mod row_inverse;
mod state;
mod typed;
mod typed_central;

use super::certificate::Incumbent;
use super::instance::Instance;
use super::linalg::cholesky::{cholesky, cholesky_solve};
use super::SolverStatus;
use crate::buffers::Buffer;
use parts::{Outputs, Split};
use state::{Buyers, Entries, Pass, PassResult, Pending, Rounds, Typed};

pub(crate) use parts::JOBS_PER_THREAD;

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
/// With GPU types: after this many iterations in a row whose barrier rose, the method recenters
/// (at most `MAX_RECENTERS` times).
const RECENTER_AFTER: usize = 3;
const MAX_RECENTERS: usize = 3;
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

pub(crate) struct InteriorPoint {
    e: Entries,
    b: Buyers,
    /// Per good (with one type: per round).
    t: Rounds,
    /// With GPU types (but the price system's blocks: empty otherwise).
    k: Typed,
    /// How the passes are split over threads, and the chunk outputs they leave for the sums over
    /// jobs.
    split: Split,
    out: Outputs,
    /// Starting prices (floored), kept for restarts, and whether each was floored; the starting
    /// utilities.
    start_prices: Vec<f64>,
    start_utilities: Vec<f64>,
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

/// How a run of the interior-point method ended: its iterations, and why it stopped
/// ([`SolverStatus::Converged`] when it certified `tol`).
pub(crate) struct Run {
    pub iterations: usize,
    pub stop: SolverStatus,
}

impl InteriorPoint {
    /// The method's state for `inst`; its passes run on `threads` threads (at least 1;
    /// the same bits for any number).
    pub fn new(inst: &Instance, threads: usize) -> Self {
        let (entries, buyers, rounds) = (inst.entries(), inst.buyers(), inst.goods());
        let (slots, per_round, types) = (buyers * inst.rounds, inst.rounds, inst.types);
        let live = inst.a.iter().filter(|&&a| a > 0.0).count();
        // slots holding a purchasable entry (with one type: the live entries)
        let live_slots = if types == 1 {
            live
        } else {
            (0..slots)
                .filter(|&s| {
                    let (b, t) = (s / per_round, s % per_round);
                    (0..types).any(|k| inst.a[b * rounds + k * per_round + t] > 0.0)
                })
                .count()
        };
        let used_rounds = inst.good_used.iter().filter(|&&u| u).count();
        let ceilings = inst.ceil.iter().filter(|c| c.is_finite()).count();
        let e = || Buffer::zeroed(entries);
        let b = || vec![0.0; buyers];
        let t = || vec![0.0; rounds];
        let s = || Buffer::zeroed(slots);
        let typed_entries = if types > 1 { entries } else { 0 };
        let split = Split::new(threads, buyers);
        let out = parts::outputs(&split, parts::Widths::new(per_round, types));
        Self {
            split,
            out,
            e: Entries {
                x: e(),
                y: s(),
                z: e(),
                v: s(),
                ix: e(),
                iy: s(),
                isig: if types == 1 { e() } else { Buffer::default() },
                dx: e(),
                cxi: e(),
                cvi: s(),
            },
            k: Typed {
                hata: Buffer::zeroed(typed_entries),
                r: Buffer::zeroed(typed_entries),
                n: Buffer::zeroed(typed_entries * types),
                q: Buffer::zeroed(if types > 1 { slots } else { 0 }),
                block: vec![0.0; rounds * types],
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
            start_prices: t(),
            start_utilities: b(),
            unpriced: vec![false; rounds],
            schur: vec![0.0; rounds * rounds],
            schur_copy: vec![0.0; rounds * rounds],
            // x z per live entry, y v per live slot, s p per used good, r beta per ceiling
            complementarity_pairs: (live + live_slots + used_rounds + ceilings) as f64,
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
            self.split.avx2 = true;
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
    /// when the market has that many (with one GPU type or three; the other numbers of types
    /// run their window's length as read).
    #[inline(always)]
    fn run_fixed(
        &mut self,
        inst: &Instance,
        start: &Start<'_>,
        tol: f64,
        max_iter: usize,
        best: &mut Incumbent,
    ) -> Run {
        match inst.types {
            1 if inst.rounds == FIXED_WIDTH => {
                self.run_width::<FIXED_WIDTH, 1>(inst, start, tol, max_iter, best)
            }
            1 => self.run_width::<0, 1>(inst, start, tol, max_iter, best),
            2 => self.run_width::<0, 2>(inst, start, tol, max_iter, best),
            3 if inst.rounds == FIXED_WIDTH => {
                self.run_width::<FIXED_WIDTH, 3>(inst, start, tol, max_iter, best)
            }
            3 => self.run_width::<0, 3>(inst, start, tol, max_iter, best),
            4 => self.run_width::<0, 4>(inst, start, tol, max_iter, best),
            5 => self.run_width::<0, 5>(inst, start, tol, max_iter, best),
            6 => self.run_width::<0, 6>(inst, start, tol, max_iter, best),
            7 => self.run_width::<0, 7>(inst, start, tol, max_iter, best),
            8 => self.run_width::<0, 8>(inst, start, tol, max_iter, best),
            // refused by the instance's validation (at most MAX_TYPES)
            _ => Run {
                iterations: 0,
                stop: SolverStatus::NumericalTrouble,
            },
        }
    }

    /// Run from the central point of the start's prices (floored to be positive) whose barrier
    /// matches the start's duality gap, for at most `max_iter` iterations or until `best`
    /// certifies a relative gap `<= tol`.
    #[inline(always)]
    fn run_width<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        start: &Start<'_>,
        tol: f64,
        max_iter: usize,
        best: &mut Incumbent,
    ) -> Run {
        self.set_start_prices(inst, start.prices);
        self.start_utilities.copy_from_slice(start.utilities);
        let mut mu_start = start.gap / self.complementarity_pairs;
        let mut restarts = 0;
        let (mut rising, mut recenters) = (0, 0);
        let mut fresh = true;
        let mut short_steps = 0;
        let mut mu = f64::INFINITY;
        let mut stalled = 0;
        let mut worst_residual = f64::INFINITY;
        let mut idle = 0;
        let mut best_gap = f64::INFINITY;
        let mut certify_below = CERTIFY_BELOW * tol;
        let mut iterations = 0;
        // Why the loop ends if it runs out of iterations: the caller's budget, or the method's
        // own cap (going in circles).
        let mut stop = if max_iter <= MAX_ITERATIONS {
            SolverStatus::IterationLimit
        } else {
            SolverStatus::Stalled
        };
        while iterations < max_iter.min(MAX_ITERATIONS) {
            if fresh {
                self.pending = None;
                self.t.p.copy_from_slice(&self.start_prices);
                let utilities = std::mem::take(&mut self.start_utilities);
                self.central_point::<W, K>(inst, mu_start, &utilities);
                self.start_utilities = utilities;
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
                self.apply_pending::<W, K>(inst);
                self.complementarity::<W, K>(inst)
            } else {
                self.prepare::<W, K>(inst)
            };
            let mu_now = total / self.complementarity_pairs;
            let complementarity = mu_now * self.complementarity_pairs;
            let due = complementarity <= certify_below
                || (iterations % CERTIFY_EVERY == CERTIFY_EVERY - 1
                    && complementarity <= CERTIFY_NEAR * tol);
            if due {
                let gap = best.offer(inst, &self.e.x, &self.t.p);
                if gap <= tol {
                    return Run {
                        iterations,
                        stop: SolverStatus::Converged,
                    };
                }
                // The gap tracks the barrier's estimate up to a factor that varies by market:
                // certify again once the estimate, corrected by that factor, reaches `tol`.
                certify_below = certify_below.min(CERTIFY_MARGIN * complementarity * tol / gap);
                // Near the end only the certificate counts: stop when it no longer improves.
                idle = if gap < 0.99 * best_gap { 0 } else { idle + 1 };
                best_gap = best_gap.min(gap);
                if idle >= IDLE_LIMIT {
                    stop = SolverStatus::Stalled;
                    break;
                }
            }
            if light {
                self.prepare::<W, K>(inst);
            }
            iterations += 1;
            let infeasibility = self.primal_infeasibility(inst);
            self.infeasibility = infeasibility;
            let progress = mu_now <= 0.98 * mu || infeasibility <= 0.98 * worst_residual;
            stalled = if progress { 0 } else { stalled + 1 };
            rising = if mu_now > mu { rising + 1 } else { 0 };
            mu = mu_now;
            // With GPU types, a job far from its optimum (a small budget, a free type) can lose
            // the central path while the rest converges: the barrier then rises step after
            // step. Recenter: restart from the central point of the current prices and
            // utilities at the current barrier.
            if K > 1 && rising >= RECENTER_AFTER && recenters < MAX_RECENTERS {
                recenters += 1;
                let prices = std::mem::take(&mut self.t.p);
                self.set_start_prices(inst, &prices);
                self.t.p = prices;
                self.start_utilities.copy_from_slice(&self.b.u);
                mu_start = mu_now;
                fresh = true;
                continue;
            }
            worst_residual = infeasibility;
            if stalled >= STALL_LIMIT {
                stop = SolverStatus::Stalled;
                break;
            }
            if !cholesky(&mut self.schur, &mut self.schur_copy, inst.goods()) {
                stop = SolverStatus::NumericalTrouble;
                break;
            }
            let Some(primal_step) = self.step::<W, K>(inst, mu, tol) else {
                stop = SolverStatus::NumericalTrouble;
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
        self.apply_pending::<W, K>(inst);
        if best.offer(inst, &self.e.x, &self.t.p) <= tol {
            stop = SolverStatus::Converged;
        }
        Run { iterations, stop }
    }

    /// The starting prices: `prices` floored (at 1e-3 of the highest, or one over the total
    /// supply if none is positive) on the goods someone can buy, 0 elsewhere.
    fn set_start_prices(&mut self, inst: &Instance, prices: &[f64]) {
        let highest = prices.iter().copied().fold(0.0, f64::max);
        let total_supply: f64 = inst.supply.iter().sum();
        let floor = if highest > 0.0 {
            1e-3 * highest
        } else {
            1.0 / total_supply.max(1.0)
        };
        for (t, (p, &price)) in self.start_prices.iter_mut().zip(prices).enumerate() {
            self.unpriced[t] = inst.good_used[t] && price < floor;
            *p = if inst.good_used[t] {
                price.max(floor)
            } else {
                0.0
            };
        }
    }

    /// Largest supply residual relative to the round's supply (after [`Self::prepare`]).
    #[inline(always)]
    fn primal_infeasibility(&self, inst: &Instance) -> f64 {
        (0..inst.goods())
            .filter(|&t| inst.good_used[t])
            .map(|t| self.t.rp[t].abs() / inst.supply[t])
            .fold(0.0, f64::max)
    }

    /// Solve for the price step of the right-hand side in `t.rhs` (round part `t.base`),
    /// back-substitute, and refine the price step against the exactly computed supply residual
    /// of `(dx, dp)`. `None` if the direction is not finite or cannot be made accurate.
    #[inline(always)]
    fn direction<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        pass: Pass,
    ) -> Option<PassResult> {
        let rounds = goods::<W, K>(inst);
        self.t.dp.copy_from_slice(&self.t.rhs);
        cholesky_solve(&self.schur, rounds, &mut self.t.dp);
        // The price system is ill-conditioned near the optimum, but the supply residual of
        // (dx, dp) can be computed accurately and corrected with the same factor.
        for refinement in 0..=MAX_REFINEMENTS {
            if !self.t.dp.iter().all(|d| d.is_finite()) {
                return None;
            }
            let result = self.back_substitute::<W, K>(inst, pass);
            let t = &mut self.t;
            // Residual base + sum n dx - (s/p) dp of the supply equations.
            let mut worst: f64 = 0.0;
            for tt in 0..rounds {
                t.rhs[tt] = if inst.good_used[tt] {
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
    fn step<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        mu: f64,
        tol: f64,
    ) -> Option<f64> {
        let rounds = goods::<W, K>(inst);
        let t = &mut self.t;
        for tt in 0..rounds {
            t.base[tt] = if inst.good_used[tt] {
                t.rp[tt] - t.s[tt]
            } else {
                0.0
            };
            t.rhs[tt] = t.base[tt] + t.r0[tt];
        }
        let predictor = self.direction::<W, K>(inst, Pass::Predictor)?;
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
            t.base[tt] = if inst.good_used[tt] {
                t.rp[tt] + (target - t.cs[tt]) / t.p[tt] - t.s[tt]
            } else {
                0.0
            };
            t.rhs[tt] = t.base[tt] + t.r0[tt] + target * t.rtau[tt] + t.rcorr[tt];
        }
        let corrector = self.direction::<W, K>(inst, Pass::Corrector { target })?;
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

/// The passes whose per-job work differs with one GPU type (`K = 1`: `passes.rs` and
/// `central.rs`) and with several (`typed.rs`, `typed_central.rs`), chosen at compile time. With
/// one type every job's round is a single entry, and the scalar passes are the typed ones with
/// `1 x 1` blocks, written for them. (The complementarity, the update and the back
/// substitutions share their loops over jobs: `passes.rs`.)
impl InteriorPoint {
    #[inline(always)]
    fn central_point<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        mu: f64,
        utilities: &[f64],
    ) {
        if K == 1 {
            self.central_point_scalar::<W>(inst, mu, utilities);
        } else {
            self.central_point_typed::<W, K>(inst, mu, utilities);
        }
    }
}

/// The rounds of the window: `W` when the loops are compiled for it (then `inst.rounds == W`),
/// else the market's.
#[inline(always)]
fn width<const W: usize>(inst: &Instance) -> usize {
    if W == 0 {
        inst.rounds
    } else {
        W
    }
}

/// The goods (the price system's order): with one type the rounds ([`width`]).
#[inline(always)]
fn goods<const W: usize, const K: usize>(inst: &Instance) -> usize {
    if K == 1 {
        width::<W>(inst)
    } else {
        width::<W>(inst) * K
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
