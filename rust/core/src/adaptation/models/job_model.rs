//! One job's state: the regimes, what it has shown so far, its calibration, the validation of
//! its observations and its three predictors.

use super::super::calibration::{rate_duration_factors, WindowCalibration};
use super::super::dirichlet;
use super::super::error::AdaptationError;
use super::super::markov::{self, ChainInput};
use super::super::profile::{
    epoch_seconds_problem, regime_index, regimes_from_entries, rounded_seconds, Profile, Regime,
    MAX_EPOCHS_PER_JOB,
};
use super::super::progress::{RoundFiller, Segment};
use super::observations::{JobSpec, ProgressUpdate, ThroughputSample, ThroughputValue};
use super::settings::{Estimator, ModelSettings};

/// What one job has shown so far and its calibration state.
#[derive(Debug, Clone)]
pub struct JobModel {
    pub(super) regimes: Vec<Regime>,
    pub(super) profile: Option<Profile>,
    pub(super) total_epochs: u64,
    pub(super) samples_per_epoch: Option<f64>,
    pub(super) completed: u64,
    pub(super) fraction: f64,
    pub(super) current: usize,
    pub(super) last_completed: Option<usize>,
    pub(super) transitions: Vec<f64>,
    pub(super) window: WindowCalibration,
}

/// Reusable buffers of one prediction thread.
#[derive(Debug, Default)]
pub(super) struct Workspace {
    pub(super) chain: markov::Scratch,
    pub(super) seconds: Vec<f64>,
    pub(super) transitions: Vec<f64>,
    pub(super) visited: Vec<bool>,
    pub(super) must_visit: Vec<bool>,
    pub(super) counts: Vec<f64>,
}

/// A validated progress update, ready to apply.
pub(super) struct ValidProgress {
    pub(super) completed: u64,
    pub(super) fraction: f64,
    pub(super) current: usize,
    pub(super) new_epochs: Option<Vec<usize>>,
}

impl JobModel {
    /// A job from its profile (the profile's batch sizes are the regimes that must be visited).
    pub fn from_spec(spec: &JobSpec<'_>) -> Result<Self, AdaptationError> {
        let (profile, regimes) = Profile::build(
            spec.batch_sizes,
            spec.epoch_seconds,
            spec.epoch_counts,
            spec.extra_regimes,
        )?;
        if let Some(samples) = spec.samples_per_epoch {
            if !(samples.is_finite() && samples > 0.0) {
                return Err(AdaptationError::new(
                    "samples_per_epoch",
                    format!("must be finite and > 0, got {samples}"),
                ));
            }
        }
        let first = profile.regime_at(0);
        let total = profile.total_epochs;
        let mut job = Self::new(regimes, total, first);
        job.profile = Some(profile);
        job.samples_per_epoch = spec.samples_per_epoch;
        Ok(job)
    }

    /// A job without a profile: regimes from `(batch size, epoch seconds)` pairs, all of which
    /// must be visited, and `total_epochs` epochs, starting at `first_batch_size`.
    pub fn from_regimes(
        regime_batch_sizes: &[i64],
        regime_seconds: &[f64],
        total_epochs: i64,
        first_batch_size: i64,
    ) -> Result<Self, AdaptationError> {
        const FIELD: &str = "epoch_seconds_by_batch_size";
        if regime_seconds.len() != regime_batch_sizes.len() {
            return Err(AdaptationError::new(
                FIELD,
                "needs one duration per batch size",
            ));
        }
        let mut entries = Vec::with_capacity(regime_batch_sizes.len());
        for (&bs, &s) in regime_batch_sizes.iter().zip(regime_seconds) {
            if bs < 1 {
                return Err(AdaptationError::new(
                    FIELD,
                    format!("batch size {bs} must be >= 1"),
                ));
            }
            if let Some(problem) = epoch_seconds_problem(s) {
                return Err(AdaptationError::new(
                    FIELD,
                    format!("an epoch of batch size {bs} {problem}"),
                ));
            }
            entries.push((bs.unsigned_abs(), s, rounded_seconds(s), true));
        }
        let regimes = regimes_from_entries(entries, FIELD)?;
        if total_epochs < 1 || total_epochs.unsigned_abs() > MAX_EPOCHS_PER_JOB {
            return Err(AdaptationError::new(
                "total_epochs",
                format!("must be in [1, {MAX_EPOCHS_PER_JOB}], got {total_epochs}"),
            ));
        }
        let first = lookup(&regimes, first_batch_size).ok_or_else(|| {
            unknown_batch_size("batch_sizes_so_far", None, first_batch_size, &regimes)
        })?;
        Ok(Self::new(regimes, total_epochs.unsigned_abs(), first))
    }

