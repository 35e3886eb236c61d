//! Bindings of `shockwave_core::adaptation`: the model's settings, the batched job models with
//! their typed prediction and per-job state, and the one-job predictor.

use std::cmp::Ordering;

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use shockwave_core::adaptation::{
    predict_remaining as core_predict_remaining, Estimator, JobModels, JobSpec, MarkovPrior,
    ModelSettings, ProgressUpdate, ThroughputSample, ThroughputValue,
};

use crate::convert::{frozen_matrix, frozen_vector, same_length, to_vec};
use crate::errors::{input_error, BindingResult};
use crate::guarded;

/// Settings of the adaptation model shared by all jobs (see `shockwave.adaptation.JobModels`
/// for their meaning). The defaults are the core's (`ModelSettings::default()`).
#[pyclass(
    name = "ModelSettings",
    module = "shockwave._core",
    frozen,
    from_py_object
)]
#[derive(Clone, Copy)]
pub struct PyModelSettings {
    inner: ModelSettings,
}

#[pymethods]
impl PyModelSettings {
    #[new]
    #[pyo3(signature = (
        *,
        round_durations = None,
        calibration_round_seconds = None,
        calibration_strength = None,
        prior_strength = None,
        backward_share = None,
        jump_decay = None,
        deadline = None,
        max_blocks = None,
        threads = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        round_durations: Option<bool>,
        calibration_round_seconds: Option<f64>,
        calibration_strength: Option<f64>,
        prior_strength: Option<f64>,
        backward_share: Option<f64>,
        jump_decay: Option<f64>,
        deadline: Option<bool>,
        max_blocks: Option<usize>,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        guarded(|| {
            let defaults = ModelSettings::default();
            let prior = defaults.prior;
            let inner = ModelSettings {
                round_durations: round_durations.unwrap_or(defaults.round_durations),
                calibration_round_seconds: calibration_round_seconds
                    .unwrap_or(defaults.calibration_round_seconds),
                calibration_strength: calibration_strength.unwrap_or(defaults.calibration_strength),
                prior: MarkovPrior {
                    strength: prior_strength.unwrap_or(prior.strength),
                    backward_share: backward_share.unwrap_or(prior.backward_share),
                    jump_decay: jump_decay.unwrap_or(prior.jump_decay),
                    deadline: deadline.unwrap_or(prior.deadline),
                    max_blocks: max_blocks.unwrap_or(prior.max_blocks),
                },
                threads: threads.unwrap_or(defaults.threads),
            };
            inner.validate()?;
            Ok(Self { inner })
        })
    }

    /// `dirichlet` only: round profiled durations to whole seconds (min 1 s).
    #[getter]
    fn round_durations(&self) -> bool {
        self.inner.round_durations
    }

    /// Round length of the original's calibration window, seconds.
    #[getter]
    fn calibration_round_seconds(&self) -> f64 {
        self.inner.calibration_round_seconds
    }

    /// Pseudo-samples of the `markov`/`oracle` rate calibration at each level.
    #[getter]
    fn calibration_strength(&self) -> f64 {
        self.inner.calibration_strength
    }

    /// `markov` prior weight, in multiples of one even share of the job.
    #[getter]
    fn prior_strength(&self) -> f64 {
        self.inner.prior.strength
    }

    /// `markov` prior backward hazard as a share of the forward one.
    #[getter]
    fn backward_share(&self) -> f64 {
        self.inner.prior.backward_share
    }

    /// `markov` weight decay of forward jumps over more than one batch size.
    #[getter]
    fn jump_decay(&self) -> f64 {
        self.inner.prior.jump_decay
    }

    /// `markov`: every batch size of the profile is visited before the job ends.
    #[getter]
    fn deadline(&self) -> bool {
        self.inner.prior.deadline
    }

    /// `markov`: most blocks of epochs in the Bellman recursion.
    #[getter]
    fn max_blocks(&self) -> usize {
        self.inner.prior.max_blocks
    }

    /// Worker threads for predictions (0: one per core).
    #[getter]
    fn threads(&self) -> usize {
        self.inner.threads
    }

    fn __repr__(&self) -> String {
        let (s, p) = (&self.inner, &self.inner.prior);
        format!(
            "ModelSettings(round_durations={}, calibration_round_seconds={:?}, \
             calibration_strength={:?}, prior_strength={:?}, backward_share={:?}, \
             jump_decay={:?}, deadline={}, max_blocks={}, threads={})",
            py_bool(s.round_durations),
            s.calibration_round_seconds,
            s.calibration_strength,
            p.strength,
            p.backward_share,
            p.jump_decay,
            py_bool(p.deadline),
            p.max_blocks,
            s.threads
        )
    }
}

fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

/// Predictions for `N` jobs, rows in the order of `job_ids` (documented in
/// `shockwave.adaptation`). The arrays are the core's buffers handed to numpy (no copy),
/// read-only.
#[pyclass(name = "Prediction", module = "shockwave._core", frozen, get_all)]
pub struct PyPrediction {
    /// `(N,)` job ids, int64.
    job_ids: Py<PyArray1<i64>>,
    /// `(N,)` expected remaining runtime if served continuously on the gang, seconds.
    remaining_mean_seconds: Py<PyArray1<f64>>,
    /// `(N,)` its standard deviation, seconds.
    remaining_std_seconds: Py<PyArray1<f64>>,
    /// `(N, T)` expected fraction of each job's epochs gained in each round of the window.
    valuations: Py<PyArray2<f64>>,
    /// `(N,)` fraction of each job's epochs done.
    offsets: Py<PyArray1<f64>>,
    /// Length of one round of the window, seconds.
    round_seconds: f64,
    /// The estimator that produced these numbers.
    estimator: &'static str,
}

#[pymethods]
impl PyPrediction {
    fn __len__(&self, py: Python<'_>) -> usize {
        self.job_ids.bind(py).len()
    }

    /// Job ids by descending expected remaining runtime (ties: ascending job id).
    fn longest_remaining_first<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let ids = self.job_ids.bind(py).readonly();
        let means = self.remaining_mean_seconds.bind(py).readonly();
        let (ids, means) = (ids.as_array(), means.as_array());
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by(|&a, &b| {
            means[b]
                .partial_cmp(&means[a])
                .unwrap_or(Ordering::Equal)
                .then(ids[a].cmp(&ids[b]))
        });
        Ok(PyArray1::from_iter(py, order.into_iter().map(|k| ids[k])))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let shape = self.valuations.bind(py).shape().to_vec();
        format!(
            "Prediction(jobs={}, rounds={}, round_seconds={:?}, estimator={:?})",
            shape.first().copied().unwrap_or(0),
            shape.get(1).copied().unwrap_or(0),
            self.round_seconds,
            self.estimator
        )
    }
}

/// What the model holds for one job (documented in `shockwave.adaptation`).
#[pyclass(name = "JobState", module = "shockwave._core", frozen, get_all)]
pub struct PyJobState {
    /// Epochs completed plus the fraction of the current one.
    epochs_done: f64,
    /// Batch size of the epoch in progress.
    current_batch_size: u64,
    /// The job's regimes (candidate batch sizes), ascending, int64.
    batch_sizes: Py<PyArray1<i64>>,
    /// The `dirichlet` calibration multiplier of every planner duration.
    window_factor: f64,
    /// The `markov`/`oracle` multiplier of each regime's profiled epoch duration.
    rate_factors: Py<PyArray1<f64>>,
}

#[pymethods]
impl PyJobState {
    fn __repr__(&self) -> String {
        format!(
            "JobState(epochs_done={:?}, current_batch_size={}, window_factor={:?})",
            self.epochs_done, self.current_batch_size, self.window_factor
        )
    }
}

/// Adaptation state of all active jobs (wrapped by `shockwave.adaptation.JobModels`).
#[pyclass(name = "JobModelsCore", module = "shockwave._core")]
pub struct PyJobModels {
    inner: JobModels,
}

#[pymethods]
impl PyJobModels {
    #[new]
    fn new(settings: PyModelSettings) -> PyResult<Self> {
        guarded(|| {
            Ok(Self {
                inner: JobModels::new(settings.inner)?,
            })
        })
    }

    /// The settings.
    #[getter]
    fn settings(&self) -> PyModelSettings {
        PyModelSettings {
            inner: *self.inner.settings(),
        }
    }

