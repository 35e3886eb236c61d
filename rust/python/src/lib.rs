//! PyO3 bindings: the `shockwave._core` extension module.
//!
//! This crate only validates arguments, converts them to and from numpy arrays, and releases the
//! GIL around long computations. The algorithms live in `shockwave-core`.

use pyo3::prelude::*;

/// Version of the Rust core compiled into this extension.
#[pyfunction]
fn core_version() -> &'static str {
    shockwave_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    Ok(())
}
