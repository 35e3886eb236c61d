//! Bindings of `shockwave_core::adaptation`: the batched job models and the one-job predictor.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shockwave_core::adaptation::{
    predict_remaining as core_predict_remaining, AdaptationError, Estimator, JobModels, JobSpec,
    MarkovPrior, ModelSettings, ProgressUpdate, ThroughputSample, ThroughputValue,
};

fn value_error(err: AdaptationError) -> PyErr {
    PyValueError::new_err(err.to_string())
}

fn to_vec<T: numpy::Element + Copy>(array: &PyReadonlyArray1<'_, T>) -> Vec<T> {
    array.as_array().iter().copied().collect()
}

fn same_length(name: &str, len: usize, expected: usize, reference: &str) -> PyResult<()> {
    if len == expected {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{name}: has {len} entries but {reference} has {expected}"
        )))
    }
}

/// Prediction arrays: job ids, mean and std of the remaining runtime (seconds), the `(N, T)`
/// valuations and the offsets.
type PredictionArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Adaptation state of all active jobs (wrapped by `shockwave.adaptation.JobModels`).
#[pyclass(name = "JobModelsCore", module = "shockwave._core")]
pub struct PyJobModels {
    inner: JobModels,
}

#[pymethods]
impl PyJobModels {
    #[new]
    #[pyo3(signature = (
        *,
        round_durations = true,
        calibration_round_seconds = 120.0,
        calibration_strength = 1.0,
        prior_strength = 1.0,
        backward_share = 0.05,
        jump_decay = 0.25,
        deadline = true,
        max_blocks = 16,
        threads = 0,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        round_durations: bool,
        calibration_round_seconds: f64,
        calibration_strength: f64,
        prior_strength: f64,
        backward_share: f64,
        jump_decay: f64,
        deadline: bool,
        max_blocks: usize,
        threads: usize,
    ) -> PyResult<Self> {
        crate::guarded(|| {
            let settings = ModelSettings {
                round_durations,
                calibration_round_seconds,
                calibration_strength,
                prior: MarkovPrior {
                    strength: prior_strength,
                    backward_share,
                    jump_decay,
                    deadline,
                    max_blocks,
                },
                threads,
            };
            let inner = JobModels::new(settings).map_err(value_error)?;
            Ok(Self { inner })
        })
    }

    /// The whole state as versioned bytes (`shockwave_core::adaptation::JobModels::to_bytes`).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        crate::guarded(|| Ok(PyBytes::new(py, &self.inner.to_bytes())))
    }

    /// Rebuild from [`Self::to_bytes`]; `ValueError` naming `state` for anything else.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        crate::guarded(|| {
            JobModels::from_bytes(data)
                .map(|inner| Self { inner })
                .map_err(value_error)
        })
    }

    /// Pickle support: rebuilt by `from_bytes(to_bytes())`.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let rebuild = py.get_type::<Self>().getattr("from_bytes")?;
        let state = slf.borrow().to_bytes(py)?;
        Ok((rebuild, (state,)))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __contains__(&self, job_id: i64) -> bool {
        self.inner.contains(job_id)
    }

    fn job_ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.job_ids().into_pyarray(py)
    }

    #[pyo3(signature = (
        job_id, batch_sizes, epoch_seconds, extra_batch_sizes, extra_epoch_seconds,
        samples_per_epoch = None,
    ))]
    fn add(
        &mut self,
        job_id: i64,
        batch_sizes: PyReadonlyArray1<'_, i64>,
        epoch_seconds: PyReadonlyArray1<'_, f64>,
        extra_batch_sizes: PyReadonlyArray1<'_, i64>,
        extra_epoch_seconds: PyReadonlyArray1<'_, f64>,
        samples_per_epoch: Option<f64>,
    ) -> PyResult<()> {
        crate::guarded(|| {
            let extra_bs = to_vec(&extra_batch_sizes);
            let extra_s = to_vec(&extra_epoch_seconds);
            same_length(
                "extra_regimes",
                extra_s.len(),
                extra_bs.len(),
                "its batch sizes",
            )?;
            let extra: Vec<(i64, f64)> = extra_bs.into_iter().zip(extra_s).collect();
            let bs = to_vec(&batch_sizes);
            let secs = to_vec(&epoch_seconds);
            let spec = JobSpec {
                batch_sizes: &bs,
                epoch_seconds: &secs,
                extra_regimes: &extra,
                samples_per_epoch,
            };
            self.inner.add(job_id, &spec).map_err(value_error)
        })
    }

    fn remove(&mut self, job_id: i64) -> PyResult<()> {
        crate::guarded(|| self.inner.remove(job_id).map_err(value_error))
    }

    #[pyo3(signature = (
        job_ids, epochs_done, current_batch_sizes, completed_batch_sizes = None,
        completed_counts = None,
    ))]
    fn observe(
        &mut self,
        py: Python<'_>,
        job_ids: PyReadonlyArray1<'_, i64>,
        epochs_done: PyReadonlyArray1<'_, f64>,
        current_batch_sizes: PyReadonlyArray1<'_, i64>,
        completed_batch_sizes: Option<PyReadonlyArray1<'_, i64>>,
        completed_counts: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<()> {
        crate::guarded(|| {
            let ids = to_vec(&job_ids);
            let done = to_vec(&epochs_done);
            let current = to_vec(&current_batch_sizes);
            same_length("epochs_done", done.len(), ids.len(), "job_ids")?;
            same_length("current_batch_sizes", current.len(), ids.len(), "job_ids")?;
            let completed: Option<(Vec<i64>, Vec<i64>)> = match (
                completed_batch_sizes,
                completed_counts,
            ) {
                (None, None) => None,
                (Some(sizes), Some(counts)) => Some((to_vec(&sizes), to_vec(&counts))),
                _ => return Err(PyValueError::new_err(
                    "completed_counts: give completed_batch_sizes and completed_counts together",
                )),
            };
            let mut slices: Vec<Option<&[i64]>> = vec![None; ids.len()];
            if let Some((sizes, counts)) = &completed {
                same_length("completed_counts", counts.len(), ids.len(), "job_ids")?;
                let mut start = 0_usize;
                for (slot, &count) in slices.iter_mut().zip(counts) {
                    let count = usize::try_from(count).map_err(|_| {
                        PyValueError::new_err(format!("completed_counts: {count} is negative"))
                    })?;
                    let slice = sizes.get(start..start + count).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "completed_counts: sum to more than the {} completed_batch_sizes",
                            sizes.len()
                        ))
                    })?;
                    *slot = Some(slice);
                    start += count;
                }
                same_length(
                    "completed_batch_sizes",
                    sizes.len(),
                    start,
                    "the sum of completed_counts",
                )?;
            }
            let updates: Vec<ProgressUpdate<'_>> = ids
                .iter()
                .zip(&done)
                .zip(&current)
                .zip(&slices)
                .map(|(((&job_id, &epochs_done), &bs), &list)| ProgressUpdate {
                    job_id,
                    epochs_done,
                    current_batch_size: bs,
                    completed_batch_sizes: list,
                })
                .collect();
            let inner = &mut self.inner;
            py.detach(|| inner.observe(&updates)).map_err(value_error)
        })
    }

    fn observe_throughput(
        &mut self,
        py: Python<'_>,
        job_ids: PyReadonlyArray1<'_, i64>,
        round_indices: PyReadonlyArray1<'_, i64>,
        batch_sizes: PyReadonlyArray1<'_, i64>,
        values: PyReadonlyArray1<'_, f64>,
        kind: &str,
    ) -> PyResult<()> {
        crate::guarded(|| {
            let ids = to_vec(&job_ids);
            let rounds = to_vec(&round_indices);
            let bs = to_vec(&batch_sizes);
            let vals = to_vec(&values);
            same_length("round_indices", rounds.len(), ids.len(), "job_ids")?;
            same_length("batch_sizes", bs.len(), ids.len(), "job_ids")?;
            same_length(kind, vals.len(), ids.len(), "job_ids")?;
            let wrap: fn(f64) -> ThroughputValue = match kind {
                "epoch_seconds" => ThroughputValue::EpochSeconds,
                "steps_per_second" => ThroughputValue::StepsPerSecond,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "kind: must be 'epoch_seconds' or 'steps_per_second', got {other:?}"
                    )))
                }
            };
            let samples: Vec<ThroughputSample> = ids
                .iter()
                .zip(&rounds)
                .zip(&bs)
                .zip(&vals)
                .map(
                    |(((&job_id, &round), &batch_size), &value)| ThroughputSample {
                        job_id,
                        round,
                        batch_size,
                        value: wrap(value),
                    },
                )
                .collect();
            let inner = &mut self.inner;
            py.detach(|| inner.observe_throughput(&samples))
                .map_err(value_error)
        })
    }

    #[pyo3(signature = (num_rounds, round_seconds, estimator, job_ids = None))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        num_rounds: usize,
        round_seconds: f64,
        estimator: &str,
        job_ids: Option<PyReadonlyArray1<'py, i64>>,
    ) -> PyResult<PredictionArrays<'py>> {
        crate::guarded(|| {
            let estimator = Estimator::parse(estimator).map_err(value_error)?;
            let ids: Option<Vec<i64>> = job_ids.as_ref().map(to_vec);
            let inner = &self.inner;
            let prediction = py
                .detach(|| inner.predict(ids.as_deref(), estimator, num_rounds, round_seconds))
                .map_err(value_error)?;
            let n = prediction.job_ids.len();
            let valuations = Array2::from_shape_vec((n, num_rounds), prediction.valuations)
                .map_err(|e| PyValueError::new_err(format!("valuations: {e}")))?;
            Ok((
                prediction.job_ids.into_pyarray(py),
                prediction.mean_seconds.into_pyarray(py),
                prediction.std_seconds.into_pyarray(py),
                valuations.into_pyarray(py),
                prediction.offsets.into_pyarray(py),
            ))
        })
    }

    /// `(epochs_done, current_batch_size, regime batch sizes, window factor, rate factors)`.
    #[allow(clippy::type_complexity)]
    fn state<'py>(
        &self,
        py: Python<'py>,
        job_id: i64,
    ) -> PyResult<(
        f64,
        u64,
        Bound<'py, PyArray1<u64>>,
        f64,
        Bound<'py, PyArray1<f64>>,
    )> {
        crate::guarded(|| {
            let job = self.inner.get(job_id).ok_or_else(|| {
                PyValueError::new_err(format!("job_id: job {job_id} is not held"))
            })?;
            let strength = self.inner.settings().calibration_strength;
            Ok((
                job.epochs_done(),
                job.current_batch_size(),
                job.regimes()
                    .iter()
                    .map(|regime| regime.batch_size)
                    .collect::<Vec<u64>>()
                    .into_pyarray(py),
                job.window_factor(),
                job.rate_factors(strength).into_pyarray(py),
            ))
        })
    }
}