    pub(super) fn new(regimes: Vec<Regime>, total_epochs: u64, first: usize) -> Self {
        let r = regimes.len();
        Self {
            regimes,
            profile: None,
            total_epochs,
            samples_per_epoch: None,
            completed: 0,
            fraction: 0.0,
            current: first,
            last_completed: None,
            transitions: vec![0.0; r * r],
            window: WindowCalibration::default(),
        }
    }

    /// The job's regimes, by ascending batch size.
    pub fn regimes(&self) -> &[Regime] {
        &self.regimes
    }

    /// Epochs of the job, `E`.
    pub fn total_epochs(&self) -> u64 {
        self.total_epochs
    }

    /// Epochs completed plus the fraction of the current one.
    pub fn epochs_done(&self) -> f64 {
        self.completed as f64 + self.fraction
    }

    /// Batch size of the epoch in progress.
    pub fn current_batch_size(&self) -> u64 {
        self.regimes
            .get(self.current)
            .map_or(0, |regime| regime.batch_size)
    }

    /// The `dirichlet` calibration multiplier (the original's sticky factor).
    pub fn window_factor(&self) -> f64 {
        self.window.factor()
    }

    /// The `markov`/`oracle` duration multiplier of each regime.
    pub fn rate_factors(&self, strength: f64) -> Vec<f64> {
        let mut factors = Vec::new();
        self.rate_factors_into(strength, &mut factors);
        factors
    }

    pub(super) fn rate_factors_into(&self, strength: f64, out: &mut Vec<f64>) {
        let samples = self.regimes.iter().map(|r| (r.rate_sum, r.rate_samples));
        rate_duration_factors(samples, strength, out);
    }

    pub(super) fn check_progress(
        &self,
        update: &ProgressUpdate<'_>,
    ) -> Result<ValidProgress, AdaptationError> {
        let id = update.job_id;
        let done = update.epochs_done;
        let total = self.total_epochs as f64;
        if !done.is_finite() || done < 0.0 {
            return Err(AdaptationError::for_job(
                id,
                "epochs_done",
                format!("must be finite and >= 0, got {done}"),
            ));
        }
        if done > total {
            return Err(AdaptationError::for_job(
                id,
                "epochs_done",
                format!("{done} exceeds the job's {} epochs", self.total_epochs),
            ));
        }
        if done < self.epochs_done() {
            return Err(AdaptationError::for_job(
                id,
                "epochs_done",
                format!("went back from {} to {done}", self.epochs_done()),
            ));
        }
        let completed = (done.floor() as u64).min(self.total_epochs);
        let fraction = if completed >= self.total_epochs {
            0.0
        } else {
            done - completed as f64
        };
        let current = lookup(&self.regimes, update.current_batch_size).ok_or_else(|| {
            unknown_batch_size(
                "current_batch_sizes",
                Some(id),
                update.current_batch_size,
                &self.regimes,
            )
        })?;
        let new_count = completed - self.completed;
        let new_epochs = match update.completed_batch_sizes {
            None => None,
            Some(list) => {
                if list.len() as u64 != new_count {
                    return Err(AdaptationError::for_job(
                        id,
                        "completed_counts",
                        format!(
                            "{} batch sizes given for {new_count} newly completed epochs",
                            list.len()
                        ),
                    ));
                }
                let mut regimes = Vec::with_capacity(list.len());
                for &bs in list {
                    regimes.push(lookup(&self.regimes, bs).ok_or_else(|| {
                        unknown_batch_size("completed_batch_sizes", Some(id), bs, &self.regimes)
                    })?);
                }
                Some(regimes)
            }
        };
        Ok(ValidProgress {
            completed,
            fraction,
            current,
            new_epochs,
        })
    }

    /// Apply a validated update; returns whether the job's state changed (an update that
    /// repeats the state held changes nothing).
    pub(super) fn apply_progress(&mut self, update: ValidProgress) -> bool {
        let changed = update.completed != self.completed
            || update.fraction.to_bits() != self.fraction.to_bits()
            || update.current != self.current;
        let new_count = update.completed - self.completed;
        match &update.new_epochs {
            Some(list) => list.iter().for_each(|&regime| self.complete(regime, 1)),
            // Unreported epochs ran at the batch size current until now.
            None if new_count > 0 => self.complete(self.current, new_count),
            None => {}
        }
        self.completed = update.completed;
        self.fraction = update.fraction;
        self.current = update.current;
        changed
    }

    /// Append `count` completed epochs at `regime` to the observed sequence.
    pub(super) fn complete(&mut self, regime: usize, count: u64) {
        let r = self.regimes.len();
        if let Some(last) = self.last_completed {
            if let Some(n) = self.transitions.get_mut(last * r + regime) {
                *n += 1.0;
            }
        }
        // Integer-valued counts: adding them at once is exact, like adding them one by one.
        if let Some(n) = self.transitions.get_mut(regime * r + regime) {
            *n += (count - 1) as f64;
        }
        if let Some(state) = self.regimes.get_mut(regime) {
            state.completed_epochs += count as f64;
        }
        self.last_completed = Some(regime);
    }

