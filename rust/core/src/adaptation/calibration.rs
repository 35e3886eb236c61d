//! Online calibration of epoch durations from measured throughput.
//!
//! Every throughput sample is one round in which the job ran: the round's index (counted from the
//! start of the simulation), the batch size it ran at, and the measured duration of one epoch at
//! that rate, seconds (a throughput in steps/s is converted with the job's samples per epoch).
//!
//! Two rules:
//!
//! - [`WindowCalibration`], the original's rule, used by the `dirichlet` estimator.
//! - [`rate_duration_factors`], a shrunken per-regime rate ratio, used by `markov` and `oracle`.

use super::profile::Profile;

/// The original Shockwave's calibration (its `calibrate_profiled_epoch_duration`).
///
/// Each sample's throughput is extrapolated over the rounds since the previous sample (from
/// round 0 for the first): measured epochs = sum over samples of `round_seconds * (r_j - r_{j-1})
/// / epoch_seconds_j`. The profile is walked over the same window of `round_seconds * r_last`
/// seconds with the *uncalibrated* planner durations: whole epochs that fit count 1 each, the
/// first epoch that does not fit counts the fraction of it the window covers, measured with its
/// *current* (possibly calibrated) duration; a window past the end of the profile extrapolates the
/// last epoch. If the two epoch counts differ by more than 40 % of the profiled one, every planner
/// duration becomes its uncalibrated value times `profiled / measured`. The rescale is sticky:
/// nothing undoes it when a later check falls within the band.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCalibration {
    measured_epochs: f64,
    last_round: u64,
    samples: u64,
    factor: f64,
}

/// Relative tolerance of the original's calibration check.
pub const WINDOW_TOLERANCE: f64 = 0.4;

impl Default for WindowCalibration {
    fn default() -> Self {
        Self {
            measured_epochs: 0.0,
            last_round: 0,
            samples: 0,
            factor: 1.0,
        }
    }
}

impl WindowCalibration {
    /// The state as `(measured epochs, last round, samples, factor)` (for persistence).
    pub(crate) fn parts(&self) -> (f64, u64, u64, f64) {
        (
            self.measured_epochs,
            self.last_round,
            self.samples,
            self.factor,
        )
    }

    /// The inverse of [`Self::parts`].
    pub(crate) fn from_parts(parts: (f64, u64, u64, f64)) -> Self {
        let (measured_epochs, last_round, samples, factor) = parts;
        Self {
            measured_epochs,
            last_round,
            samples,
            factor,
        }
    }

    /// Multiplier applied to every uncalibrated planner duration (1 until a check fails).
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// Round index of the latest sample, if any.
    pub fn last_round(&self) -> Option<u64> {
        (self.samples > 0).then_some(self.last_round)
    }

    /// Record a sample measured in round `round` (> the previous sample's round) and re-run the
    /// check. `rounded` selects the planner's rounded durations (the original) or the profile's.
    pub fn add_sample(
        &mut self,
        round: u64,
        epoch_seconds: f64,
        round_seconds: f64,
        profile: &Profile,
        rounded: bool,
    ) {
        let gap = round.saturating_sub(self.last_round) as f64;
        self.measured_epochs += round_seconds * gap / epoch_seconds;
        self.last_round = round;
        self.samples += 1;
        let window = round_seconds * round as f64;
        let profiled = profiled_epochs(profile, window, self.factor, rounded);
        let measured = self.measured_epochs;
        if measured <= 0.0
            || profiled <= 0.0
            || (measured - profiled).abs() / profiled <= WINDOW_TOLERANCE
        {
            return;
        }
        self.factor = profiled / measured;
    }
}

/// Epochs of the profile that fit in `window` seconds, as the original counts them.
fn profiled_epochs(profile: &Profile, window: f64, factor: f64, rounded: bool) -> f64 {
    let mut elapsed = 0.0;
    let mut epochs = 0.0;
    let mut last_duration = None;
    for run in &profile.runs {
        let duration = if rounded { run.rounded } else { run.seconds };
        // Whole epochs of this run that still fit: the largest m <= run.epochs with
        // elapsed + m * duration <= window, as the original's one-by-one loop finds it.
        let mut fit = ((window - elapsed) / duration)
            .floor()
            .clamp(0.0, run.epochs as f64);
        while fit > 0.0 && elapsed + fit * duration > window {
            fit -= 1.0;
        }
        while fit < run.epochs as f64 && elapsed + (fit + 1.0) * duration <= window {
            fit += 1.0;
        }
        elapsed += fit * duration;
        epochs += fit;
        last_duration = Some(duration);
        if fit < run.epochs as f64 {
            break;
        }
    }
    let deficit = window - elapsed;
    if let Some(duration) = last_duration {
        if deficit > 0.0 {
            epochs += deficit / (duration * factor);
        }
    }
    epochs
}

