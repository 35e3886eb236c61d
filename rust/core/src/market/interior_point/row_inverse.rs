//! One buyer's block of the reduced KKT system, `M = diag(sigma) + gamma a a^T`: its inverse in
//! the leave-one-out Sherman-Morrison form, and the rank-one terms it subtracts from the price
//! system.

use std::ops::Range;

use super::super::linalg::lanes::lane_sum;
use super::{NONE, SCHUR_BLOCK};

/// One buyer's `M^{-1}`, `M = diag(sigma) + gamma a a^T`, in the leave-one-out form
/// `(M^{-1} g)_e = (g_e L_e - a_e R_e) / (sigma_e kappa)` with `L_e = kappa - a_e^2 / sigma_e`
/// (summed directly for the dominant entry) and `R_e = sum_{f != e} a_f g_f / sigma_f`.
pub(super) struct RowInverse<'a> {
    a: &'a [f64],
    isig: &'a [f64],
    kappa: f64,
    pub(super) inv_kappa: f64,
    dominant: usize,
    dominant_loo: f64,
}

impl<'a> RowInverse<'a> {
    #[inline(always)]
    pub(super) fn new(
        a: &'a [f64],
        isig: &'a [f64],
        kappa: f64,
        dominant: usize,
        dominant_loo: f64,
    ) -> Self {
        Self {
            a,
            isig,
            kappa,
            inv_kappa: 1.0 / kappa,
            dominant,
            dominant_loo,
        }
    }

    /// `out = M^{-1} g`, with `R_e` taken as the total minus the own term except for the
    /// dominant entry, whose `R` is summed directly. Returns `sum_e a_e g_e / sigma_e`.
    #[inline(always)]
    pub(super) fn apply(&self, g: &[f64], out: &mut [f64]) -> f64 {
        let len = out.len();
        let (a, g, isig) = (&self.a[..len], &g[..len], &self.isig[..len]);
        for j in 0..len {
            out[j] = a[j] * g[j] * isig[j];
        }
        let total = lane_sum(out);
        let others_of_dominant = self.others_of_dominant(out);
        let (kappa, inv_kappa) = (self.kappa, self.inv_kappa);
        for j in 0..len {
            let loo = kappa - a[j] * a[j] * isig[j];
            out[j] = (g[j] * loo - a[j] * (total - out[j])) * isig[j] * inv_kappa;
        }
        self.fix_dominant(g, out, others_of_dominant);
        total
    }

    /// [`Self::apply`] to two right-hand sides in one sweep (the same arithmetic, so the same
    /// bits, as two calls).
    #[inline(always)]
    pub(super) fn apply_pair(
        &self,
        (g, h): (&[f64], &[f64]),
        (out, out2): (&mut [f64], &mut [f64]),
    ) {
        let len = out.len();
        let (a, g, h, isig) = (&self.a[..len], &g[..len], &h[..len], &self.isig[..len]);
        let out2 = &mut out2[..len];
        for j in 0..len {
            out[j] = a[j] * g[j] * isig[j];
            out2[j] = a[j] * h[j] * isig[j];
        }
        let (total, total2) = (lane_sum(out), lane_sum(out2));
        let others = self.others_of_dominant(out);
        let others2 = self.others_of_dominant(out2);
        let (kappa, inv_kappa) = (self.kappa, self.inv_kappa);
        for j in 0..len {
            let loo = kappa - a[j] * a[j] * isig[j];
            out[j] = (g[j] * loo - a[j] * (total - out[j])) * isig[j] * inv_kappa;
            out2[j] = (h[j] * loo - a[j] * (total2 - out2[j])) * isig[j] * inv_kappa;
        }
        self.fix_dominant(g, out, others);
        self.fix_dominant(h, out2, others2);
    }

    /// `R` of the dominant entry, summed directly from the terms `a g / sigma` in `terms` (0
    /// without a dominant entry).
    #[inline(always)]
    fn others_of_dominant(&self, terms: &mut [f64]) -> f64 {
        sum_without(terms, self.dominant)
    }

    /// The dominant entry's output from its directly summed `L` and `R`.
    #[inline(always)]
    fn fix_dominant(&self, g: &[f64], out: &mut [f64], others_of_dominant: f64) {
        let jd = self.dominant;
        if jd < out.len() {
            let (a, isig) = (self.a[jd], self.isig[jd]);
            out[jd] = (g[jd] * self.dominant_loo - a * others_of_dominant) * isig * self.inv_kappa;
        }
    }
}

/// `S -= sum_l scales_l d_l d_l^T` on the upper triangle of the rows `run` of the
/// `rounds x rounds` matrix `S` (`schur` holds those rows), for the [`SCHUR_BLOCK`] rows `d_l` of
/// `rows` (one read and write of `S` per block of rows). Each element is computed the same way
/// whatever the run.
#[inline(always)]
pub(super) fn subtract_outer_products<const W: usize>(
    schur: &mut [f64],
    rounds: usize,
    run: Range<usize>,
    rows: &[f64],
    scales: &[f64; SCHUR_BLOCK],
) {
    let rounds = if W == 0 { rounds } else { W };
    let (d0, rest) = rows.split_at(rounds);
    let (d1, rest) = rest.split_at(rounds);
    let (d2, d3) = rest.split_at(rounds);
    let d3 = &d3[..rounds];
    let first = run.start;
    for tt in run {
        let (c0, c1) = (scales[0] * d0[tt], scales[1] * d1[tt]);
        let (c2, c3) = (scales[2] * d2[tt], scales[3] * d3[tt]);
        let row = &mut schur[(tt - first) * rounds + tt + 1..(tt - first + 1) * rounds];
        let tail = tt + 1..rounds;
        let (e0, e1, e2, e3) = (
            &d0[tail.clone()],
            &d1[tail.clone()],
            &d2[tail.clone()],
            &d3[tail],
        );
        for ((((s, &f0), &f1), &f2), &f3) in row.iter_mut().zip(e0).zip(e1).zip(e2).zip(e3) {
            *s -= (c0 * f0 + c1 * f1) + (c2 * f2 + c3 * f3);
        }
    }
}

/// The entry whose `q = a^2 / sigma` exceeds half of `kappa`, if any (at most one can): only for
/// it does `kappa - q` cancel catastrophically. [`NONE`] if there is none.
#[inline(always)]
pub(super) fn dominant_entry(q: &[f64], kappa: f64) -> usize {
    let mut best = NONE;
    let mut largest = 0.5 * kappa;
    for (j, &value) in q.iter().enumerate() {
        if value > largest {
            largest = value;
            best = j;
        }
    }
    best
}

/// The sum of `terms` without entry `skip`, summed directly (`lane_sum` with that entry set to 0,
/// then restored); 0 when `skip` is past the end (no dominant entry). Total minus the entry's own
/// term would cancel where it holds most of the total.
#[inline(always)]
pub(super) fn sum_without(terms: &mut [f64], skip: usize) -> f64 {
    if skip < terms.len() {
        let own = std::mem::replace(&mut terms[skip], 0.0);
        let others = lane_sum(terms);
        terms[skip] = own;
        others
    } else {
        0.0
    }
}