    /// The whole state as versioned bytes (`shockwave_core::adaptation::JobModels::to_bytes`).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        guarded(|| Ok(PyBytes::new(py, &self.inner.to_bytes())))
    }

    /// Rebuild from [`Self::to_bytes`]; `ValueError` naming `state` for anything else.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        guarded(|| {
            Ok(Self {
                inner: JobModels::from_bytes(data)?,
            })
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
        samples_per_epoch = None, epoch_counts = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        job_id: i64,
        batch_sizes: PyReadonlyArray1<'_, i64>,
        epoch_seconds: PyReadonlyArray1<'_, f64>,
        extra_batch_sizes: PyReadonlyArray1<'_, i64>,
        extra_epoch_seconds: PyReadonlyArray1<'_, f64>,
        samples_per_epoch: Option<f64>,
        epoch_counts: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<()> {
        guarded(|| {
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
            let counts: Option<Vec<u64>> = match &epoch_counts {
                Some(counts) => Some(
                    to_vec(counts)
                        .into_iter()
                        .map(|c| {
                            u64::try_from(c).map_err(|_| {
                                input_error(
                                    "epoch_counts",
                                    format!("run count {c} is negative; counts must be >= 1"),
                                )
                            })
                        })
                        .collect::<BindingResult<Vec<u64>>>()?,
                ),
                None => None,
            };
            let spec = JobSpec {
                batch_sizes: &bs,
                epoch_seconds: &secs,
                epoch_counts: counts.as_deref(),
                extra_regimes: &extra,
                samples_per_epoch,
            };
            Ok(self.inner.add(job_id, &spec)?)
        })
    }

    fn remove(&mut self, job_id: i64) -> PyResult<()> {
        guarded(|| Ok(self.inner.remove(job_id)?))
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
        guarded(|| {
            let ids = to_vec(&job_ids);
            let done = to_vec(&epochs_done);
            let current = to_vec(&current_batch_sizes);
            same_length("epochs_done", done.len(), ids.len(), "job_ids")?;
            same_length("current_batch_sizes", current.len(), ids.len(), "job_ids")?;
            let completed: Option<(Vec<i64>, Vec<i64>)> =
                match (completed_batch_sizes, completed_counts) {
                    (None, None) => None,
                    (Some(sizes), Some(counts)) => Some((to_vec(&sizes), to_vec(&counts))),
                    _ => {
                        return Err(input_error(
                            "completed_counts",
                            "give completed_batch_sizes and completed_counts together",
                        ))
                    }
                };
            let mut slices: Vec<Option<&[i64]>> = vec![None; ids.len()];
            if let Some((sizes, counts)) = &completed {
                same_length("completed_counts", counts.len(), ids.len(), "job_ids")?;
                let mut start = 0_usize;
                for (slot, &count) in slices.iter_mut().zip(counts) {
                    let count = usize::try_from(count).map_err(|_| {
                        input_error("completed_counts", format!("{count} is negative"))
                    })?;
                    let slice = start
                        .checked_add(count)
                        .and_then(|end| sizes.get(start..end))
                        .ok_or_else(|| {
                            input_error(
                                "completed_counts",
                                format!(
                                    "sum to more than the {} completed_batch_sizes",
                                    sizes.len()
                                ),
                            )
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
            Ok(py.detach(|| inner.observe(&updates))?)
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
        guarded(|| {
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
                    return Err(input_error(
                        "kind",
                        format!("must be 'epoch_seconds' or 'steps_per_second', got {other:?}"),
                    ))
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
            Ok(py.detach(|| inner.observe_throughput(&samples))?)
        })
    }

    #[pyo3(signature = (num_rounds, round_seconds, estimator, job_ids = None))]
    fn predict(
        &mut self,
        py: Python<'_>,
        num_rounds: usize,
        round_seconds: f64,
        estimator: &str,
        job_ids: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<PyPrediction> {
        guarded(|| {
            let estimator: Estimator = estimator.parse()?;
            let ids: Option<Vec<i64>> = job_ids.as_ref().map(to_vec);
            let inner = &mut self.inner;
            let prediction =
                py.detach(|| inner.predict(ids.as_deref(), estimator, num_rounds, round_seconds))?;
            let n = prediction.job_ids.len();
            Ok(PyPrediction {
                job_ids: frozen_vector(py, prediction.job_ids)?,
                remaining_mean_seconds: frozen_vector(py, prediction.mean_seconds)?,
                remaining_std_seconds: frozen_vector(py, prediction.std_seconds)?,
                valuations: frozen_matrix(py, n, num_rounds, prediction.valuations)?,
                offsets: frozen_vector(py, prediction.offsets)?,
                round_seconds,
                estimator: estimator.name(),
            })
        })
    }

    /// What the model holds for one job.
    fn state(&self, py: Python<'_>, job_id: i64) -> PyResult<PyJobState> {
        guarded(|| {
            let job = self
                .inner
                .get(job_id)
                .ok_or_else(|| input_error("job_id", format!("job {job_id} is not held")))?;
            let strength = self.inner.settings().calibration_strength;
            let batch_sizes = job
                .regimes()
                .iter()
                .map(|regime| i64::try_from(regime.batch_size).unwrap_or(i64::MAX))
                .collect::<Vec<i64>>();
            Ok(PyJobState {
                epochs_done: job.epochs_done(),
                current_batch_size: job.current_batch_size(),
                batch_sizes: frozen_vector(py, batch_sizes)?,
                window_factor: job.window_factor(),
                rate_factors: frozen_vector(py, job.rate_factors(strength))?,
            })
        })
    }
}

/// The remaining runtime of one job (`predict_remaining`).
#[pyclass(name = "RemainingRuntime", module = "shockwave._core", frozen, get_all)]
pub struct PyRemainingRuntime {
    /// Expected remaining runtime if served continuously, seconds.
    mean_seconds: f64,
    /// Its standard deviation, seconds.
    std_seconds: f64,
}

/// Remaining runtime of one job, seconds (defaults: the core's estimator and settings).
#[pyfunction]
#[pyo3(signature = (
    batch_sizes_so_far, regime_batch_sizes, regime_seconds, total_epochs, *,
    estimator = None, epoch_fraction = 0.0, round_durations = None,
))]
fn predict_remaining(
    batch_sizes_so_far: PyReadonlyArray1<'_, i64>,
    regime_batch_sizes: PyReadonlyArray1<'_, i64>,
    regime_seconds: PyReadonlyArray1<'_, f64>,
    total_epochs: i64,
    estimator: Option<&str>,
    epoch_fraction: f64,
    round_durations: Option<bool>,
) -> PyResult<PyRemainingRuntime> {
    guarded(|| {
        let estimator = match estimator {
            Some(name) => name.parse()?,
            None => Estimator::default(),
        };
        let defaults = ModelSettings::default();
        let settings = ModelSettings {
            round_durations: round_durations.unwrap_or(defaults.round_durations),
            ..defaults
        };
        let (mean_seconds, std_seconds) = core_predict_remaining(
            &to_vec(&batch_sizes_so_far),
            &to_vec(&regime_batch_sizes),
            &to_vec(&regime_seconds),
            total_epochs,
            epoch_fraction,
            estimator,
            &settings,
        )?;
        Ok(PyRemainingRuntime {
            mean_seconds,
            std_seconds,
        })
    })
}

/// Add this module's functions, classes and constants to `shockwave._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyModelSettings>()?;
    m.add_class::<PyPrediction>()?;
    m.add_class::<PyJobState>()?;
    m.add_class::<PyJobModels>()?;
    m.add_class::<PyRemainingRuntime>()?;
    m.add_function(wrap_pyfunction!(predict_remaining, m)?)?;
    let estimators: Vec<&str> = Estimator::ALL.iter().map(|e| e.name()).collect();
    m.add("ESTIMATORS", PyTuple::new(m.py(), estimators)?)?;
    m.add("DEFAULT_ESTIMATOR", Estimator::default().name())?;
    m.add(
        "MAX_EPOCHS_PER_JOB",
        shockwave_core::adaptation::MAX_EPOCHS_PER_JOB,
    )?;
    m.add(
        "MIN_EPOCH_SECONDS",
        shockwave_core::adaptation::MIN_EPOCH_SECONDS,
    )?;
    Ok(())
}
