//! Arguments in, results out: reading numpy arrays in place (with the shape and layout checks
//! that name the argument) and handing Rust-owned buffers to numpy without copying them.

use numpy::ndarray::{Array2, Dimension};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{input_error, BindingResult};

/// The data of a C-contiguous array, in place.
pub(crate) fn contiguous<'a, T: numpy::Element, D: Dimension>(
    array: &'a PyReadonlyArray<'_, T, D>,
    argument: &str,
) -> BindingResult<&'a [T]> {
    array
        .as_slice()
        .map_err(|_| input_error(argument, "must be a C-contiguous array"))
}

/// A 1-D array's values, copied (for work that runs without the GIL).
pub(crate) fn to_vec<T: numpy::Element + Copy>(array: &PyReadonlyArray1<'_, T>) -> Vec<T> {
    array.as_array().iter().copied().collect()
}

/// `name` must have as many entries as `reference`.
pub(crate) fn same_length(
    name: &str,
    len: usize,
    expected: usize,
    reference: &str,
) -> BindingResult<()> {
    if len == expected {
        Ok(())
    } else {
        Err(input_error(
            name,
            format!("has {len} entries but {reference} has {expected}"),
        ))
    }
}

/// Gang sizes as GPU counts.
pub(crate) fn gang_sizes_u32(gang_sizes: &[i64]) -> BindingResult<Vec<u32>> {
    gang_sizes
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            u32::try_from(g).map_err(|_| {
                input_error(
                    "gang_sizes",
                    format!("job {i} has gang size {g}, not a GPU count"),
                )
            })
        })
        .collect()
}

/// Mark an array read-only: a result object hands out the same array on every access, so a
/// caller cannot change the result under another's feet.
fn read_only(array: &Bound<'_, PyAny>) -> PyResult<()> {
    let kwargs = PyDict::new(array.py());
    kwargs.set_item("write", false)?;
    array.call_method("setflags", (), Some(&kwargs))?;
    Ok(())
}

/// A Rust vector as a read-only numpy vector (the buffer moves; no copy).
pub(crate) fn frozen_vector<T: numpy::Element>(
    py: Python<'_>,
    data: Vec<T>,
) -> PyResult<Py<PyArray1<T>>> {
    let array = data.into_pyarray(py);
    read_only(array.as_any())?;
    Ok(array.unbind())
}

/// A row-major Rust buffer as a `(rows, cols)` numpy matrix (the buffer moves; no copy).
pub(crate) fn matrix<T: numpy::Element>(
    py: Python<'_>,
    rows: usize,
    cols: usize,
    data: Vec<T>,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    Array2::from_shape_vec((rows, cols), data)
        .map(|array| array.into_pyarray(py))
        .map_err(|e| crate::errors::internal_error(py, format!("internal shape error: {e}")))
}

/// [`matrix`], read-only (for the fields of a result object).
pub(crate) fn frozen_matrix<T: numpy::Element>(
    py: Python<'_>,
    rows: usize,
    cols: usize,
    data: Vec<T>,
) -> PyResult<Py<PyArray2<T>>> {
    let array = matrix(py, rows, cols, data)?;
    read_only(array.as_any())?;
    Ok(array.unbind())
}
