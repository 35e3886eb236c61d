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
//!   `T` prices (see `interior_point.rs`) finishes in a few tens of Newton steps.
//! * [`Method::ProportionalResponse`]: proportional response alone (see
//!   `proportional_response.rs`), certified every few iterations. Cheap iterations, fast to a few
//!   digits, slow to many.

// The solvers index many parallel per-entry, per-buyer and per-round arrays with one index.
#![allow(clippy::needless_range_loop)]

mod certificate;
mod instance;
mod interior_point;
mod proportional_response;
mod rounding;
pub mod synthetic;

use std::fmt;

use certificate::Incumbent;
use instance::Instance;
pub use instance::MarketProblem;
use interior_point::{InteriorPoint, Start};
use proportional_response::ProportionalResponse;
pub use rounding::{round_schedule, RoundingInput};

/// A rejected input: the argument it concerns and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarketError {
    /// Name of the offending argument (as in the Python API).
    pub argument: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl MarketError {
    pub(crate) fn new(argument: &'static str, message: String) -> Self {
        Self { argument, message }
    }
}

impl fmt::Display for MarketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.argument, self.message)
    }
}

impl std::error::Error for MarketError {}

/// Which algorithm runs the solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Proportional-response price discovery, then the interior-point method.
    InteriorPoint,
    /// Proportional response only.
    ProportionalResponse,
}

/// Settings of [`solve`].
#[derive(Clone, Copy, Debug)]
pub struct SolverSettings {
    /// Target relative duality gap (> 0).
    pub tol: f64,
    /// Largest number of iterations, all methods together (>= 1).
    pub max_iter: usize,
    /// The algorithm.
    pub method: Method,
    /// Proportional-response iterations that find the interior-point method's starting prices;
    /// `None`: 5 from a cold start, 1 from a warm start (whose bids already carry prices, which
    /// further proportional-response iterations were measured to worsen for the interior-point
    /// start).
    pub warmup_iterations: Option<usize>,
    /// Run the interior-point passes with AVX2 when the CPU has it (x86-64, detected at run
    /// time; default `true`). The results are the same bits either way: `false` is for checking
    /// that and for measuring the gain.
    pub simd: bool,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            tol: 1e-6,
            max_iter: 20_000,
            method: Method::InteriorPoint,
            warmup_iterations: None,
            simd: true,
        }
    }
}

/// Longest window (rounds `T`) the interior-point method accepts. Its price system is a dense
/// `T x T` matrix held twice (16 `T^2` bytes: 64 MiB at this limit) and factored every iteration
/// (`T^3 / 3` operations, about a second at this limit), on top of `O(N T^2)` per iteration for
/// assembling it. Proportional response has no limit on `T` (`O(N T)` memory and time per
/// iteration). The Shockwave policy plans 20 rounds by default.
pub const MAX_INTERIOR_POINT_ROUNDS: usize = 2048;

/// A warm-start row spending more than this many times its job's budget is scaled down to the
/// budget (see `normalised_bids`).
const WARM_SPEND_LIMIT: f64 = 1e3;

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

/// A solved market. Matrices are row-major `jobs x rounds`.
#[derive(Clone, Debug, PartialEq)]
pub struct MarketSolution {
    pub jobs: usize,
    pub rounds: usize,
    /// `x_it`: fraction of round `t` during which job `i` holds its gang (feasible).
    pub shares: Vec<f64>,
    /// `p_t`: price of one GPU for round `t`, in budget units.
    pub prices: Vec<f64>,
    /// `u_i = c_i + sum_t a_it x_it` of the reported shares.
    pub utilities: Vec<f64>,
    /// Proportional-response bids at this equilibrium, `b_it = w'_i a_it x_it / u_i` (budget
    /// units): `w'_i = w_i` unless job `i` sits at its ceiling, where it is the budget the job
    /// actually uses. So `sum_t b_it = w'_i (u_i - c_i) / u_i` (the budget identity), and
    /// `b_it >= n_i p_t x_it` with equality where `0 < x_it < 1` (a job holding a whole gang
    /// pays a rent for the cap). The warm start of the next solve. With
    /// [`Method::ProportionalResponse`], the method's own last bids instead (close to these when
    /// converged), so that a warm start resumes the iteration where it stopped.
    pub bids: Vec<f64>,
    /// `sum_i w_i log u_i` over the jobs in the objective.
    pub objective: f64,
    /// The dual bound at `prices` (`>= objective`).
    pub dual_bound: f64,
    /// `(dual_bound - objective) / W`.
    pub gap: f64,
    /// Iterations of both methods together.
    pub iterations: usize,
    /// Proportional-response iterations among them.
    pub pr_iterations: usize,
    /// Interior-point iterations among them.
    pub ipm_iterations: usize,
    /// Whether `gap <= tol`.
    pub converged: bool,
}

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
        if !(settings.tol.is_finite() && settings.tol > 0.0) {
            return Err(MarketError::new(
                "tol",
                format!("must be positive and finite, got {}", settings.tol),
            ));
        }
        if settings.max_iter == 0 {
            return Err(MarketError::new("max_iter", "must be at least 1".into()));
        }
        if settings.method == Method::InteriorPoint && inst.rounds > MAX_INTERIOR_POINT_ROUNDS {
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
        check_solver_memory(inst, settings.method)?;
        let warm = match warm_start {
            Some(bids) => Some(normalised_bids(inst, bids)?),
            None => None,
        };
        let mut best = Incumbent::new(inst);
        let (mut pr_iterations, mut ipm_iterations) = (0, 0);
        let mut final_bids = None;
        if inst.buyers() == 0 {
            best.offer(inst, &[], &vec![0.0; inst.rounds]);
        } else {
            let mut pr = ProportionalResponse::new(inst, warm.as_deref());
            match settings.method {
                Method::ProportionalResponse => {
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
                    if gap > settings.tol && pr_iterations < settings.max_iter {
                        let mut ipm = InteriorPoint::new(inst);
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
                    }
                }
            }
            if best.gap() <= settings.tol {
                best.purify(inst, SHARE_NOISE, settings.tol);
            }
        }
        Ok(assemble(
            inst,
            &self.progress,
            &best,
            final_bids.as_deref(),
            (pr_iterations, ipm_iterations),
            settings.tol,
        ))
    }
}

