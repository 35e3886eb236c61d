//! Pure-Rust core of the shockwave cluster scheduler.
//!
//! This crate knows nothing about Python: the binding crate (`rust/python`) validates and converts
//! arguments and calls into the modules here. Every public function assumes its inputs were
//! validated at that boundary, and reports anything it can still detect as an error value, never a
//! panic.
//!
//! Modules:
//! - [`market`]: the dynamic Fisher market (proportional response, certified) and the rounding of
//!   its shares into an integral round schedule;
//! - [`adaptation`]: the stochastic model of batch-size adaptation (remaining-runtime estimators
//!   and the market's valuations);
//! - [`job_sums`]: sums over jobs, in their order, of terms shared by classes of identical jobs
//!   (the heterogeneous policies' interior point);
//! - [`error`]: the shape shared by the error types of the module families;
//! - [`limits`]: checks of input-chosen sizes against the machine's memory, before allocating.

pub mod adaptation;
mod buffers;
pub mod error;
pub mod job_sums;
pub mod limits;
pub mod market;
mod threads;

/// Version of the core crate, reported by `shockwave._core.core_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
