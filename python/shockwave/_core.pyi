"""Type stubs of the compiled extension ``shockwave._core`` (Rust, PyO3)."""

from typing import ClassVar, Literal, final

import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

# ``InternalError``: a bug in shockwave's Rust core (a panic caught at the binding), the Python
# class registered in the extension under this name (a RuntimeError and a ShockwaveError).
from shockwave.errors import InternalError as InternalError

def core_version() -> str:
    """Version of the Rust core compiled into this extension."""

def _panic_probe() -> None:
    """Panic on purpose inside the binding's guard (the guard's test); raises InternalError."""

def _allocation_probe(len: int) -> int:
    """Allocate ``len`` doubles fallibly, as the core's input-sized buffers (the test that a
    failed allocation raises MemoryError); returns ``len``."""

# --- adaptation model (rust/python/src/adaptation.rs; wrapped by shockwave.adaptation) ---------

ESTIMATORS: tuple[Literal["markov", "dirichlet", "oracle"], ...]
DEFAULT_ESTIMATOR: Literal["markov", "dirichlet", "oracle"]
MAX_EPOCHS_PER_JOB: int
MIN_EPOCH_SECONDS: float

@final
class ModelSettings:
    """Settings of the adaptation model (defaults: the core's ``ModelSettings::default()``)."""

    def __new__(
        cls,
        *,
        round_durations: bool | None = None,
        calibration_round_seconds: float | None = None,
        calibration_strength: float | None = None,
        prior_strength: float | None = None,
        backward_share: float | None = None,
        jump_decay: float | None = None,
        deadline: bool | None = None,
        max_blocks: int | None = None,
        threads: int | None = None,
    ) -> ModelSettings: ...
    @property
    def round_durations(self) -> bool:
        """``dirichlet`` only: round profiled durations to whole seconds (min 1 s)."""
    @property
    def calibration_round_seconds(self) -> float:
        """Round length of the original's calibration window, seconds."""
    @property
    def calibration_strength(self) -> float:
        """Pseudo-samples of the ``markov``/``oracle`` rate calibration at each level."""
    @property
    def prior_strength(self) -> float:
        """``markov`` prior weight, in multiples of one even share of the job."""
    @property
    def backward_share(self) -> float:
        """``markov`` prior backward hazard as a share of the forward one."""
    @property
    def jump_decay(self) -> float:
        """``markov`` weight decay of forward jumps over more than one batch size."""
    @property
    def deadline(self) -> bool:
        """``markov``: every batch size of the profile is visited before the job ends."""
    @property
    def max_blocks(self) -> int:
        """``markov``: most blocks of epochs in the Bellman recursion."""
    @property
    def threads(self) -> int:
        """Worker threads for predictions (0: one per core)."""

@final
class Prediction:
    """Predictions for ``N`` jobs (see ``shockwave.adaptation.Prediction``)."""

    @property
    def job_ids(self) -> npt.NDArray[np.int64]:
        """``(N,)`` job ids."""
    @property
    def remaining_mean_seconds(self) -> npt.NDArray[np.float64]:
        """``(N,)`` expected remaining runtime under continuous service, seconds."""
    @property
    def remaining_std_seconds(self) -> npt.NDArray[np.float64]:
        """``(N,)`` its standard deviation, seconds."""
    @property
    def valuations(self) -> npt.NDArray[np.float64]:
        """``(N, T)`` expected fraction of each job's epochs gained in each round."""
    @property
    def offsets(self) -> npt.NDArray[np.float64]:
        """``(N,)`` fraction of each job's epochs done."""
    @property
    def round_seconds(self) -> float:
        """Length of one round of the window, seconds."""
    @property
    def estimator(self) -> Literal["markov", "dirichlet", "oracle"]:
        """The estimator that produced these numbers."""
    def __len__(self) -> int: ...
    def longest_remaining_first(self) -> npt.NDArray[np.int64]:
        """Job ids by descending expected remaining runtime (ties: ascending job id)."""

@final
class JobState:
    """What the model holds for one job (see ``shockwave.adaptation.JobState``)."""

    @property
    def epochs_done(self) -> float:
        """Epochs completed plus the fraction of the current one."""
    @property
    def current_batch_size(self) -> int:
        """Batch size of the epoch in progress."""
    @property
    def batch_sizes(self) -> npt.NDArray[np.int64]:
        """The job's regimes (candidate batch sizes), ascending."""
    @property
    def window_factor(self) -> float:
        """The ``dirichlet`` calibration multiplier of every planner duration."""
    @property
    def rate_factors(self) -> npt.NDArray[np.float64]:
        """The ``markov``/``oracle`` multiplier of each regime's profiled epoch duration."""

@final
class JobModelsCore:
    """Adaptation state of all active jobs (use ``shockwave.adaptation.JobModels``)."""

    def __new__(cls, settings: ModelSettings) -> JobModelsCore: ...
    @property
    def settings(self) -> ModelSettings:
        """The settings."""
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
        epoch_counts: npt.NDArray[np.int64] | None = None,
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
    ) -> Prediction: ...
    def state(self, job_id: int) -> JobState: ...

def predict_remaining(
    batch_sizes_so_far: npt.NDArray[np.int64],
    regime_batch_sizes: npt.NDArray[np.int64],
    regime_seconds: npt.NDArray[np.float64],
    total_epochs: int,
    *,
    estimator: str | None = None,
    epoch_fraction: float = 0.0,
    round_durations: bool | None = None,
) -> RemainingRuntime:
    """Remaining runtime of one job, seconds."""