/// Work arrays of the solve per entry of the dense `buyers x rounds` layout, in `f64`s (an upper
/// bound: the instance, the methods' per-entry state, the incumbent and the output).
const WORK_PER_ENTRY: usize = 24;

/// Refuse a market whose working memory (per-entry arrays, and the interior-point method's
/// `T x T` price system) does not fit in the machine's available memory.
fn check_solver_memory(inst: &Instance, method: Method) -> Result<(), MarketError> {
    let entries = crate::limits::bytes_of(inst.entries(), 8 * WORK_PER_ENTRY);
    let system = match method {
        Method::InteriorPoint => inst
            .rounds
            .checked_mul(inst.rounds)
            .and_then(|cells| crate::limits::bytes_of(cells, 16)),
        Method::ProportionalResponse => Some(0),
    };
    let bytes = entries.zip(system).and_then(|(e, s)| e.checked_add(s));
    let what = format!(
        "solving a market of {} jobs x {} rounds",
        inst.jobs, inst.rounds
    );
    crate::limits::check_memory(bytes, &what).map_err(|m| MarketError::new("valuations", m))
}

/// Validate warm-start bids and bring them to normalised budget units.
fn normalised_bids(inst: &Instance, bids: &[f64]) -> Result<Vec<f64>, MarketError> {
    if bids.len() != inst.jobs * inst.rounds {
        return Err(MarketError::new(
            "warm_start",
            format!(
                "expected {} x {} bids, got {} values",
                inst.jobs,
                inst.rounds,
                bids.len()
            ),
        ));
    }
    if let Some(k) = bids.iter().position(|b| !b.is_finite() || *b < 0.0) {
        return Err(MarketError::new(
            "warm_start",
            format!("bid {k} is negative or not finite ({})", bids[k]),
        ));
    }
    let total = inst.budget_total;
    if total <= 0.0 {
        return Ok(vec![0.0; bids.len()]);
    }
    let mut normalised: Vec<f64> = bids.iter().map(|b| b / total).collect();
    // A job never spends more than its budget: a row whose bids sum far past it (or overflowed
    // in the division) is scaled down to spend exactly its budget. Its ratios across rounds are
    // kept. (A shifted or smoothed warm start may spend a few budgets: it is used as given.)
    for b in 0..inst.buyers() {
        let i = inst.job_of[b];
        let range = i * inst.rounds..(i + 1) * inst.rounds;
        let row = &mut normalised[range.clone()];
        let spend: f64 = row.iter().sum();
        if spend > WARM_SPEND_LIMIT * inst.w[b] {
            if spend.is_finite() {
                let factor = inst.w[b] / spend;
                row.iter_mut().for_each(|x| *x *= factor);
            } else {
                // Overflowed: rescale the caller's row by its largest bid first.
                let original = &bids[range];
                let largest = original.iter().copied().fold(0.0, f64::max);
                let relative: f64 = original.iter().map(|x| x / largest).sum();
                for (x, &o) in row.iter_mut().zip(original) {
                    *x = o / largest / relative * inst.w[b];
                }
            }
        }
    }
    Ok(normalised)
}

