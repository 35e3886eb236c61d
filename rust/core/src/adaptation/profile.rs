//! A job's candidate regimes and its profile schedule (run-length encoded).

use super::error::AdaptationError;

/// Most distinct batch sizes one job may have (far above any real schedule).
pub const MAX_REGIMES: usize = 64;

/// Most epochs one job may have, in one run of its profile and in all (ten million: real jobs
/// have at most thousands). A profile is summed epoch by epoch (so that a run-length encoded
/// profile is bit for bit the expanded one), about 3 ms per million epochs; without the bound a
/// run count of `2^63 - 1` kept a core busy for centuries. The same limit as the workloads'
/// (`shockwave.limits.MAX_EPOCHS_PER_JOB`).
pub const MAX_EPOCHS_PER_JOB: u64 = 10_000_000;

/// Shortest epoch duration the model accepts, seconds (a microsecond, as the workloads'
/// `shockwave.limits.MIN_EPOCH_SECONDS`): a subnormal duration made the rate of progress
/// (epochs per second) overflow, and the valuations infinite.
pub const MIN_EPOCH_SECONDS: f64 = 1e-6;

/// Why `seconds` is not an epoch duration: not finite, or shorter than [`MIN_EPOCH_SECONDS`]
/// (`None` if it is one). The one check of every duration that enters the model: the profile's,
/// the extra regimes', `predict_remaining`'s and the measured ones.
pub(crate) fn epoch_seconds_problem(seconds: f64) -> Option<String> {
    if seconds.is_finite() && seconds >= MIN_EPOCH_SECONDS {
        None
    } else {
        Some(format!(
            "lasts {seconds:?} s; durations must be finite and at least {MIN_EPOCH_SECONDS:?} s"
        ))
    }
}

/// Round a profiled epoch duration as the original's planner does: to the nearest whole second
/// (ties to even, like Python's `round`), at least 1 s.
pub fn rounded_seconds(seconds: f64) -> f64 {
    seconds.round_ties_even().max(1.0)
}

/// One candidate regime of a job: a batch size with its epoch durations, and what has been
/// observed of it (kept together so that a job's per-regime data is one allocation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Regime {
    /// Batch size.
    pub batch_size: u64,
    /// Mean epoch duration, seconds (the profile's, unrounded).
    pub seconds: f64,
    /// Mean of the epoch durations rounded to whole seconds (min 1 s): the original planner's
    /// duration table.
    pub rounded_seconds: f64,
    /// Whether the regime is known to be used (it appears in the profile schedule); extra
    /// candidate regimes may or may not be visited.
    pub must_visit: bool,
    /// Completed epochs observed in this regime.
    pub completed_epochs: f64,
    /// Sum of the rate ratios (profiled / measured epoch seconds) of its throughput samples.
    pub rate_sum: f64,
    /// Number of its throughput samples.
    pub rate_samples: f64,
}

impl Regime {
    fn new(batch_size: u64, seconds: f64, rounded_seconds: f64, must_visit: bool) -> Self {
        Self {
            batch_size,
            seconds,
            rounded_seconds,
            must_visit,
            completed_epochs: 0.0,
            rate_sum: 0.0,
            rate_samples: 0.0,
        }
    }
}

/// Index of the regime with batch size `batch_size` in `regimes` (ascending batch sizes).
pub fn regime_index(regimes: &[Regime], batch_size: u64) -> Option<usize> {
    regimes
        .binary_search_by_key(&batch_size, |regime| regime.batch_size)
        .ok()
}

/// Regimes from `(batch size, seconds, rounded seconds, must_visit)` entries in any order,
/// sorted by batch size. Duplicated batch sizes are an error naming `field`.
pub(crate) fn regimes_from_entries(
    mut entries: Vec<(u64, f64, f64, bool)>,
    field: &str,
) -> Result<Vec<Regime>, AdaptationError> {
    if entries.is_empty() {
        return Err(AdaptationError::new(field, "no batch size given"));
    }
    if entries.len() > MAX_REGIMES {
        return Err(AdaptationError::new(
            field,
            format!(
                "{} distinct batch sizes; at most {MAX_REGIMES} are supported",
                entries.len()
            ),
        ));
    }
    entries.sort_by_key(|entry| entry.0);
    if let Some(pair) = entries.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(AdaptationError::new(
            field,
            format!("batch size {} is given twice", pair[0].0),
        ));
    }
    Ok(entries
        .into_iter()
        .map(|(bs, s, r, m)| Regime::new(bs, s, r, m))
        .collect())
}