    /// Record progress (validated first: on error nothing changes).
    pub fn observe(&mut self, update: &ProgressUpdate<'_>) -> Result<(), AdaptationError> {
        let valid = self.check_progress(update)?;
        self.apply_progress(valid);
        Ok(())
    }

    /// Validate a throughput sample; returns `(round, regime, measured epoch seconds)`.
    pub(super) fn check_sample(
        &self,
        sample: &ThroughputSample,
        after_round: Option<u64>,
    ) -> Result<(u64, usize, f64), AdaptationError> {
        let id = sample.job_id;
        if sample.round < 0 {
            return Err(AdaptationError::for_job(
                id,
                "round_indices",
                format!("must be >= 0, got {}", sample.round),
            ));
        }
        let round = sample.round.unsigned_abs();
        if let Some(previous) = after_round {
            if round <= previous {
                return Err(AdaptationError::for_job(
                    id,
                    "round_indices",
                    format!("round {round} is not after the previous sample's round {previous}"),
                ));
            }
        }
        let regime = lookup(&self.regimes, sample.batch_size).ok_or_else(|| {
            unknown_batch_size("batch_sizes", Some(id), sample.batch_size, &self.regimes)
        })?;
        let seconds = match sample.value {
            ThroughputValue::EpochSeconds(s) => {
                if let Some(problem) = epoch_seconds_problem(s) {
                    return Err(AdaptationError::for_job(
                        id,
                        "epoch_seconds",
                        format!("the measured epoch {problem}"),
                    ));
                }
                s
            }
            ThroughputValue::StepsPerSecond(rate) => {
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(AdaptationError::for_job(
                        id,
                        "steps_per_second",
                        format!("must be finite and > 0, got {rate}"),
                    ));
                }
                let samples = self.samples_per_epoch.ok_or_else(|| {
                    AdaptationError::for_job(
                        id,
                        "steps_per_second",
                        "the job was added without samples_per_epoch; give epoch_seconds",
                    )
                })?;
                let seconds = samples / (sample.batch_size as f64 * rate);
                if let Some(problem) = epoch_seconds_problem(seconds) {
                    return Err(AdaptationError::for_job(
                        id,
                        "steps_per_second",
                        format!("{rate:?} steps/s make an epoch that {problem}"),
                    ));
                }
                seconds
            }
        };
        Ok((round, regime, seconds))
    }

    pub(super) fn apply_sample(
        &mut self,
        round: u64,
        regime: usize,
        seconds: f64,
        settings: &ModelSettings,
    ) {
        if let Some(profile) = &self.profile {
            self.window.add_sample(
                round,
                seconds,
                settings.calibration_round_seconds,
                profile,
                settings.round_durations,
            );
        }
        if let Some(state) = self.regimes.get_mut(regime) {
            state.rate_sum += state.seconds / seconds;
            state.rate_samples += 1.0;
        }
    }

    /// Remaining runtime (mean, std), seconds, and the offset `c_i`; the valuations of the next
    /// `valuations.len()` rounds of `round_seconds` are written into `valuations`.
    pub fn predict_into(
        &self,
        estimator: Estimator,
        settings: &ModelSettings,
        round_seconds: f64,
        valuations: &mut [f64],
    ) -> Result<(f64, f64, f64), AdaptationError> {
        let mut workspace = Workspace::default();
        self.predict_with(
            estimator,
            settings,
            round_seconds,
            valuations,
            &mut workspace,
        )
    }

    pub(super) fn predict_with(
        &self,
        estimator: Estimator,
        settings: &ModelSettings,
        round_seconds: f64,
        valuations: &mut [f64],
        workspace: &mut Workspace,
    ) -> Result<(f64, f64, f64), AdaptationError> {
        let total = self.total_epochs as f64;
        let mut filler = RoundFiller::new(valuations, round_seconds);
        if self.completed >= self.total_epochs {
            return Ok((0.0, 0.0, 1.0));
        }
        let offset = self.epochs_done() / total;
        let (mean, std) = match estimator {
            Estimator::Markov => self.markov(settings, &mut filler, workspace),
            Estimator::Oracle => self.oracle(settings, &mut filler, workspace)?,
            Estimator::Dirichlet => self.dirichlet(settings, &mut filler, workspace),
        };
        filler.finish(total);
        Ok((mean, std, offset))
    }

    pub(super) fn markov(
        &self,
        settings: &ModelSettings,
        filler: &mut RoundFiller<'_>,
        workspace: &mut Workspace,
    ) -> (f64, f64) {
        let r = self.regimes.len();
        let Workspace {
            chain,
            seconds,
            transitions,
            visited,
            must_visit,
            ..
        } = workspace;
        self.rate_factors_into(settings.calibration_strength, seconds);
        seconds
            .iter_mut()
            .zip(&self.regimes)
            .for_each(|(f, regime)| *f *= regime.seconds);
        if r == 1 {
            // One regime: the recursion is a product.
            let d = seconds.first().copied().unwrap_or(0.0);
            let epochs = (self.total_epochs - self.completed) as f64 - self.fraction;
            filler.push(Segment {
                seconds: epochs * d,
                epochs,
            });
            return (epochs * d, 0.0);
        }
        transitions.clear();
        transitions.extend_from_slice(&self.transitions);
        if let Some(last) = self.last_completed {
            if let Some(count) = transitions.get_mut(last * r + self.current) {
                *count += 1.0;
            }
        }
        visited.clear();
        visited.extend(
            self.regimes
                .iter()
                .enumerate()
                .map(|(i, regime)| i == self.current || regime.completed_epochs > 0.0),
        );
        must_visit.clear();
        must_visit.extend(self.regimes.iter().map(|regime| regime.must_visit));
        let input = ChainInput {
            seconds,
            must_visit,
            visited,
            transitions,
            current: self.current,
            fraction: self.fraction,
            epochs_after: self.total_epochs - self.completed - 1,
            total_epochs: self.total_epochs,
        };
        markov::solve(&input, &settings.prior, chain, Some(filler))
    }

    pub(super) fn oracle(
        &self,
        settings: &ModelSettings,
        filler: &mut RoundFiller<'_>,
        workspace: &mut Workspace,
    ) -> Result<(f64, f64), AdaptationError> {
        let profile = self.profile.as_ref().ok_or_else(|| {
            AdaptationError::new(
                "estimator",
                "'oracle' needs the job's future schedule (its profile)",
            )
        })?;
        let factors = &mut workspace.seconds;
        self.rate_factors_into(settings.calibration_strength, factors);
        let mut start = 0_u64;
        let mut total = 0.0;
        for run in &profile.runs {
            let end = start + run.epochs;
            if end > self.completed {
                let first = start.max(self.completed);
                let mut epochs = (end - first) as f64;
                if first == self.completed {
                    epochs -= self.fraction;
                }
                let d = run.seconds * factors.get(run.regime).copied().unwrap_or(1.0);
                total += epochs * d;
                filler.push(Segment {
                    seconds: epochs * d,
                    epochs,
                });
            }
            start = end;
        }
        Ok((total, 0.0))
    }

    pub(super) fn dirichlet(
        &self,
        settings: &ModelSettings,
        filler: &mut RoundFiller<'_>,
        workspace: &mut Workspace,
    ) -> (f64, f64) {
        let Workspace {
            seconds,
            counts,
            must_visit,
            ..
        } = workspace;
        let factor = self.window.factor();
        seconds.clear();
        seconds.extend(self.regimes.iter().map(|regime| {
            factor
                * if settings.round_durations {
                    regime.rounded_seconds
                } else {
                    regime.seconds
                }
        }));
        must_visit.clear();
        must_visit.extend(self.regimes.iter().map(|regime| regime.must_visit));
        let seen = self.completed + 1;
        counts.clear();
        let window_mean = match &self.profile {
            Some(profile) => {
                profile.regime_counts_into(seen, self.regimes.len(), counts);
                profile.head_seconds(seen, settings.round_durations) / seen as f64 * factor
            }
            None => {
                counts.extend(self.regimes.iter().enumerate().map(|(i, regime)| {
                    regime.completed_epochs + if i == self.current { 1.0 } else { 0.0 }
                }));
                let sum: f64 = counts.iter().zip(seconds.iter()).map(|(n, d)| n * d).sum();
                sum / seen as f64
            }
        };
        let estimate = dirichlet::estimate(
            self.total_epochs,
            self.completed,
            counts,
            must_visit,
            seconds,
        );
        let epochs = (self.total_epochs - self.completed) as f64 - self.fraction;
        filler.push(Segment {
            seconds: epochs * window_mean,
            epochs,
        });
        estimate
    }
}

pub(super) fn lookup(regimes: &[Regime], batch_size: i64) -> Option<usize> {
    if batch_size < 1 {
        return None;
    }
    regime_index(regimes, batch_size.unsigned_abs())
}

pub(super) fn unknown_batch_size(
    field: &str,
    job_id: Option<i64>,
    batch_size: i64,
    regimes: &[Regime],
) -> AdaptationError {
    let known: Vec<u64> = regimes.iter().map(|regime| regime.batch_size).collect();
    let reason = format!("batch size {batch_size} is not one of the job's regimes {known:?}");
    match job_id {
        Some(id) => AdaptationError::for_job(id, field, reason),
        None => AdaptationError::new(field, reason),
    }
}