/// Shrunken per-regime rate ratio (the `markov` and `oracle` calibration): the factor to
/// multiply each regime's profiled epoch duration by, into `out`.
///
/// Each sample at regime `r` gives the ratio `rho = profiled_seconds(r) / measured_seconds`:
/// the measured epochs per second over the profiled ones. Because the work a job does in a round
/// is proportional to its throughput, averaging rates (not durations) estimates the expected
/// progress per round without bias under multiplicative throughput noise. The estimate is
/// hierarchical with `strength` pseudo-samples at each level:
///
/// - job level: `rho_job = (sum of all rho + strength * 1) / (samples + strength)`, shrunk toward
///   the profile;
/// - regime level: `rho_r = (sum of rho at r + strength * rho_job) / (samples at r + strength)`,
///   shrunk toward the job level (so a regime not yet measured inherits the job's factor).
///
/// The calibrated epoch duration of regime `r` is `profiled_seconds(r) / rho_r`. `samples`
/// yields `(sum of rho, number of samples)` per regime.
pub fn rate_duration_factors<I>(samples: I, strength: f64, out: &mut Vec<f64>)
where
    I: Iterator<Item = (f64, f64)> + Clone,
{
    out.clear();
    let (total, count) = samples
        .clone()
        .fold((0.0, 0.0), |(t, c), (sum, n)| (t + sum, c + n));
    if count == 0.0 {
        out.extend(samples.map(|_| 1.0));
        return;
    }
    let job = (total + strength) / (count + strength);
    out.extend(samples.map(|(sum, n)| (n + strength) / (sum + strength * job)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptation::AdaptationError;

    fn profile(seconds: &[f64]) -> Result<Profile, AdaptationError> {
        let bs = vec![32; seconds.len()];
        Ok(Profile::build(&bs, seconds, None, &[])?.0)
    }

    #[test]
    fn window_within_band_keeps_the_profile() -> Result<(), AdaptationError> {
        let p = profile(&[100.0; 10])?;
        let mut cal = WindowCalibration::default();
        // 1.3x slower than profiled: within 40 %.
        cal.add_sample(1, 130.0, 120.0, &p, true);
        assert_eq!(cal.factor(), 1.0);
        Ok(())
    }

    #[test]
    fn window_outside_band_rescales_and_sticks() -> Result<(), AdaptationError> {
        let p = profile(&[100.0; 10])?;
        let mut cal = WindowCalibration::default();
        // Twice as slow: measured 1.2 * 0.5 = 0.6 epochs in 120 s against 1.2 profiled.
        cal.add_sample(1, 200.0, 120.0, &p, true);
        assert!((cal.factor() - 2.0).abs() < 1e-12);
        // Back to nominal speed: the gap-weighted average is still off, factor recomputed
        // against the calibrated in-epoch deficit...
        cal.add_sample(2, 100.0, 120.0, &p, true);
        // measured = 0.6 + 1.2 = 1.8 epochs; profiled = 2 whole epochs + 40/(100*2) = 2.2;
        // |1.8 - 2.2| / 2.2 = 0.18 <= 0.4: no change, the old factor sticks.
        assert!((cal.factor() - 2.0).abs() < 1e-12);
        Ok(())
    }

    #[test]
    fn window_extrapolates_past_the_profile() -> Result<(), AdaptationError> {
        let p = profile(&[10.0, 10.0])?;
        let mut cal = WindowCalibration::default();
        cal.add_sample(1, 5.0, 120.0, &p, true);
        // Profiled: 2 whole epochs + 100 s / 10 s = 12 epochs; measured 24: factor 0.5.
        assert!((cal.factor() - 0.5).abs() < 1e-12);
        Ok(())
    }

    #[test]
    fn rate_calibration_shrinks_toward_the_job_and_the_profile() {
        let mut f = Vec::new();
        rate_duration_factors([(0.0, 0.0), (0.0, 0.0)].into_iter(), 1.0, &mut f);
        assert_eq!(f, vec![1.0, 1.0]);
        rate_duration_factors([(1.5, 3.0), (0.0, 0.0)].into_iter(), 1.0, &mut f);
        // job: (1.5 + 1) / 4 = 0.625; regime 0: (1.5 + 0.625) / 4; regime 1: 0.625.
        assert!((f[0] - 4.0 / 2.125).abs() < 1e-12);
        assert!((f[1] - 1.0 / 0.625).abs() < 1e-12);
    }
}
