"""The workload model: jobs with per-epoch profiles, and a workload (a list of jobs).

A :class:`Job` carries everything a simulation needs: when it arrives, how many GPUs its gang
takes, and the batch size and duration of each of its epochs. The ``gavel`` simulator mechanics
(which replay the original simulator, runtime batch-size rules included) need a little more: the
job's step count and the throughput table, which jobs read from a ``.trace`` file carry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.arguments import is_integer
from shockwave.catalog import ADAPTATION_MODES, AdaptationMode
from shockwave.errors import JobFieldError
from shockwave.job.spec import RunSpec
from shockwave.limits import (
    INT64_MAX,
    MAX_EPOCHS_PER_JOB,
    MAX_SECONDS,
    MAX_WEIGHT,
    MIN_EPOCH_SECONDS,
    MIN_WEIGHT,
)
from shockwave.throughputs import ThroughputTable, format_job_type

#: Text fields of a job converted from a production trace (see :class:`Job`).
PROVENANCE_FIELDS = ("source_id", "user", "vc", "status")


@dataclass(frozen=True, eq=False)
class Job:
    """One training job.

    Attributes:
        job_id: identifier, unique within a workload (for ``.trace`` files: the line index).
        arrival_time: submission time, seconds since the start of the trace.
        gang_size: GPUs the job needs; it runs on exactly this many or not at all.
        model: model label, e.g. ``"ResNet-18"``.
        dataset: dataset label, e.g. ``"CIFAR-10"``.
        mode: adaptation mode, ``"static"``, ``"accordion"`` or ``"gns"`` (a label; the schedule
            itself is ``batch_sizes``).
        batch_sizes: batch size of every epoch, shape ``(epochs,)``, int64.
        epoch_seconds: duration of every epoch when the job runs alone on its gang, seconds,
            shape ``(epochs,)``, float64.
        weight: priority weight (budget multiplier), > 0; 1 for every job of the original traces.
        total_steps: iterations at the initial batch size, if known (``.trace`` field 6). Needed
            only by the ``gavel`` simulator mechanics.
        samples_per_epoch: samples in one epoch, if known. Needed only by ``gavel`` mechanics.
        trace_duration: the nominal exclusive runtime written in a Shockwave ``.trace`` (field
            11), seconds, if known; informational (the original overwrites it with the profile
            sum, :attr:`exclusive_seconds`).
        run: how to run the job for real (a bundled model family or a user's command), for
            :mod:`shockwave.runtime`; ``None`` for a job that can only be simulated. For a
            runnable job the profile is its *planning* profile: the batch sizes it may reach (its
            regimes) and the expected duration of each epoch; the real job decides its own batch
            sizes as it trains.
        source_id, user, vc, status: provenance of a job converted from a production cluster
            trace (:mod:`shockwave.traces.production`): the trace's job id, the submitting user,
            the virtual cluster and the job's final status there, as the trace writes them;
            ``None`` when unknown. Informational: the simulator does not read them.
        requested_gpus: GPUs the trace's job asked for when that is not a whole number (Alibaba
            PAI's fractional GPUs, summed over the job's instances), whereas ``gang_size`` counts
            every instance's share as a whole GPU; ``None`` otherwise. Informational.
    """

    job_id: int
    arrival_time: float
    gang_size: int
    model: str
    dataset: str
    mode: AdaptationMode
    batch_sizes: npt.NDArray[np.int64]
    epoch_seconds: npt.NDArray[np.float64]
    weight: float = 1.0
    total_steps: int | None = None
    samples_per_epoch: int | None = None
    trace_duration: float | None = None
    run: RunSpec | None = None
    source_id: str | None = None
    user: str | None = None
    vc: str | None = None
    status: str | None = None
    requested_gpus: float | None = None

    def __post_init__(self) -> None:
        bs = _as_array(self.job_id, "batch_sizes", self.batch_sizes, "iu", np.int64)
        secs = _as_array(self.job_id, "epoch_seconds", self.epoch_seconds, "iuf", np.float64)
        bs.setflags(write=False)
        secs.setflags(write=False)
        object.__setattr__(self, "batch_sizes", bs)
        object.__setattr__(self, "epoch_seconds", secs)
        _check_job(self)

    @property
    def num_epochs(self) -> int:
        """Number of epochs (the last one may be partial in the original, but counts as whole)."""
        return int(self.batch_sizes.shape[0])

    @property
    def initial_batch_size(self) -> int:
        """Batch size of the first epoch."""
        return int(self.batch_sizes[0])

    @property
    def job_type(self) -> str:
        """The original's job type text, ``"Model (batch size B0)"``."""
        return format_job_type(self.model, self.initial_batch_size)

    @property
    def exclusive_seconds(self) -> float:
        """Sum of the epoch durations: the job's runtime alone on its gang, seconds.

        This is the original's ``duration`` and the denominator of finish-time fairness.
        """
        return float(self.epoch_seconds.sum())

    @property
    def exclusive_gpu_seconds(self) -> float:
        """``exclusive_seconds * gang_size``: GPU-seconds of exclusive work."""
        return self.exclusive_seconds * self.gang_size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Job):
            return NotImplemented
        return (
            self.job_id == other.job_id
            and self.arrival_time == other.arrival_time
            and self.gang_size == other.gang_size
            and self.model == other.model
            and self.dataset == other.dataset
            and self.mode == other.mode
            and np.array_equal(self.batch_sizes, other.batch_sizes)
            and np.array_equal(self.epoch_seconds, other.epoch_seconds)
            and self.weight == other.weight
            and self.total_steps == other.total_steps
            and self.samples_per_epoch == other.samples_per_epoch
            and self.trace_duration == other.trace_duration
            and self.run == other.run
            and self.source_id == other.source_id
            and self.user == other.user
            and self.vc == other.vc
            and self.status == other.status
            and self.requested_gpus == other.requested_gpus
        )

    __hash__ = None  # type: ignore[assignment]  # mutable-looking arrays: not hashable


