//! Bindings of `shockwave_core::market` (to be written).

use pyo3::prelude::*;

/// Add this module's functions and classes to `shockwave._core`.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
