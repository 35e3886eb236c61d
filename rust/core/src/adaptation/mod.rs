//! Stochastic model of dynamic batch-size adaptation: per-job remaining-runtime estimators and
//! the market's valuations.
//!
//! A job trains `E` epochs. Each epoch runs in one *regime*: a batch size with its own epoch
//! duration (seconds, on the job's gang). The candidate regimes are known up front (the distinct
//! batch sizes of the job's profile, plus optional extra candidates); which regime each *future*
//! epoch uses is not. Three estimators predict the remaining runtime from what has been seen:
//!
//! - [`Estimator::Dirichlet`]: the original Shockwave's posterior-mean estimator (a Dirichlet
//!   posterior over the proportions of batch sizes, observed on the profile schedule, with
//!   durations rounded to whole seconds and the original's sticky 40 % calibration), for fidelity
//!   experiments. See [`dirichlet`].
//! - [`Estimator::Markov`]: a Markov chain over regimes whose transition rows have Dirichlet
//!   priors (structural: batch sizes rarely go back; every regime the profile lists is visited
//!   before the end), learned online from the observed sequence, solved by a Bellman recursion
//!   over (epochs remaining, regime) that gives the mean, the standard deviation and the expected
//!   progress as a function of service time. See [`markov`].
//! - [`Estimator::Oracle`]: the true remaining schedule of the profile (ablations).
//!
//! From any estimator, [`JobModels::predict`] also derives the market's valuations: the expected
//! fraction of the job's epochs gained in each of the next `T` rounds, assuming **continuous
//! service from now** (the job runs in every round up to and including round `t`), so that a
//! job's valuations sum to at most its remaining fraction and are 0 after its expected finish;
//! and the offsets `c_i` = fraction of epochs done. See [`progress`].
//!
//! Throughput measurements calibrate the epoch durations online: the original's window rule for
//! `dirichlet` ([`calibration::WindowCalibration`]) and a shrunken per-regime rate ratio for
//! `markov` and `oracle` ([`calibration::rate_duration_factors`]).

pub mod calibration;
pub mod dirichlet;
mod encoding;
mod error;
pub mod markov;
mod models;
pub mod profile;
pub mod progress;

pub use error::AdaptationError;
pub use markov::MarkovPrior;
pub use models::{
    predict_remaining, Estimator, JobModel, JobModels, JobSpec, ModelSettings, Prediction,
    ProgressUpdate, ThroughputSample, ThroughputValue,
};
pub use profile::{Profile, Regime, MAX_EPOCHS_PER_JOB, MIN_EPOCH_SECONDS};
