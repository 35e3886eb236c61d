//! Bindings of `shockwave_core::market`: the solve with its settings and typed solution, bid
//! shifting and schedule rounding.
//!
//! Arguments arrive as numpy arrays already converted by `shockwave.market` (float64 or int64,
//! C-contiguous). They are read in place; the core validates them and copies the valuations once
//! into its own normalised form, after which the solve runs with the GIL released. The solution's
//! arrays are the core's buffers handed to numpy (no copy), read-only.
//!
//! A market of one GPU type comes as `(N, T)` valuations and `(T,)` supply, one of `K` types as
//! `(N, T, K)` and `(T, K)`; what comes back has the same form (shares and bids shaped like the
//! valuations, prices like the supply).

use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{
    IntoPyArray, PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArray1, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use shockwave_core::market::{
    round_schedule, shift_bids, MarketProblem, Method, PreparedMarket, RoundingInput,
    SolverSettings, SolverStatus, MAX_INTERIOR_POINT_ROUNDS, MAX_THREADS, MAX_TYPES,
};

use crate::convert::{contiguous, frozen_vector, gang_sizes_u32};
use crate::errors::{input_error, BindingResult};
use crate::guarded;

/// Why the market solver stopped (`MarketSolution.status`).
#[pyclass(
    name = "SolverStatus",
    module = "shockwave._core",
    eq,
    hash,
    frozen,
    rename_all = "SCREAMING_SNAKE_CASE",
    from_py_object
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PySolverStatus {
    /// The certified relative duality gap is at most `tol`.
    Converged,
    /// `max_iter` iterations ran before the gap reached `tol`.
    IterationLimit,
    /// The interior-point method stopped making progress before the gap reached `tol`.
    Stalled,
    /// The computation lost accuracy (a factorisation or direction failed, or the certificate
    /// overflowed).
    NumericalTrouble,
}

impl From<SolverStatus> for PySolverStatus {
    fn from(status: SolverStatus) -> Self {
        match status {
            SolverStatus::Converged => Self::Converged,
            SolverStatus::IterationLimit => Self::IterationLimit,
            SolverStatus::Stalled => Self::Stalled,
            SolverStatus::NumericalTrouble => Self::NumericalTrouble,
        }
    }
}

impl PySolverStatus {
    fn core(self) -> SolverStatus {
        match self {
            Self::Converged => SolverStatus::Converged,
            Self::IterationLimit => SolverStatus::IterationLimit,
            Self::Stalled => SolverStatus::Stalled,
            Self::NumericalTrouble => SolverStatus::NumericalTrouble,
        }
    }
}

#[pymethods]
impl PySolverStatus {
    /// The status's name in lower case (`"converged"`, `"iteration_limit"`, `"stalled"`,
    /// `"numerical_trouble"`).
    #[getter]
    fn value(&self) -> &'static str {
        self.core().name()
    }

    fn __str__(&self) -> &'static str {
        self.core().name()
    }

    /// Pickle support: the class attribute of the same name.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let getattr = py.import("builtins")?.getattr("getattr")?;
        let name = self.core().name().to_ascii_uppercase();
        let class = py.get_type::<Self>();
        PyTuple::new(
            py,
            [
                getattr,
                PyTuple::new(py, [class.into_any(), name.into_pyobject(py)?.into_any()])?
                    .into_any(),
            ],
        )
    }
}

/// Settings of a market solve (`shockwave.market.solve` builds them from its arguments). The
/// defaults are the core's (`shockwave_core::market::SolverSettings::default()`).
#[pyclass(
    name = "SolverSettings",
    module = "shockwave._core",
    frozen,
    from_py_object
)]
#[derive(Clone, Copy)]
pub struct PySolverSettings {
    inner: SolverSettings,
}

#[pymethods]
impl PySolverSettings {
    #[new]
    #[pyo3(signature = (*, tol = None, max_iter = None, method = None, warmup_iterations = None, threads = None))]
    fn new(
        tol: Option<f64>,
        max_iter: Option<usize>,
        method: Option<&str>,
        warmup_iterations: Option<usize>,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        guarded(|| {
            let defaults = SolverSettings::default();
            let inner = SolverSettings {
                tol: tol.unwrap_or(defaults.tol),
                max_iter: max_iter.unwrap_or(defaults.max_iter),
                method: match method {
                    Some(name) => name.parse::<Method>()?,
                    None => defaults.method,
                },
                warmup_iterations: warmup_iterations.or(defaults.warmup_iterations),
                simd: defaults.simd,
                threads: threads.unwrap_or(defaults.threads),
            };
            inner.validate()?;
            Ok(Self { inner })
        })
    }

