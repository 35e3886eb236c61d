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

use super::instance::Instance;

/// Scale `x` to a feasible plan: oversold rounds are scaled down to their supply, then jobs past
/// their ceiling are scaled down to it. Writes the plan into `out` (entries clamped to `[0, 1]`)
/// and the utilities into `u`; returns the objective `sum_b w_b log u_b` (normalised units).
pub(crate) fn project_primal(
    inst: &Instance,
    x: &[f64],
    out: &mut [f64],
    u: &mut [f64],
    demand: &mut [f64],
) -> f64 {
    let rounds = inst.rounds;
    demand.fill(0.0);
    for b in 0..inst.buyers() {
        let n = inst.n[b];
        for (d, &x) in demand.iter_mut().zip(&x[inst.row(b)]) {
            *d += n * x.clamp(0.0, 1.0);
        }
    }
    for (t, d) in demand.iter_mut().enumerate() {
        *d = if *d > inst.supply[t] {
            inst.supply[t] / *d
        } else {
            1.0
        };
    }
    let mut objective = 0.0;
    for b in 0..inst.buyers() {
        let range = inst.row(b);
        let (a, out) = (&inst.a[range.clone()], &mut out[range.clone()]);
        let mut gain = 0.0;
        for t in 0..rounds {
            out[t] = x[range.start + t].clamp(0.0, 1.0) * demand[t];
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
        u[b] = inst.c[b] + gain;
        objective += inst.w[b] * u[b].ln();
    }
    objective
}

/// The dual bound `D(p)` (normalised units) for prices `p >= 0`.
///
/// `order` is scratch space (reused, never reallocated once it holds a row).
pub(crate) fn dual_bound(inst: &Instance, p: &[f64], order: &mut Vec<(u64, usize)>) -> f64 {
    let mut bound: f64 = (0..inst.rounds)
        .map(|t| p[t].max(0.0) * inst.supply[t])
        .sum();
    for b in 0..inst.buyers() {
        bound += buyer_dual(inst, b, p, order);
    }
    bound
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
    pub shares: Vec<f64>,
    /// Utilities of `shares` per buyer (scaled units).
    pub utilities: Vec<f64>,
    /// Lowest dual bound seen.
    pub dual: f64,
    /// Prices that gave `dual`.
    pub prices: Vec<f64>,
    candidate: Vec<f64>,
    candidate_u: Vec<f64>,
    demand: Vec<f64>,
    order: Vec<(u64, usize)>,
}

impl Incumbent {
    pub fn new(inst: &Instance) -> Self {
        Self {
            primal: f64::NEG_INFINITY,
            shares: vec![0.0; inst.entries()],
            utilities: inst.c.clone(),
            dual: f64::INFINITY,
            prices: vec![0.0; inst.rounds],
            candidate: vec![0.0; inst.entries()],
            candidate_u: vec![0.0; inst.buyers()],
            demand: vec![0.0; inst.rounds],
            order: Vec::with_capacity(inst.rounds),
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
        );
        if primal > self.primal {
            self.primal = primal;
            std::mem::swap(&mut self.shares, &mut self.candidate);
            std::mem::swap(&mut self.utilities, &mut self.candidate_u);
        }
        let dual = dual_bound(inst, p, &mut self.order);
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
    /// round's supply and the job's ceiling allow (jobs in index order).
    pub fn purify(&mut self, inst: &Instance, threshold: f64, tol: f64) {
        let mut touched = false;
        self.demand.fill(0.0);
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
            for (t, e) in range.enumerate() {
                let share = self.candidate[e];
                let extra = 1.0 - share;
                if share > 1.0 - threshold
                    && inst.a[e] > 0.0
                    && extra > 0.0
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
