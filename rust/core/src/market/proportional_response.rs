//! Proportional response with capped, water-filled allocation (the market's price discovery).
//!
//! Each active buyer `i` holds bids `b_it >= 0`. One iteration:
//!
//! 1. **allocate**: every round is water-filled: `x_it = min(1, b_it / (n_i lambda_t))` with the
//!    clearing level `lambda_t` chosen so that the round is exactly sold
//!    (`sum_i n_i x_it = G_t`), or `lambda_t = 0` when every bidder's whole gang fits;
//! 2. **rebid**: `b_it <- w'_i a_it x_it / u_i` with `u_i = c_i + sum_t a_it x_it`: each buyer
//!    spends in proportion to the utility each round just gave it, and only the share
//!    `(u_i - c_i) / u_i` of its (effective) budget, since the utility `c_i` it already owns is a
//!    private good it "buys" with the rest;
//! 3. **ceiling**: a buyer with a ceiling keeps an effective budget
//!    `w'_i <- min(w_i, w'_i (ubar_i - c_i) / (u_i - c_i))`, so it sheds money while it
//!    overshoots its ceiling and recovers it while it undershoots.
//!
//! # GPU types
//!
//! With `K` types the goods are the pairs (round `t`, type `k`), and a job holds at most one gang
//! per round over the types. The allocation then also charges each job a *rent* `mu_it >= 0` per
//! round: a bidder receives `x_itk = b_itk / (n_i lambda_tk + mu_it)`, where each good's level
//! `lambda_tk` sells it out (or is 0) and each rent holds its job to one gang in the round (or is
//! 0). Given the bids, these levels and rents minimise the convex
//! `sum lambda S + sum mu - sum b log(n lambda + mu)` (the clearing problem of fixed bids), one
//! good or one round at a time; each allocation alternates the two (rents at the current levels,
//! then Newton steps on the levels), starting from the previous ones, so that proportional
//! response and the clearing converge together. Its fixed points satisfy, with prices `lambda`
//! and the rents as the rounds' cap multipliers, the same conditions as below, so they are the
//! equilibria of the market with types. With one type the rent is what a capped bidder pays above
//! `n lambda` and the allocation below is the same.
//!
//! At a fixed point with `x_it` strictly between 0 and 1, `b_it = n_i lambda_t x_it` and the
//! rebid rule give `w'_i a_it / (n_i u_i) = lambda_t`; a capped bidder (`x_it = 1`) bids
//! `w'_i a_it / u_i >= n_i lambda_t`; a round with `lambda_t > 0` is sold out; `w'_i < w_i` only
//! at `u_i = ubar_i`, and `w_i - w'_i = u_i * (ceiling multiplier)`. These are exactly the KKT
//! conditions of the Eisenberg-Gale program with prices `lambda`, so fixed points are optimal.
//! The iteration is mirror descent on a Shmyrev-type convex program (Birnbaum, Devanur and Xiao,
//! EC 2011), `O(1/k)` in general: fast to a few digits, slow to many when rounds are nearly
//! interchangeable (measured: about 1,000 iterations to a 1e-6 gap). The default solver therefore
//! uses a few iterations of it to find prices and finishes with the interior-point method.

use super::instance::{best_per_round, Instance};
use crate::buffers::Buffer;
use crate::threads::{run_all, runs, split_runs};

/// Bids never fall below this fraction of the buyer's budget: a bid that reached zero could never
/// recover (zero stays zero under a multiplicative update), and tiny bids would underflow to
/// subnormal numbers. The allocation it causes is below 1e-15 of a round.
const BID_FLOOR: f64 = 1e-16;

/// Water-filling ends after this many passes even if a round has not settled (each pass caps at
/// least one more bidder, so the bound is never reached on real inputs).
const MAX_PASSES: usize = 200;