    /// Target relative duality gap (> 0).
    #[getter]
    fn tol(&self) -> f64 {
        self.inner.tol
    }

    /// Largest number of iterations, all methods together (>= 1).
    #[getter]
    fn max_iter(&self) -> usize {
        self.inner.max_iter
    }

    /// The algorithm: `"interior_point"` or `"proportional_response"`.
    #[getter]
    fn method(&self) -> &'static str {
        self.inner.method.name()
    }

    /// Proportional-response iterations before the interior-point method (`None`: 5 from a cold
    /// start, 1 from a warm start).
    #[getter]
    fn warmup_iterations(&self) -> Option<usize> {
        self.inner.warmup_iterations
    }

    /// Threads for the passes over the jobs (interior point, proportional response, certificate;
    /// 0: one per core; the same bits for any number).
    #[getter]
    fn threads(&self) -> usize {
        self.inner.threads
    }

    fn __repr__(&self) -> String {
        let warmup = self
            .inner
            .warmup_iterations
            .map_or("None".to_string(), |n| n.to_string());
        format!(
            "SolverSettings(tol={:?}, max_iter={}, method={:?}, warmup_iterations={warmup}, \
             threads={})",
            self.inner.tol,
            self.inner.max_iter,
            self.inner.method.name(),
            self.inner.threads
        )
    }
}

/// A solved market: equilibrium shares and prices with their certificate and the solver's
/// status (documented in `shockwave.market`).
#[pyclass(name = "MarketSolution", module = "shockwave._core", frozen, get_all)]
pub struct PyMarketSolution {
    /// `(N, T)` or `(N, T, K)`: fraction of round `t` during which job `i` holds its gang (of
    /// type `k`) (feasible).
    shares: Py<PyArrayDyn<f64>>,
    /// `(T,)` or `(T, K)`: price of one GPU (of type `k`) for one round, in budget units.
    prices: Py<PyArrayDyn<f64>>,
    /// `(N,)` `u_i = c_i + sum a x` of the shares.
    utilities: Py<PyArray1<f64>>,
    /// Shaped like `shares`: proportional-response bids at this equilibrium (the next solve's
    /// warm start).
    bids: Py<PyArrayDyn<f64>>,
    /// `sum_i w_i log u_i` over the jobs in the objective.
    objective: f64,
    /// The dual bound at the prices (`>= objective`).
    dual_bound: f64,
    /// `(dual_bound - objective) / sum_i w_i`: the relative duality gap.
    gap: f64,
    /// Iterations of both methods together.
    iterations: usize,
    /// Proportional-response iterations among them.
    pr_iterations: usize,
    /// Interior-point iterations among them.
    ipm_iterations: usize,
    /// Whether the certified gap is at most `tol` (`status == SolverStatus.CONVERGED`).
    converged: bool,
    /// Why the solver stopped.
    status: PySolverStatus,
    /// Jobs `N` (rows).
    jobs: usize,
    /// Rounds `T` in the planning window.
    rounds: usize,
    /// GPU types `K` (1 for a market given as `(N, T)`).
    types: usize,
}

/// `(jobs, rounds, types)` of a 2-D `(N, T)` (one type) or 3-D `(N, T, K)` array argument.
fn market_shape<T: numpy::Element>(
    array: &PyReadonlyArrayDyn<'_, T>,
    argument: &str,
) -> BindingResult<(usize, usize, usize)> {
    match *array.shape() {
        [jobs, rounds] => Ok((jobs, rounds, 1)),
        [jobs, rounds, types] => Ok((jobs, rounds, types)),
        ref other => Err(input_error(
            argument,
            format!(
                "expected a 2-D (jobs, rounds) or 3-D (jobs, rounds, types) array, got {}-D",
                other.len()
            ),
        )),
    }
}

/// The shape of a market's per-good array (`(T,)` for a 2-D market, `(T, K)` for a 3-D one),
/// and `shape` with `jobs` in front.
fn good_shape(rounds: usize, types: usize, typed: bool) -> Vec<usize> {
    if typed {
        vec![rounds, types]
    } else {
        vec![rounds]
    }
}

