//! The optimality certificate: a feasible plan's objective and a dual bound from prices.
//!
//! For any prices `p >= 0` the Lagrangian dual of the program (supply constraints dualised,
//! caps and ceilings kept) is
//!
//! ```text
//! D(p) = sum_t p_t G_t + sum_i phi_i(p),
//! phi_i(p) = max { w_i log u_i - n_i sum_t p_t x_it : 0 <= x_it <= 1, u_i = c_i + a_i.x_i <= ubar_i }
//! ```
//!
//! and weak duality gives `P(x) <= P* <= D(p)` for every feasible `x`. Each `phi_i` is a
//! one-dimensional problem: the cheapest way to reach utility `u` buys rounds in decreasing order
//! of bang per buck `a_it / (n_i p_t)`, so `u -> cost(u)` is convex piecewise linear and the
//! buyer stops where its marginal value `w_i / u` falls to the price of utility `1 / r`, at the
//! ceiling, or when it runs out of rounds. The gap `D(p) - P(x)` over the total budget bounds the
//! budget-weighted mean log-utility shortfall of `x`: `sum_i w_i log(u*_i / u_i) / W <= gap`.
//!
//! With GPU types the goods are the pairs (round `t`, type `k`), with prices `p_tk`, and a job
//! holds at most one gang per round, `sum_k x_itk <= 1`. Within a round, the cheapest way to gain
//! utility mixes the types along the upper concave hull of the points (cost `n_i p_tk`, gain
//! `a_itk`) and the origin: each hull segment is a piece of utility at a constant bang per buck,
//! and the segments of one round come in decreasing bang per buck. So `phi_i` is the same walk
//! over all the segments of all the rounds, in decreasing bang per buck (a free type gives its
//! gain at once, the best free one per round). With one type every segment is a round's own point
//! and the walk is the one above.

use super::instance::Instance;
use super::proportional_response::one_gang_per_round;
use crate::buffers::Buffer;
use crate::threads::{map_all, run_all, runs, split_runs};

/// Scale `x` to a feasible plan: a job holding more than one gang in a round (over the types) has
/// that round scaled down to one, oversold goods are scaled down to their supply, then jobs past
/// their ceiling are scaled down to it. Writes the plan into `out` (entries clamped to `[0, 1]`)
/// and the utilities into `u`; returns the objective `sum_b w_b log u_b` (normalised units).
/// Each job's work runs on `threads` runs of jobs; every sum over jobs is taken in the jobs'
/// order, so the result is the same bits for any number of threads.
pub(crate) fn project_primal(
    inst: &Instance,
    x: &[f64],
    out: &mut [f64],
    u: &mut [f64],
    demand: &mut [f64],
    plan: &mut Vec<f64>,
    threads: usize,
) -> f64 {
    if inst.types > 1 {
        // one gang per round first
        plan.clear();
        plan.extend(x.iter().map(|x| x.clamp(0.0, 1.0)));
        let (goods, runs) = (inst.goods(), runs(inst.buyers(), threads));
        let pieces = split_runs(&mut plan[..], &runs, goods);
        run_all(runs.into_iter().zip(pieces).collect(), |(jobs, rows)| {
            for (b, row) in jobs.zip(rows.chunks_exact_mut(goods.max(1))) {
                one_gang_per_round(row, &inst.a[inst.row(b)], inst.rounds, inst.types);
            }
        });
        return project_goods(inst, plan, out, u, demand, threads);
    }
    project_goods(inst, x, out, u, demand, threads)
}