pub(crate) struct ProportionalResponse {
    /// Bids per entry (dense rows), in normalised budget units; 0 on entries that are not
    /// purchasable.
    pub bids: Buffer,
    /// Rows started from warm-start bids whose effective budget is still to be inferred.
    warm_rows: Vec<bool>,
    /// Effective budget per buyer.
    pub budget: Vec<f64>,
    /// Allocation per entry after the last `allocate`.
    pub x: Buffer,
    /// Utility per buyer after the last `allocate`.
    pub u: Vec<f64>,
    /// Clearing level (price) per round after the last `allocate`.
    pub lambda: Vec<f64>,
    bid_sum: Vec<f64>,
    /// GPUs wanted per round if every bidder held its gang (fixed: bids never reach zero).
    gang_sum: Vec<f64>,
    capped_bids: Vec<f64>,
    capped_gangs: Vec<f64>,
    settled: Vec<bool>,
    /// With types: each round's rent per buyer (`buyers x rounds`), and per good the slope of
    /// the demand in the level (scratch).
    rent: Vec<f64>,
    slope: Vec<f64>,
    /// With types: clearing alternations left for the next allocation (more for the first).
    alternations: usize,
    /// Threads of the per-job work and of the sums over jobs with types (resolved: at least
    /// 1); every sum over jobs is taken in the jobs' order, so the same bits for any number.
    threads: usize,
}

/// With types: clearing alternations (rents, then levels) of the first allocation, and of the
/// later ones (whose bids moved little).
const FIRST_ALTERNATIONS: usize = 4;
const LATER_ALTERNATIONS: usize = 1;
/// With types: Newton steps on the levels per alternation.
const LEVEL_STEPS: usize = 2;
/// Newton steps on a round's rent.
const RENT_STEPS: usize = 50;

impl ProportionalResponse {
    /// Start from `warm` (dense `jobs x rounds` bids in normalised budget units) where a job's row
    /// holds a positive bid on a purchasable entry; other rows start cold, bidding as if they held
    /// every round: `b_it = w_i a_it / (c_i + sum_t a_it)`.
    pub fn new(inst: &Instance, warm: Option<&[f64]>, threads: usize) -> Self {
        let (entries, rounds) = (inst.entries(), inst.goods());
        let mut bids = Buffer::zeroed(entries);
        let mut warm_rows = vec![false; inst.buyers()];
        let mut gang_sum = vec![0.0; rounds];
        for b in 0..inst.buyers() {
            let a = &inst.a[inst.row(b)];
            let out = &mut bids[inst.row(b)];
            let floor = BID_FLOOR * inst.w[b];
            let row = warm.map(|bids| {
                let i = inst.job_of[b];
                &bids[i * rounds..(i + 1) * rounds]
            });
            let informed = row.is_some_and(|row| (0..rounds).any(|t| a[t] > 0.0 && row[t] > 0.0));
            match row {
                Some(row) if informed => {
                    warm_rows[b] = true;
                    for t in 0..rounds {
                        out[t] = if a[t] > 0.0 { row[t].max(floor) } else { 0.0 };
                    }
                }
                _ => {
                    let reach: f64 = inst.c[b] + best_per_round(a, inst.rounds, inst.types);
                    for t in 0..rounds {
                        out[t] = if a[t] > 0.0 {
                            (inst.w[b] * a[t] / reach).max(floor)
                        } else {
                            0.0
                        };
                    }
                }
            }
            for t in 0..rounds {
                if a[t] > 0.0 {
                    gang_sum[t] += inst.n[b];
                }
            }
        }
        Self {
            bids,
            warm_rows,
            budget: inst.w.clone(),
            x: Buffer::zeroed(entries),
            u: inst.c.clone(),
            lambda: vec![0.0; rounds],
            bid_sum: vec![0.0; rounds],
            gang_sum,
            capped_bids: vec![0.0; rounds],
            capped_gangs: vec![0.0; rounds],
            settled: vec![false; rounds],
            rent: vec![
                0.0;
                if inst.types > 1 {
                    inst.buyers() * inst.rounds
                } else {
                    0
                }
            ],
            slope: vec![0.0; if inst.types > 1 { rounds } else { 0 }],
            alternations: FIRST_ALTERNATIONS,
            threads: threads.max(1),
        }
    }

