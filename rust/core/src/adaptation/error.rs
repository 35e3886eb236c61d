//! The error type of the adaptation model.

use std::fmt;

/// Invalid input to the adaptation model. The message names the offending argument or field
/// (and the job, where there is one), so the Python binding can raise it as a `ValueError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdaptationError {
    /// Name of the argument or field that is wrong, e.g. `"epochs_done"`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl AdaptationError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// An error about `field` of job `job_id`.
    pub fn for_job(job_id: i64, field: impl Into<String>, reason: impl fmt::Display) -> Self {
        Self::new(field, format!("job {job_id}: {reason}"))
    }
}

impl fmt::Display for AdaptationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for AdaptationError {}
