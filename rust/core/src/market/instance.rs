//! Validation of a market and its normalised, compressed form used by the solvers.
//!
//! The solvers work on an equivalent, better-conditioned copy of the program:
//!
//! * only *active* jobs take part: a positive budget and at least one *purchasable* entry
//!   (`a_it > 0` and the gang fits the round, `n_i <= G_t`). Every other job gets nothing;
//! * budgets are divided by their sum `W` over the jobs whose utility is positive, so prices and
//!   objective are O(1) whatever the budgets' scale (they are scaled back on output). A sum of
//!   nonnegative numbers overflows only if its value does, so a market whose `W` is not a finite
//!   double is refused: prices, bids and the objective are reported in budget units, which could
//!   not hold them;
//! * each active job's utilities are divided by `s_i = min(ceiling_i, c_i + sum_t a_it)`, its
//!   largest reachable utility. Eisenberg-Gale is invariant to that (the objective moves by the
//!   constant `w_i log s_i`, allocation and prices do not move), and afterwards every utility lies
//!   in `(0, 1]`. A ceiling that cannot bind is dropped; one that can becomes exactly 1;
//! * valuations are stored as dense rows of `goods = rounds x types` entries per active job, 0
//!   where the entry is not purchasable, ordered by type, then round (entry `k T + t` of a row is
//!   round `t` on type `k`; the caller's arrays are ordered by round, then type). With one type
//!   the two orders are the same. An entry that underflows to 0 in the scaling (below about
//!   1e-308 of the job's reach) is not purchasable; a job without a ceiling whose reach is beyond
//!   double precision, or a scaled entry that is not finite (a huge valuation over a tiny
//!   ceiling), is refused, naming `valuations`.
//!
//! A job's *reach* is the most utility it can buy: its progress plus, in every round, its best
//! purchasable valuation (it holds one type at a time).

use super::MarketError;

/// Most GPU types a market may have. The interior-point method's passes are compiled for each
/// count of types (the types of a round unrolled), and its work per round of a job grows with the
/// cube of the types (leave-one-out sums over them); clusters have a handful.
pub const MAX_TYPES: usize = 8;

/// A market as given by the caller (all slices row-major: `jobs x rounds x types` valuations,
/// `rounds x types` supply).
#[derive(Clone, Copy, Debug)]
pub struct MarketProblem<'a> {
    /// Number of jobs (buyers), `N`.
    pub jobs: usize,
    /// Number of rounds in the window, `T`.
    pub rounds: usize,
    /// Number of GPU types, `K` (1: a homogeneous cluster). The goods are the `T K` pairs
    /// (round, type).
    pub types: usize,
    /// `a_itk`: utility job `i` gains from holding its gang of type-`k` GPUs through round `t`
    /// (`N x T x K`, >= 0).
    pub valuations: &'a [f64],
    /// `n_i`: GPUs job `i` needs to run (>= 1), all of one type.
    pub gang_sizes: &'a [u32],
    /// `S_tk`: GPUs of type `k` available in round `t` (`T x K`, >= 0).
    pub supply: &'a [f64],
    /// `w_i`: budget of job `i` (>= 0).
    pub budgets: &'a [f64],
    /// `c_i`: utility already earned, in `[0, 1)`.
    pub progress: &'a [f64],
    /// `ubar_i`: utility ceiling, `> c_i`; `+inf` means no ceiling.
    pub ceilings: &'a [f64],
}

/// The normalised market the solvers iterate on (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) struct Instance {
    pub jobs: usize,
    pub rounds: usize,
    /// GPU types `K`; the goods of a row are `rounds x types` (type-major).
    pub types: usize,
    /// Job index of each active buyer.
    pub job_of: Vec<usize>,
    /// Normalised budget of each active buyer (`w_i / W`).
    pub w: Vec<f64>,
    /// Utility scale `s_i` of each active buyer.
    pub scale: Vec<f64>,
    /// Scaled offset `c_i / s_i`.
    pub c: Vec<f64>,
    /// Scaled ceiling: `1.0` when it can bind, `+inf` otherwise.
    pub ceil: Vec<f64>,
    /// Gang size of each active buyer, in GPUs.
    pub n: Vec<f64>,
    /// Scaled valuations, one dense row of `goods` entries per active buyer (row-major
    /// `buyers x goods`, each row type-major: entry `k T + t` is round `t` on type `k`): positive
    /// on purchasable entries, exactly 0 on the others. Dense rows keep every per-row loop
    /// contiguous (and vectorisable); a zero valuation is the mask.
    pub a: Vec<f64>,
    /// Supply per good (type-major: `k T + t`), in GPUs.
    pub supply: Vec<f64>,
    /// The caller's index of each good ([`Self::caller_good`]), looked up: computed, it takes two
    /// integer divisions, and the per-entry loops ask it for every entry.
    caller: Vec<usize>,
    /// Whether any entry lies in each good.
    pub good_used: Vec<bool>,
    /// `W`: sum of the budgets of the jobs whose utility is positive (original units).
    pub budget_total: f64,
    /// Budget-weighted constant of the objective not represented by the active buyers, in
    /// normalised units: `sum_active w_i log s_i + sum_{inactive, c_i > 0} w_i log c_i`.
    pub objective_offset: f64,
}

