//! The central point of given prices: each buyer's best response under the barrier, and
//! multipliers that make the point exactly central.

use super::super::instance::Instance;
use super::super::linalg::lanes::{lane_sum, row, row_mut};
use super::parts::{on_threads, Part, Widths};
use super::{goods, live, width, InteriorPoint};

impl InteriorPoint {
    /// Each buyer's barrier best response to the current prices, and multipliers that make the
    /// point exactly central: `x z = y v = r beta = s p = mu`.
    #[inline(always)]
    pub(super) fn central_point_scalar<const W: usize>(
        &mut self,
        inst: &Instance,
        mu: f64,
        utilities: &[f64],
    ) {
        let rounds = width::<W>(inst);
        let avx2 = self.split.avx2;
        let jobs = 0..inst.buyers();
        let part = Part::new(
            (&mut self.e, &mut self.b, &mut self.k),
            &mut self.out,
            jobs,
            Widths::of::<1>(rounds),
        );
        let p = &self.t.p;
        on_threads(
            part.divide(self.split.threads, Widths::of::<1>(rounds)),
            avx2,
            #[inline(always)]
            |part| {
                let (e, b) = (part.e, part.b);
                let mut scratch = vec![0.0; 2 * rounds];
                let (gain, slope) = scratch.split_at_mut(rounds);
                for k in 0..part.jobs {
                    let job = part.first + k;
                    let (x, y) = (row_mut(e.x, k, rounds), row_mut(e.y, k, rounds));
                    let scratch = (&mut gain[..], &mut slope[..]);
                    let u = central_response::<W>(inst, job, p, mu, utilities[job], x, y, scratch);
                    b.u[k] = u;
                    let a = row(&inst.a, job, rounds);
                    let (z, v) = (row_mut(e.z, k, rounds), row_mut(e.v, k, rounds));
                    for j in 0..rounds {
                        let live = a[j] > 0.0;
                        z[j] = if live { mu / x[j] } else { 0.0 };
                        v[j] = if live { mu / y[j] } else { 0.0 };
                    }
                    (b.r[k], b.beta[k]) = central_ceiling(inst.ceil[job], u, mu);
                }
            },
        );
        self.central_slacks::<W, 1>(inst, mu);
    }

    /// After the shares of a central point: each good's slack and, where needed, its price (per
    /// good; with one type, per round).
    #[inline(always)]
    pub(super) fn central_slacks<const W: usize, const K: usize>(
        &mut self,
        inst: &Instance,
        mu: f64,
    ) {
        let rounds = goods::<W, K>(inst);
        let (e, t) = (&mut self.e, &mut self.t);
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
            if inst.good_used[tt] {
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
}

/// A central point's ceiling slack and multiplier for a job of utility `u` and ceiling `ceil`
/// (`r beta = mu`; `1` and `0` without a ceiling).
#[inline(always)]
pub(super) fn central_ceiling(ceil: f64, u: f64, mu: f64) -> (f64, f64) {
    if ceil.is_finite() {
        let r = ceil - u;
        (r, mu / r)
    } else {
        (1.0, 0.0)
    }
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
