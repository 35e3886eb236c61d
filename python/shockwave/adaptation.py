"""Stochastic model of dynamic batch-size adaptation: remaining runtime and market valuations.

Under dynamic adaptation a job's epoch time changes as it trains: its batch size grows in steps
(GNS) or switches between a small and a large one (Accordion). The scheduler sees only the epochs
so far. This module predicts, for every active job,

* the **remaining runtime** if the job is served continuously on its gang (mean and standard
  deviation, seconds);
* the market's **valuations** ``a[i, t]``: the expected fraction of the job's epochs gained in
  round ``t`` of the next ``T`` rounds of ``round_seconds``, and the **offsets** ``c[i]``: the
  fraction of epochs already done.

**What "served in round t" assumes.** Valuations assume continuous service from now: ``a[i, t]``
is the expected progress of the job's ``(t + 1)``-th consecutive round of service. A job's row
therefore sums to at most its remaining fraction ``1 - c[i]`` and is 0 after its expected finish,
so a job close to its end is worth nothing in rounds it would not use, and a market with linear
utilities never plans it more rounds than it needs.

Three estimators share one API (:data:`Estimator`):

``"markov"``
    A Markov chain over the job's regimes (batch sizes) whose transition rows have Dirichlet
    priors (batch sizes rarely go back; every batch size of the profile is used before the end),
    learned online from the observed batch sizes, solved by a Bellman recursion over
    (epochs remaining, regime). Durations are calibrated by a shrunken per-regime ratio of measured
    to profiled throughput.
``"dirichlet"``
    The original Shockwave's estimator, for fidelity experiments: a Dirichlet posterior over the
    proportions of batch sizes observed on the *profile* schedule, with durations rounded to whole
    seconds and the original's sticky 40 % calibration; its valuations use the original planner's
    window-average epoch duration. It reproduces the original's quirks, including that the epoch
    in progress is left out of the estimate.
``"oracle"``
    The true remaining schedule of the profile, with the ``markov`` calibration (ablations).

The state of all jobs lives in Rust (:class:`JobModels`): add jobs on arrival, remove them on
completion, report progress with :meth:`JobModels.observe` and measured throughput with
:meth:`JobModels.observe_throughput`, and ask for numpy arrays with :meth:`JobModels.predict`.
:func:`predict_remaining` runs the same code for one job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from shockwave import _core
from shockwave.catalog import (
    ACCORDION_NEVER_ADAPTS,
    MODEL_FAMILIES,
    gns_staircase,
    model_family,
)
from shockwave.profiles import epoch_durations
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Job

#: Names of the remaining-runtime estimators.
Estimator = Literal["markov", "dirichlet", "oracle"]
ESTIMATORS: tuple[Estimator, ...] = ("markov", "dirichlet", "oracle")

#: Round length of the original simulator, seconds (its ``time_per_iteration``).
ROUND_SECONDS = 120.0

__all__ = [
    "ESTIMATORS",
    "ROUND_SECONDS",
    "Estimator",
    "JobModels",
    "JobState",
    "Prediction",
    "predict_remaining",
    "runtime_regimes",
]


@dataclass(frozen=True)
class Prediction:
    """Predictions for ``N`` jobs (rows in the order of :attr:`job_ids`).

    Attributes:
        job_ids: job ids, shape ``(N,)``, int64.
        remaining_mean_seconds: expected remaining runtime if the job is served continuously on
            its gang, seconds, shape ``(N,)``.
        remaining_std_seconds: its standard deviation, seconds, shape ``(N,)``.
        valuations: ``a[i, t]``, the expected fraction of job ``i``'s epochs gained in round ``t``
            of the window under continuous service from now, shape ``(N, T)``.
        offsets: ``c[i]``, the fraction of job ``i``'s epochs done, shape ``(N,)``.
        round_seconds: length of one round of the window, seconds.
        estimator: the estimator that produced these numbers.
    """

    job_ids: npt.NDArray[np.int64]
    remaining_mean_seconds: npt.NDArray[np.float64]
    remaining_std_seconds: npt.NDArray[np.float64]
    valuations: npt.NDArray[np.float64]
    offsets: npt.NDArray[np.float64]
    round_seconds: float
    estimator: Estimator

    def __len__(self) -> int:
        return int(self.job_ids.shape[0])

    def longest_remaining_first(self) -> npt.NDArray[np.int64]:
        """Job ids by descending expected remaining runtime (ties: ascending job id)."""
        order = np.lexsort((self.job_ids, -self.remaining_mean_seconds))
        return self.job_ids[order]


@dataclass(frozen=True)
class JobState:
    """What :class:`JobModels` holds for one job (for inspection and tests).

    Attributes:
        epochs_done: epochs completed plus the fraction of the current one.
        current_batch_size: batch size of the epoch in progress.
        batch_sizes: the job's regimes (candidate batch sizes), ascending.
        window_factor: the ``dirichlet`` calibration multiplier of every planner duration (the
            original's sticky rescale; 1 until a check falls outside the 40 % band).
        rate_factors: the ``markov``/``oracle`` multiplier of each regime's profiled epoch
            duration, aligned with :attr:`batch_sizes`.
    """

    epochs_done: float
    current_batch_size: int
    batch_sizes: npt.NDArray[np.int64]
    window_factor: float
    rate_factors: npt.NDArray[np.float64]


class JobModels:
    """Adaptation state of all active jobs, held in Rust, predicted in one batched call.

    Args:
        estimator: default estimator of :meth:`predict`.
        round_durations: ``dirichlet`` only: round profiled durations to whole seconds (min 1 s)
            as the original's planner does (``False``: use the profile's durations).
        calibration_round_seconds: round length of the original's calibration window, seconds.
        calibration_strength: pseudo-samples of the ``markov``/``oracle`` rate calibration at the
            job and the regime level (> 0).
        prior_strength: ``markov`` prior weight, in multiples of one even share of the job
            (``E / R`` epochs for ``R`` profile batch sizes), on each transition row and on the
            pooled forward and backward hazards (> 0).
        backward_share: ``markov`` prior backward hazard as a share of the forward one (>= 0).
        jump_decay: ``markov`` weight decay of forward jumps over more than one batch size.
        deadline: ``markov``: every batch size of the profile is visited before the job ends.
        max_blocks: ``markov``: most blocks of epochs in the Bellman recursion; jobs with at most
            this many epochs left are solved epoch by epoch.
        threads: worker threads for :meth:`predict` (0: one per core); results do not depend on
            it.

    Raises:
        ValueError: naming the setting, if one is out of range.
    """

    def __init__(
        self,
        estimator: Estimator = "markov",
        *,
        round_durations: bool = True,
        calibration_round_seconds: float = ROUND_SECONDS,
        calibration_strength: float = 1.0,
        prior_strength: float = 1.0,
        backward_share: float = 0.05,
        jump_decay: float = 0.25,
        deadline: bool = True,
        max_blocks: int = 16,
        threads: int = 0,
    ) -> None:
        self._estimator = _check_estimator(estimator)
        self._core = _core.JobModelsCore(
            round_durations=bool(round_durations),
            calibration_round_seconds=_real("calibration_round_seconds", calibration_round_seconds),
            calibration_strength=_real("calibration_strength", calibration_strength),
            prior_strength=_real("prior_strength", prior_strength),
            backward_share=_real("backward_share", backward_share),
            jump_decay=_real("jump_decay", jump_decay),
            deadline=bool(deadline),
            max_blocks=_count("max_blocks", max_blocks),
            threads=_count("threads", threads),
        )

    @property
    def estimator(self) -> Estimator:
        """Default estimator of :meth:`predict`."""
        return self._estimator

    def to_bytes(self) -> bytes:
        """The whole state (settings, default estimator and every job) as versioned bytes.

        The Rust state is encoded field by field (little-endian, floats by their bits, format
        ``SWJM`` version 1): :meth:`from_bytes` rebuilds a container that predicts bit for bit
        what this one predicts. Pickling a :class:`JobModels` uses this encoding.
        """
        return self._estimator.encode("ascii") + b"\n" + self._core.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> JobModels:
        """Rebuild the container of :meth:`to_bytes`.

        Raises:
            ValueError: naming ``state`` for bytes that are not such a state (every length,
                index and value is checked before anything is allocated).
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ValueError(f"state: expected bytes, got {type(data).__name__}")
        name, newline, core = bytes(data).partition(b"\n")
        if not newline or name.decode("ascii", "replace") not in ESTIMATORS:
            raise ValueError("state: not a JobModels state (no estimator line)")
        models = cls.__new__(cls)
        models._estimator = _check_estimator(name.decode("ascii"))
        models._core = _core.JobModelsCore.from_bytes(core)
        return models

    def __getstate__(self) -> bytes:
        return self.to_bytes()

    def __setstate__(self, state: bytes) -> None:
        restored = JobModels.from_bytes(state)
        self._estimator = restored._estimator
        self._core = restored._core

    def __len__(self) -> int:
        return len(self._core)

    def __contains__(self, job_id: object) -> bool:
        if isinstance(job_id, bool) or not isinstance(job_id, (int, np.integer)):
            return False
        return int(job_id) in self._core

    @property
    def job_ids(self) -> npt.NDArray[np.int64]:
        """Ids of the jobs held, ascending."""
        return self._core.job_ids()

    def add(
        self,
        job_id: int,
        batch_sizes: npt.ArrayLike,
        epoch_seconds: npt.ArrayLike,
        *,
        extra_regimes: Mapping[int, float] | None = None,
        samples_per_epoch: float | None = None,
    ) -> None:
        """Add a job (on arrival) from its profile.

        Args:
            job_id: the job's id (not already held).
            batch_sizes: batch size of every epoch of the profile; its distinct values are the
                job's regimes, all of which the job uses.
            epoch_seconds: duration of every epoch on the job's gang, seconds (> 0).
            extra_regimes: batch sizes the job may also run at, with their epoch seconds (for
                example those the original's runtime rules reach: :func:`runtime_regimes`).
            samples_per_epoch: training samples per epoch; needed for throughput given in
                steps/s.

        Raises:
            ValueError: naming the field, for a held id or an invalid profile.
        """
        extra = _mapping("extra_regimes", extra_regimes or {})
        self._core.add(
            _job_id(job_id),
            _int_array("batch_sizes", batch_sizes),
            _float_array("epoch_seconds", epoch_seconds),
            _int_array("extra_regimes", list(extra.keys())),
            _float_array("extra_regimes", list(extra.values())),
            None if samples_per_epoch is None else _real("samples_per_epoch", samples_per_epoch),
        )

    def add_job(self, job: Job, *, throughputs: ThroughputTable | None = None) -> None:
        """Add a :class:`~shockwave.workload.Job` (its id, profile and samples per epoch).

        With ``throughputs``, the batch sizes the original's runtime rules can reach beyond the
        profile are added as extra regimes (:func:`runtime_regimes`), so that observations from
        the ``gavel`` simulator mechanics are accepted.
        """
        extra = runtime_regimes(job, throughputs) if throughputs is not None else {}
        samples = job.samples_per_epoch
        if samples is None and job.model in MODEL_FAMILIES:
            samples = model_family(job.model).samples_per_epoch
        self.add(
            job.job_id,
            job.batch_sizes,
            job.epoch_seconds,
            extra_regimes=extra,
            samples_per_epoch=None if samples is None else float(samples),
        )

    def remove(self, job_id: int) -> None:
        """Remove a job (on completion). Raises ``ValueError`` if it is not held."""
        self._core.remove(_job_id(job_id))

    def observe(
        self,
        job_ids: npt.ArrayLike,
        epochs_done: npt.ArrayLike,
        current_batch_sizes: npt.ArrayLike,
        *,
        completed_batch_sizes: npt.ArrayLike | None = None,
        completed_counts: npt.ArrayLike | None = None,
    ) -> None:
        """Record the progress of several jobs (each at most once per call).

        Args:
            job_ids: the jobs, shape ``(K,)``.
            epochs_done: epochs completed plus the fraction of the epoch in progress, per job;
                non-decreasing over calls and at most the job's epochs (equal: finished).
            current_batch_sizes: batch size of each job's epoch in progress (one of its regimes).
            completed_batch_sizes: the batch sizes of the epochs each job completed since its last
                observation, concatenated job after job. Without it, those epochs are taken to
                have run at the batch size that was current at the last observation (at the
                profile's first batch size before any).
            completed_counts: how many of ``completed_batch_sizes`` belong to each job, shape
                ``(K,)``; each must equal the job's newly completed epochs.

        Raises:
            ValueError: naming the field (an unknown job, epochs going back or past the end, a
                batch size that is not one of the job's regimes, mismatched lengths). Nothing is
                recorded when an entry is invalid.
        """
        if (completed_batch_sizes is None) != (completed_counts is None):
            raise ValueError(
                "completed_counts: give completed_batch_sizes and completed_counts together"
            )
        self._core.observe(
            _int_array("job_ids", job_ids),
            _float_array("epochs_done", epochs_done),
            _int_array("current_batch_sizes", current_batch_sizes),
            None
            if completed_batch_sizes is None
            else _int_array("completed_batch_sizes", completed_batch_sizes),
            None if completed_counts is None else _int_array("completed_counts", completed_counts),
        )

    def observe_throughput(
        self,
        job_ids: npt.ArrayLike,
        round_indices: npt.ArrayLike,
        batch_sizes: npt.ArrayLike,
        *,
        epoch_seconds: npt.ArrayLike | None = None,
        steps_per_second: npt.ArrayLike | None = None,
    ) -> None:
        """Record measured throughput: one sample per job and round in which it ran.

        Give exactly one of ``epoch_seconds`` (measured seconds per epoch at that rate) and
        ``steps_per_second`` (iterations per second; ``samples_per_epoch / batch_size`` of them
        make an epoch, so the job must have been added with ``samples_per_epoch``).

        Args:
            job_ids: the jobs, shape ``(K,)``; a job may appear several times.
            round_indices: index of the round measured, counted from the start of the simulation
                (the original's calibration extrapolates each sample back to the previous one,
                from round 0); increasing per job.
            batch_sizes: batch size the job ran at in that round (one of its regimes).
            epoch_seconds: measured epoch duration, seconds (> 0).
            steps_per_second: measured throughput, iterations/s (> 0).

        Raises:
            ValueError: naming the field; nothing is recorded when an entry is invalid.
        """
        if (epoch_seconds is None) == (steps_per_second is None):
            raise ValueError("epoch_seconds: give exactly one of epoch_seconds, steps_per_second")
        if epoch_seconds is not None:
            kind, values = "epoch_seconds", _float_array("epoch_seconds", epoch_seconds)
        else:
            kind, values = "steps_per_second", _float_array("steps_per_second", steps_per_second)
        self._core.observe_throughput(
            _int_array("job_ids", job_ids),
            _int_array("round_indices", round_indices),
            _int_array("batch_sizes", batch_sizes),
            values,
            kind,
        )

    def predict(
        self,
        num_rounds: int,
        round_seconds: float = ROUND_SECONDS,
        *,
        job_ids: npt.ArrayLike | None = None,
        estimator: Estimator | None = None,
    ) -> Prediction:
        """Predict remaining runtimes and valuations (the GIL is released meanwhile).

        Args:
            num_rounds: ``T``, rounds in the planning window (>= 0).
            round_seconds: length of a round, seconds.
            job_ids: which jobs, in which order (default: all, ascending id).
            estimator: overrides the default estimator.

        Raises:
            ValueError: naming the argument (an unknown job, a bad window, or ``"oracle"`` for a
                job without a profile).
        """
        chosen = self._estimator if estimator is None else _check_estimator(estimator)
        seconds = _real("round_seconds", round_seconds)
        ids, mean, std, valuations, offsets = self._core.predict(
            _count("num_rounds", num_rounds),
            seconds,
            chosen,
            None if job_ids is None else _int_array("job_ids", job_ids),
        )
        return Prediction(ids, mean, std, valuations, offsets, seconds, chosen)

    def state(self, job_id: int) -> JobState:
        """The observed progress and calibration of one job."""
        done, current, batch_sizes, window, rates = self._core.state(_job_id(job_id))
        return JobState(done, current, batch_sizes.astype(np.int64), window, rates)