/// A run of consecutive profile epochs with the same batch size and duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    /// Regime index of these epochs.
    pub regime: usize,
    /// Number of epochs in the run (>= 1).
    pub epochs: u64,
    /// Duration of each epoch, seconds.
    pub seconds: f64,
    /// The duration rounded as the original's planner does ([`rounded_seconds`]).
    pub rounded: f64,
}

/// A job's profile: the batch size and duration of every epoch, stored as runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Runs in epoch order; their epochs sum to [`Profile::total_epochs`].
    pub runs: Vec<Run>,
    /// Number of epochs `E`.
    pub total_epochs: u64,
}

impl Profile {
    /// Build the profile and the regimes from per-epoch batch sizes and durations, plus extra
    /// candidate regimes `(batch size, seconds)` not in the profile.
    ///
    /// With `counts`, the profile is given run-length encoded: entry `k` of `batch_sizes` and
    /// `epoch_seconds` stands for `counts[k]` consecutive epochs (each >= 1). The result is bit
    /// for bit the one of the expanded arrays (sums are still taken epoch by epoch).
    ///
    /// Errors name `batch_sizes`, `epoch_seconds`, `epoch_counts` or `extra_regimes`.
    pub fn build(
        batch_sizes: &[i64],
        epoch_seconds: &[f64],
        counts: Option<&[u64]>,
        extra_regimes: &[(i64, f64)],
    ) -> Result<(Self, Vec<Regime>), AdaptationError> {
        if batch_sizes.is_empty() {
            return Err(AdaptationError::new(
                "batch_sizes",
                "is empty (one entry per epoch)",
            ));
        }
        if epoch_seconds.len() != batch_sizes.len() {
            return Err(AdaptationError::new(
                "epoch_seconds",
                format!(
                    "has {} entries but batch_sizes has {}",
                    epoch_seconds.len(),
                    batch_sizes.len()
                ),
            ));
        }
        if let Some(counts) = counts {
            if counts.len() != batch_sizes.len() {
                return Err(AdaptationError::new(
                    "epoch_counts",
                    format!(
                        "has {} entries but batch_sizes has {}",
                        counts.len(),
                        batch_sizes.len()
                    ),
                ));
            }
            if let Some(k) = counts.iter().position(|&c| c == 0) {
                return Err(AdaptationError::new(
                    "epoch_counts",
                    format!("run {k} has 0 epochs; every run has at least one"),
                ));
            }
            if let Some((k, c)) = counts
                .iter()
                .enumerate()
                .find(|(_, &c)| c > MAX_EPOCHS_PER_JOB)
            {
                return Err(AdaptationError::new(
                    "epoch_counts",
                    format!("run {k} has {c} epochs; a job has at most {MAX_EPOCHS_PER_JOB}"),
                ));
            }
        } else if batch_sizes.len() as u64 > MAX_EPOCHS_PER_JOB {
            return Err(AdaptationError::new(
                "batch_sizes",
                format!(
                    "has {} epochs; a job has at most {MAX_EPOCHS_PER_JOB}",
                    batch_sizes.len()
                ),
            ));
        }
        let count_of = |k: usize| counts.and_then(|c| c.get(k).copied()).unwrap_or(1);
        // first epoch of entry k
        let mut starts: Vec<u64> = Vec::with_capacity(batch_sizes.len());
        let mut total_epochs: u64 = 0;
        for k in 0..batch_sizes.len() {
            starts.push(total_epochs);
            total_epochs = total_epochs
                .checked_add(count_of(k))
                .filter(|&total| total <= MAX_EPOCHS_PER_JOB)
                .ok_or_else(|| {
                    AdaptationError::new(
                        "epoch_counts",
                        format!(
                            "the runs have more than {MAX_EPOCHS_PER_JOB} epochs in all; a job has \
                             at most {MAX_EPOCHS_PER_JOB}"
                        ),
                    )
                })?;
        }
        if let Some((k, bs)) = batch_sizes.iter().enumerate().find(|(_, &bs)| bs < 1) {
            let epoch = starts.get(k).copied().unwrap_or(0);
            return Err(AdaptationError::new(
                "batch_sizes",
                format!("epoch {epoch} has batch size {bs}; batch sizes must be >= 1"),
            ));
        }
        if let Some((k, problem)) = epoch_seconds
            .iter()
            .enumerate()
            .find_map(|(k, &s)| epoch_seconds_problem(s).map(|problem| (k, problem)))
        {
            let epoch = starts.get(k).copied().unwrap_or(0);
            return Err(AdaptationError::new(
                "epoch_seconds",
                format!("epoch {epoch} {problem}"),
            ));
        }
        let mut total = 0.0_f64;
        'sum: for (k, &s) in epoch_seconds.iter().enumerate() {
            for _ in 0..count_of(k) {
                total += s;
                if !total.is_finite() {
                    break 'sum;
                }
            }
        }
        if !total.is_finite() {
            return Err(AdaptationError::new(
                "epoch_seconds",
                "the epochs' total duration overflows double precision",
            ));
        }
        // Per distinct batch size: (epochs, sum of seconds, sum of rounded seconds), summed
        // epoch by epoch.
        let mut sums: Vec<(u64, u64, f64, f64)> = Vec::new();
        for (k, (&bs, &s)) in batch_sizes.iter().zip(epoch_seconds).enumerate() {
            let bs = bs.unsigned_abs();
            let rounded = rounded_seconds(s);
            let position = match sums.iter().position(|entry| entry.0 == bs) {
                Some(position) => position,
                None => {
                    sums.push((bs, 0, 0.0, 0.0));
                    sums.len() - 1
                }
            };
            if let Some(entry) = sums.get_mut(position) {
                // epoch by epoch, as the expanded profile is summed (0.0 + s is exactly s)
                for _ in 0..count_of(k) {
                    entry.1 += 1;
                    entry.2 += s;
                    entry.3 += rounded;
                }
            }
            if sums.len() > MAX_REGIMES {
                break;
            }
        }
        let mut entries: Vec<(u64, f64, f64, bool)> = sums
            .iter()
            .map(|&(bs, n, s, r)| (bs, s / n as f64, r / n as f64, true))
            .collect();
        for &(bs, s) in extra_regimes {
            if bs < 1 {
                return Err(AdaptationError::new(
                    "extra_regimes",
                    format!("batch size {bs} must be >= 1"),
                ));
            }
            if let Some(problem) = epoch_seconds_problem(s) {
                return Err(AdaptationError::new(
                    "extra_regimes",
                    format!("an epoch of batch size {bs} {problem}"),
                ));
            }
            if entries.iter().any(|entry| entry.0 == bs.unsigned_abs()) {
                return Err(AdaptationError::new(
                    "extra_regimes",
                    format!("batch size {bs} is already in the profile"),
                ));
            }
            entries.push((bs.unsigned_abs(), s, rounded_seconds(s), false));
        }
        let regimes = regimes_from_entries(entries, "batch_sizes")?;
        let mut runs: Vec<Run> = Vec::new();
        for (k, (&bs, &s)) in batch_sizes.iter().zip(epoch_seconds).enumerate() {
            let regime = regime_index(&regimes, bs.unsigned_abs())
                .ok_or_else(|| AdaptationError::new("batch_sizes", "internal regime lookup"))?;
            let epochs = count_of(k);
            match runs.last_mut() {
                Some(run) if run.regime == regime && run.seconds.to_bits() == s.to_bits() => {
                    run.epochs += epochs;
                }
                _ => runs.push(Run {
                    regime,
                    epochs,
                    seconds: s,
                    rounded: rounded_seconds(s),
                }),
            }
        }
        Ok((Self { runs, total_epochs }, regimes))
    }

    /// Regime of epoch `epoch` (0-based); the last run's regime past the end.
    pub fn regime_at(&self, epoch: u64) -> usize {
        let mut start = 0;
        for run in &self.runs {
            if epoch < start + run.epochs {
                return run.regime;
            }
            start += run.epochs;
        }
        self.runs.last().map_or(0, |run| run.regime)
    }

    /// Number of epochs of each regime among the first `epochs` epochs of the profile.
    pub fn regime_counts(&self, epochs: u64, num_regimes: usize) -> Vec<f64> {
        let mut counts = Vec::new();
        self.regime_counts_into(epochs, num_regimes, &mut counts);
        counts
    }

    /// [`Profile::regime_counts`] into a reused buffer.
    pub fn regime_counts_into(&self, epochs: u64, num_regimes: usize, counts: &mut Vec<f64>) {
        counts.clear();
        counts.resize(num_regimes, 0.0);
        let mut left = epochs;
        for run in &self.runs {
            if left == 0 {
                break;
            }
            let take = left.min(run.epochs);
            if let Some(count) = counts.get_mut(run.regime) {
                *count += take as f64;
            }
            left -= take;
        }
    }

    /// Sum of the first `epochs` epoch durations, rounded ones if `rounded`.
    pub fn head_seconds(&self, epochs: u64, rounded: bool) -> f64 {
        let mut total = 0.0;
        let mut left = epochs;
        for run in &self.runs {
            if left == 0 {
                break;
            }
            let take = left.min(run.epochs);
            total += take as f64 * if rounded { run.rounded } else { run.seconds };
            left -= take;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_python_round() {
        assert_eq!(rounded_seconds(0.4), 1.0);
        assert_eq!(rounded_seconds(2.5), 2.0);
        assert_eq!(rounded_seconds(3.5), 4.0);
        assert_eq!(rounded_seconds(36.4), 36.0);
    }

    #[test]
    fn profile_is_run_length_encoded() -> Result<(), AdaptationError> {
        let (profile, regimes) = Profile::build(
            &[32, 32, 64, 64, 64, 32],
            &[10.0, 10.0, 6.0, 6.0, 6.0, 10.0],
            None,
            &[(128, 4.0)],
        )?;
        let (runs, same_regimes) = Profile::build(
            &[32, 32, 64, 32],
            &[10.0, 10.0, 6.0, 10.0],
            Some(&[1, 1, 3, 1]),
            &[(128, 4.0)],
        )?;
        assert_eq!(runs, profile);
        assert_eq!(same_regimes, regimes);
        let sizes: Vec<u64> = regimes.iter().map(|r| r.batch_size).collect();
        let must: Vec<bool> = regimes.iter().map(|r| r.must_visit).collect();
        assert_eq!(sizes, vec![32, 64, 128]);
        assert_eq!(must, vec![true, true, false]);
        assert_eq!(profile.runs.len(), 3);
        assert_eq!(profile.total_epochs, 6);
        assert_eq!(profile.regime_at(2), 1);
        assert_eq!(profile.regime_at(5), 0);
        assert_eq!(profile.regime_counts(4, 3), vec![2.0, 2.0, 0.0]);
        assert_eq!(profile.head_seconds(3, false), 26.0);
        Ok(())
    }

    #[test]
    fn bad_profiles_name_the_field() {
        let err = Profile::build(&[], &[], None, &[]).err();
        assert_eq!(err.map(|e| e.argument), Some("batch_sizes".to_string()));
        let err = Profile::build(&[32], &[f64::NAN], None, &[]).err();
        assert_eq!(err.map(|e| e.argument), Some("epoch_seconds".to_string()));
        let err = Profile::build(&[32], &[1.0], Some(&[0]), &[]).err();
        assert_eq!(err.map(|e| e.argument), Some("epoch_counts".to_string()));
        let err = Profile::build(&[32], &[1.0], None, &[(32, 2.0)]).err();
        assert_eq!(err.map(|e| e.argument), Some("extra_regimes".to_string()));
        let err = Profile::build(&[32], &[5e-324], None, &[]).err();
        assert_eq!(err.map(|e| e.argument), Some("epoch_seconds".to_string()));
        let err = Profile::build(&[32], &[1.0], None, &[(64, 1e-7)]).err();
        assert_eq!(err.map(|e| e.argument), Some("extra_regimes".to_string()));
    }

    #[test]
    fn epoch_counts_are_bounded_per_run_and_in_all() {
        let limit = MAX_EPOCHS_PER_JOB;
        let err = Profile::build(&[32], &[1.0], Some(&[u64::MAX >> 1]), &[]).err();
        assert!(err.is_some_and(|e| e.argument == "epoch_counts" && e.reason.contains("run 0")));
        let err = Profile::build(&[32, 64], &[1.0, 1.0], Some(&[limit, 1]), &[]).err();
        assert!(err.is_some_and(|e| e.argument == "epoch_counts" && e.reason.contains("in all")));
        let counts = [limit / 2, limit / 2];
        let built = Profile::build(&[32, 64], &[1.0, 1.0], Some(&counts), &[]);
        assert_eq!(built.ok().map(|(p, _)| p.total_epochs), Some(limit));
    }
}
