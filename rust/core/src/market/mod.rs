//! The dynamic Fisher market of one planning step, solved with a certificate, and the rounding of
//! its shares into an integral round schedule.
//!
//! # The program
//!
//! `N` jobs (buyers) and `T` future rounds (goods). Job `i` has budget `w_i`, gang size `n_i`
//! GPUs, utility already earned `c_i` in `[0, 1)`, valuations `a_it >= 0` (utility gained by
//! holding its gang through round `t`) and a ceiling `ubar_i > c_i`; round `t` supplies `G_t`
//! GPUs. With `x_it` the fraction of round `t` during which job `i` holds its gang:
//!
//! ```text
//! maximise   sum_i w_i log u_i,     u_i = c_i + sum_t a_it x_it
//! subject to sum_i n_i x_it <= G_t              (supply; price p_t >= 0)
//!            0 <= x_it <= 1                      (one gang per job)
//!            u_i <= ubar_i                       (no progress past completion)
//!            x_it = 0 where n_i > G_t            (a gang that does not fit cannot run)
//! ```
//!
//! The last line is implied for integral schedules and keeps the relaxation honest when the
//! supply varies by round. The program is concave with a unique utility vector. Its KKT
//! conditions are the market equilibrium: with prices `p`, job `i` buys only rounds of the best
//! bang per buck `w_i a_it / (n_i u_i)` (equal to `p_t` where `0 < x_it < 1`, at least `p_t`
//! where `x_it = 1`, at most where `x_it = 0`, shifted by the ceiling multiplier when
//! `u_i = ubar_i`), every round with a positive price is sold out, and a job below its ceiling
//! spends exactly `w_i (u_i - c_i) / u_i`.
//!
//! Jobs that can buy nothing (every `a_it` zero, or no round where the gang fits, or a zero
//! budget) get nothing; those among them with `c_i = 0` have utility 0 whatever the plan, so they
//! are left out of the objective (their `log` would be minus infinity).
//!
//! # GPU types
//!
//! On a cluster of `K` GPU types the goods are the pairs (round `t`, type `k`), with supply
//! `S_tk`, and a job holds at most one gang per round, of one type:
//!
//! ```text
//! maximise   sum_i w_i log u_i,     u_i = c_i + sum_tk a_itk x_itk
//! subject to sum_i n_i x_itk <= S_tk            (price p_tk >= 0)
//!            x_itk >= 0,  sum_k x_itk <= 1      (one gang per round; its multiplier is a rent)
//!            u_i <= ubar_i,  x_itk = 0 where n_i > S_tk
//! ```
//!
//! With `K = 1` this is the program above and the solve is the same, to the bit: the instance,
//! certificate, proportional response and the interior point's driver are shared, and the
//! interior point's passes over a job's rows are compiled for the number of types (one type: the
//! scalar passes; more: `interior_point/typed.rs`, the `K` types of a round unrolled).
//! Proportional response alone (`Method::ProportionalResponse`) takes one type only; with more
//! it only finds the interior point's starting prices (see `proportional_response.rs`).
//!
//! # Certificate
//!
//! Every answer carries a duality gap (see `certificate.rs`): the dual bound `D(p)` at the
//! reported prices minus the objective of the reported (feasible) shares, divided by the total
//! budget `W` of the jobs in the objective. It bounds the budget-weighted mean log-utility loss,
//! `sum_i w_i log(u*_i / u_i) / W <= gap`, is invariant to scaling all budgets or any job's
//! utilities, and `converged` means `gap <= tol`.
//!
//! # Methods
//!
//! * [`Method::InteriorPoint`] (default): a few iterations of proportional response find prices
//!   (from the warm-start bids when given); a primal-dual interior-point method reduced to the
//!   `T` prices (see `interior_point/`) finishes in a few tens of Newton steps.
//! * [`Method::ProportionalResponse`]: proportional response alone (see
//!   `proportional_response.rs`), certified every few iterations. Cheap iterations, fast to a few
//!   digits, slow to many. One GPU type.

// The solvers index many parallel per-entry, per-buyer and per-round arrays with one index.
#![allow(clippy::needless_range_loop)]

mod certificate;
mod instance;
mod interior_point;
mod linalg;
mod proportional_response;
mod rounding;
mod settings;
mod solution;
mod warm_start;

use certificate::Incumbent;
use instance::Instance;
pub use instance::{MarketProblem, MAX_TYPES};
use interior_point::{InteriorPoint, Start};
use proportional_response::ProportionalResponse;
pub use rounding::{round_schedule, RoundingInput};
pub use settings::{Method, SolverSettings, MAX_INTERIOR_POINT_ROUNDS, MAX_THREADS};
use solution::assemble;
pub use solution::{MarketSolution, SolverStatus};
use warm_start::normalised_bids;
pub use warm_start::shift_bids;

use crate::error::{family, InputError};

