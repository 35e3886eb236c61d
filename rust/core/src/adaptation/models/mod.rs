//! Per-job state ([`JobModel`]) and the batched container of all active jobs ([`JobModels`]).
//!
//! * `settings.rs`: the estimators and the settings shared by all jobs, with their defaults;
//! * `observations.rs`: what the model is told (a job's profile, progress, throughput samples);
//! * `job_model.rs`: one job's state, its validation of observations and its predictors;
//! * `container.rs`: [`JobModels`], every active job keyed by id, and its batched prediction;
//! * `id_map.rs`: the map from job id to slot (a one-multiplication hasher);
//! * `parallel.rs`: the split of a prediction over worker threads;
//! * `state_bytes.rs`: the versioned byte encoding of the whole state;
//! * `remaining.rs`: [`predict_remaining`], the same code for one job without a profile.

mod container;
mod id_map;
mod job_model;
mod observations;
mod parallel;
mod remaining;
mod settings;
mod state_bytes;

pub use container::{JobModels, Prediction};
pub use job_model::JobModel;
pub use observations::{JobSpec, ProgressUpdate, ThroughputSample, ThroughputValue};
pub use remaining::predict_remaining;
pub use settings::{Estimator, ModelSettings};
