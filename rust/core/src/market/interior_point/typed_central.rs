//! The central point of given prices with GPU types: each job's barrier best response, holding
//! at most one gang per round over the types.
//!
//! For a marginal value of utility `g`, the shares of round `t` maximise
//! `sum_k (g a_k - n p_k) x_k + mu (sum_k log x_k + log y)` with `y = 1 - sum_k x_k`:
//! `x_k = mu / (lambda - k_k)` and `y = mu / lambda`, `k_k = g a_k - n p_k`, where the round's
//! level `lambda > max(0, max_k k_k)` solves `mu / lambda + sum_k mu / (lambda - k_k) = 1` (see
//! `Response::round` for how). The largest of the round's `x_k` and `y` is taken as one minus the
//! others (the Newton steps keep `y + sum_k x_k` fixed, so an error there would never be
//! corrected). The job's utility is then the root of `h(u) = c + a.x(u) - u`, as with one type.

use super::super::instance::{best_per_round, Instance};
use super::super::linalg::lanes::{row, row_mut};
use super::central::central_ceiling;
use super::parts::{on_threads, Part, Widths};
use super::{width, InteriorPoint};

/// Newton steps on a round's level before giving up on more accuracy.
const LEVEL_STEPS: usize = 100;

impl InteriorPoint {
    /// [`Self::central_point_scalar`] with GPU types (the jobs on the pass's threads).
    #[inline(always)]
    pub(super) fn central_point_typed<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        mu: f64,
        utilities: &[f64],
    ) {
        let rounds = width::<W>(inst);
        let goods = rounds * K;
        let widths = Widths::of::<K>(rounds);
        let part = Part::new(
            (&mut self.e, &mut self.b, &mut self.k),
            &mut self.out,
            0..inst.buyers(),
            widths,
        );
        let p = &self.t.p[..goods];
        on_threads(
            part.divide(self.split.threads, widths),
            self.split.avx2,
            #[inline(always)]
            |part| {
                let (e, b) = (part.e, part.b);
                let mut level = vec![0.0; rounds];
                for k in 0..part.jobs {
                    let job = part.first + k;
                    let (x, y) = (row_mut(e.x, k, goods), row_mut(e.y, k, rounds));
                    let response = Response {
                        inst,
                        b: job,
                        rounds,
                        types: K,
                        p,
                        mu,
                    };
                    let u = response.solve(utilities[job], x, y, &mut level);
                    b.u[k] = u;
                    let a = row(&inst.a, job, goods);
                    let z = row_mut(e.z, k, goods);
                    for j in 0..goods {
                        z[j] = if a[j] > 0.0 { mu / x[j] } else { 0.0 };
                    }
                    let v = row_mut(e.v, k, rounds);
                    for tt in 0..rounds {
                        let live = (0..K).any(|j| a[j * rounds + tt] > 0.0);
                        v[tt] = if live { mu / y[tt] } else { 0.0 };
                    }
                    (b.r[k], b.beta[k]) = central_ceiling(inst.ceil[job], u, mu);
                }
            },
        );
        self.central_slacks::<W, K>(inst, mu);
    }
}

/// One job's barrier best response to prices `p`.
struct Response<'a> {
    inst: &'a Instance,
    b: usize,
    rounds: usize,
    types: usize,
    p: &'a [f64],
    mu: f64,
}

