//! Bindings of `shockwave_core::market`: the market solve, bid shifting and schedule rounding.
//!
//! Arguments arrive as numpy arrays already converted by `shockwave.market` (float64 or int64,
//! C-contiguous). They are read in place; the core validates them and copies the valuations once
//! into its own normalised form, after which the solve runs with the GIL released.

use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use shockwave_core::market::{
    round_schedule, shift_bids, MarketError, MarketProblem, Method, PreparedMarket, RoundingInput,
    SolverSettings,
};

fn value_error(e: MarketError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a PyReadonlyArray<'_, T, D>,
    argument: &str,
) -> PyResult<&'a [T]> {
    array
        .as_slice()
        .map_err(|_| PyValueError::new_err(format!("{argument}: must be a C-contiguous array")))
}

fn dims<T: numpy::Element>(
    array: &PyReadonlyArray2<'_, T>,
    argument: &str,
) -> PyResult<(usize, usize)> {
    match *array.shape() {
        [rows, cols] => Ok((rows, cols)),
        _ => Err(PyValueError::new_err(format!("{argument}: must be 2-D"))),
    }
}

fn gang_sizes_u32(gang_sizes: &[i64]) -> PyResult<Vec<u32>> {
    gang_sizes
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            u32::try_from(g).map_err(|_| {
                PyValueError::new_err(format!(
                    "gang_sizes: job {i} has gang size {g}, not a GPU count"
                ))
            })
        })
        .collect()
}

fn matrix<'py, T: numpy::Element>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    data: Vec<T>,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    Array2::from_shape_vec((rows, cols), data)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| PyValueError::new_err(format!("internal shape error: {e}")))
}

/// The solution as a tuple: shares, prices, utilities, bids, objective, dual_bound, gap,
/// iterations, pr_iterations, ipm_iterations, converged.
type SolutionTuple<'py> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray2<f64>>,
    f64,
    f64,
    f64,
    usize,
    usize,
    usize,
    bool,
);

/// Solve the market (see `shockwave.market.solve`, which prepares the arguments).
#[pyfunction]
#[pyo3(signature = (valuations, gang_sizes, supply, budgets, progress, ceilings, tol, max_iter, method, warmup_iterations, warm_start=None))]
#[allow(clippy::too_many_arguments)]
fn solve_market<'py>(
    py: Python<'py>,
    valuations: PyReadonlyArray2<'py, f64>,
    gang_sizes: PyReadonlyArray1<'py, i64>,
    supply: PyReadonlyArray1<'py, f64>,
    budgets: PyReadonlyArray1<'py, f64>,
    progress: PyReadonlyArray1<'py, f64>,
    ceilings: PyReadonlyArray1<'py, f64>,
    tol: f64,
    max_iter: usize,
    method: &str,
    warmup_iterations: Option<usize>,
    warm_start: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<SolutionTuple<'py>> {
    crate::guarded(|| {
        let (jobs, rounds) = dims(&valuations, "valuations")?;
        let method = match method {
            "interior_point" => Method::InteriorPoint,
            "proportional_response" => Method::ProportionalResponse,
            other => {
                return Err(PyValueError::new_err(format!(
                    "method: expected 'interior_point' or 'proportional_response', got {other:?}"
                )))
            }
        };
        let gangs = gang_sizes_u32(contiguous(&gang_sizes, "gang_sizes")?)?;
        let problem = MarketProblem {
            jobs,
            rounds,
            valuations: contiguous(&valuations, "valuations")?,
            gang_sizes: &gangs,
            supply: contiguous(&supply, "supply")?,
            budgets: contiguous(&budgets, "budgets")?,
            progress: contiguous(&progress, "progress")?,
            ceilings: contiguous(&ceilings, "ceilings")?,
        };
        let market = PreparedMarket::new(&problem).map_err(value_error)?;
        let warm: Option<Vec<f64>> = match &warm_start {
            Some(bids) => {
                if dims(bids, "warm_start")? != (jobs, rounds) {
                    return Err(PyValueError::new_err(format!(
                        "warm_start: expected shape ({jobs}, {rounds}), got {:?}",
                        bids.shape()
                    )));
                }
                Some(contiguous(bids, "warm_start")?.to_vec())
            }
            None => None,
        };
        let settings = SolverSettings {
            tol,
            max_iter,
            method,
            warmup_iterations,
            simd: true,
        };
        let solution = py
            .detach(|| market.solve(&settings, warm.as_deref()))
            .map_err(value_error)?;
        Ok((
            matrix(py, jobs, rounds, solution.shares)?,
            solution.prices.into_pyarray(py),
            solution.utilities.into_pyarray(py),
            matrix(py, jobs, rounds, solution.bids)?,
            solution.objective,
            solution.dual_bound,
            solution.gap,
            solution.iterations,
            solution.pr_iterations,
            solution.ipm_iterations,
            solution.converged,
        ))
    })
}

/// Shift `(jobs, rounds)` bids `elapsed` rounds forward (see `shockwave.market.shift_bids`).
#[pyfunction]
fn shift_market_bids<'py>(
    py: Python<'py>,
    bids: PyReadonlyArray2<'py, f64>,
    elapsed: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    crate::guarded(|| {
        let (jobs, rounds) = dims(&bids, "bids")?;
        let shifted =
            shift_bids(contiguous(&bids, "bids")?, jobs, rounds, elapsed).map_err(value_error)?;
        matrix(py, jobs, rounds, shifted)
    })
}

/// Round shares into a boolean schedule (see `shockwave.market.round_schedule`).
#[pyfunction]
#[pyo3(signature = (shares, gang_sizes, supply, backfill_order=None, deficit=None))]
fn round_market_schedule<'py>(
    py: Python<'py>,
    shares: PyReadonlyArray2<'py, f64>,
    gang_sizes: PyReadonlyArray1<'py, i64>,
    supply: PyReadonlyArray1<'py, f64>,
    backfill_order: Option<PyReadonlyArray1<'py, i64>>,
    deficit: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyArray2<bool>>> {
    crate::guarded(|| {
        let (jobs, rounds) = dims(&shares, "shares")?;
        let gangs = gang_sizes_u32(contiguous(&gang_sizes, "gang_sizes")?)?;
        let order: Option<Vec<usize>> = match &backfill_order {
            Some(order) => Some(
                contiguous(order, "backfill_order")?
                    .iter()
                    .map(|&i| {
                        usize::try_from(i).map_err(|_| {
                            PyValueError::new_err(format!(
                                "backfill_order: job {i} does not exist (there are {jobs} jobs)"
                            ))
                        })
                    })
                    .collect::<PyResult<Vec<usize>>>()?,
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
            shares: &shares,
            gang_sizes: &gangs,
            supply: &supply,
            backfill_order: order.as_deref(),
            deficit: deficit.as_deref(),
        };
        let schedule = py.detach(|| round_schedule(&input)).map_err(value_error)?;
        matrix(py, jobs, rounds, schedule)
    })
}

/// Add this module's functions and classes to `shockwave._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(solve_market, m)?)?;
    m.add_function(wrap_pyfunction!(shift_market_bids, m)?)?;
    m.add_function(wrap_pyfunction!(round_market_schedule, m)?)?;
    Ok(())
}
