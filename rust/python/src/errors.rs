//! Errors across the boundary: every input error of the core (either module family, with the
//! same shape) and of the binding's own checks becomes `shockwave.InputError`, a `ValueError`
//! that keeps `.argument` (the field) and `.reason`; an allocation of an input-chosen size that
//! failed (`InputError::out_of_memory`) becomes `MemoryError`, its message naming the argument;
//! a bug (a panic caught at the boundary) becomes `shockwave.errors.InternalError`, a
//! `RuntimeError`. Both classes are defined in Python (`shockwave.errors`, under its base
//! `ShockwaveError`) and imported here once.

use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use shockwave_core::error::InputError;

/// What a binding function can fail with: a rejected input, or an error Python already raised.
pub(crate) enum BindingError {
    /// An input error: the argument it concerns and why.
    Input { argument: String, reason: String },
    /// A Python exception (from numpy, a conversion, or the panic guard).
    Python(PyErr),
}

/// The result of a binding function's body (see [`crate::guarded`]).
pub(crate) type BindingResult<T> = Result<T, BindingError>;

/// An input error raised by the binding's own checks.
pub(crate) fn input_error(argument: impl Into<String>, reason: impl Into<String>) -> BindingError {
    BindingError::Input {
        argument: argument.into(),
        reason: reason.into(),
    }
}

impl<Family> From<InputError<Family>> for BindingError {
    fn from(error: InputError<Family>) -> Self {
        if error.is_out_of_memory() {
            // A fallible allocation of the size the argument chose failed: Python's MemoryError,
            // its message naming the argument like an input error's.
            return Self::Python(PyMemoryError::new_err(error.to_string()));
        }
        Self::Input {
            argument: error.argument,
            reason: error.reason,
        }
    }
}

impl From<PyErr> for BindingError {
    fn from(error: PyErr) -> Self {
        Self::Python(error)
    }
}

/// `shockwave.errors.InputError`, imported once.
static INPUT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `shockwave.errors.InternalError`, imported once.
static INTERNAL_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The class `shockwave.errors.InternalError` (also `shockwave._core.InternalError`).
pub(crate) fn internal_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    INTERNAL_ERROR.import(py, "shockwave.errors", "InternalError")
}

/// `shockwave.errors.InternalError(message)`: a bug in shockwave, reported as such.
pub(crate) fn internal_error(py: Python<'_>, message: String) -> PyErr {
    match internal_error_type(py) {
        Ok(class) => PyErr::from_type(class.clone(), (message,)),
        Err(error) => error,
    }
}

impl BindingError {
    /// The Python exception: `shockwave.InputError(argument, reason)` for an input error.
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self {
            Self::Python(error) => error,
            Self::Input { argument, reason } => {
                match INPUT_ERROR.import(py, "shockwave.errors", "InputError") {
                    Ok(class) => PyErr::from_type(class.clone(), (argument, reason)),
                    Err(error) => error,
                }
            }
        }
    }
}