/// [`project_primal`] after the one-gang-per-round step: goods, then ceilings.
fn project_goods(
    inst: &Instance,
    x: &[f64],
    out: &mut [f64],
    u: &mut [f64],
    demand: &mut [f64],
    threads: usize,
) -> f64 {
    let goods = inst.goods();
    // the demand for each good, over the jobs in order (runs of goods on threads)
    let good_runs = runs(goods, threads);
    let pieces = split_runs(&mut demand[..goods], &good_runs, 1);
    run_all(
        good_runs.into_iter().zip(pieces).collect(),
        |(run, demand)| {
            demand.fill(0.0);
            for b in 0..inst.buyers() {
                let (n, x) = (inst.n[b], &x[inst.row(b)][run.clone()]);
                for (d, &x) in demand.iter_mut().zip(x) {
                    *d += n * x.clamp(0.0, 1.0);
                }
            }
        },
    );
    for (t, d) in demand.iter_mut().enumerate() {
        *d = if *d > inst.supply[t] {
            inst.supply[t] / *d
        } else {
            1.0
        };
    }
    // each job's plan, utility and term of the objective (runs of jobs on threads)
    let demand = &*demand;
    let job_runs = runs(inst.buyers(), threads);
    let rows = split_runs(&mut out[..inst.entries()], &job_runs, goods);
    let utilities = split_runs(&mut u[..inst.buyers()], &job_runs, 1);
    let tasks = job_runs.into_iter().zip(rows.into_iter().zip(utilities));
    let terms = map_all(tasks.collect(), |(jobs, (rows, utilities))| {
        let mut terms = Vec::with_capacity(jobs.len());
        for (k, u) in utilities.iter_mut().enumerate() {
            let b = jobs.start + k;
            let (a, x) = (&inst.a[inst.row(b)][..goods], &x[inst.row(b)][..goods]);
            let (out, demand) = (&mut rows[k * goods..][..goods], &demand[..goods]);
            let mut gain = 0.0;
            for t in 0..goods {
                out[t] = x[t].clamp(0.0, 1.0) * demand[t];
                gain += a[t] * out[t];
            }
            let room = inst.ceil[b] - inst.c[b];
            if gain > room {
                let f = room / gain;
                for o in out.iter_mut() {
                    *o *= f;
                }
                gain = room;
            }
            *u = inst.c[b] + gain;
            terms.push(inst.w[b] * u.ln());
        }
        terms
    });
    let mut objective = 0.0;
    for term in terms.iter().flatten() {
        objective += term;
    }
    objective
}

/// The dual bound `D(p)` (normalised units) for prices `p >= 0`, each job's term on `threads`
/// runs of jobs and summed in the jobs' order (the same bits for any number of threads).
///
/// `scratch` is the single-threaded solve's scratch space (reused, never reallocated once it
/// holds a row); other threads have their own.
pub(crate) fn dual_bound(
    inst: &Instance,
    p: &[f64],
    scratch: &mut DualScratch,
    threads: usize,
) -> f64 {
    let mut bound: f64 = (0..inst.goods())
        .map(|t| p[t].max(0.0) * inst.supply[t])
        .sum();
    let term = |b: usize, scratch: &mut DualScratch| {
        if inst.types == 1 {
            buyer_dual(inst, b, p, &mut scratch.order)
        } else {
            typed_buyer_dual(inst, b, p, scratch)
        }
    };
    if threads <= 1 {
        for b in 0..inst.buyers() {
            bound += term(b, scratch);
        }
        return bound;
    }
    let terms = map_all(runs(inst.buyers(), threads), |jobs| {
        let mut scratch = DualScratch::new(inst);
        jobs.map(|b| term(b, &mut scratch)).collect::<Vec<f64>>()
    });
    for term in terms.iter().flatten() {
        bound += term;
    }
    bound
}

/// Scratch space of the dual bound (reused, never reallocated once it holds a row).
pub(crate) struct DualScratch {
    /// `(sort key, segment)`: decreasing bang per buck.
    order: Vec<(u64, usize)>,
    /// The hull segments of a row, with types: `(gain, bang per buck)`.
    segments: Vec<(f64, f64)>,
    /// The priced types of a round, with types: `(cost, gain)`.
    points: Vec<(f64, f64)>,
}

impl DualScratch {
    pub fn new(inst: &Instance) -> Self {
        Self {
            order: Vec::with_capacity(inst.goods()),
            segments: Vec::with_capacity(if inst.types > 1 { inst.goods() } else { 0 }),
            points: Vec::with_capacity(inst.types),
        }
    }
}