def predict_remaining(
    batch_sizes_so_far: npt.ArrayLike,
    epoch_seconds_by_batch_size: Mapping[int, float],
    total_epochs: int,
    *,
    estimator: Estimator = "markov",
    epoch_fraction: float = 0.0,
    round_durations: bool = True,
) -> tuple[float, float]:
    """Remaining runtime ``(mean_seconds, std_seconds)`` of one job.

    Runs the same code as :class:`JobModels` on a job without a profile.

    Args:
        batch_sizes_so_far: the batch size of every epoch trained so far: the completed epochs,
            then the epoch in progress (so ``len - 1`` epochs are complete).
        epoch_seconds_by_batch_size: the job's candidate regimes: epoch duration (seconds) per
            batch size. All of them count as batch sizes the job will use (the ``dirichlet``
            prior spreads over them; ``markov`` expects to visit each before the end).
        total_epochs: epochs of the job (>= ``len(batch_sizes_so_far)``).
        estimator: ``"markov"`` or ``"dirichlet"`` (``"oracle"`` needs a future schedule, which a
            job without a profile has not).
        epoch_fraction: fraction of the epoch in progress already done, in ``[0, 1)``.
        round_durations: ``dirichlet`` only: round durations to whole seconds like the original.

    Raises:
        ValueError: naming the argument.
    """
    regimes = _mapping("epoch_seconds_by_batch_size", epoch_seconds_by_batch_size)
    return _core.predict_remaining(
        _int_array("batch_sizes_so_far", batch_sizes_so_far),
        _int_array("epoch_seconds_by_batch_size", list(regimes.keys())),
        _float_array("epoch_seconds_by_batch_size", list(regimes.values())),
        _job_id(total_epochs, "total_epochs"),
        estimator=_check_estimator(estimator),
        epoch_fraction=_real("epoch_fraction", epoch_fraction),
        round_durations=bool(round_durations),
    )


