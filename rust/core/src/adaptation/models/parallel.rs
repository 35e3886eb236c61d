//! A prediction split over worker threads: one task per thread, each a run of jobs and the
//! matching output slices (results do not depend on the number of threads).

use super::super::error::AdaptationError;
use super::job_model::{JobModel, Workspace};
use super::settings::{Estimator, ModelSettings};

/// One thread's share of a prediction: a run of jobs and the matching output slices.
pub(super) struct Task<'j, 'o> {
    pub(super) jobs: &'j [&'j JobModel],
    pub(super) mean: &'o mut [f64],
    pub(super) std: &'o mut [f64],
    pub(super) offsets: &'o mut [f64],
    pub(super) valuations: &'o mut [f64],
}

impl Task<'_, '_> {
    pub(super) fn run(
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

/// Threads for a prediction of `jobs` jobs (see [`crate::threads::thread_count`]).
pub(super) fn thread_count(requested: usize, jobs: usize) -> usize {
    crate::threads::thread_count(requested, jobs, JOBS_PER_THREAD)
}