impl Instance {
    pub fn buyers(&self) -> usize {
        self.job_of.len()
    }

    /// Goods `rounds x types`: the length of a row.
    pub fn goods(&self) -> usize {
        self.rounds * self.types
    }

    /// Entries of the dense layout (`buyers x goods`).
    pub fn entries(&self) -> usize {
        self.a.len()
    }

    /// The entries of buyer `b`'s row.
    pub fn row(&self, b: usize) -> std::ops::Range<usize> {
        let goods = self.goods();
        b * goods..(b + 1) * goods
    }

    /// The caller's index (`t K + k`, round-major) of the good at `g` (`k T + t`, type-major).
    pub fn caller_good(&self, g: usize) -> usize {
        self.caller[g]
    }

    /// Validate `problem` and build its normalised form.
    pub fn new(problem: &MarketProblem<'_>) -> Result<Self, MarketError> {
        validate(problem)?;
        let (jobs, rounds, types) = (problem.jobs, problem.rounds, problem.types);
        let goods = rounds * types;
        // The caller's (round, type) order to the rows' (type, round) order (`caller_good`).
        let caller: Vec<usize> = (0..goods)
            .map(|g| (g % rounds) * types + g / rounds)
            .collect();
        let supply: Vec<f64> = caller.iter().map(|&c| problem.supply[c]).collect();
        let mut in_objective = vec![false; jobs];
        let mut active_job = vec![false; jobs];
        let mut budget_total = 0.0;
        let mut job_of = Vec::new();
        // Room for every job's row at once (the rows of the jobs left out are never touched, so
        // never paged in), instead of growing and copying the array as the jobs come.
        let mut a = Vec::new();
        a.try_reserve_exact(jobs * goods).map_err(|_| {
            MarketError::out_of_memory(
                "valuations",
                format!(
                    "could not allocate the {jobs} x {rounds} x {types} valuations of the market"
                ),
            )
        })?;
        for i in 0..jobs {
            let n_i = f64::from(problem.gang_sizes[i]);
            let row = &problem.valuations[i * goods..(i + 1) * goods];
            let purchasable = |g: usize| row[caller[g]] > 0.0 && n_i <= supply[g];
            let active = problem.budgets[i] > 0.0 && (0..goods).any(purchasable);
            if active {
                active_job[i] = true;
                job_of.push(i);
                a.extend((0..goods).map(|g| if purchasable(g) { row[caller[g]] } else { 0.0 }));
            }
            in_objective[i] = problem.budgets[i] > 0.0 && (active || problem.progress[i] > 0.0);
            if in_objective[i] {
                budget_total += problem.budgets[i];
            }
        }
        if !budget_total.is_finite() {
            return Err(MarketError::new(
                "budgets",
                format!(
                    "their sum ({budget_total}) overflows double precision; prices, bids and the \
                     objective are in budget units, so divide the budgets by a common factor \
                     (only their ratios matter)"
                ),
            ));
        }
        let buyers = job_of.len();
        let mut w = Vec::with_capacity(buyers);
        let mut scale = Vec::with_capacity(buyers);
        let mut c = Vec::with_capacity(buyers);
        let mut ceil = Vec::with_capacity(buyers);
        let mut n = Vec::with_capacity(buyers);
        let mut objective_offset = 0.0;
        for (b, &i) in job_of.iter().enumerate() {
            let row = &mut a[b * goods..(b + 1) * goods];
            let reach: f64 = problem.progress[i] + best_per_round(row, rounds, types);
            let ceiling = problem.ceilings[i];
            if !reach.is_finite() && !ceiling.is_finite() {
                return Err(MarketError::new(
                    "valuations",
                    format!(
                        "job {i} can reach a utility beyond double precision ({reach}) and has no \
                         ceiling; scale its valuations down (a job's utilities may be scaled \
                         freely)"
                    ),
                ));
            }
            let s = reach.min(ceiling);
            let w_b = problem.budgets[i] / budget_total;
            w.push(w_b);
            scale.push(s);
            c.push(problem.progress[i] / s);
            ceil.push(if ceiling < reach { 1.0 } else { f64::INFINITY });
            n.push(f64::from(problem.gang_sizes[i]));
            for (g, a_e) in row.iter_mut().enumerate() {
                let scaled = *a_e / s;
                if !scaled.is_finite() {
                    let (t, k) = (g % rounds, g / rounds);
                    let place = if types == 1 {
                        format!("round {t}")
                    } else {
                        format!("round {t}, type {k}")
                    };
                    return Err(MarketError::new(
                        "valuations",
                        format!(
                            "job {i}, {place}: valuation {:e} over the job's ceiling {s:e} is \
                             beyond double precision",
                            *a_e
                        ),
                    ));
                }
                *a_e = scaled;
            }
            objective_offset += w_b * s.ln();
        }
        // Goods with a purchasable entry (after the scaling, where an entry can underflow).
        let mut good_used = vec![false; goods];
        for b in 0..buyers {
            for g in 0..goods {
                good_used[g] |= a[b * goods + g] > 0.0;
            }
        }
        for i in 0..jobs {
            if in_objective[i] && !active_job[i] {
                objective_offset += problem.budgets[i] / budget_total * problem.progress[i].ln();
            }
        }
        Ok(Self {
            jobs,
            rounds,
            types,
            job_of,
            w,
            scale,
            c,
            ceil,
            n,
            a,
            supply,
            caller,
            good_used,
            budget_total,
            objective_offset,
        })
    }
}

