//! What the adaptation model is told: a job's profile on arrival, its progress, and measured
//! throughput.

/// A job to add: its profile (one entry per epoch) and optional extra candidate regimes.
#[derive(Debug, Clone, Copy)]
pub struct JobSpec<'a> {
    /// Batch size of every epoch of the profile (>= 1).
    pub batch_sizes: &'a [i64],
    /// Duration of every epoch of the profile on the job's gang, seconds (> 0).
    pub epoch_seconds: &'a [f64],
    /// `None`: one entry per epoch. Otherwise the profile is run-length encoded: entry `k` of
    /// `batch_sizes` and `epoch_seconds` stands for `epoch_counts[k]` (>= 1) consecutive epochs.
    pub epoch_counts: Option<&'a [u64]>,
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