impl Response<'_> {
    /// The utility of the best response (safeguarded Newton on `h(u)` from `guess`), with its
    /// shares written to `x` (type-major) and `y` (per round). `level` is scratch per round.
    #[inline(always)]
    fn solve(&self, guess: f64, x: &mut [f64], y: &mut [f64], level: &mut [f64]) -> f64 {
        let inst = self.inst;
        let a = row(&inst.a, self.b, self.rounds * self.types);
        let (c, ceil) = (inst.c[self.b], inst.ceil[self.b]);
        let reach = c + best_per_round(a, self.rounds, self.types);
        let (mut lo, mut hi) = (c, reach.min(ceil));
        level.fill(0.0);
        let width = hi - lo;
        let mut u = guess.clamp(lo + 1e-3 * width, hi - 1e-3 * width);
        let mut written = false;
        for _ in 0..200 {
            let (h, dh) = self.evaluate(u, x, y, level);
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
            self.evaluate(u, x, y, level);
        }
        u
    }

    /// The shares of utility `u` (written to `x`, `y`) and `h(u) = c + a.x(u) - u` with its
    /// derivative.
    #[inline(always)]
    fn evaluate(&self, u: f64, x: &mut [f64], y: &mut [f64], level: &mut [f64]) -> (f64, f64) {
        let inst = self.inst;
        let (w, ceil, mu) = (inst.w[self.b], inst.ceil[self.b], self.mu);
        let (g, dg) = if ceil.is_finite() {
            let room = ceil - u;
            (w / u - mu / room, -w / (u * u) - mu / (room * room))
        } else {
            (w / u, -w / (u * u))
        };
        let (mut gain, mut slope) = (0.0, 0.0);
        for t in 0..self.rounds {
            let (round_gain, round_slope) = self.round(t, g, x, y, level);
            gain += round_gain;
            slope += round_slope;
        }
        (inst.c[self.b] + gain - u, slope * dg - 1.0)
    }

    /// Round `t`'s shares at marginal value `g`; returns its gain `sum_k a_k x_k` and that
    /// gain's derivative in `g`.
    ///
    /// With `base = max(0, max_k k_k)` and `d_k = base - k_k`, `d_y = base` (one of them is 0),
    /// the level is `lambda = base + delta` and every share is `mu / (d + delta)`, so the one at
    /// the base is `mu / delta`, without cancellation. `delta` is the root of the concave
    /// `H(delta) = sum mu delta / (d + delta) - delta` (the cap times `delta`): nearly linear
    /// when one share dominates, so Newton takes one or two steps; from anywhere (the last
    /// round's `delta` when there is one) its first step lands right of the root, from where it
    /// descends monotonically.
    #[inline(always)]
    fn round(
        &self,
        t: usize,
        g: f64,
        x: &mut [f64],
        y: &mut [f64],
        level: &mut [f64],
    ) -> (f64, f64) {
        let (rounds, types, mu) = (self.rounds, self.types, self.mu);
        let a = row(&self.inst.a, self.b, rounds * types);
        let n = self.inst.n[self.b];
        let k_of = |j: usize| g * a[j * rounds + t] - n * self.p[j * rounds + t];
        let mut highest = f64::NEG_INFINITY;
        for j in 0..types {
            if a[j * rounds + t] > 0.0 {
                highest = highest.max(k_of(j));
            }
        }
        if highest == f64::NEG_INFINITY {
            for j in 0..types {
                x[j * rounds + t] = 0.0;
            }
            y[t] = 1.0;
            return (0.0, 0.0);
        }
        let base = highest.max(0.0);
        // H(delta) and H'(delta); a term at the base contributes mu (and nothing to H')
        let value = |delta: f64| -> (f64, f64) {
            let mut h = -delta;
            let mut dh = -1.0;
            let mut term = |d: f64| {
                if d > 0.0 {
                    let s = d + delta;
                    h += mu * delta / s;
                    dh += mu * d / (s * s);
                } else {
                    h += mu;
                }
            };
            term(base);
            for j in 0..types {
                if a[j * rounds + t] > 0.0 {
                    term(base - k_of(j));
                }
            }
            (h, dh)
        };
        let mut delta = level[t] - base;
        if delta.is_nan() || delta <= 0.0 {
            // from 0: H(0) > 0, so the first step lands right of the root
            delta = 0.0;
        }
        let mut current = value(delta);
        for _ in 0..LEVEL_STEPS {
            let (h, dh) = current;
            if h == 0.0 || dh >= 0.0 {
                if dh >= 0.0 {
                    // near-ties make H increase at first: the root is beyond (K + 1) mu
                    let far = (types as f64 + 1.0) * mu;
                    if delta < far {
                        delta = far;
                        current = value(delta);
                        continue;
                    }
                }
                break;
            }
            let next = delta - h / dh;
            let done = (next - delta).abs() <= 1e-15 * next;
            delta = next;
            if done {
                break;
            }
            current = value(delta);
        }
        level[t] = base + delta;
        // the shares, the largest as one minus the others
        let share = |d: f64| {
            if d > 0.0 {
                mu / (d + delta)
            } else {
                mu / delta
            }
        };
        let mut largest = (share(base), usize::MAX);
        y[t] = largest.0;
        for j in 0..types {
            let e = j * rounds + t;
            if a[e] > 0.0 {
                x[e] = share(base - k_of(j));
                if x[e] > largest.0 {
                    largest = (x[e], j);
                }
            } else {
                x[e] = 0.0;
            }
        }
        let mut others = if largest.1 == usize::MAX { 0.0 } else { y[t] };
        for j in 0..types {
            if j != largest.1 {
                others += x[j * rounds + t];
            }
        }
        let rest = (1.0 - others).max(0.5 * largest.0);
        if largest.1 == usize::MAX {
            y[t] = rest;
        } else {
            x[largest.1 * rounds + t] = rest;
        }
        // gain and its derivative in g:
        // (sum a_k^2 x_k^2 y^2 + sum_{j<k} x_j^2 x_k^2 (a_j - a_k)^2) / (mu (sum x_k^2 + y^2))
        let (mut gain, mut numerator, mut squares) = (0.0, 0.0, y[t] * y[t]);
        for j in 0..types {
            let e = j * rounds + t;
            if a[e] <= 0.0 {
                continue;
            }
            let xx = x[e] * x[e];
            gain += a[e] * x[e];
            squares += xx;
            numerator += a[e] * a[e] * xx * (y[t] * y[t]);
            for l in j + 1..types {
                let f = l * rounds + t;
                if a[f] > 0.0 {
                    let d = a[e] - a[f];
                    numerator += xx * (x[f] * x[f]) * (d * d);
                }
            }
        }
        (gain, numerator / (mu * squares))
    }
}