/// The sum over the rounds of a type-major row (`types` blocks of `rounds`) of each round's
/// largest entry: what a job gains holding its best type in every round. With one type, the plain
/// sum of the row.
pub(crate) fn best_per_round(row: &[f64], rounds: usize, types: usize) -> f64 {
    if types == 1 {
        return row.iter().sum::<f64>();
    }
    (0..rounds)
        .map(|t| (0..types).map(|k| row[k * rounds + t]).fold(0.0, f64::max))
        .sum::<f64>()
}

fn check_len(argument: &'static str, got: usize, expected: usize) -> Result<(), MarketError> {
    if got == expected {
        Ok(())
    } else {
        Err(MarketError::new(
            argument,
            format!("expected {expected} values, got {got}"),
        ))
    }
}

fn check_finite_nonnegative(argument: &'static str, values: &[f64]) -> Result<(), MarketError> {
    for (k, &v) in values.iter().enumerate() {
        if !v.is_finite() {
            return Err(MarketError::new(
                argument,
                format!("entry {k} is not finite ({v})"),
            ));
        }
        if v < 0.0 {
            return Err(MarketError::new(
                argument,
                format!("entry {k} is negative ({v})"),
            ));
        }
    }
    Ok(())
}

/// Check every rule on the inputs; the error names the offending argument.
pub fn validate(problem: &MarketProblem<'_>) -> Result<(), MarketError> {
    let (jobs, rounds, types) = (problem.jobs, problem.rounds, problem.types);
    if rounds > crate::limits::MAX_ROUNDS {
        return Err(MarketError::new(
            "valuations",
            format!("{rounds} rounds; a window may have at most 2^32"),
        ));
    }
    if types == 0 || types > MAX_TYPES {
        return Err(MarketError::new(
            "valuations",
            format!("{types} GPU types; a market has 1 to {MAX_TYPES}"),
        ));
    }
    let goods = rounds
        .checked_mul(types)
        .ok_or_else(|| MarketError::new("valuations", "rounds x types overflows".to_string()))?;
    let cells = jobs.checked_mul(goods).ok_or_else(|| {
        MarketError::new("valuations", "jobs x rounds x types overflows".to_string())
    })?;
    check_len("valuations", problem.valuations.len(), cells)?;
    check_len("gang_sizes", problem.gang_sizes.len(), jobs)?;
    check_len("supply", problem.supply.len(), goods)?;
    check_len("budgets", problem.budgets.len(), jobs)?;
    check_len("progress", problem.progress.len(), jobs)?;
    check_len("ceilings", problem.ceilings.len(), jobs)?;
    check_finite_nonnegative("valuations", problem.valuations)?;
    check_finite_nonnegative("supply", problem.supply)?;
    check_finite_nonnegative("budgets", problem.budgets)?;
    if jobs > 0 && rounds == 0 {
        return Err(MarketError::new(
            "valuations",
            "a market with jobs needs at least one round".to_string(),
        ));
    }
    let max_supply = problem.supply.iter().copied().fold(0.0, f64::max);
    for (i, &g) in problem.gang_sizes.iter().enumerate() {
        if g == 0 {
            return Err(MarketError::new(
                "gang_sizes",
                format!("job {i} has gang size 0 (it must need at least one GPU)"),
            ));
        }
        if f64::from(g) > max_supply {
            return Err(MarketError::new(
                "gang_sizes",
                if types == 1 {
                    format!(
                        "job {i} needs {g} GPUs, more than any round supplies (at most \
                         {max_supply})"
                    )
                } else {
                    format!(
                        "job {i} needs {g} GPUs, more than any round supplies of any type (at \
                         most {max_supply})"
                    )
                },
            ));
        }
    }
    for (i, &c) in problem.progress.iter().enumerate() {
        if !(0.0..1.0).contains(&c) {
            return Err(MarketError::new(
                "progress",
                format!("job {i} has progress {c}, outside [0, 1)"),
            ));
        }
    }
    for (i, &ceiling) in problem.ceilings.iter().enumerate() {
        if ceiling.is_nan() || ceiling <= problem.progress[i] {
            return Err(MarketError::new(
                "ceilings",
                format!(
                    "job {i} has ceiling {ceiling}, which must exceed its progress {}",
                    problem.progress[i]
                ),
            ));
        }
    }
    Ok(())
}