def runtime_regimes(job: Job, throughputs: ThroughputTable) -> dict[int, float]:
    """Batch sizes the original's runtime rules can reach beyond the job's profile.

    The original simulator changes batch sizes by rules that differ from the profile's: GNS
    doubles the batch size whenever its staircase is ahead (even for jobs whose profile is static
    because they are short), Accordion switches between the initial and the model's largest batch
    size. Returns ``{batch size: epoch seconds on the job's gang}`` for the reachable batch sizes
    that are not in the profile and have a positive throughput in ``throughputs`` (the original
    refuses a change to a batch size without one). Models outside the catalog have none.
    """
    if job.model not in MODEL_FAMILIES or job.mode == "static":
        return {}
    family = model_family(job.model)
    start = job.initial_batch_size
    reachable: set[int] = set()
    if job.mode == "accordion":
        if job.model not in ACCORDION_NEVER_ADAPTS and start != family.max_batch_size:
            reachable = {start, family.max_batch_size}
    else:
        staircase = gns_staircase(job.model, start, job.gang_size)
        if staircase is not None:
            top = min(max(bs for _, bs in staircase.stages), family.max_batch_size)
            batch_size = start
            while batch_size < top:
                batch_size *= 2
                reachable.add(batch_size)
    in_profile = {int(b) for b in np.unique(job.batch_sizes)}
    candidates = sorted(
        b
        for b in reachable - in_profile
        if (job.model, b, job.gang_size) in throughputs
        and throughputs.isolated(job.model, b, job.gang_size) > 0
    )
    if not candidates:
        return {}
    seconds = epoch_durations(
        job.model, np.array(candidates, dtype=np.int64), job.gang_size, throughputs
    )
    return {b: float(s) for b, s in zip(candidates, seconds, strict=True)}


