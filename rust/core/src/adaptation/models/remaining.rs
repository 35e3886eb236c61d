//! [`predict_remaining`]: the remaining runtime of one job without a profile, by the same code as
//! [`super::JobModels`].

use super::super::error::AdaptationError;
use super::job_model::JobModel;
use super::observations::ProgressUpdate;
use super::settings::{Estimator, ModelSettings};

/// Remaining runtime `(mean, std)` in seconds of one job, from the batch sizes of its epochs so
/// far (the completed ones, then the one in progress), its candidate regimes and its length.
///
/// This builds a [`JobModel`] without a profile and runs the same observation and prediction
/// code as [`super::JobModels`]. The `dirichlet` estimator observes `batch_sizes_so_far` (in place of
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
        let field = if e.argument == "current_batch_sizes" || e.argument == "completed_batch_sizes"
        {
            "batch_sizes_so_far".to_string()
        } else {
            e.argument
        };
        AdaptationError::new(field, e.reason.replace("job 0: ", ""))
    })?;
    job.apply_progress(valid);
    let (mean, std, _) = job.predict_into(estimator, settings, 1.0, &mut [])?;
    Ok((mean, std))
}
