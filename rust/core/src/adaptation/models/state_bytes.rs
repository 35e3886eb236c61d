//! The versioned byte encoding of a [`JobModels`] (format `SWJM`, version 1): every value little
//! endian, floats by their bits; decoding checks every length, index and value before
//! allocating, and every value against the bounds the model's own constructors enforce (epoch
//! counts, durations, samples per epoch, calibration), so that decoded bytes, whatever wrote
//! them, hold a model that [`JobModels::add`] could have built.

use super::super::calibration::WindowCalibration;
use super::super::encoding::{Reader, Writer};
use super::super::error::AdaptationError;
use super::super::markov::MarkovPrior;
use super::super::profile::{Profile, Regime, Run, MAX_EPOCHS_PER_JOB, MAX_REGIMES};
use super::container::JobModels;
use super::job_model::JobModel;
use super::settings::ModelSettings;

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
            models.insert(id, job);
        }
        r.finish()?;
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
                seconds: r.duration()?,
                rounded_seconds: r.duration()?,
                must_visit: r.bool()?,
                completed_epochs: r.finite(true)?,
                rate_sum: r.finite(true)?,
                rate_samples: r.finite(true)?,
            };
            if regimes
                .last()
                .is_some_and(|last: &Regime| last.batch_size >= batch_size)
                || batch_size == 0
                || batch_size > i64::MAX as u64
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
                    seconds: r.duration()?,
                    rounded: r.duration()?,
                };
                if run.epochs == 0 {
                    return Err(r.error("corrupted: a profile run of 0 epochs"));
                }
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
            || total_epochs > MAX_EPOCHS_PER_JOB
            || completed > total_epochs
            || (has_samples && !(samples.is_finite() && samples > 0.0))
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
        let measured = r.finite(true)?;
        let last_round = r.u64()?;
        let samples_seen = r.u64()?;
        let factor = r.finite(true)?;
        if factor <= 0.0 {
            return Err(r.error("corrupted: calibration factor"));
        }
        let window = WindowCalibration::from_parts((measured, last_round, samples_seen, factor));
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

#[cfg(test)]
mod tests {
    use super::super::observations::JobSpec;
    use super::*;

    fn one_job() -> Result<JobModels, AdaptationError> {
        let mut models = JobModels::new(ModelSettings::default())?;
        let job = JobSpec {
            batch_sizes: &[32, 64],
            epoch_seconds: &[10.0, 6.0],
            epoch_counts: Some(&[3, 2]),
            extra_regimes: &[],
            samples_per_epoch: Some(1000.0),
        };
        models.add(7, &job)?;
        Ok(models)
    }

    fn refused(models: &JobModels) -> bool {
        JobModels::from_bytes(&models.to_bytes()).is_err()
    }

    #[test]
    fn a_state_round_trips_to_the_same_bytes() -> Result<(), AdaptationError> {
        let models = one_job()?;
        let copy = JobModels::from_bytes(&models.to_bytes())?;
        assert_eq!(copy.to_bytes(), models.to_bytes());
        Ok(())
    }

    #[test]
    fn decoding_refuses_what_add_refuses() -> Result<(), AdaptationError> {
        // Each state below is well formed but holds a value no constructor accepts: decoding it
        // must fail as `add` would, not hold a model that hangs or divides by zero later.
        let mut epochs = one_job()?;
        epochs.slots[0].total_epochs = MAX_EPOCHS_PER_JOB + 1;
        epochs.slots[0].profile = None;
        assert!(refused(&epochs));
        let mut tiny = one_job()?;
        tiny.slots[0].regimes[0].seconds = 5e-324;
        assert!(refused(&tiny));
        let mut samples = one_job()?;
        samples.slots[0].samples_per_epoch = Some(0.0);
        assert!(refused(&samples));
        let mut empty_run = one_job()?;
        if let Some(profile) = empty_run.slots[0].profile.as_mut() {
            profile.runs[0].epochs = 0;
            profile.runs[1].epochs = 5;
        }
        assert!(refused(&empty_run));
        Ok(())
    }
}