/// `phi_b(p)` for one buyer of a market with GPU types: the walk of [`buyer_dual`] over the hull
/// segments of every round (see the module documentation).
fn typed_buyer_dual(inst: &Instance, b: usize, p: &[f64], scratch: &mut DualScratch) -> f64 {
    let (w, n, ceil) = (inst.w[b], inst.n[b], inst.ceil[b]);
    let (rounds, types) = (inst.rounds, inst.types);
    let row = &inst.a[inst.row(b)];
    let mut u = inst.c[b];
    scratch.segments.clear();
    for t in 0..rounds {
        // the best free type is held whole; priced types count only beyond its gain
        let mut free = 0.0f64;
        for k in 0..types {
            let (a, price) = (row[k * rounds + t], p[k * rounds + t].max(0.0) * n);
            if a > 0.0 && price <= 0.0 {
                free = free.max(a);
            }
        }
        u += free;
        let points = &mut scratch.points;
        points.clear();
        for k in 0..types {
            let (a, price) = (row[k * rounds + t], p[k * rounds + t].max(0.0) * n);
            if a > free && price > 0.0 {
                points.push((price, a));
            }
        }
        // The upper concave hull from (0, free): from the current corner, the point of the
        // steepest slope (ties: the larger gain, which the smaller slopes then start from).
        let (mut cost, mut gain) = (0.0, free);
        loop {
            let mut best: Option<(f64, f64, f64)> = None;
            for &(c, a) in points.iter() {
                if a > gain && c > cost {
                    let slope = (a - gain) / (c - cost);
                    let better = match best {
                        None => true,
                        Some((s, _, ba)) => slope > s || (slope == s && a > ba),
                    };
                    if better {
                        best = Some((slope, c, a));
                    }
                }
            }
            let Some((slope, c, a)) = best else { break };
            scratch.segments.push((a - gain, slope));
            (cost, gain) = (c, a);
        }
    }
    if u >= ceil {
        return w * ceil.ln();
    }
    let order = &mut scratch.order;
    order.clear();
    for (s, &(_, ratio)) in scratch.segments.iter().enumerate() {
        if ratio > 0.0 && w * ratio > u {
            order.push((u64::MAX - ratio.to_bits(), s));
        }
    }
    order.sort_unstable();
    let mut spend = 0.0;
    for &(key, s) in order.iter() {
        let ratio = f64::from_bits(u64::MAX - key);
        let wanted = w * ratio;
        if wanted <= u {
            break;
        }
        let reach = (u + scratch.segments[s].0).min(ceil);
        let target = wanted.min(reach);
        spend += (target - u) / ratio;
        u = target;
        if target < reach || u >= ceil {
            break;
        }
    }
    w * u.ln() - spend
}

/// `phi_b(p)` for one buyer.
fn buyer_dual(inst: &Instance, b: usize, p: &[f64], order: &mut Vec<(u64, usize)>) -> f64 {
    let (w, n, ceil) = (inst.w[b], inst.n[b], inst.ceil[b]);
    let row = &inst.a[inst.row(b)];
    let mut u = inst.c[b];
    for (t, &a) in row.iter().enumerate() {
        let priced = p[t].max(0.0) * n > 0.0;
        if a > 0.0 && !priced {
            u += a; // a free round: always worth holding
        }
    }
    if u >= ceil {
        return w * ceil.ln();
    }
    // The walk below stops at the first round whose marginal value `w ratio` is not above the
    // utility, which only grows from `u` on: rounds at or below that from the start are never
    // bought, and being last in the order, they need not be sorted.
    order.clear();
    for (t, &a) in row.iter().enumerate() {
        let price = p[t].max(0.0) * n;
        if a > 0.0 && price > 0.0 {
            let ratio = a / price;
            if w * ratio > u {
                // Positive ratios order like their bit patterns: sort integers, descending.
                order.push((u64::MAX - ratio.to_bits(), t));
            }
        }
    }
    // Decreasing bang per buck; the round breaks ties so the order is deterministic.
    order.sort_unstable();
    let a = row;
    let mut spend = 0.0;
    for &(key, t) in order.iter() {
        let ratio = f64::from_bits(u64::MAX - key);
        // Marginal value of utility is w / u; one unit of utility costs 1 / ratio here.
        let wanted = w * ratio;
        if wanted <= u {
            break;
        }
        let reach = (u + a[t]).min(ceil);
        let target = wanted.min(reach);
        spend += (target - u) / ratio;
        u = target;
        if target < reach || u >= ceil {
            break;
        }
    }
    w * u.ln() - spend
}

/// The best feasible plan and the best dual bound seen so far (both in normalised units).
pub(crate) struct Incumbent {
    /// Objective of `shares`.
    pub primal: f64,
    /// Feasible shares per entry.
    pub shares: Buffer,
    /// Utilities of `shares` per buyer (scaled units).
    pub utilities: Vec<f64>,
    /// Lowest dual bound seen.
    pub dual: f64,
    /// Prices that gave `dual`.
    pub prices: Vec<f64>,
    candidate: Buffer,
    candidate_u: Vec<f64>,
    demand: Vec<f64>,
    scratch: DualScratch,
    /// With types: the plan held to one gang per round, before the goods' projection.
    plan: Buffer,
    /// Threads of the projection and the dual bound (resolved: at least 1).
    threads: usize,
}