/// A rejected input of the market family: [`InputError`] naming the argument (as in the Python
/// API) and why.
pub type MarketError = InputError<family::Market>;

/// Default proportional-response iterations before the interior-point method, from a cold and
/// from a warm start.
const COLD_WARMUP: usize = 5;
const WARM_WARMUP: usize = 1;
/// From a warm start the interior-point method's first barrier is this multiple of the certified
/// gap (see [`PreparedMarket::solve`]).
const WARM_BARRIER: f64 = 30.0;
/// How often proportional response alone evaluates its certificate (in iterations).
const CERTIFY_EVERY: usize = 10;
/// Shares within this of 0 or 1 are reported as exactly 0 or 1 when the plan stays certified
/// (and feasible) that way.
const SHARE_NOISE: f64 = 1e-6;

/// Solve the market to the relative duality gap `settings.tol`: [`PreparedMarket::new`] then
/// [`PreparedMarket::solve`].
///
/// # Errors
/// As [`PreparedMarket::new`] and [`PreparedMarket::solve`].
pub fn solve(
    problem: &MarketProblem<'_>,
    settings: &SolverSettings,
    warm_start: Option<&[f64]>,
) -> Result<MarketSolution, MarketError> {
    PreparedMarket::new(problem)?.solve(settings, warm_start)
}

/// A validated market in the solvers' normalised form; it owns its data, so it can be solved
/// while the caller's buffers are released (for instance without the Python GIL).
#[derive(Clone, Debug)]
pub struct PreparedMarket {
    inst: Instance,
    progress: Vec<f64>,
}

impl PreparedMarket {
    /// Validate `problem` and build the normalised market (one pass over the valuations).
    ///
    /// # Errors
    /// A [`MarketError`] naming the argument when an input breaks a rule: a wrong length, NaN or
    /// infinity, a negative value, a gang size of 0 or larger than every round's supply, progress
    /// outside `[0, 1)`, or a ceiling not above the progress (`+inf` is allowed: no ceiling).
    pub fn new(problem: &MarketProblem<'_>) -> Result<Self, MarketError> {
        Ok(Self {
            inst: Instance::new(problem)?,
            progress: problem.progress.to_vec(),
        })
    }