    /// Sum the bids, and the bids and gangs of the bidders capped at the current levels, per
    /// round (`bid_sum` only when `with_sum`).
    fn tally(&mut self, inst: &Instance, with_sum: bool) {
        let goods = inst.goods();
        let good_runs = runs(goods, self.threads);
        let sums = split_runs(&mut self.bid_sum[..goods], &good_runs, 1);
        let capped_bids = split_runs(&mut self.capped_bids[..goods], &good_runs, 1);
        let capped_gangs = split_runs(&mut self.capped_gangs[..goods], &good_runs, 1);
        let (bids, lambda) = (&self.bids, &self.lambda);
        let pieces = sums
            .into_iter()
            .zip(capped_bids.into_iter().zip(capped_gangs));
        let tasks = good_runs.into_iter().zip(pieces);
        run_all(
            tasks.collect(),
            |(run, (bid_sum, (capped_bids, capped_gangs)))| {
                if with_sum {
                    bid_sum.fill(0.0);
                }
                capped_bids.fill(0.0);
                capped_gangs.fill(0.0);
                let len = run.len();
                let (lambda, bid_sum) = (&lambda[run.clone()][..len], &mut bid_sum[..len]);
                let (capped_bids, capped_gangs) =
                    (&mut capped_bids[..len], &mut capped_gangs[..len]);
                for b in 0..inst.buyers() {
                    let row = inst.row(b);
                    let a = &inst.a[row.clone()][run.clone()][..len];
                    let bids = &bids[row][run.clone()][..len];
                    if with_sum {
                        add_to(bid_sum, bids);
                    }
                    add_capped(inst.n[b], (a, bids, lambda), capped_bids, capped_gangs);
                }
            },
        );
    }

    /// Water-fill every round for the current bids; sets `lambda`, `x` and `u`.
    ///
    /// `lambda_t` solves `sum_i min(n_i, b_it / lambda) = G_t`. Fixing the set of capped bidders
    /// at a trial level and solving for the level gives a model step; from a level above the
    /// solution the steps decrease monotonically to it in finitely many passes (each caps more
    /// bidders), and one step from a level below lands at or above it (the model overstates what
    /// capped bidders take). So each round starts from its previous level, which proportional
    /// response changes little between iterations: typically two or three passes.
    pub fn allocate(&mut self, inst: &Instance) {
        if inst.types > 1 {
            self.allocate_typed(inst);
            return;
        }
        self.tally(inst, true);
        for t in 0..inst.goods() {
            let supply = inst.supply[t];
            let fits = self.gang_sum[t] <= supply;
            self.settled[t] = fits;
            let room = supply - self.capped_gangs[t];
            self.lambda[t] = if fits {
                0.0
            } else if self.lambda[t] > 0.0 && room > 0.0 {
                (self.bid_sum[t] - self.capped_bids[t]) / room
            } else {
                self.bid_sum[t] / supply
            };
        }
        for _ in 0..MAX_PASSES {
            if self.settled.iter().all(|&s| s) {
                break;
            }
            self.tally(inst, false);
            for t in 0..inst.goods() {
                if self.settled[t] {
                    continue;
                }
                let room = inst.supply[t] - self.capped_gangs[t];
                let level = (self.bid_sum[t] - self.capped_bids[t]) / room;
                if room > 0.0 && level < self.lambda[t] {
                    self.lambda[t] = level;
                } else {
                    self.settled[t] = true;
                }
            }
        }
        let rounds = inst.goods();
        let job_runs = runs(inst.buyers(), self.threads);
        let shares = split_runs(&mut self.x[..inst.entries()], &job_runs, rounds);
        let utilities = split_runs(&mut self.u[..inst.buyers()], &job_runs, 1);
        let (bids, lambda) = (&self.bids, &self.lambda[..rounds]);
        let tasks = job_runs.into_iter().zip(shares.into_iter().zip(utilities));
        run_all(tasks.collect(), |(jobs, (shares, utilities))| {
            for (k, u) in utilities.iter_mut().enumerate() {
                let b = jobs.start + k;
                let n = inst.n[b];
                let range = inst.row(b);
                let (a, bids) = (&inst.a[range.clone()], &bids[range]);
                let x = &mut shares[k * rounds..][..rounds];
                *u = inst.c[b] + water_filled(n, (a, bids, lambda), x);
            }
        });
    }

