//! PyO3 bindings: the `shockwave._core` extension module.
//!
//! This crate only validates arguments, converts them to and from numpy arrays, and releases the
//! GIL around long computations. The algorithms live in `shockwave-core`. Each binding module
//! registers its functions and classes through its own `register`; `convert` reads arguments
//! and hands results to numpy, `errors` turns every input error into `shockwave.InputError`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

mod adaptation;
mod convert;
mod errors;
mod job_sums;
mod market;

use errors::BindingResult;

/// The guard of every binding: runs `body`, turns its input errors into `shockwave.InputError`
/// (a `ValueError` with `.argument` and `.reason`), and turns a Rust panic that escapes it into
/// `shockwave.errors.InternalError` (a `RuntimeError`, so an `Exception`, and a
/// `ShockwaveError`), where PyO3 would raise its `PanicException`, a `BaseException` that
/// `except Exception` does not catch.
pub(crate) fn guarded<T>(body: impl FnOnce() -> BindingResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result.map_err(|error| Python::attach(|py| error.into_pyerr(py))),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(Python::attach(|py| {
                errors::internal_error(
                    py,
                    format!(
                        "internal error in shockwave's Rust core (please report it): {message}"
                    ),
                )
            }))
        }
    }
}

/// Panic on purpose inside [`guarded`]: the test of the guard (not for other use). The one
/// deliberate panic of the crate.
#[pyfunction]
#[allow(clippy::panic)]
fn _panic_probe() -> PyResult<()> {
    guarded(|| -> BindingResult<()> {
        std::panic::panic_any("probe of the panic guard".to_string())
    })
}

/// Allocate `len` doubles fallibly, as the core allocates its input-sized buffers
/// (`shockwave_core::limits::try_filled`), and return how many it got: the test that a failed
/// allocation is a `MemoryError` naming the argument, not an abort (not for other use).
#[pyfunction]
fn _allocation_probe(len: usize) -> PyResult<usize> {
    guarded(|| {
        let buffer = shockwave_core::limits::try_filled::<
            f64,
            shockwave_core::error::family::Adaptation,
        >(len, 0.0, "len", "the allocation probe")?;
        Ok(buffer.len())
    })
}

/// Version of the Rust core compiled into this extension.
#[pyfunction]
fn core_version() -> &'static str {
    shockwave_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_probe, m)?)?;
    m.add_function(wrap_pyfunction!(_allocation_probe, m)?)?;
    m.add("InternalError", errors::internal_error_type(m.py())?)?;
    market::register(m)?;
    adaptation::register(m)?;
    job_sums::register(m)?;
    Ok(())
}