def _check_estimator(name: object) -> Estimator:
    for known in ESTIMATORS:
        if name == known:
            return known
    raise ValueError(f"estimator: must be one of {ESTIMATORS}, got {name!r}")


#: Range of the integers the Rust core takes (signed 64-bit).
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _job_id(value: object, name: str = "job_id") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}: must be an integer, got {value!r}")
    if not _INT64_MIN <= int(value) <= _INT64_MAX:
        raise ValueError(f"{name}: must fit in a signed 64-bit integer, got {value!r}")
    return int(value)


def _count(name: str, value: object) -> int:
    number = _job_id(value, name)
    if number < 0:
        raise ValueError(f"{name}: must be >= 0, got {number}")
    return number


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}: must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name}: {value!r} is beyond double precision") from None


def _mapping(name: str, value: object) -> dict[Any, Any]:
    try:
        return dict(value)  # type: ignore[call-overload,no-any-return]
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: must be a mapping of batch size to epoch seconds, got {value!r:.60}"
        ) from None


def _as_1d(name: str, values: Any) -> npt.NDArray[Any]:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not a numeric sequence ({exc})") from None
    if array.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D sequence, got shape {array.shape}")
    return array


def _int_array(name: str, values: Any) -> npt.NDArray[np.int64]:
    array = _as_1d(name, values)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind == "f":
        if not np.isfinite(array).all() or (array != np.round(array)).any():
            raise ValueError(f"{name}: entries must be integers")
        if (np.abs(array) >= 2.0**63).any():
            raise ValueError(f"{name}: entries must fit in a signed 64-bit integer")
    elif array.dtype.kind == "u":
        if (array > _INT64_MAX).any():
            raise ValueError(f"{name}: entries must fit in a signed 64-bit integer")
    elif array.dtype.kind != "i":
        raise ValueError(f"{name}: entries must be integers, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)


def _float_array(name: str, values: Any) -> npt.NDArray[np.float64]:
    array = _as_1d(name, values)
    if array.size and array.dtype.kind not in "iuf":
        raise ValueError(f"{name}: entries must be numbers, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float64)