impl Incumbent {
    /// The incumbents of a solve of `inst` certifying on `threads` threads (resolved).
    pub fn new(inst: &Instance, threads: usize) -> Self {
        Self {
            primal: f64::NEG_INFINITY,
            shares: Buffer::zeroed(inst.entries()),
            utilities: inst.c.clone(),
            dual: f64::INFINITY,
            prices: vec![0.0; inst.goods()],
            candidate: Buffer::zeroed(inst.entries()),
            candidate_u: vec![0.0; inst.buyers()],
            demand: vec![0.0; inst.goods()],
            scratch: DualScratch::new(inst),
            plan: Buffer::with_capacity(if inst.types > 1 { inst.entries() } else { 0 }),
            threads: threads.max(1),
        }
    }

    /// Certify the plan `x` (projected to feasibility) and the prices `p`; keep whichever
    /// improves on the incumbents. Returns the relative gap after the update.
    pub fn offer(&mut self, inst: &Instance, x: &[f64], p: &[f64]) -> f64 {
        let primal = project_primal(
            inst,
            x,
            &mut self.candidate,
            &mut self.candidate_u,
            &mut self.demand,
            &mut self.plan,
            self.threads,
        );
        if primal > self.primal {
            self.primal = primal;
            std::mem::swap(&mut self.shares, &mut self.candidate);
            std::mem::swap(&mut self.utilities, &mut self.candidate_u);
        }
        let dual = dual_bound(inst, p, &mut self.scratch, self.threads);
        if dual < self.dual {
            self.dual = dual;
            self.prices.copy_from_slice(p);
        }
        self.gap()
    }

    /// Relative duality gap of the incumbents (the budgets are normalised to sum to 1).
    pub fn gap(&self) -> f64 {
        (self.dual - self.primal).max(0.0)
    }

    /// Clean the incumbent plan of solver noise if it stays certified within `tol`: shares below
    /// `threshold` become exactly 0, then shares above `1 - threshold` become exactly 1 where the
    /// good's supply and the job's ceiling allow and the job holds no other type in that round
    /// (jobs in index order).
    pub fn purify(&mut self, inst: &Instance, threshold: f64, tol: f64) {
        let mut touched = false;
        self.demand.fill(0.0);
        let (rounds, types) = (inst.rounds, inst.types);
        for b in 0..inst.buyers() {
            for (t, e) in inst.row(b).enumerate() {
                let share = self.shares[e];
                let clean = if share < threshold { 0.0 } else { share };
                touched |= clean != share;
                self.candidate[e] = clean;
                self.demand[t] += inst.n[b] * clean;
            }
        }
        let mut primal = 0.0;
        for b in 0..inst.buyers() {
            let range = inst.row(b);
            let mut u = inst.c[b];
            for e in range.clone() {
                u += inst.a[e] * self.candidate[e];
            }
            for (t, e) in range.clone().enumerate() {
                let share = self.candidate[e];
                let extra = 1.0 - share;
                // with types, only a job holding nothing else in the round can be rounded up
                let alone = types == 1 || {
                    let (round, start) = (t % rounds, range.start);
                    (0..types).all(|k| {
                        let f = start + k * rounds + round;
                        f == e || self.candidate[f] == 0.0
                    })
                };
                if share > 1.0 - threshold
                    && inst.a[e] > 0.0
                    && extra > 0.0
                    && alone
                    && self.demand[t] + inst.n[b] * extra <= inst.supply[t]
                    && u + inst.a[e] * extra <= inst.ceil[b]
                {
                    self.candidate[e] = 1.0;
                    self.demand[t] += inst.n[b] * extra;
                    u += inst.a[e] * extra;
                    touched = true;
                }
            }
            self.candidate_u[b] = u;
            primal += inst.w[b] * u.ln();
        }
        if touched && self.dual - primal <= tol {
            self.primal = primal;
            std::mem::swap(&mut self.shares, &mut self.candidate);
            std::mem::swap(&mut self.utilities, &mut self.candidate_u);
        }
    }
}