    /// [`Self::allocate`] with GPU types: levels and rents (see the module documentation), then
    /// the shares (held to one gang per round against the rounding of the clearing).
    ///
    /// Given the bids, the levels and rents minimise the clearing problem's convex dual; each
    /// alternation minimises it exactly over the rents (one root per round of a job), then takes
    /// Newton steps on each good's level (its demand is convex and decreasing in it; a step keeps
    /// at least a quarter of the level, and a good nobody over-demands at level 0 stays free).
    /// In a round where every bidder pays rent, raising all its levels together moves only the
    /// rents: the dual is flat there, the levels drift slowly along it and the certificate does
    /// not care. The first allocation starts from the levels that would sell each good's bids at
    /// face value, and alternates more.
    fn allocate_typed(&mut self, inst: &Instance) {
        let (rounds, types, goods) = (inst.rounds, inst.types, inst.goods());
        let alternations = std::mem::replace(&mut self.alternations, LATER_ALTERNATIONS);
        if alternations == FIRST_ALTERNATIONS {
            self.tally(inst, true);
            for g in 0..goods {
                self.lambda[g] = if inst.supply[g] > 0.0 {
                    self.bid_sum[g] / inst.supply[g]
                } else {
                    0.0
                };
            }
        }
        for _ in 0..alternations {
            self.rents(inst);
            for _ in 0..LEVEL_STEPS {
                // demand and its slope in the level, at the current levels and rents (runs of
                // goods on threads, each summed over the jobs in order)
                let good_runs = runs(goods, self.threads);
                let demand = split_runs(&mut self.bid_sum[..goods], &good_runs, 1);
                let slopes = split_runs(&mut self.slope[..goods], &good_runs, 1);
                let (bids, rents, lambda) = (&self.bids, &self.rent, &self.lambda);
                let tasks = good_runs.into_iter().zip(demand.into_iter().zip(slopes));
                run_all(tasks.collect(), |(run, (demand, slope))| {
                    demand.fill(0.0);
                    slope.fill(0.0);
                    for b in 0..inst.buyers() {
                        let n = inst.n[b];
                        let range = inst.row(b);
                        let (a, bids) = (&inst.a[range.clone()], &bids[range]);
                        let rent = &rents[b * rounds..(b + 1) * rounds];
                        for (j, g) in run.clone().enumerate() {
                            let price = n * lambda[g] + rent[g % rounds];
                            if a[g] > 0.0 && price > 0.0 {
                                let x = bids[g] / price;
                                demand[j] += n * x;
                                slope[j] += n * n * x / price;
                            }
                        }
                    }
                });
                for g in 0..goods {
                    let (level, demand) = (self.lambda[g], self.bid_sum[g]);
                    if (level == 0.0 && demand <= inst.supply[g]) || self.slope[g] <= 0.0 {
                        continue; // free, or nobody bids
                    }
                    let next = level + (demand - inst.supply[g]) / self.slope[g];
                    self.lambda[g] = if next.is_nan() {
                        level
                    } else {
                        next.max(0.25 * level).max(0.0)
                    };
                }
            }
        }
        self.rents(inst);
        let job_runs = runs(inst.buyers(), self.threads);
        let shares = split_runs(&mut self.x[..inst.entries()], &job_runs, goods);
        let utilities = split_runs(&mut self.u[..inst.buyers()], &job_runs, 1);
        let (bids, rents, lambda) = (&self.bids, &self.rent, &self.lambda);
        let tasks = job_runs.into_iter().zip(shares.into_iter().zip(utilities));
        run_all(tasks.collect(), |(jobs, (shares, utilities))| {
            let rows = shares.chunks_exact_mut(goods.max(1));
            for ((b, x), u) in jobs.zip(rows).zip(utilities.iter_mut()) {
                let n = inst.n[b];
                let range = inst.row(b);
                let (a, bids) = (&inst.a[range.clone()], &bids[range]);
                let rent = &rents[b * rounds..(b + 1) * rounds];
                for g in 0..goods {
                    let price = n * lambda[g] + rent[g % rounds];
                    x[g] = if a[g] > 0.0 && price > 0.0 {
                        (bids[g] / price).min(1.0)
                    } else {
                        0.0
                    };
                }
                let gain = one_gang_per_round(x, a, rounds, types);
                *u = inst.c[b] + gain;
            }
        });
    }