/// Scale the normalised incumbent back to the caller's units and dense layout.
/// `method_bids`, when given, are proportional response's own last bids (per entry, normalised),
/// reported instead of the equilibrium bids so that a warm start resumes that iteration.
fn assemble(
    inst: &Instance,
    progress: &[f64],
    best: &Incumbent,
    method_bids: Option<&[f64]>,
    (pr_iterations, ipm_iterations): (usize, usize),
    tol: f64,
) -> MarketSolution {
    let (jobs, rounds) = (inst.jobs, inst.rounds);
    let total = inst.budget_total;
    let prices: Vec<f64> = (0..rounds)
        .map(|t| {
            if inst.round_used[t] {
                best.prices[t].max(0.0) * total
            } else {
                0.0
            }
        })
        .collect();
    let mut shares = vec![0.0; jobs * rounds];
    let mut bids = vec![0.0; jobs * rounds];
    let mut utilities = progress.to_vec();
    for (b, &i) in inst.job_of.iter().enumerate() {
        let u = best.utilities[b];
        let spendable = effective_budget(inst, best, b) * total;
        for (t, e) in inst.row(b).enumerate() {
            shares[i * rounds + t] = best.shares[e];
            bids[i * rounds + t] = match method_bids {
                Some(own) => own[e] * total,
                None => spendable * inst.a[e] * best.shares[e] / u,
            };
        }
        utilities[i] = inst.scale[b] * u;
    }
    let gap = best.gap();
    let (objective, dual_bound) = if total > 0.0 {
        let primal = if inst.buyers() > 0 { best.primal } else { 0.0 };
        let objective = total * (primal + inst.objective_offset);
        (objective, objective + total * gap)
    } else {
        (0.0, 0.0)
    };
    // Converged only with a certificate that is finite in the caller's units too: a gap that is
    // NaN, or an objective or dual bound that overflowed, certifies nothing.
    let finite = gap.is_finite()
        && objective.is_finite()
        && dual_bound.is_finite()
        && utilities.iter().all(|u| u.is_finite())
        && shares.iter().all(|x| x.is_finite())
        && prices.iter().all(|p| p.is_finite());
    MarketSolution {
        jobs,
        rounds,
        shares,
        prices,
        utilities,
        bids,
        objective,
        dual_bound,
        gap,
        iterations: pr_iterations + ipm_iterations,
        pr_iterations,
        ipm_iterations,
        converged: finite && gap <= tol,
    }
}

/// The budget buyer `b` actually uses (normalised units): its budget, unless it sits at its
/// ceiling, where it is `u_b` times its marginal value of utility. At the equilibrium that value
/// is `n_b p_t / a_bt` on every round the buyer holds in part (and between the largest such ratio
/// of the rounds it holds whole and the smallest of those it does not hold), so it is read on the
/// most fractional round, else on the whole rounds; never more than `w_b / u_b`.
fn effective_budget(inst: &Instance, best: &Incumbent, b: usize) -> f64 {
    let u = best.utilities[b];
    if !(inst.ceil[b].is_finite() && u >= inst.ceil[b] * (1.0 - 1e-7)) {
        return inst.w[b];
    }
    let ratio = |e: usize| inst.n[b] * best.prices[e % inst.rounds].max(0.0) / inst.a[e];
    let range = inst.row(b);
    let fractional = range
        .clone()
        .filter(|&e| best.shares[e] > SHARE_NOISE && best.shares[e] < 1.0 - SHARE_NOISE)
        .max_by(|&e, &f| {
            let spread = |k: usize| best.shares[k] * (1.0 - best.shares[k]);
            spread(e).total_cmp(&spread(f)).then(f.cmp(&e))
        });
    let marginal = match fractional {
        Some(e) => ratio(e),
        None => range
            .filter(|&e| best.shares[e] >= 1.0 - SHARE_NOISE)
            .map(ratio)
            .fold(0.0, f64::max),
    };
    (marginal * u).min(inst.w[b])
}

/// Bids of a `jobs x rounds` market shifted `elapsed` rounds forward, for warm-starting the next
/// plan: column `t` takes the old column `t + elapsed`; the columns that enter the window repeat
/// the old last column (the job's most recent spending rate). With `elapsed >= rounds` every row
/// is zero (no information: cold start).
///
/// # Errors
/// If `bids` does not hold `jobs x rounds` values.
pub fn shift_bids(
    bids: &[f64],
    jobs: usize,
    rounds: usize,
    elapsed: usize,
) -> Result<Vec<f64>, MarketError> {
    if rounds > crate::limits::MAX_ROUNDS {
        return Err(MarketError::new(
            "bids",
            format!("{rounds} rounds; a window may have at most 2^32"),
        ));
    }
    if Some(bids.len()) != jobs.checked_mul(rounds) {
        return Err(MarketError::new(
            "bids",
            format!("expected {jobs} x {rounds} values, got {}", bids.len()),
        ));
    }
    let mut shifted = vec![0.0; bids.len()];
    if elapsed < rounds {
        for i in 0..jobs {
            let row = &bids[i * rounds..(i + 1) * rounds];
            let out = &mut shifted[i * rounds..(i + 1) * rounds];
            out[..rounds - elapsed].copy_from_slice(&row[elapsed..]);
            out[rounds - elapsed..].fill(row[rounds - 1]);
        }
    }
    Ok(shifted)
}

#[cfg(test)]
mod tests;
