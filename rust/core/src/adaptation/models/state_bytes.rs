//! The versioned byte encoding of a [`JobModels`] (format `SWJM`, version 1): every value little
//! endian, floats by their bits; decoding checks every length, index and value before
//! allocating.

use super::super::calibration::WindowCalibration;
use super::super::encoding::{Reader, Writer};
use super::super::error::AdaptationError;
use super::super::markov::MarkovPrior;
use super::super::profile::{Profile, Regime, Run, MAX_REGIMES};
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
            let slot = models.slots.len();
            models.slots.push(job);
            models.slot_ids.push(id);
            models.index.insert(id, slot);
        }
        r.finish()?;
        models.order = models.slot_ids.iter().copied().collect();
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
