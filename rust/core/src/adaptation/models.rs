//! Per-job state ([`JobModel`]) and the batched container of all active jobs ([`JobModels`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::calibration::{rate_duration_factors, WindowCalibration};
use super::dirichlet;
use super::encoding::{Reader, Writer};
use super::error::AdaptationError;
use super::markov::{self, ChainInput, MarkovPrior};
use super::profile::{
    regime_index, regimes_from_entries, rounded_seconds, Profile, Regime, Run, MAX_REGIMES,
};
use super::progress::{RoundFiller, Segment};

/// Which remaining-runtime estimator to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Estimator {
    /// Markov chain over regimes with a Bellman recursion ([`super::markov`]).
    Markov,
    /// The original Shockwave's Dirichlet posterior mean ([`super::dirichlet`]).
    Dirichlet,
    /// The true remaining schedule of the profile (ablations).
    Oracle,
}

impl Estimator {
    /// Parse `"markov"`, `"dirichlet"` or `"oracle"`.
    pub fn parse(name: &str) -> Result<Self, AdaptationError> {
        match name {
            "markov" => Ok(Self::Markov),
            "dirichlet" => Ok(Self::Dirichlet),
            "oracle" => Ok(Self::Oracle),
            other => Err(AdaptationError::new(
                "estimator",
                format!("must be 'markov', 'dirichlet' or 'oracle', got {other:?}"),
            )),
        }
    }
}

/// Settings shared by all jobs of a [`JobModels`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSettings {
    /// `dirichlet` only: round profiled durations to whole seconds (min 1 s) as the original's
    /// planner does. With `false` it uses the profile's durations.
    pub round_durations: bool,
    /// Round length of the original's calibration window, seconds (its `time_per_iteration`).
    pub calibration_round_seconds: f64,
    /// Pseudo-samples of the `markov`/`oracle` rate calibration at each level (> 0).
    pub calibration_strength: f64,
    /// Prior and numerics of the `markov` estimator.
    pub prior: MarkovPrior,
    /// Worker threads for [`JobModels::predict`]; 0 = one per available core (results do not
    /// depend on it).
    pub threads: usize,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            round_durations: true,
            calibration_round_seconds: 120.0,
            calibration_strength: 1.0,
            prior: MarkovPrior::default(),
            threads: 0,
        }
    }
}

impl ModelSettings {
    /// Check the settings; errors name the field.
    pub fn validate(&self) -> Result<(), AdaptationError> {
        if !(self.calibration_round_seconds.is_finite() && self.calibration_round_seconds > 0.0) {
            return Err(AdaptationError::new(
                "calibration_round_seconds",
                format!(
                    "must be finite and > 0, got {}",
                    self.calibration_round_seconds
                ),
            ));
        }
        if !(self.calibration_strength.is_finite() && self.calibration_strength > 0.0) {
            return Err(AdaptationError::new(
                "calibration_strength",
                format!("must be finite and > 0, got {}", self.calibration_strength),
            ));
        }
        self.prior.validate()
    }
}

/// A job to add: its profile (one entry per epoch) and optional extra candidate regimes.
#[derive(Debug, Clone, Copy)]
pub struct JobSpec<'a> {
    /// Batch size of every epoch of the profile (>= 1).
    pub batch_sizes: &'a [i64],
    /// Duration of every epoch of the profile on the job's gang, seconds (> 0).
    pub epoch_seconds: &'a [f64],
    /// Batch sizes the job may also run at, not in the profile, with their epoch seconds.
    pub extra_regimes: &'a [(i64, f64)],
    /// Training samples per epoch, needed to read throughput given in steps/s.
    pub samples_per_epoch: Option<f64>,
}

/// Progress of one job since the last observation.
#[derive(Debug, Clone, Copy)]
pub struct ProgressUpdate<'a> {
    /// The job.
    pub job_id: i64,
    /// Epochs completed plus the fraction of the current epoch done; non-decreasing, <= `E`.
    pub epochs_done: f64,
    /// Batch size of the epoch in progress (one of the job's regimes).
    pub current_batch_size: i64,
    /// Batch sizes of the epochs completed since the last observation, in order. `None`: they
    /// ran at the batch size that was current at the last observation.
    pub completed_batch_sizes: Option<&'a [i64]>,
}