@final
class RemainingRuntime:
    """The remaining runtime of one job."""

    @property
    def mean_seconds(self) -> float:
        """Expected remaining runtime if served continuously, seconds."""
    @property
    def std_seconds(self) -> float:
        """Its standard deviation, seconds."""

# --- market (rust/python/src/market.rs; called through shockwave.market) ---

SOLVER_METHODS: tuple[Literal["interior_point", "proportional_response"], ...]
MAX_INTERIOR_POINT_ROUNDS: int
MAX_SOLVER_THREADS: int
MAX_ROUNDS: int
MAX_TYPES: int

@final
class SolverStatus:
    """Why the market solver stopped."""

    CONVERGED: ClassVar[SolverStatus]
    ITERATION_LIMIT: ClassVar[SolverStatus]
    STALLED: ClassVar[SolverStatus]
    NUMERICAL_TROUBLE: ClassVar[SolverStatus]
    @property
    def value(self) -> str:
        """The status's name in lower case."""
    def __int__(self) -> int: ...
    def __reduce__(self) -> tuple[object, tuple[object, str]]: ...

@final
class SolverSettings:
    """Settings of a market solve (defaults: the core's ``SolverSettings::default()``)."""

    def __new__(
        cls,
        *,
        tol: float | None = None,
        max_iter: int | None = None,
        method: str | None = None,
        warmup_iterations: int | None = None,
        threads: int | None = None,
    ) -> SolverSettings: ...
    @property
    def tol(self) -> float:
        """Target relative duality gap (> 0)."""
    @property
    def max_iter(self) -> int:
        """Largest number of iterations, all methods together (>= 1)."""
    @property
    def method(self) -> Literal["interior_point", "proportional_response"]:
        """The algorithm."""
    @property
    def warmup_iterations(self) -> int | None:
        """Proportional-response iterations before the interior-point method (None: automatic)."""
    @property
    def threads(self) -> int:
        """Threads of the passes over the jobs (interior point, proportional response, certificate;
        0: one per core; the same bits for any number)."""

@final
class MarketSolution:
    """A solved market (see ``shockwave.market.MarketSolution``)."""

    def __new__(
        cls,
        *,
        shares: NDArray[np.float64],
        prices: NDArray[np.float64],
        utilities: NDArray[np.float64],
        bids: NDArray[np.float64],
        objective: float,
        dual_bound: float,
        gap: float,
        iterations: int,
        pr_iterations: int,
        ipm_iterations: int,
        converged: bool,
        status: SolverStatus,
    ) -> MarketSolution: ...
    @property
    def shares(self) -> NDArray[np.float64]:
        """``(N, T)`` (or ``(N, T, K)``) fraction of round ``t`` during which job ``i`` holds
        its gang (of type ``k``)."""
    @property
    def prices(self) -> NDArray[np.float64]:
        """``(T,)`` (or ``(T, K)``) price of one GPU for one round, in budget units."""
    @property
    def utilities(self) -> NDArray[np.float64]:
        """``(N,)`` utilities of the shares."""
    @property
    def bids(self) -> NDArray[np.float64]:
        """Shaped like ``shares``: proportional-response bids (the next solve's warm start)."""
    @property
    def objective(self) -> float:
        """``sum_i w_i log u_i`` over the jobs in the objective."""
    @property
    def dual_bound(self) -> float:
        """The dual bound at the prices."""
    @property
    def gap(self) -> float:
        """The relative duality gap."""
    @property
    def iterations(self) -> int:
        """Iterations of both methods together."""
    @property
    def pr_iterations(self) -> int:
        """Proportional-response iterations among them."""
    @property
    def ipm_iterations(self) -> int:
        """Interior-point iterations among them."""
    @property
    def converged(self) -> bool:
        """Whether the certified gap is at most ``tol``."""
    @property
    def status(self) -> SolverStatus:
        """Why the solver stopped."""
    @property
    def jobs(self) -> int:
        """Jobs ``N``."""
    @property
    def rounds(self) -> int:
        """Rounds ``T`` in the planning window."""
    @property
    def types(self) -> int:
        """GPU types ``K`` (1 for a market given as ``(N, T)``)."""
    def shifted_bids(self, rounds: int = 1) -> NDArray[np.float64]:
        """This solution's bids shifted ``rounds`` rounds forward."""
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, object]]: ...

def solve_market(
    valuations: NDArray[np.float64],
    gang_sizes: NDArray[np.int64],
    supply: NDArray[np.float64],
    budgets: NDArray[np.float64],
    progress: NDArray[np.float64],
    ceilings: NDArray[np.float64],
    settings: SolverSettings,
    warm_start: NDArray[np.float64] | None = None,
) -> MarketSolution:
    """Solve the market."""

def shift_market_bids(bids: NDArray[np.float64], elapsed: int) -> NDArray[np.float64]:
    """Shift (jobs, rounds) or (jobs, rounds, types) bids `elapsed` rounds forward."""

def round_market_schedule(
    shares: NDArray[np.float64],
    gang_sizes: NDArray[np.int64],
    supply: NDArray[np.float64],
    backfill_order: NDArray[np.int64] | None = None,
    deficit: NDArray[np.float64] | None = None,
) -> NDArray[np.bool_]:
    """Round shares into a boolean schedule shaped like them."""

def class_sum(terms: NDArray[np.float64], members: NDArray[np.int64]) -> NDArray[np.float64]:
    """``out[f]``: the sum over jobs ``j``, then rows ``i``, of ``terms[members[j], i, f]``,
    added one after another from zero."""