    /// With types: each round's rent at the current levels, the least `mu >= 0` with
    /// `sum_k b_k / (n lambda_k + mu) <= 1` (decreasing and convex in `mu`; Newton from the left).
    fn rents(&mut self, inst: &Instance) {
        let (rounds, types) = (inst.rounds, inst.types);
        let job_runs = runs(inst.buyers(), self.threads);
        let pieces = split_runs(&mut self.rent[..], &job_runs, rounds);
        let (bids, lambda) = (&self.bids, &self.lambda);
        run_all(
            job_runs.into_iter().zip(pieces).collect(),
            |(jobs, rents)| {
                for (b, rents) in jobs.zip(rents.chunks_exact_mut(rounds.max(1))) {
                    let n = inst.n[b];
                    let range = inst.row(b);
                    let (a, bids) = (&inst.a[range.clone()], &bids[range]);
                    for (t, rent) in rents.iter_mut().enumerate() {
                        *rent = round_rent(
                            |k| {
                                (
                                    a[k * rounds + t],
                                    bids[k * rounds + t],
                                    n * lambda[k * rounds + t],
                                )
                            },
                            types,
                        );
                    }
                }
            },
        );
    }

    /// The proportional-response update of the bids from the last allocation.
    pub fn rebid(&mut self, inst: &Instance) {
        let goods = inst.goods();
        let job_runs = runs(inst.buyers(), self.threads);
        let bids = split_runs(&mut self.bids[..inst.entries()], &job_runs, goods);
        let budgets = split_runs(&mut self.budget[..], &job_runs, 1);
        let warm_rows = split_runs(&mut self.warm_rows[..], &job_runs, 1);
        let (x, utilities) = (&self.x, &self.u);
        let tasks = job_runs
            .into_iter()
            .zip(bids.into_iter().zip(budgets.into_iter().zip(warm_rows)));
        run_all(tasks.collect(), |(jobs, (bids, (budgets, warm_rows)))| {
            for (k, (budget, warm)) in budgets.iter_mut().zip(warm_rows).enumerate() {
                let b = jobs.start + k;
                let range = inst.row(b);
                let bids = &mut bids[k * goods..][..goods];
                let u = utilities[b];
                let gain = u - inst.c[b];
                if std::mem::take(warm) && inst.ceil[b].is_finite() && gain > 0.0 {
                    // A warm row at its ceiling spent less than its budget: resume from the
                    // budget its bids imply (spend = w' (u - c) / u) instead of overshooting
                    // with the full one.
                    let spend: f64 = bids.iter().sum();
                    *budget = (spend * u / gain).min(inst.w[b]);
                }
                if inst.ceil[b].is_finite() && gain > 0.0 {
                    *budget = (*budget * (inst.ceil[b] - inst.c[b]) / gain).min(inst.w[b]);
                }
                let factor = *budget / u;
                let floor = BID_FLOOR * inst.w[b];
                rebid_row((factor, floor), (&inst.a[range.clone()], &x[range]), bids);
            }
        });
    }
}

/// A bidder's shares at the levels `lambda` (gang `n`), written to `x`; returns its gain `a.x`.
/// (This and the next are functions, so that the compiler knows the rows apart and vectorises
/// without checking for overlap on every job.)
#[inline(always)]
fn water_filled(n: f64, (a, bids, lambda): (&[f64], &[f64], &[f64]), x: &mut [f64]) -> f64 {
    let len = x.len();
    let (a, bids, lambda) = (&a[..len], &bids[..len], &lambda[..len]);
    let mut gain = 0.0;
    for t in 0..len {
        let level = lambda[t];
        x[t] = if a[t] <= 0.0 {
            0.0
        } else if level > 0.0 {
            (bids[t] / (n * level)).min(1.0)
        } else {
            1.0
        };
        gain += a[t] * x[t];
    }
    gain
}