/// A measured throughput: one epoch's duration, or steps per second at the sample's batch size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThroughputValue {
    /// Seconds per epoch at that rate.
    EpochSeconds(f64),
    /// Iterations per second (the job's `samples_per_epoch / batch_size` steps make an epoch).
    StepsPerSecond(f64),
}

/// One throughput measurement of one job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThroughputSample {
    /// The job.
    pub job_id: i64,
    /// Round index, counted from the start of the simulation (>= 0, increasing per job).
    pub round: i64,
    /// Batch size the job ran at.
    pub batch_size: i64,
    /// What was measured.
    pub value: ThroughputValue,
}

/// Predictions for a set of jobs, in the order requested.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Job ids.
    pub job_ids: Vec<i64>,
    /// Expected remaining runtime if served continuously on the gang, seconds.
    pub mean_seconds: Vec<f64>,
    /// Its standard deviation, seconds.
    pub std_seconds: Vec<f64>,
    /// Row-major `(N, num_rounds)`: expected fraction of the job's epochs gained in each of the
    /// next rounds, under continuous service from now.
    pub valuations: Vec<f64>,
    /// Fraction of the job's epochs done, `c_i`.
    pub offsets: Vec<f64>,
    /// Columns of `valuations`.
    pub num_rounds: usize,
}

/// What one job has shown so far and its calibration state.
#[derive(Debug, Clone)]
pub struct JobModel {
    regimes: Vec<Regime>,
    profile: Option<Profile>,
    total_epochs: u64,
    samples_per_epoch: Option<f64>,
    completed: u64,
    fraction: f64,
    current: usize,
    last_completed: Option<usize>,
    transitions: Vec<f64>,
    window: WindowCalibration,
}

/// Reusable buffers of one prediction thread.
#[derive(Debug, Default)]
struct Workspace {
    chain: markov::Scratch,
    seconds: Vec<f64>,
    transitions: Vec<f64>,
    visited: Vec<bool>,
    must_visit: Vec<bool>,
    counts: Vec<f64>,
}

/// A validated progress update, ready to apply.
struct ValidProgress {
    completed: u64,
    fraction: f64,
    current: usize,
    new_epochs: Option<Vec<usize>>,
}