/// `array`'s shape must be `expected`.
fn check_shape<T: numpy::Element>(
    array: &PyReadonlyArrayDyn<'_, T>,
    argument: &str,
    expected: &[usize],
) -> BindingResult<()> {
    if array.shape() == expected {
        Ok(())
    } else {
        Err(input_error(
            argument,
            format!(
                "expected shape {}, got {}",
                shape_text(expected),
                shape_text(array.shape())
            ),
        ))
    }
}

/// A shape as Python writes it: `(3,)`, `(3, 4)`.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A Rust buffer as a numpy array of `shape` (the buffer moves; no copy).
fn array<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: &[usize],
    data: Vec<T>,
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    ArrayD::from_shape_vec(IxDyn(shape), data)
        .map(|array| array.into_pyarray(py))
        .map_err(|e| crate::errors::internal_error(py, format!("internal shape error: {e}")))
}

/// [`array`], read-only (for the fields of a result object, which hands out the same array on
/// every access).
fn frozen(py: Python<'_>, shape: &[usize], data: Vec<f64>) -> PyResult<Py<PyArrayDyn<f64>>> {
    let array = array(py, shape, data)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("write", false)?;
    array.call_method("setflags", (), Some(&kwargs))?;
    Ok(array.unbind())
}

/// A float64 array argument of `shape` as a read-only copy.
fn owned_array(
    py: Python<'_>,
    array: &PyReadonlyArrayDyn<'_, f64>,
    argument: &str,
    shape: &[usize],
) -> BindingResult<Py<PyArrayDyn<f64>>> {
    check_shape(array, argument, shape)?;
    Ok(frozen(
        py,
        shape,
        array.as_array().iter().copied().collect(),
    )?)
}

/// A 1-D float64 array argument of `length` entries as a read-only copy.
fn owned_vector(
    py: Python<'_>,
    array: &PyReadonlyArray1<'_, f64>,
    argument: &str,
    length: usize,
) -> BindingResult<Py<PyArray1<f64>>> {
    let got = array.as_array().len();
    if got != length {
        return Err(input_error(
            argument,
            format!("expected shape ({length},), got ({got},)"),
        ));
    }
    Ok(frozen_vector(
        py,
        array.as_array().iter().copied().collect(),
    )?)
}

#[pymethods]
impl PyMarketSolution {
    /// Rebuild a solution from its fields (for pickling; the arrays are copied and checked
    /// for consistent shapes).
    #[new]
    #[pyo3(signature = (
        *, shares, prices, utilities, bids, objective, dual_bound, gap, iterations,
        pr_iterations, ipm_iterations, converged, status,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        shares: PyReadonlyArrayDyn<'_, f64>,
        prices: PyReadonlyArrayDyn<'_, f64>,
        utilities: PyReadonlyArray1<'_, f64>,
        bids: PyReadonlyArrayDyn<'_, f64>,
        objective: f64,
        dual_bound: f64,
        gap: f64,
        iterations: usize,
        pr_iterations: usize,
        ipm_iterations: usize,
        converged: bool,
        status: PySolverStatus,
    ) -> PyResult<Self> {
        guarded(|| {
            let (jobs, rounds, types) = market_shape(&shares, "shares")?;
            let typed = shares.ndim() == 3;
            if converged != (status == PySolverStatus::Converged) {
                return Err(input_error(
                    "converged",
                    format!("{converged} contradicts status {}", status.core().name()),
                ));
            }
            if pr_iterations.checked_add(ipm_iterations) != Some(iterations) {
                return Err(input_error(
                    "iterations",
                    format!(
                        "{iterations} is not pr_iterations + ipm_iterations \
                         ({pr_iterations} + {ipm_iterations})"
                    ),
                ));
            }
            let shape = shares.shape().to_vec();
            Ok(Self {
                shares: owned_array(py, &shares, "shares", &shape)?,
                prices: owned_array(py, &prices, "prices", &good_shape(rounds, types, typed))?,
                utilities: owned_vector(py, &utilities, "utilities", jobs)?,
                bids: owned_array(py, &bids, "bids", &shape)?,
                objective,
                dual_bound,
                gap,
                iterations,
                pr_iterations,
                ipm_iterations,
                converged,
                status,
                jobs,
                rounds,
                types,
            })
        })
    }

    /// This solution's bids shifted `rounds` rounds forward (see `shockwave.market.shift_bids`).
    #[pyo3(signature = (rounds = 1))]
    fn shifted_bids<'py>(
        &self,
        py: Python<'py>,
        rounds: i64,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        guarded(|| {
            let elapsed = usize::try_from(rounds).map_err(|_| {
                input_error(
                    "rounds",
                    format!("expected a nonnegative integer, got {rounds}"),
                )
            })?;
            let bids = self.bids.bind(py).readonly();
            let shape = bids.shape().to_vec();
            let shifted = shift_bids(
                contiguous(&bids, "bids")?,
                self.jobs,
                self.rounds,
                self.types,
                elapsed,
            )?;
            Ok(array(py, &shape, shifted)?)
        })
    }

    /// Pickle support: the keyword arguments of the constructor.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        let fields = PyDict::new(py);
        fields.set_item("shares", self.shares.clone_ref(py))?;
        fields.set_item("prices", self.prices.clone_ref(py))?;
        fields.set_item("utilities", self.utilities.clone_ref(py))?;
        fields.set_item("bids", self.bids.clone_ref(py))?;
        fields.set_item("objective", self.objective)?;
        fields.set_item("dual_bound", self.dual_bound)?;
        fields.set_item("gap", self.gap)?;
        fields.set_item("iterations", self.iterations)?;
        fields.set_item("pr_iterations", self.pr_iterations)?;
        fields.set_item("ipm_iterations", self.ipm_iterations)?;
        fields.set_item("converged", self.converged)?;
        fields.set_item("status", self.status)?;
        Ok((PyTuple::empty(py), fields))
    }

    fn __repr__(&self) -> String {
        let types = if self.types == 1 {
            String::new()
        } else {
            format!(", types={}", self.types)
        };
        format!(
            "MarketSolution(jobs={}, rounds={}{types}, status={}, gap={:e}, iterations={})",
            self.jobs,
            self.rounds,
            self.status.core().name(),
            self.gap,
            self.iterations
        )
    }
}