/// Remaining runtime `(mean, std)` of one job, seconds.
#[pyfunction]
#[pyo3(signature = (
    batch_sizes_so_far, regime_batch_sizes, regime_seconds, total_epochs, *,
    estimator = "markov", epoch_fraction = 0.0, round_durations = true,
))]
fn predict_remaining(
    batch_sizes_so_far: PyReadonlyArray1<'_, i64>,
    regime_batch_sizes: PyReadonlyArray1<'_, i64>,
    regime_seconds: PyReadonlyArray1<'_, f64>,
    total_epochs: i64,
    estimator: &str,
    epoch_fraction: f64,
    round_durations: bool,
) -> PyResult<(f64, f64)> {
    crate::guarded(|| {
        let estimator = Estimator::parse(estimator).map_err(value_error)?;
        let settings = ModelSettings {
            round_durations,
            ..ModelSettings::default()
        };
        core_predict_remaining(
            &to_vec(&batch_sizes_so_far),
            &to_vec(&regime_batch_sizes),
            &to_vec(&regime_seconds),
            total_epochs,
            epoch_fraction,
            estimator,
            &settings,
        )
        .map_err(value_error)
    })
}

/// Add this module's functions and classes to `shockwave._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyJobModels>()?;
    m.add_function(wrap_pyfunction!(predict_remaining, m)?)?;
    Ok(())
}