    /// Solve to the relative duality gap `settings.tol`.
    ///
    /// `warm_start`, if given, holds `jobs x rounds` bids aligned with this market (typically
    /// the previous solve's [`MarketSolution::bids`], shifted by [`shift_bids`]): a job's row is
    /// used when it bids on at least one of the job's purchasable rounds; an all-zero row means
    /// "no information", and that job starts cold. Bids are in budget units; what matters is their
    /// ratios within a round and their scale relative to the budgets.
    ///
    /// # Errors
    /// A [`MarketError`] for invalid settings (`tol` not positive and finite, `max_iter` 0) or a
    /// warm start of the wrong length or with a negative or non-finite bid.
    pub fn solve(
        &self,
        settings: &SolverSettings,
        warm_start: Option<&[f64]>,
    ) -> Result<MarketSolution, MarketError> {
        let inst = &self.inst;
        settings.validate()?;
        if settings.method == Method::InteriorPoint
            && inst.types == 1
            && inst.rounds > MAX_INTERIOR_POINT_ROUNDS
        {
            return Err(MarketError::new(
                "valuations",
                format!(
                    "{} rounds: the interior-point method solves a dense T x T price system \
                     (16 T^2 bytes, T^3 / 3 operations per iteration) and takes windows of at \
                     most {MAX_INTERIOR_POINT_ROUNDS} rounds; use method='proportional_response' \
                     (memory and time per iteration O(N T)) for longer ones",
                    inst.rounds
                ),
            ));
        }
        if settings.method == Method::InteriorPoint && inst.goods() > MAX_INTERIOR_POINT_ROUNDS {
            return Err(MarketError::new(
                "valuations",
                format!(
                    "{} rounds x {} GPU types: the interior-point method solves a dense price \
                     system over the (round, type) goods (16 (T K)^2 bytes, (T K)^3 / 3 \
                     operations per iteration) and takes at most {MAX_INTERIOR_POINT_ROUNDS} \
                     goods",
                    inst.rounds, inst.types
                ),
            ));
        }
        if settings.method == Method::ProportionalResponse && inst.types > 1 {
            return Err(MarketError::new(
                "method",
                format!(
                    "'proportional_response' solves markets of one GPU type; this one has {} \
                     (a job holds one gang per round over the types, which proportional \
                     response's fixed points do not respect): use 'interior_point'",
                    inst.types
                ),
            ));
        }
        check_solver_memory(inst, settings.method)?;
        let warm = match warm_start {
            Some(bids) => Some(normalised_bids(inst, bids)?),
            None => None,
        };
        // Threads of the passes over the jobs: the interior point's, proportional response's and
        // the certificate's.
        let threads = crate::threads::thread_count(
            settings.threads,
            inst.buyers(),
            interior_point::JOBS_PER_THREAD,
        );
        let mut best = Incumbent::new(inst, threads);
        let (mut pr_iterations, mut ipm_iterations) = (0, 0);
        let mut final_bids = None;
        // Why the methods stopped (refined by the final certificate in `assemble`).
        let mut stop = SolverStatus::Converged;
        if inst.buyers() == 0 {
            best.offer(inst, &[], &vec![0.0; inst.goods()]);
        } else {
            let mut pr =
                ProportionalResponse::new(inst, warm.as_deref().map(Vec::as_slice), threads);
            match settings.method {
                Method::ProportionalResponse => {
                    // It stops only on the certificate or at the iteration limit.
                    stop = SolverStatus::IterationLimit;
                    while pr_iterations < settings.max_iter {
                        if pr_iterations > 0 {
                            pr.rebid(inst);
                        }
                        pr.allocate(inst);
                        pr_iterations += 1;
                        let due = pr_iterations % CERTIFY_EVERY == 0;
                        if (due || pr_iterations == settings.max_iter)
                            && best.offer(inst, &pr.x, &pr.lambda) <= settings.tol
                        {
                            stop = SolverStatus::Converged;
                            break;
                        }
                    }
                    final_bids = Some(pr.bids);
                }
                Method::InteriorPoint => {
                    let automatic = if warm.is_some() {
                        WARM_WARMUP
                    } else {
                        COLD_WARMUP
                    };
                    let warmup = settings
                        .warmup_iterations
                        .unwrap_or(automatic)
                        .clamp(1, settings.max_iter);
                    while pr_iterations < warmup {
                        if pr_iterations > 0 {
                            pr.rebid(inst);
                        }
                        pr.allocate(inst);
                        pr_iterations += 1;
                    }
                    let gap = best.offer(inst, &pr.x, &pr.lambda);
                    stop = if gap <= settings.tol {
                        SolverStatus::Converged
                    } else {
                        SolverStatus::IterationLimit
                    };
                    if gap > settings.tol && pr_iterations < settings.max_iter {
                        let mut ipm = InteriorPoint::new(inst, threads);
                        // The first barrier matches the certified gap, except from a warm start:
                        // its prices are good, but at so small a barrier the best responses of
                        // jobs indifferent between rounds overshoot the supply and the first
                        // steps stall (measured on the policy's consecutive markets).
                        let barrier_gap = if warm.is_some() {
                            WARM_BARRIER * gap
                        } else {
                            gap
                        };
                        let start = Start {
                            prices: &pr.lambda,
                            utilities: &pr.u,
                            gap: barrier_gap,
                        };
                        let run = ipm.run(
                            inst,
                            &start,
                            settings.tol,
                            settings.max_iter - pr_iterations,
                            &mut best,
                            settings.simd,
                        );
                        ipm_iterations = run.iterations;
                        stop = run.stop;
                    }
                }
            }
            if best.gap() <= settings.tol {
                best.purify(inst, SHARE_NOISE, settings.tol);
            }
        }
        assemble(
            inst,
            &self.progress,
            &best,
            final_bids.as_deref().map(Vec::as_slice),
            (pr_iterations, ipm_iterations),
            settings.tol,
            stop,
        )
    }
}

/// Work arrays of the solve per entry of the dense `buyers x goods` layout, in `f64`s (an upper
/// bound: the instance, the methods' per-entry state, the incumbent, the output and the three
/// rows per job the interior point's parallel passes leave for the sums over jobs); with GPU
/// types the interior point holds one more per entry and type (each round's `K x K` inverse).
const WORK_PER_ENTRY: usize = 27;

/// Refuse a market whose working memory (per-entry arrays, and the interior-point method's
/// price system over the goods) does not fit in the machine's available memory.
fn check_solver_memory(inst: &Instance, method: Method) -> Result<(), MarketError> {
    let per_entry = WORK_PER_ENTRY + if inst.types > 1 { inst.types } else { 0 };
    let entries = crate::limits::bytes_of(inst.entries(), 8 * per_entry);
    let goods = inst.goods();
    let system = match method {
        Method::InteriorPoint => goods
            .checked_mul(goods)
            .and_then(|cells| crate::limits::bytes_of(cells, 16)),
        Method::ProportionalResponse => Some(0),
    };
    let bytes = entries.zip(system).and_then(|(e, s)| e.checked_add(s));
    let what = if inst.types == 1 {
        format!(
            "solving a market of {} jobs x {} rounds",
            inst.jobs, inst.rounds
        )
    } else {
        format!(
            "solving a market of {} jobs x {} rounds x {} GPU types",
            inst.jobs, inst.rounds, inst.types
        )
    };
    crate::limits::check_memory(bytes, &what).map_err(|m| MarketError::new("valuations", m))
}

#[cfg(test)]
mod synthetic;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_types;
