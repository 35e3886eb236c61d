"""Type stubs of the compiled extension ``shockwave._core`` (Rust, PyO3)."""

import numpy as np
from numpy.typing import NDArray

def core_version() -> str:
    """Version of the Rust core compiled into this extension."""

# --- market (issue 3): called through shockwave.market, which prepares the arguments ---

def solve_market(
    valuations: NDArray[np.float64],
    gang_sizes: NDArray[np.int64],
    supply: NDArray[np.float64],
    budgets: NDArray[np.float64],
    progress: NDArray[np.float64],
    ceilings: NDArray[np.float64],
    tol: float,
    max_iter: int,
    method: str,
    warmup_iterations: int | None,
    warm_start: NDArray[np.float64] | None = None,
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    float,
    float,
    float,
    int,
    int,
    int,
    bool,
]:
    """Solve the market; returns (shares, prices, utilities, bids, objective, dual_bound, gap,
    iterations, pr_iterations, ipm_iterations, converged)."""

def shift_market_bids(bids: NDArray[np.float64], elapsed: int) -> NDArray[np.float64]:
    """Shift (jobs, rounds) bids `elapsed` rounds forward."""

def round_market_schedule(
    shares: NDArray[np.float64],
    gang_sizes: NDArray[np.int64],
    supply: NDArray[np.float64],
    backfill_order: NDArray[np.int64] | None = None,
    deficit: NDArray[np.float64] | None = None,
) -> NDArray[np.bool_]:
    """Round shares into a boolean (jobs, rounds) schedule."""