/// Solve the market (see `shockwave.market.solve`, which prepares the arguments).
#[pyfunction]
#[pyo3(signature = (valuations, gang_sizes, supply, budgets, progress, ceilings, settings, warm_start=None))]
#[allow(clippy::too_many_arguments)]
fn solve_market(
    py: Python<'_>,
    valuations: PyReadonlyArrayDyn<'_, f64>,
    gang_sizes: PyReadonlyArray1<'_, i64>,
    supply: PyReadonlyArrayDyn<'_, f64>,
    budgets: PyReadonlyArray1<'_, f64>,
    progress: PyReadonlyArray1<'_, f64>,
    ceilings: PyReadonlyArray1<'_, f64>,
    settings: PySolverSettings,
    warm_start: Option<PyReadonlyArrayDyn<'_, f64>>,
) -> PyResult<PyMarketSolution> {
    guarded(|| {
        let (jobs, rounds, types) = market_shape(&valuations, "valuations")?;
        let typed = valuations.ndim() == 3;
        let goods_shape = good_shape(rounds, types, typed);
        check_shape(&supply, "supply", &goods_shape)?;
        let gangs = gang_sizes_u32(contiguous(&gang_sizes, "gang_sizes")?)?;
        let problem = MarketProblem {
            jobs,
            rounds,
            types,
            valuations: contiguous(&valuations, "valuations")?,
            gang_sizes: &gangs,
            supply: contiguous(&supply, "supply")?,
            budgets: contiguous(&budgets, "budgets")?,
            progress: contiguous(&progress, "progress")?,
            ceilings: contiguous(&ceilings, "ceilings")?,
        };
        let market = PreparedMarket::new(&problem)?;
        let shape = valuations.shape().to_vec();
        let warm: Option<Vec<f64>> = match &warm_start {
            Some(bids) => {
                check_shape(bids, "warm_start", &shape)?;
                Some(contiguous(bids, "warm_start")?.to_vec())
            }
            None => None,
        };
        let settings = settings.inner;
        let solution = py.detach(|| market.solve(&settings, warm.as_deref()))?;
        Ok(PyMarketSolution {
            shares: frozen(py, &shape, solution.shares)?,
            prices: frozen(py, &goods_shape, solution.prices)?,
            utilities: frozen_vector(py, solution.utilities)?,
            bids: frozen(py, &shape, solution.bids)?,
            objective: solution.objective,
            dual_bound: solution.dual_bound,
            gap: solution.gap,
            iterations: solution.iterations,
            pr_iterations: solution.pr_iterations,
            ipm_iterations: solution.ipm_iterations,
            converged: solution.converged,
            status: solution.status.into(),
            jobs,
            rounds,
            types,
        })
    })
}