/// A bidder's new bids: `factor a x`, at least `floor`, where it can buy.
#[inline(always)]
fn rebid_row((factor, floor): (f64, f64), (a, x): (&[f64], &[f64]), bids: &mut [f64]) {
    let len = bids.len();
    let (a, x) = (&a[..len], &x[..len]);
    for t in 0..len {
        bids[t] = if a[t] > 0.0 {
            (factor * a[t] * x[t]).max(floor)
        } else {
            0.0
        };
    }
}

/// `sums += values`, entry by entry.
#[inline(always)]
fn add_to(sums: &mut [f64], values: &[f64]) {
    for (sum, &value) in sums.iter_mut().zip(values) {
        *sum += value;
    }
}

/// A bidder's part of [`ProportionalResponse::tally`]: its bids and gang on the rounds where it
/// is capped at the levels `lambda` (gang `n`), added to `capped_bids` and `capped_gangs`.
#[inline(always)]
fn add_capped(
    n: f64,
    (a, bids, lambda): (&[f64], &[f64], &[f64]),
    capped_bids: &mut [f64],
    capped_gangs: &mut [f64],
) {
    let len = capped_bids.len();
    let (a, bids, lambda, capped_gangs) = (
        &a[..len],
        &bids[..len],
        &lambda[..len],
        &mut capped_gangs[..len],
    );
    for t in 0..len {
        // Non-short-circuit `&`: branch-free, so the loop vectorises.
        let capped = (a[t] > 0.0) & (bids[t] >= n * lambda[t]);
        capped_bids[t] += if capped { bids[t] } else { 0.0 };
        capped_gangs[t] += if capped { n } else { 0.0 };
    }
}

/// A round's rent: the least `mu >= 0` with `sum_k b_k / (n lambda_k + mu) <= 1` over its
/// purchasable types (decreasing and convex in `mu`; Newton from the left). `entry(k)` gives
/// type `k`'s valuation, bid and `n lambda_k`.
#[inline(always)]
fn round_rent(entry: impl Fn(usize) -> (f64, f64, f64), types: usize) -> f64 {
    let demand = |mu: f64| -> (f64, f64) {
        let (mut d, mut slope) = (0.0, 0.0);
        for k in 0..types {
            let (a, bid, level) = entry(k);
            if a > 0.0 {
                let price = level + mu;
                d += bid / price;
                slope -= bid / (price * price);
            }
        }
        (d - 1.0, slope)
    };
    let (at_zero, _) = demand(0.0);
    let mut mu = 0.0;
    if at_zero.is_nan() || at_zero > 0.0 {
        // from the left: the largest bid alone needs at least this much
        let mut floor = 0.0f64;
        for k in 0..types {
            let (a, bid, level) = entry(k);
            if a > 0.0 {
                floor = floor.max(bid - level);
            }
        }
        mu = floor.max(0.0);
        for _ in 0..RENT_STEPS {
            let (f, df) = demand(mu);
            if f.is_nan() || f <= 0.0 || df.is_nan() || df >= 0.0 {
                break;
            }
            let next = mu - f / df;
            if next - mu <= 1e-15 * next {
                mu = next;
                break;
            }
            mu = next;
        }
    }
    mu
}

/// Scale down, in every round where a row's shares (type-major, `types` blocks of `rounds`) sum
/// past one gang, that round's shares to sum to one; returns the row's gain `a.x` afterwards.
pub(crate) fn one_gang_per_round(x: &mut [f64], a: &[f64], rounds: usize, types: usize) -> f64 {
    for t in 0..rounds {
        let held: f64 = (0..types).map(|k| x[k * rounds + t]).sum();
        if held > 1.0 {
            for k in 0..types {
                x[k * rounds + t] /= held;
            }
        }
    }
    a.iter().zip(x.iter()).map(|(a, x)| a * x).sum()
}
