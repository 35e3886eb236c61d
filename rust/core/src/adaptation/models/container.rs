//! [`JobModels`]: the adaptation state of every active job, keyed by job id, and its batched
//! prediction.

use std::collections::BTreeSet;

use super::super::error::AdaptationError;
use super::id_map::IdMap;
use super::job_model::JobModel;
use super::observations::{JobSpec, ProgressUpdate, ThroughputSample};
use super::parallel::{thread_count, Task};
use super::settings::{Estimator, ModelSettings};
use crate::threads::split_runs;

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

/// A job's latest prediction, kept with what it was asked for: a later request for the same
/// estimator, window and round length is answered from it as long as the job's state has not
/// changed since (every change drops it).
#[derive(Debug, Clone)]
pub(super) struct Memo {
    estimator: Estimator,
    /// `round_seconds` by its bits.
    round_seconds: u64,
    mean: f64,
    std: f64,
    offset: f64,
    /// One entry per round of the window (its length is the window's).
    valuations: Vec<f64>,
}

/// The adaptation state of every active job, keyed by job id.
///
/// A prediction is a function of a job's state, the settings and the request only, so each
/// job's latest one is kept (a [`Memo`]) and reused until the job's state changes: between two
/// rounds of a simulation only the jobs that ran (progressed or were measured) are predicted
/// again, and every answer is bit for bit the one a fresh prediction gives. The memos are not
/// part of the state's bytes.
#[derive(Debug, Clone)]
pub struct JobModels {
    pub(super) settings: ModelSettings,
    /// Job states, in no particular order.
    pub(super) slots: Vec<JobModel>,
    /// Job id of each slot.
    pub(super) slot_ids: Vec<i64>,
    /// Latest prediction of each slot, while the job's state is unchanged since.
    pub(super) memos: Vec<Option<Memo>>,
    /// Slot of each job id.
    pub(super) index: IdMap,
    /// The ids held, ascending (a set: adding and removing a job cost `O(log N)`).
    pub(super) order: BTreeSet<i64>,
}

