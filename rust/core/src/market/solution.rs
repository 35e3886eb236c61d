//! What a solve returns: the solution with its certificate, and why the solver stopped.

use std::fmt;

use super::certificate::Incumbent;
use super::instance::Instance;
use super::MarketError;
use super::SHARE_NOISE;

/// Why the solver stopped. Every solve that is not [`SolverStatus::Converged`] reports its best
/// certified answer (feasible shares, a finite or infinite gap) with one of the other reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SolverStatus {
    /// The certified relative duality gap is at most `tol` (and the certificate is finite).
    Converged,
    /// `max_iter` iterations ran (all methods together) before the gap reached `tol`. More
    /// iterations, or a warm start, may reach it.
    IterationLimit,
    /// The interior-point method stopped making progress before the gap reached `tol`: the
    /// barrier and the supply residual stopped falling, the certificate stopped improving, or
    /// the method ran its own iteration cap (it goes in circles). Typical of markets whose
    /// budgets span many orders of magnitude at a tight `tol`; a cold start, a looser `tol` or
    /// `proportional_response` may do better.
    Stalled,
    /// The computation lost accuracy: the price system could not be factored, a Newton direction
    /// was not finite or could not be refined, or the certificate is not finite in the caller's
    /// units (an overflow).
    NumericalTrouble,
}

impl SolverStatus {
    /// Every status, in declaration order.
    pub const ALL: [Self; 4] = [
        Self::Converged,
        Self::IterationLimit,
        Self::Stalled,
        Self::NumericalTrouble,
    ];

    /// The status's name in the API (`"converged"`, `"iteration_limit"`, `"stalled"`,
    /// `"numerical_trouble"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Converged => "converged",
            Self::IterationLimit => "iteration_limit",
            Self::Stalled => "stalled",
            Self::NumericalTrouble => "numerical_trouble",
        }
    }
}

impl fmt::Display for SolverStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A solved market. Arrays are row-major like the problem's: `jobs x rounds x types` (shares,
/// bids), `rounds x types` (prices).
#[derive(Clone, Debug, PartialEq)]
pub struct MarketSolution {
    pub jobs: usize,
    pub rounds: usize,
    /// GPU types `K` (1: homogeneous).
    pub types: usize,
    /// `x_itk`: fraction of round `t` during which job `i` holds its gang of type `k`
    /// (feasible: at most one gang per round over the types).
    pub shares: Vec<f64>,
    /// `p_tk`: price of one GPU of type `k` for round `t`, in budget units.
    pub prices: Vec<f64>,
    /// `u_i = c_i + sum_tk a_itk x_itk` of the reported shares.
    pub utilities: Vec<f64>,
    /// Proportional-response bids at this equilibrium, `b_itk = w'_i a_itk x_itk / u_i` (budget
    /// units): `w'_i = w_i` unless job `i` sits at its ceiling, where it is the budget the job
    /// actually uses. So `sum_tk b_itk = w'_i (u_i - c_i) / u_i` (the budget identity), and
    /// `b_itk >= n_i p_tk x_itk` with equality where `0 < x_itk < 1` and the job holds less than
    /// a whole gang in round `t` (a job holding a whole gang pays a rent for the cap). The warm
    /// start of the next solve. With
    /// [`super::Method::ProportionalResponse`], the method's own last bids instead (close to these when
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
    /// Whether `gap <= tol` with a finite certificate (`status == SolverStatus::Converged`).
    pub converged: bool,
    /// Why the solver stopped.
    pub status: SolverStatus,
}

/// Scale the normalised incumbent back to the caller's units and dense layout.
/// `method_bids`, when given, are proportional response's own last bids (per entry, normalised),
/// reported instead of the equilibrium bids so that a warm start resumes that iteration.
pub(super) fn assemble(
    inst: &Instance,
    progress: &[f64],
    best: &Incumbent,
    method_bids: Option<&[f64]>,
    (pr_iterations, ipm_iterations): (usize, usize),
    tol: f64,
    stop: SolverStatus,
) -> Result<MarketSolution, MarketError> {
    let (jobs, rounds, types) = (inst.jobs, inst.rounds, inst.types);
    let goods = inst.goods();
    let total = inst.budget_total;
    let mut prices = vec![0.0; goods];
    for g in 0..goods {
        if inst.good_used[g] {
            prices[inst.caller_good(g)] = best.prices[g].max(0.0) * total;
        }
    }
    let what = if types == 1 {
        format!("the {jobs} x {rounds} shares and bids of the solution")
    } else {
        format!("the {jobs} x {rounds} x {types} shares and bids of the solution")
    };
    let mut shares = crate::limits::try_filled(jobs * goods, 0.0, "valuations", &what)?;
    let mut bids = crate::limits::try_filled(jobs * goods, 0.0, "valuations", &what)?;
    let mut utilities = progress.to_vec();
    for (b, &i) in inst.job_of.iter().enumerate() {
        let u = best.utilities[b];
        let spendable = effective_budget(inst, best, b) * total;
        for (g, e) in inst.row(b).enumerate() {
            let out = i * goods + inst.caller_good(g);
            shares[out] = best.shares[e];
            bids[out] = match method_bids {
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
    let converged = finite && gap <= tol;
    let status = if converged {
        SolverStatus::Converged
    } else if gap <= tol || !gap.is_finite() || stop == SolverStatus::Converged {
        // Certified in normalised units but not in the caller's, or no certificate at all.
        SolverStatus::NumericalTrouble
    } else {
        stop
    };
    Ok(MarketSolution {
        jobs,
        rounds,
        types,
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
        converged,
        status,
    })
}

/// The budget buyer `b` actually uses (normalised units): its budget, unless it sits at its
/// ceiling, where it is `u_b` times its marginal value of utility. At the equilibrium that value
/// is `n_b p_t / a_bt` on every round the buyer holds in part (and between the largest such ratio
/// of the rounds it holds whole and the smallest of those it does not hold), so it is read on the
/// most fractional round, else on the whole rounds; never more than `w_b / u_b`. (With types, a
/// good held in part in a round the job holds whole also carries the round's rent; the estimate
/// is then only an upper bound, clipped at `w_b / u_b`: it only shapes the reported bids.)
fn effective_budget(inst: &Instance, best: &Incumbent, b: usize) -> f64 {
    let u = best.utilities[b];
    if !(inst.ceil[b].is_finite() && u >= inst.ceil[b] * (1.0 - 1e-7)) {
        return inst.w[b];
    }
    let ratio = |e: usize| inst.n[b] * best.prices[e % inst.goods()].max(0.0) / inst.a[e];
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