def _check_job(job: Job) -> None:
    """Raise :class:`JobFieldError` (a ``ValueError``) naming the field of an invalid job."""

    def bad(field_name: str, reason: str) -> JobFieldError:
        return JobFieldError(job.job_id, field_name, reason)

    if not is_integer(job.job_id):
        raise bad("id", f"must be an integer, got {job.job_id!r}")
    if not -INT64_MAX - 1 <= job.job_id <= INT64_MAX:
        raise bad("id", f"must fit in a signed 64-bit integer, got {job.job_id!r}")
    if not _finite(job.arrival_time) or not 0 <= job.arrival_time <= MAX_SECONDS:
        raise bad(
            "arrival_time",
            f"must be finite and >= 0 (at most {MAX_SECONDS:g} s), got {job.arrival_time!r}",
        )
    if not is_integer(job.gang_size):
        raise bad("gang_size", f"must be an integer, got {job.gang_size!r}")
    if not 1 <= job.gang_size <= INT64_MAX:
        raise bad("gang_size", f"must be >= 1 GPU (and fit in 64 bits), got {job.gang_size}")
    if job.mode not in ADAPTATION_MODES:
        raise bad("mode", f"must be one of {ADAPTATION_MODES}, got {job.mode!r}")
    if not isinstance(job.model, str) or not job.model:
        raise bad("model", "must be a non-empty string")
    if not isinstance(job.dataset, str):
        raise bad("dataset", "must be a string")
    if job.batch_sizes.ndim != 1 or job.batch_sizes.shape[0] == 0:
        raise bad("batch_sizes", "must be a non-empty 1-D sequence (one entry per epoch)")
    if job.epoch_seconds.shape != job.batch_sizes.shape:
        raise bad(
            "epoch_seconds",
            f"has {job.epoch_seconds.size} entries but batch_sizes has {job.batch_sizes.size}",
        )
    if job.batch_sizes.min() < 1:
        raise bad("batch_sizes", "every batch size must be >= 1")
    seconds = job.epoch_seconds
    # usual case first (NaN fails both comparisons): every epoch in [MIN_EPOCH_SECONDS,
    # MAX_SECONDS], so the sum of at most MAX_EPOCHS_PER_JOB of them cannot overflow
    if not (seconds.min() >= MIN_EPOCH_SECONDS and seconds.max() <= MAX_SECONDS):
        _check_unusual_epochs(seconds, bad)
    total = float(seconds.sum())
    if not total <= MAX_SECONDS:
        raise bad("epoch_seconds", f"the epochs last {total:g} s in all; at most {MAX_SECONDS:g}")
    if not _finite(job.weight) or not MIN_WEIGHT <= job.weight <= MAX_WEIGHT:
        raise bad(
            "weight",
            f"must be finite and > 0 (in [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}]), got {job.weight!r}",
        )
    for name in ("total_steps", "samples_per_epoch"):
        value = getattr(job, name)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, np.integer))
            or not 1 <= value <= INT64_MAX
        ):
            raise bad(name, f"must be an integer >= 1 (fitting in 64 bits), got {value!r}")
    if job.run is not None and not isinstance(job.run, RunSpec):
        raise bad("run", f"must be a RunSpec, got {type(job.run).__name__}")
    if job.run is not None and job.samples_per_epoch is None:
        raise bad(
            "samples_per_epoch", "a runnable job (with 'run') must give its samples per epoch"
        )
    if job.trace_duration is not None and (
        not _finite(job.trace_duration) or job.trace_duration < 0
    ):
        raise bad("trace_duration", f"must be finite and >= 0, got {job.trace_duration!r}")
    for name in PROVENANCE_FIELDS:
        value = getattr(job, name)
        if value is not None and not isinstance(value, str):
            raise bad(name, f"must be a string, got {value!r}")
    if job.requested_gpus is not None and (
        not _finite(job.requested_gpus) or not 0 < job.requested_gpus <= job.gang_size
    ):
        raise bad(
            "requested_gpus",
            f"must be finite, > 0 and at most the gang size {job.gang_size}, got "
            f"{job.requested_gpus!r}",
        )


