//! PyO3 bindings: the `shockwave._core` extension module.
//!
//! This crate only validates arguments, converts them to and from numpy arrays, and releases the
//! GIL around long computations. The algorithms live in `shockwave-core`. Each binding module
//! registers its functions and classes through its own `register`.

use pyo3::prelude::*;

mod adaptation;
mod market;

/// Version of the Rust core compiled into this extension.
#[pyfunction]
fn core_version() -> &'static str {
    shockwave_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    market::register(m)?;
    adaptation::register(m)?;
    Ok(())
}