impl JobModels {
    /// An empty container.
    pub fn new(settings: ModelSettings) -> Result<Self, AdaptationError> {
        settings.validate()?;
        Ok(Self {
            settings,
            slots: Vec::new(),
            slot_ids: Vec::new(),
            memos: Vec::new(),
            index: IdMap::default(),
            order: BTreeSet::new(),
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
        self.order.iter().copied().collect()
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
            .map_err(|e| AdaptationError::new(e.argument, format!("job {job_id}: {}", e.reason)))?;
        self.insert(job_id, job);
        Ok(())
    }

    /// Hold `job` under `job_id` (not held yet).
    pub(super) fn insert(&mut self, job_id: i64, job: JobModel) {
        let slot = self.slots.len();
        self.slots.push(job);
        self.slot_ids.push(job_id);
        self.memos.push(None);
        self.index.insert(job_id, slot);
        self.order.insert(job_id);
    }

    /// Remove a job (on completion).
    pub fn remove(&mut self, job_id: i64) -> Result<(), AdaptationError> {
        let slot = self.slot("job_id", job_id)?;
        self.index.remove(&job_id);
        self.order.remove(&job_id);
        self.slots.swap_remove(slot);
        self.slot_ids.swap_remove(slot);
        self.memos.swap_remove(slot);
        // The last slot moved into `slot`.
        let moved = self.slots.len();
        if slot < moved {
            if let Some(&moved_id) = self.slot_ids.get(slot) {
                self.index.insert(moved_id, slot);
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
                if job.apply_progress(update) {
                    self.forget(slot);
                }
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
                self.forget(slot);
            }
        }
        Ok(())
    }

    /// Drop the memo of `slot` (its job's state changed).
    fn forget(&mut self, slot: usize) {
        if let Some(memo) = self.memos.get_mut(slot) {
            *memo = None;
        }
    }

    /// Predict the jobs `job_ids` (all held jobs in ascending id order if `None`).
    ///
    /// Jobs whose state has not changed since they were last predicted for the same estimator,
    /// window and round length are answered from their memo; the others are predicted (over
    /// worker threads) and memoised.
    pub fn predict(
        &mut self,
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
        let slots: Vec<usize> = ids
            .iter()
            .map(|&id| self.slot("job_ids", id))
            .collect::<Result<_, _>>()?;
        let n = slots.len();
        if num_rounds > crate::limits::MAX_ROUNDS {
            return Err(AdaptationError::new(
                "num_rounds",
                format!(
                    "{num_rounds} rounds; a window may have at most {} (2^32)",
                    crate::limits::MAX_ROUNDS
                ),
            ));
        }
        let what = format!("valuations of {n} jobs x {num_rounds} rounds");
        let cells = n.checked_mul(num_rounds);
        crate::limits::check_memory(
            cells.and_then(|cells| crate::limits::bytes_of(cells, 8)),
            &what,
        )
        .map_err(|message| AdaptationError::new("num_rounds", message))?;
        let mut prediction = Prediction {
            job_ids: ids,
            mean_seconds: vec![0.0; n],
            std_seconds: vec![0.0; n],
            valuations: crate::limits::try_filled(n * num_rounds, 0.0, "num_rounds", &what)?,
            offsets: vec![0.0; n],
            num_rounds,
        };
        // Rows answered by a memo; the others are predicted below.
        let mut misses = Vec::new();
        for (row, &slot) in slots.iter().enumerate() {
            match self.memos.get(slot).and_then(Option::as_ref) {
                Some(memo) if memo.answers(estimator, num_rounds, round_seconds) => {
                    prediction.set_row(row, memo.mean, memo.std, memo.offset, &memo.valuations);
                }
                _ => misses.push(row),
            }
        }
        let jobs: Vec<&JobModel> = misses
            .iter()
            .map(|&row| {
                slots
                    .get(row)
                    .and_then(|&slot| self.slots.get(slot))
                    .ok_or_else(|| AdaptationError::new("predict", "inconsistent slots"))
            })
            .collect::<Result<_, _>>()?;
        let fresh = predict_jobs(&jobs, estimator, &self.settings, num_rounds, round_seconds)?;
        let fresh_rows = fresh.mean.iter().zip(&fresh.std).zip(&fresh.offsets);
        for (k, (&row, ((&mean, &std), &offset))) in misses.iter().zip(fresh_rows).enumerate() {
            let values = fresh
                .valuations
                .get(k * num_rounds..(k + 1) * num_rounds)
                .unwrap_or_default();
            prediction.set_row(row, mean, std, offset, values);
            let memo = slots.get(row).and_then(|&slot| self.memos.get_mut(slot));
            if let Some(memo) = memo {
                *memo = Memo::of(estimator, round_seconds, (mean, std, offset), values);
            }
        }
        Ok(prediction)
    }
}

impl Memo {
    /// Whether this memo answers a request for `estimator`, `num_rounds` and `round_seconds`.
    fn answers(&self, estimator: Estimator, num_rounds: usize, round_seconds: f64) -> bool {
        self.estimator == estimator
            && self.valuations.len() == num_rounds
            && self.round_seconds == round_seconds.to_bits()
    }

    /// The memo of one prediction (`None` if its valuations cannot be allocated: the job is
    /// then predicted again next time).
    fn of(
        estimator: Estimator,
        round_seconds: f64,
        (mean, std, offset): (f64, f64, f64),
        valuations: &[f64],
    ) -> Option<Self> {
        let mut kept = Vec::new();
        kept.try_reserve_exact(valuations.len()).ok()?;
        kept.extend_from_slice(valuations);
        Some(Self {
            estimator,
            round_seconds: round_seconds.to_bits(),
            mean,
            std,
            offset,
            valuations: kept,
        })
    }
}

impl Prediction {
    fn set_row(&mut self, row: usize, mean: f64, std: f64, offset: f64, valuations: &[f64]) {
        let rounds = self.num_rounds;
        if let (Some(m), Some(s), Some(o), Some(v)) = (
            self.mean_seconds.get_mut(row),
            self.std_seconds.get_mut(row),
            self.offsets.get_mut(row),
            self.valuations.get_mut(row * rounds..(row + 1) * rounds),
        ) {
            (*m, *s, *o) = (mean, std, offset);
            v.copy_from_slice(valuations);
        }
    }
}

/// Outputs of [`predict_jobs`], one entry (one row of `num_rounds` valuations) per job.
struct Predicted {
    mean: Vec<f64>,
    std: Vec<f64>,
    offsets: Vec<f64>,
    valuations: Vec<f64>,
}

/// Predict `jobs`, split over worker threads (the results do not depend on their number).
fn predict_jobs(
    jobs: &[&JobModel],
    estimator: Estimator,
    settings: &ModelSettings,
    num_rounds: usize,
    round_seconds: f64,
) -> Result<Predicted, AdaptationError> {
    let n = jobs.len();
    let mut out = Predicted {
        mean: vec![0.0; n],
        std: vec![0.0; n],
        offsets: vec![0.0; n],
        valuations: crate::limits::try_filled(
            n * num_rounds,
            0.0,
            "num_rounds",
            &format!("valuations of {n} jobs x {num_rounds} rounds"),
        )?,
    };
    // One disjoint task per run of jobs (`crate::threads::runs`).
    let runs = crate::threads::runs(n, thread_count(settings.threads, n));
    let pieces = split_runs(&mut out.mean, &runs, 1)
        .into_iter()
        .zip(split_runs(&mut out.std, &runs, 1))
        .zip(split_runs(&mut out.offsets, &runs, 1))
        .zip(split_runs(&mut out.valuations, &runs, num_rounds));
    let mut tasks = Vec::with_capacity(runs.len());
    let mut j_rest = jobs;
    for (run, (((mean, std), offsets), valuations)) in runs.iter().zip(pieces) {
        let Some((j, j2)) = j_rest.split_at_checked(run.len()) else {
            return Err(AdaptationError::new("predict", "inconsistent output sizes"));
        };
        tasks.push(Task {
            jobs: j,
            mean,
            std,
            offsets,
            valuations,
        });
        j_rest = j2;
    }
    let run = |task: Task<'_, '_>| task.run(estimator, settings, num_rounds, round_seconds);
    for result in crate::threads::map_all(tasks, run) {
        result?;
    }
    Ok(out)
}

pub(super) fn unknown_job(field: &str, job_id: i64) -> AdaptationError {
    AdaptationError::new(field, format!("job {job_id} is not held"))
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
                epoch_counts: None,
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
            epoch_counts: None,
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
        assert_eq!(err.map(|e| e.argument), Some("epochs_done".to_string()));
        assert_eq!(models.get(1).map(JobModel::epochs_done), Some(0.0));
        Ok(())
    }
}
