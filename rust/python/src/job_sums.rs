//! `class_sum`: sums over jobs of per-class terms, in the jobs' order (`shockwave_core::job_sums`).

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::convert::{contiguous, frozen_vector};
use crate::errors::{input_error, BindingResult};
use crate::guarded;

/// Jobs above which the sum runs without the GIL.
const DETACH_JOBS: usize = 4096;

/// `out[f] = sum over jobs j, then rows i, of terms[members[j], i, f]`, added one after another
/// from zero (the order of numpy's `einsum("nif,ni->f")` over every job's row): `terms` a
/// C-contiguous `(classes, rows, width)` float64 array, `members` the class of each job.
#[pyfunction]
fn class_sum<'py>(
    py: Python<'py>,
    terms: PyReadonlyArray3<'py, f64>,
    members: PyReadonlyArray1<'py, i64>,
) -> PyResult<Py<PyArray1<f64>>> {
    guarded(|| {
        let [classes, rows, width] = *terms.shape() else {
            return Err(input_error("terms", "must be a 3-D array"));
        };
        let values = contiguous(&terms, "terms")?;
        let members = contiguous(&members, "members")?;
        let classes_of: Vec<usize> = members
            .iter()
            .enumerate()
            .map(|(j, &class)| match usize::try_from(class) {
                Ok(c) if c < classes => Ok(c),
                _ => Err(input_error(
                    "members",
                    format!("job {j} is in class {class}, but terms has {classes} classes"),
                )),
            })
            .collect::<BindingResult<_>>()?;
        let sum =
            |values: &[f64]| shockwave_core::job_sums::class_sum(values, rows, width, &classes_of);
        let out = if classes_of.len() > DETACH_JOBS {
            let owned = values.to_vec();
            py.detach(move || sum(&owned))
        } else {
            sum(values)
        };
        let out =
            out.ok_or_else(|| input_error("terms", "does not hold rows x width per class"))?;
        Ok(frozen_vector(py, out)?)
    })
}

/// Add this module's functions to `shockwave._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(class_sum, m)?)?;
    Ok(())
}
