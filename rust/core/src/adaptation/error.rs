//! The error type of the adaptation model.

use std::fmt;

use crate::error::{family, InputError};

/// Invalid input to the adaptation model: [`InputError`] of the adaptation family. The argument
/// names the offending argument or field (the reason names the job, where there is one).
pub type AdaptationError = InputError<family::Adaptation>;

impl AdaptationError {
    /// An error about `argument` of job `job_id`.
    pub fn for_job(job_id: i64, argument: impl Into<String>, reason: impl fmt::Display) -> Self {
        Self::new(argument, format!("job {job_id}: {reason}"))
    }
}
