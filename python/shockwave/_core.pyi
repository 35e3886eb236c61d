"""Type stubs of the compiled extension ``shockwave._core`` (Rust, PyO3)."""

from typing import final

import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

def core_version() -> str:
    """Version of the Rust core compiled into this extension."""

class InternalError(RuntimeError):
    """A bug in shockwave's Rust core (a panic caught at the binding): please report it."""

def _panic_probe() -> None:
    """Panic on purpose inside the binding's guard (the guard's test); raises InternalError."""

# --- adaptation model (rust/python/src/adaptation.rs; wrapped by shockwave.adaptation) ---------

@final
class JobModelsCore:
    """Adaptation state of all active jobs (use ``shockwave.adaptation.JobModels``)."""

    def __new__(
        cls,
        *,
        round_durations: bool = True,
        calibration_round_seconds: float = 120.0,
        calibration_strength: float = 1.0,
        prior_strength: float = 1.0,
        backward_share: float = 0.05,
        jump_decay: float = 0.25,
        deadline: bool = True,
        max_blocks: int = 16,
        threads: int = 0,
    ) -> JobModelsCore: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> JobModelsCore: ...
    def __reduce__(self) -> tuple[object, tuple[bytes]]: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: int, /) -> bool: ...
    def job_ids(self) -> npt.NDArray[np.int64]: ...
    def add(
        self,
        job_id: int,
        batch_sizes: npt.NDArray[np.int64],
        epoch_seconds: npt.NDArray[np.float64],
        extra_batch_sizes: npt.NDArray[np.int64],
        extra_epoch_seconds: npt.NDArray[np.float64],
        samples_per_epoch: float | None = None,
    ) -> None: ...
    def remove(self, job_id: int) -> None: ...
    def observe(
        self,
        job_ids: npt.NDArray[np.int64],
        epochs_done: npt.NDArray[np.float64],
        current_batch_sizes: npt.NDArray[np.int64],
        completed_batch_sizes: npt.NDArray[np.int64] | None = None,
        completed_counts: npt.NDArray[np.int64] | None = None,
    ) -> None: ...
    def observe_throughput(
        self,
        job_ids: npt.NDArray[np.int64],
        round_indices: npt.NDArray[np.int64],
        batch_sizes: npt.NDArray[np.int64],
        values: npt.NDArray[np.float64],
        kind: str,
    ) -> None: ...
    def predict(
        self,
        num_rounds: int,
        round_seconds: float,
        estimator: str,
        job_ids: npt.NDArray[np.int64] | None = None,
    ) -> tuple[
        npt.NDArray[np.int64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
    ]: ...
    def state(
        self, job_id: int
    ) -> tuple[float, int, npt.NDArray[np.uint64], float, npt.NDArray[np.float64]]: ...

def predict_remaining(
    batch_sizes_so_far: npt.NDArray[np.int64],
    regime_batch_sizes: npt.NDArray[np.int64],
    regime_seconds: npt.NDArray[np.float64],
    total_epochs: int,
    *,
    estimator: str = "markov",
    epoch_fraction: float = 0.0,
    round_durations: bool = True,
) -> tuple[float, float]:
    """Remaining runtime (mean, std) of one job, seconds."""

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