impl JobModel {
    /// A job from its profile (the profile's batch sizes are the regimes that must be visited).
    pub fn from_spec(spec: &JobSpec<'_>) -> Result<Self, AdaptationError> {
        let (profile, regimes) =
            Profile::build(spec.batch_sizes, spec.epoch_seconds, spec.extra_regimes)?;
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
            if !(s.is_finite() && s > 0.0) {
                return Err(AdaptationError::new(
                    FIELD,
                    format!("batch size {bs} lasts {s} s per epoch; must be finite and > 0"),
                ));
            }
            entries.push((bs.unsigned_abs(), s, rounded_seconds(s), true));
        }
        let regimes = regimes_from_entries(entries, FIELD)?;
        if total_epochs < 1 {
            return Err(AdaptationError::new(
                "total_epochs",
                format!("must be >= 1, got {total_epochs}"),
            ));
        }
        let first = lookup(&regimes, first_batch_size).ok_or_else(|| {
            unknown_batch_size("batch_sizes_so_far", None, first_batch_size, &regimes)
        })?;
        Ok(Self::new(regimes, total_epochs.unsigned_abs(), first))
    }

    fn new(regimes: Vec<Regime>, total_epochs: u64, first: usize) -> Self {
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

    fn rate_factors_into(&self, strength: f64, out: &mut Vec<f64>) {
        let samples = self.regimes.iter().map(|r| (r.rate_sum, r.rate_samples));
        rate_duration_factors(samples, strength, out);
    }

    fn check_progress(
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

    fn apply_progress(&mut self, update: ValidProgress) {
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
    }

    /// Append `count` completed epochs at `regime` to the observed sequence.
    fn complete(&mut self, regime: usize, count: u64) {
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
    fn check_sample(
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
                if !(s.is_finite() && s > 0.0) {
                    return Err(AdaptationError::for_job(
                        id,
                        "epoch_seconds",
                        format!("must be finite and > 0, got {s}"),
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
                samples / (sample.batch_size as f64 * rate)
            }
        };
        Ok((round, regime, seconds))
    }

    fn apply_sample(&mut self, round: u64, regime: usize, seconds: f64, settings: &ModelSettings) {
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

    fn predict_with(
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

    fn markov(
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

    fn oracle(
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

    fn dirichlet(
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

fn lookup(regimes: &[Regime], batch_size: i64) -> Option<usize> {
    if batch_size < 1 {
        return None;
    }
    regime_index(regimes, batch_size.unsigned_abs())
}

fn unknown_batch_size(
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

/// Hasher for job ids: one multiplication (ids are not adversarial; lookups are the hot path
/// of [`JobModels::observe`]).
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap = HashMap<i64, usize, BuildHasherDefault<IdHasher>>;

/// The adaptation state of every active job, keyed by job id.
#[derive(Debug, Clone)]
pub struct JobModels {
    settings: ModelSettings,
    /// Job states, in no particular order.
    slots: Vec<JobModel>,
    /// Job id of each slot.
    slot_ids: Vec<i64>,
    /// Slot of each job id.
    index: IdMap,
    /// Slots in ascending job-id order.
    order: Vec<usize>,
}

impl JobModels {
    /// An empty container.
    pub fn new(settings: ModelSettings) -> Result<Self, AdaptationError> {
        settings.validate()?;
        Ok(Self {
            settings,
            slots: Vec::new(),
            slot_ids: Vec::new(),
            index: IdMap::default(),
            order: Vec::new(),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// Number of jobs held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no job is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether `job_id` is held.
    pub fn contains(&self, job_id: i64) -> bool {
        self.index.contains_key(&job_id)
    }

    /// Ids of the jobs held, ascending.
    pub fn job_ids(&self) -> Vec<i64> {
        self.order
            .iter()
            .filter_map(|&slot| self.slot_ids.get(slot).copied())
            .collect()
    }

    /// The state of one job.
    pub fn get(&self, job_id: i64) -> Option<&JobModel> {
        self.index
            .get(&job_id)
            .and_then(|&slot| self.slots.get(slot))
    }

    fn slot(&self, field: &str, job_id: i64) -> Result<usize, AdaptationError> {
        self.index
            .get(&job_id)
            .copied()
            .ok_or_else(|| unknown_job(field, job_id))
    }

    /// Add a job (on arrival).
    pub fn add(&mut self, job_id: i64, spec: &JobSpec<'_>) -> Result<(), AdaptationError> {
        if self.index.contains_key(&job_id) {
            return Err(AdaptationError::new(
                "job_id",
                format!("job {job_id} is already held"),
            ));
        }
        let job = JobModel::from_spec(spec)
            .map_err(|e| AdaptationError::new(e.field, format!("job {job_id}: {}", e.reason)))?;
        let slot = self.slots.len();
        self.slots.push(job);
        self.slot_ids.push(job_id);
        self.index.insert(job_id, slot);
        let position = self
            .order
            .partition_point(|&s| self.slot_ids.get(s).is_some_and(|&id| id < job_id));
        self.order.insert(position, slot);
        Ok(())
    }

    /// Remove a job (on completion).
    pub fn remove(&mut self, job_id: i64) -> Result<(), AdaptationError> {
        let slot = self.slot("job_id", job_id)?;
        self.index.remove(&job_id);
        self.order.retain(|&s| s != slot);
        self.slots.swap_remove(slot);
        self.slot_ids.swap_remove(slot);
        // The last slot moved into `slot`.
        let moved = self.slots.len();
        if slot < moved {
            if let Some(&moved_id) = self.slot_ids.get(slot) {
                self.index.insert(moved_id, slot);
            }
            if let Some(entry) = self.order.iter_mut().find(|s| **s == moved) {
                *entry = slot;
            }
        }
        Ok(())
    }

    /// Record progress of several jobs. Everything is validated before anything changes; a job
    /// may appear once per call.
    pub fn observe(&mut self, updates: &[ProgressUpdate<'_>]) -> Result<(), AdaptationError> {
        let mut seen = vec![false; self.slots.len()];
        let mut valid = Vec::with_capacity(updates.len());
        for update in updates {
            let slot = self.slot("job_ids", update.job_id)?;
            let (Some(job), Some(flag)) = (self.slots.get(slot), seen.get_mut(slot)) else {
                return Err(unknown_job("job_ids", update.job_id));
            };
            if std::mem::replace(flag, true) {
                return Err(AdaptationError::for_job(
                    update.job_id,
                    "job_ids",
                    "appears twice in one call",
                ));
            }
            valid.push((slot, job.check_progress(update)?));
        }
        for (slot, update) in valid {
            if let Some(job) = self.slots.get_mut(slot) {
                job.apply_progress(update);
            }
        }
        Ok(())
    }

    /// Record throughput samples (validated first; a job's samples must have increasing rounds).
    pub fn observe_throughput(
        &mut self,
        samples: &[ThroughputSample],
    ) -> Result<(), AdaptationError> {
        let mut last_round: Vec<Option<u64>> = vec![None; self.slots.len()];
        let mut valid = Vec::with_capacity(samples.len());
        for sample in samples {
            let slot = self.slot("job_ids", sample.job_id)?;
            let (Some(job), Some(last)) = (self.slots.get(slot), last_round.get_mut(slot)) else {
                return Err(unknown_job("job_ids", sample.job_id));
            };
            let previous = last.or_else(|| job.window.last_round());
            let (round, regime, seconds) = job.check_sample(sample, previous)?;
            *last = Some(round);
            valid.push((slot, round, regime, seconds));
        }
        let settings = self.settings;
        for (slot, round, regime, seconds) in valid {
            if let Some(job) = self.slots.get_mut(slot) {
                job.apply_sample(round, regime, seconds, &settings);
            }
        }
        Ok(())
    }

    /// Predict the jobs `job_ids` (all held jobs in ascending id order if `None`).
    pub fn predict(
        &self,
        job_ids: Option<&[i64]>,
        estimator: Estimator,
        num_rounds: usize,
        round_seconds: f64,
    ) -> Result<Prediction, AdaptationError> {
        if !(round_seconds.is_finite() && round_seconds > 0.0) {
            return Err(AdaptationError::new(
                "round_seconds",
                format!("must be finite and > 0, got {round_seconds}"),
            ));
        }
        let ids: Vec<i64> = match job_ids {
            Some(ids) => ids.to_vec(),
            None => self.job_ids(),
        };
        let jobs: Vec<&JobModel> = ids
            .iter()
            .map(|&id| self.get(id).ok_or_else(|| unknown_job("job_ids", id)))
            .collect::<Result<_, _>>()?;
        let n = jobs.len();
        if num_rounds > crate::limits::MAX_ROUNDS {
            return Err(AdaptationError::new(
                "num_rounds",
                format!(
                    "{num_rounds} rounds; a window may have at most {} (2^32)",
                    crate::limits::MAX_ROUNDS
                ),
            ));
        }
        let cells = n.checked_mul(num_rounds);
        crate::limits::check_memory(
            cells.and_then(|cells| crate::limits::bytes_of(cells, 8)),
            &format!("valuations of {n} jobs x {num_rounds} rounds"),
        )
        .map_err(|message| AdaptationError::new("num_rounds", message))?;
        let mut mean = vec![0.0; n];
        let mut std = vec![0.0; n];
        let mut offsets = vec![0.0; n];
        let mut valuations = vec![0.0; n * num_rounds];
        let settings = &self.settings;
        let threads = thread_count(settings.threads, n);
        let chunk = n.div_ceil(threads).max(1);
        // Split the outputs into one disjoint task per thread.
        let mut tasks = Vec::with_capacity(threads);
        let (mut j_rest, mut m_rest, mut s_rest, mut o_rest, mut v_rest) = (
            &jobs[..],
            &mut mean[..],
            &mut std[..],
            &mut offsets[..],
            &mut valuations[..],
        );
        while !j_rest.is_empty() {
            let take = chunk.min(j_rest.len());
            let split = j_rest.split_at_checked(take).zip(
                m_rest
                    .split_at_mut_checked(take)
                    .zip(s_rest.split_at_mut_checked(take))
                    .zip(o_rest.split_at_mut_checked(take))
                    .zip(v_rest.split_at_mut_checked(take * num_rounds)),
            );
            let Some(((j, j2), ((((m, m2), (s, s2)), (o, o2)), (v, v2)))) = split else {
                return Err(AdaptationError::new("predict", "inconsistent output sizes"));
            };
            tasks.push(Task {
                jobs: j,
                mean: m,
                std: s,
                offsets: o,
                valuations: v,
            });
            (j_rest, m_rest, s_rest, o_rest, v_rest) = (j2, m2, s2, o2, v2);
        }
        let run = |task: Task<'_, '_>| task.run(estimator, settings, num_rounds, round_seconds);
        if tasks.len() <= 1 {
            for task in tasks {
                run(task)?;
            }
        } else {
            let results: Vec<Result<(), AdaptationError>> = std::thread::scope(|scope| {
                let handles: Vec<_> = tasks
                    .into_iter()
                    .map(|task| scope.spawn(move || run(task)))
                    .collect();
                handles
                    .into_iter()
                    .map(|handle| {
                        handle.join().unwrap_or_else(|_| {
                            Err(AdaptationError::new("predict", "a worker thread failed"))
                        })
                    })
                    .collect()
            });
            for result in results {
                result?;
            }
        }
        Ok(Prediction {
            job_ids: ids,
            mean_seconds: mean,
            std_seconds: std,
            valuations,
            offsets,
            num_rounds,
        })
    }
}

/// Magic bytes and version of [`JobModels::to_bytes`].
const STATE_MAGIC: &[u8; 4] = b"SWJM";
const STATE_VERSION: u64 = 1;
/// Field named by errors of [`JobModels::from_bytes`].
const STATE_FIELD: &str = "state";

impl JobModels {
    /// The whole state (settings and every job, in slot order) as versioned bytes:
    /// [`JobModels::from_bytes`] rebuilds a container that predicts bit for bit the same.
    ///
    /// Layout (little-endian): magic `SWJM`, version `u64` (1), the settings, the job count,
    /// then per job its id and model (regimes, profile runs, counters, transition counts and
    /// calibration state); floats are stored by their bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Writer::default();
        out.bytes.extend_from_slice(STATE_MAGIC);
        out.u64(STATE_VERSION);
        let s = &self.settings;
        out.bool(s.round_durations);
        out.f64(s.calibration_round_seconds);
        out.f64(s.calibration_strength);
        out.f64(s.prior.strength);
        out.f64(s.prior.backward_share);
        out.f64(s.prior.jump_decay);
        out.bool(s.prior.deadline);
        out.usize(s.prior.max_blocks);
        out.usize(s.threads);
        out.usize(self.slots.len());
        for (job, &id) in self.slots.iter().zip(&self.slot_ids) {
            out.i64(id);
            job.encode(&mut out);
        }
        out.bytes
    }

    /// Rebuild a container from [`JobModels::to_bytes`].
    ///
    /// # Errors
    /// An [`AdaptationError`] naming `state` for bytes that are not such a state, of another
    /// version, truncated, or inconsistent (every length, index and value is checked).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, AdaptationError> {
        let mut r = Reader::new(bytes, STATE_FIELD);
        r.tag(STATE_MAGIC)?;
        let version = r.u64()?;
        if version != STATE_VERSION {
            return Err(r.error(format!(
                "version {version}; this build reads version {STATE_VERSION}"
            )));
        }
        let settings = ModelSettings {
            round_durations: r.bool()?,
            calibration_round_seconds: r.f64()?,
            calibration_strength: r.f64()?,
            prior: MarkovPrior {
                strength: r.f64()?,
                backward_share: r.f64()?,
                jump_decay: r.f64()?,
                deadline: r.bool()?,
                max_blocks: r.below(u64::MAX)?,
            },
            threads: r.below(u64::MAX)?,
        };
        settings
            .validate()
            .map_err(|e| r.error(format!("corrupted settings: {e}")))?;
        let mut models = Self::new(settings)?;
        let jobs = r.count(8)?;
        for _ in 0..jobs {
            let id = r.i64()?;
            let job = JobModel::decode(&mut r)?;
            if models.index.contains_key(&id) {
                return Err(r.error(format!("corrupted: job {id} appears twice")));
            }
            let slot = models.slots.len();
            models.slots.push(job);
            models.slot_ids.push(id);
            models.index.insert(id, slot);
        }
        r.finish()?;
        let mut order: Vec<usize> = (0..models.slots.len()).collect();
        order.sort_by_key(|&slot| models.slot_ids.get(slot).copied().unwrap_or(i64::MAX));
        models.order = order;
        Ok(models)
    }
}

impl JobModel {
    fn encode(&self, out: &mut Writer) {
        out.usize(self.regimes.len());
        for regime in &self.regimes {
            out.u64(regime.batch_size);
            out.f64(regime.seconds);
            out.f64(regime.rounded_seconds);
            out.bool(regime.must_visit);
            out.f64(regime.completed_epochs);
            out.f64(regime.rate_sum);
            out.f64(regime.rate_samples);
        }
        match &self.profile {
            None => out.bool(false),
            Some(profile) => {
                out.bool(true);
                out.u64(profile.total_epochs);
                out.usize(profile.runs.len());
                for run in &profile.runs {
                    out.usize(run.regime);
                    out.u64(run.epochs);
                    out.f64(run.seconds);
                    out.f64(run.rounded);
                }
            }
        }
        out.u64(self.total_epochs);
        out.bool(self.samples_per_epoch.is_some());
        out.f64(self.samples_per_epoch.unwrap_or(0.0));
        out.u64(self.completed);
        out.f64(self.fraction);
        out.usize(self.current);
        out.bool(self.last_completed.is_some());
        out.usize(self.last_completed.unwrap_or(0));
        for &count in &self.transitions {
            out.f64(count);
        }
        let (measured, last_round, samples, factor) = self.window.parts();
        out.f64(measured);
        out.u64(last_round);
        out.u64(samples);
        out.f64(factor);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, AdaptationError> {
        let count = r.count(49)?;
        if count == 0 || count > MAX_REGIMES {
            return Err(r.error(format!("corrupted: {count} regimes")));
        }
        let mut regimes = Vec::with_capacity(count);
        for _ in 0..count {
            let batch_size = r.u64()?;
            let regime = Regime {
                batch_size,
                seconds: r.finite(true)?,
                rounded_seconds: r.finite(true)?,
                must_visit: r.bool()?,
                completed_epochs: r.finite(true)?,
                rate_sum: r.finite(true)?,
                rate_samples: r.finite(true)?,
            };
            if regimes
                .last()
                .is_some_and(|last: &Regime| last.batch_size >= batch_size)
                || batch_size == 0
            {
                return Err(r.error("corrupted: regimes out of order"));
            }
            regimes.push(regime);
        }
        let profile = if r.bool()? {
            let total_epochs = r.u64()?;
            let runs_count = r.count(32)?;
            let mut runs = Vec::with_capacity(runs_count);
            let mut sum = 0_u64;
            for _ in 0..runs_count {
                let run = Run {
                    regime: r.below(count as u64)?,
                    epochs: r.u64()?,
                    seconds: r.finite(true)?,
                    rounded: r.finite(true)?,
                };
                sum = sum
                    .checked_add(run.epochs)
                    .ok_or_else(|| r.error("corrupted: epochs overflow"))?;
                runs.push(run);
            }
            if sum != total_epochs || runs.is_empty() {
                return Err(r.error("corrupted: profile runs do not add up"));
            }
            Some(Profile { runs, total_epochs })
        } else {
            None
        };
        let total_epochs = r.u64()?;
        let has_samples = r.bool()?;
        let samples = r.f64()?;
        let completed = r.u64()?;
        let fraction = r.f64()?;
        let current = r.below(count as u64)?;
        let has_last = r.bool()?;
        let last = r.below(count as u64)?;
        if total_epochs == 0
            || completed > total_epochs
            || !(0.0..1.0).contains(&fraction)
            || profile
                .as_ref()
                .is_some_and(|p| p.total_epochs != total_epochs)
        {
            return Err(r.error("corrupted: job counters"));
        }
        let mut transitions = Vec::with_capacity(count * count);
        for _ in 0..count * count {
            transitions.push(r.finite(true)?);
        }
        let window = WindowCalibration::from_parts((r.f64()?, r.u64()?, r.u64()?, r.f64()?));
        Ok(Self {
            regimes,
            profile,
            total_epochs,
            samples_per_epoch: has_samples.then_some(samples),
            completed,
            fraction,
            current,
            last_completed: has_last.then_some(last),
            transitions,
            window,
        })
    }
}

/// One thread's share of a prediction: a run of jobs and the matching output slices.
struct Task<'j, 'o> {
    jobs: &'j [&'j JobModel],
    mean: &'o mut [f64],
    std: &'o mut [f64],
    offsets: &'o mut [f64],
    valuations: &'o mut [f64],
}

impl Task<'_, '_> {
    fn run(
        self,
        estimator: Estimator,
        settings: &ModelSettings,
        num_rounds: usize,
        round_seconds: f64,
    ) -> Result<(), AdaptationError> {
        let mut workspace = Workspace::default();
        let mut rows = self.valuations.chunks_mut(num_rounds.max(1));
        let outputs = self
            .mean
            .iter_mut()
            .zip(self.std.iter_mut())
            .zip(self.offsets.iter_mut());
        for (job, ((mean, std), offset)) in self.jobs.iter().zip(outputs) {
            let row: &mut [f64] = if num_rounds == 0 {
                &mut []
            } else {
                rows.next().unwrap_or_default()
            };
            (*mean, *std, *offset) =
                job.predict_with(estimator, settings, round_seconds, row, &mut workspace)?;
        }
        Ok(())
    }
}

/// Jobs per worker thread below which spreading the work does not pay.
const JOBS_PER_THREAD: usize = 512;

fn thread_count(requested: usize, jobs: usize) -> usize {
    let available = if requested == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        requested
    };
    available.min(jobs / JOBS_PER_THREAD).max(1)
}

fn unknown_job(field: &str, job_id: i64) -> AdaptationError {
    AdaptationError::new(field, format!("job {job_id} is not held"))
}

/// Remaining runtime `(mean, std)` in seconds of one job, from the batch sizes of its epochs so
/// far (the completed ones, then the one in progress), its candidate regimes and its length.
///
/// This builds a [`JobModel`] without a profile and runs the same observation and prediction
/// code as [`JobModels`]. The `dirichlet` estimator observes `batch_sizes_so_far` (in place of
/// the profile); `oracle` is unavailable (there is no future schedule).
pub fn predict_remaining(
    batch_sizes_so_far: &[i64],
    regime_batch_sizes: &[i64],
    regime_seconds: &[f64],
    total_epochs: i64,
    epoch_fraction: f64,
    estimator: Estimator,
    settings: &ModelSettings,
) -> Result<(f64, f64), AdaptationError> {
    settings.validate()?;
    let (&current, completed) = batch_sizes_so_far.split_last().ok_or_else(|| {
        AdaptationError::new(
            "batch_sizes_so_far",
            "is empty: give at least the batch size of the epoch in progress",
        )
    })?;
    let first = batch_sizes_so_far.first().copied().unwrap_or(current);
    let mut job = JobModel::from_regimes(regime_batch_sizes, regime_seconds, total_epochs, first)?;
    if batch_sizes_so_far.len() as u64 > job.total_epochs {
        return Err(AdaptationError::new(
            "batch_sizes_so_far",
            format!(
                "has {} epochs but the job has only {total_epochs}",
                batch_sizes_so_far.len()
            ),
        ));
    }
    if !(epoch_fraction.is_finite() && (0.0..1.0).contains(&epoch_fraction)) {
        return Err(AdaptationError::new(
            "epoch_fraction",
            format!("must be in [0, 1), got {epoch_fraction}"),
        ));
    }
    let update = ProgressUpdate {
        job_id: 0,
        epochs_done: completed.len() as f64 + epoch_fraction,
        current_batch_size: current,
        completed_batch_sizes: Some(completed),
    };
    let valid = job.check_progress(&update).map_err(|e| {
        let field = if e.field == "current_batch_sizes" || e.field == "completed_batch_sizes" {
            "batch_sizes_so_far".to_string()
        } else {
            e.field
        };
        AdaptationError::new(field, e.reason.replace("job 0: ", ""))
    })?;
    job.apply_progress(valid);
    let (mean, std, _) = job.predict_into(estimator, settings, 1.0, &mut [])?;
    Ok((mean, std))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(epochs: usize) -> (Vec<i64>, Vec<f64>) {
        (vec![32; epochs], vec![10.0; epochs])
    }

    #[test]
    fn slots_stay_consistent_through_removals() -> Result<(), AdaptationError> {
        let mut models = JobModels::new(ModelSettings::default())?;
        for (id, epochs) in [(5, 5), (1, 1), (9, 9), (3, 3), (7, 7)] {
            let (bs, secs) = spec(epochs);
            let job = JobSpec {
                batch_sizes: &bs,
                epoch_seconds: &secs,
                extra_regimes: &[],
                samples_per_epoch: None,
            };
            models.add(id, &job)?;
        }
        assert_eq!(models.job_ids(), vec![1, 3, 5, 7, 9]);
        models.remove(1)?;
        models.remove(9)?;
        assert!(models.remove(9).is_err());
        assert_eq!(models.job_ids(), vec![3, 5, 7]);
        for id in [3, 5, 7] {
            assert_eq!(models.get(id).map(JobModel::total_epochs), Some(id as u64));
        }
        let prediction = models.predict(None, Estimator::Oracle, 0, 120.0)?;
        assert_eq!(prediction.mean_seconds, vec![30.0, 50.0, 70.0]);
        Ok(())
    }

    #[test]
    fn observe_is_all_or_nothing() -> Result<(), AdaptationError> {
        let mut models = JobModels::new(ModelSettings::default())?;
        let (bs, secs) = spec(4);
        let job = JobSpec {
            batch_sizes: &bs,
            epoch_seconds: &secs,
            extra_regimes: &[],
            samples_per_epoch: None,
        };
        models.add(1, &job)?;
        models.add(2, &job)?;
        let good = ProgressUpdate {
            job_id: 1,
            epochs_done: 2.0,
            current_batch_size: 32,
            completed_batch_sizes: None,
        };
        let bad = ProgressUpdate {
            job_id: 2,
            epochs_done: 9.0,
            ..good
        };
        let err = models.observe(&[good, bad]).err();
        assert_eq!(err.map(|e| e.field), Some("epochs_done".to_string()));
        assert_eq!(models.get(1).map(JobModel::epochs_done), Some(0.0));
        Ok(())
    }
}