def _check_unusual_epochs(
    seconds: npt.NDArray[np.float64], bad: Callable[[str, str], JobFieldError]
) -> None:
    """The epoch-duration checks of :func:`_check_job` for durations outside
    ``[MIN_EPOCH_SECONDS, MAX_SECONDS]``."""
    if not np.isfinite(seconds).all() or (seconds <= 0).any():
        raise bad("epoch_seconds", "every epoch duration must be finite and > 0 seconds")
    if (seconds < MIN_EPOCH_SECONDS).any():
        raise bad(
            "epoch_seconds",
            f"every epoch duration must be at least {MIN_EPOCH_SECONDS:g} s (shorter ones make "
            "throughputs overflow)",
        )
    with np.errstate(over="ignore"):  # an overflowing sum is refused here
        total = float(np.sum(seconds))
    if not total <= MAX_SECONDS:
        raise bad("epoch_seconds", f"the epochs last {total:g} s in all; at most {MAX_SECONDS:g}")


def _as_array(
    job_id: object, name: str, values: Any, kinds: str, dtype: type[np.generic]
) -> npt.NDArray[Any]:
    """A private copy of ``values`` as ``dtype``; refuses lossy conversions (a batch size 1.5)."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise JobFieldError(job_id, name, f"not a numeric sequence ({exc})") from None
    if array.size and array.dtype.kind not in kinds:
        wanted = "integers" if kinds == "iu" else "numbers"
        raise JobFieldError(job_id, name, f"entries must be {wanted}, got dtype {array.dtype}")
    if array.size > MAX_EPOCHS_PER_JOB:
        raise JobFieldError(
            job_id, name, f"{array.size} epochs; a job may have at most {MAX_EPOCHS_PER_JOB}"
        )
    if array.dtype.kind == "u" and array.size and int(array.max()) > INT64_MAX:
        raise JobFieldError(job_id, name, "entries must fit in a signed 64-bit integer")
    return np.array(array, dtype=dtype, copy=True)


def _finite(value: Any) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float, np.integer, np.floating))
        and math.isfinite(value)
    )


@dataclass(frozen=True)
class Workload:
    """An ordered collection of jobs, as read from one trace file.

    Attributes:
        jobs: the jobs, in file order (for ``.trace`` files the order defines the job ids).
        throughputs: the isolated throughput table the jobs were profiled with, if known. The
            ``gavel`` simulator mechanics need it (they re-derive throughput from the runtime
            batch size); the ``exact`` mechanics do not.
        source: where the workload came from (a path or a description).
        conversion: for a workload converted from a production cluster trace, what the
            conversion did (:mod:`shockwave.traces.production`: the source, the jobs kept and
            dropped and why, the seed and settings), as JSON-ready data; ``None`` otherwise.
    """

    jobs: tuple[Job, ...]
    throughputs: ThroughputTable | None = None
    source: str = field(default="<memory>", compare=False)
    conversion: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))
        seen: set[int] = set()
        for job in self.jobs:
            if job.job_id in seen:
                raise ValueError(f"{self.source}: duplicate job id {job.job_id}")
            seen.add(job.job_id)

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __getitem__(self, index: int) -> Job:
        return self.jobs[index]

    @property
    def arrival_times(self) -> npt.NDArray[np.float64]:
        """Arrival time of every job, seconds, in job order."""
        return np.array([job.arrival_time for job in self.jobs], dtype=np.float64)

    @property
    def gang_sizes(self) -> npt.NDArray[np.int64]:
        """Gang size (GPUs) of every job, in job order."""
        return np.array([job.gang_size for job in self.jobs], dtype=np.int64)

    @property
    def exclusive_seconds(self) -> npt.NDArray[np.float64]:
        """Exclusive runtime (sum of epoch durations, seconds) of every job, in job order."""
        return np.array([job.exclusive_seconds for job in self.jobs], dtype=np.float64)

    def with_jobs(self, jobs: Sequence[Job]) -> Workload:
        """A workload with other jobs and the same throughput table, source and conversion."""
        return Workload(tuple(jobs), self.throughputs, self.source, self.conversion)