/// Shift `(jobs, rounds)` or `(jobs, rounds, types)` bids `elapsed` rounds forward (see
/// `shockwave.market.shift_bids`).
#[pyfunction]
fn shift_market_bids<'py>(
    py: Python<'py>,
    bids: PyReadonlyArrayDyn<'py, f64>,
    elapsed: usize,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    guarded(|| {
        let (jobs, rounds, types) = market_shape(&bids, "bids")?;
        let shape = bids.shape().to_vec();
        let shifted = shift_bids(contiguous(&bids, "bids")?, jobs, rounds, types, elapsed)?;
        Ok(array(py, &shape, shifted)?)
    })
}

/// Round shares into a boolean schedule (see `shockwave.market.round_schedule`).
#[pyfunction]
#[pyo3(signature = (shares, gang_sizes, supply, backfill_order=None, deficit=None))]
fn round_market_schedule<'py>(
    py: Python<'py>,
    shares: PyReadonlyArrayDyn<'py, f64>,
    gang_sizes: PyReadonlyArray1<'py, i64>,
    supply: PyReadonlyArrayDyn<'py, f64>,
    backfill_order: Option<PyReadonlyArray1<'py, i64>>,
    deficit: Option<PyReadonlyArrayDyn<'py, f64>>,
) -> PyResult<Bound<'py, PyArrayDyn<bool>>> {
    guarded(|| {
        let (jobs, rounds, types) = market_shape(&shares, "shares")?;
        let typed = shares.ndim() == 3;
        check_shape(&supply, "supply", &good_shape(rounds, types, typed))?;
        if let Some(d) = &deficit {
            let expected = if typed { vec![jobs, types] } else { vec![jobs] };
            check_shape(d, "deficit", &expected)?;
        }
        let gangs = gang_sizes_u32(contiguous(&gang_sizes, "gang_sizes")?)?;
        let order: Option<Vec<usize>> = match &backfill_order {
            Some(order) => Some(
                contiguous(order, "backfill_order")?
                    .iter()
                    .map(|&i| {
                        usize::try_from(i).map_err(|_| {
                            input_error(
                                "backfill_order",
                                format!("job {i} does not exist (there are {jobs} jobs)"),
                            )
                        })
                    })
                    .collect::<BindingResult<Vec<usize>>>()?,
            ),
            None => None,
        };
        let deficit: Option<Vec<f64>> = match &deficit {
            Some(d) => Some(contiguous(d, "deficit")?.to_vec()),
            None => None,
        };
        // Owned copies: the rounding runs without the GIL.
        let shares = contiguous(&shares, "shares")?.to_vec();
        let supply = contiguous(&supply, "supply")?.to_vec();
        let input = RoundingInput {
            jobs,
            rounds,
            types,
            shares: &shares,
            gang_sizes: &gangs,
            supply: &supply,
            backfill_order: order.as_deref(),
            deficit: deficit.as_deref(),
        };
        let shape = if typed {
            vec![jobs, rounds, types]
        } else {
            vec![jobs, rounds]
        };
        let schedule = py.detach(|| round_schedule(&input))?;
        Ok(array(py, &shape, schedule)?)
    })
}

/// Add this module's functions, classes and constants to `shockwave._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySolverStatus>()?;
    m.add_class::<PySolverSettings>()?;
    m.add_class::<PyMarketSolution>()?;
    m.add_function(wrap_pyfunction!(solve_market, m)?)?;
    m.add_function(wrap_pyfunction!(shift_market_bids, m)?)?;
    m.add_function(wrap_pyfunction!(round_market_schedule, m)?)?;
    let methods: Vec<&str> = Method::ALL.iter().map(|method| method.name()).collect();
    m.add("SOLVER_METHODS", PyTuple::new(m.py(), methods)?)?;
    m.add("MAX_INTERIOR_POINT_ROUNDS", MAX_INTERIOR_POINT_ROUNDS)?;
    m.add("MAX_SOLVER_THREADS", MAX_THREADS)?;
    m.add("MAX_TYPES", MAX_TYPES)?;
    m.add("MAX_ROUNDS", shockwave_core::limits::MAX_ROUNDS)?;
    Ok(())
}
