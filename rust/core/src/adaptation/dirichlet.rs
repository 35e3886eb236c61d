//! The original Shockwave's Dirichlet posterior-mean estimator of remaining runtime.
//!
//! With `E` epochs in total, `e` completed and `M` the batch sizes of the profile schedule:
//!
//! 1. prior `alpha_b = E / |M|` for every `b` in `M`;
//! 2. observe the batch sizes of epochs `0..=e` (the completed ones and the current one):
//!    posterior `a_b = alpha_b + n_b`;
//! 3. rescale to the job length: `m_b = E * a_b / sum(a)`;
//! 4. for every observed epoch at `b`, subtract 1 from `m_b` while `m_b >= 1` (equivalently
//!    `m_b -= min(n_b, floor(m_b))`);
//! 5. `inflated = floor(sum(m) + 1)`, raised to `rem = E - e` if below it;
//! 6. estimate `R = (sum_b m_b * d_b) * rem / inflated`, where `d_b` is the mean calibrated planner
//!    duration of the profile epochs at `b`.
//!
//! Quirk kept for fidelity: the epoch in progress is both observed (step 2) and subtracted (step
//! 4) while `rem` counts it, so a static job is predicted `(E - e - 1) * d`: the epochs *after*
//! the current one.
//!
//! The original returns 1.0 s for a finished job (`rem <= 0`); here a finished job has 0 s left.
//! The original gives no spread; [`estimate`] adds the Dirichlet-multinomial predictive standard
//! deviation of `sum_b X_b d_b` for `X ~ DirMult(rem, a)` with the proportions of step 4, scaled
//! like the mean.

/// Remaining-runtime estimate of the Dirichlet rule: `(mean_seconds, std_seconds)`.
///
/// `observed[b]` counts the observed epochs (`0..=e`, so they sum to `e + 1`) at regime `b`;
/// `in_profile[b]` says whether `b` belongs to `M` (other regimes are ignored); `seconds[b]` is
/// `d_b`. `completed` is `e`, `total_epochs` is `E`.
pub fn estimate(
    total_epochs: u64,
    completed: u64,
    observed: &[f64],
    in_profile: &[bool],
    seconds: &[f64],
) -> (f64, f64) {
    if completed >= total_epochs {
        return (0.0, 0.0);
    }
    let total = total_epochs as f64;
    let regimes = in_profile.iter().filter(|&&m| m).count().max(1) as f64;
    let prior = total / regimes;
    let entries = || {
        observed
            .iter()
            .zip(in_profile)
            .zip(seconds)
            .filter(|((_, &m), _)| m)
            .map(|((&n, _), &d)| (n, d))
    };
    let concentration: f64 = entries().map(|(n, _)| prior + n).sum();
    // Steps 3 and 4: the rescaled posterior less the observed epochs it can absorb.
    let rebased = |n: f64| {
        let share = total * (prior + n) / concentration;
        share - n.min(share.floor())
    };
    let remaining_epochs = total_epochs - completed;
    let sum_rebased: f64 = entries().map(|(n, _)| rebased(n)).sum();
    let inflated = ((sum_rebased + 1.0).floor() as u64).max(remaining_epochs);
    let scale = remaining_epochs as f64 / inflated as f64;
    let raw: f64 = entries().map(|(n, d)| rebased(n) * d).sum();
    let mean = raw * scale;
    if sum_rebased <= 0.0 {
        return (mean, 0.0);
    }
    // Spread of the remaining epochs' composition.
    let p_mean = raw / sum_rebased;
    let p_var: f64 = entries()
        .map(|(n, d)| rebased(n) / sum_rebased * (d - p_mean) * (d - p_mean))
        .sum();
    let n = remaining_epochs as f64;
    let count_var = n * (n + concentration) / (1.0 + concentration);
    let spread = (count_var * p_var).max(0.0).sqrt();
    // Scale like the mean: mean = sum_rebased * p_mean * scale.
    let std = if p_mean > 0.0 {
        spread * mean / (n * p_mean)
    } else {
        0.0
    };
    (mean, std)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_job_omits_the_current_epoch() {
        // The original counts the epoch in progress as observed and subtracts it, while
        // `rem = E - e` includes it: a static job is predicted `(E - e - 1) * d`.
        let (mean, std) = estimate(10, 3, &[4.0], &[true], &[7.0]);
        assert!((mean - 42.0).abs() < 1e-12);
        assert_eq!(std, 0.0);
    }

    #[test]
    fn hand_computed_two_regimes() {
        // E = 10, M = {a, b}, e = 2, observed epochs 0..=2 all at a.
        // alpha = 5 each; a = (8, 5), sum 13; m = (80/13, 50/13) = (6.1538, 3.8462);
        // subtract 3 from m_a: (3.1538, 3.8462); sum 7 -> inflated floor(8) = 8 = rem = 8.
        // R = 3.1538 * 10 + 3.8462 * 4 = 46.923; scale 8/8.
        let (mean, _) = estimate(10, 2, &[3.0, 0.0], &[true, true], &[10.0, 4.0]);
        let expected = (80.0 / 13.0 - 3.0) * 10.0 + 50.0 / 13.0 * 4.0;
        assert!((mean - expected).abs() < 1e-9, "{mean} vs {expected}");
    }

    #[test]
    fn finished_job_has_nothing_left() {
        assert_eq!(estimate(5, 5, &[6.0], &[true], &[1.0]), (0.0, 0.0));
    }
}
