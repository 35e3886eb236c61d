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
from shockwave.epoch_profile import EpochColumn, EpochProfile, merge_columns
from shockwave.errors import JobFieldError
from shockwave.limits import (
    INT64_MAX,
    MAX_EPOCHS_PER_JOB,
    MAX_SECONDS,
    MAX_WEIGHT,
    MIN_EPOCH_SECONDS,
    MIN_WEIGHT,
)
from shockwave.run_spec import RunSpec
from shockwave.throughputs import RuntimeCosts, ThroughputTable, format_job_type

#: Text fields of a job converted from a production trace (see :class:`Job`).
PROVENANCE_FIELDS = ("source_id", "user", "vc", "status")

#: The per-epoch fields of :class:`Job`, held together as one :class:`EpochProfile`.
_PER_EPOCH_FIELDS = ("batch_sizes", "epoch_seconds")


class _PerEpoch:
    """A per-epoch field of :class:`Job` (``batch_sizes``, ``epoch_seconds``).

    The job holds its profile run-length encoded (:attr:`Job.profile`), one :class:`EpochProfile`
    under both fields' names in its ``__dict__`` (so ``Job(**vars(job))`` rebuilds it); reading
    the field expands it (a new read-only array each time). The value given to the constructor
    (an array, an :class:`EpochColumn`, or the job's :class:`EpochProfile`) stays there until
    ``__post_init__`` builds the profile from both fields.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, job: Job | None, owner: type | None = None) -> npt.NDArray[Any]:
        if job is None:
            raise AttributeError(self.name)  # no default value: the field is required
        profile: EpochProfile = job.__dict__[self.name]
        if self.name == "batch_sizes":
            return profile.expand_batch_sizes()
        return profile.expand_seconds()

    def __set__(self, job: Job, value: npt.ArrayLike | EpochColumn | EpochProfile) -> None:
        job.__dict__[self.name] = value


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

            The job holds both run-length encoded (:attr:`profile`, an
            :class:`~shockwave.epoch_profile.EpochProfile`); reading ``batch_sizes`` or
            ``epoch_seconds`` expands them into a new read-only array each time. To build a job
            from a profile without expanding it, give the same :class:`EpochProfile` for both
            fields.
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
    batch_sizes: _PerEpoch = _PerEpoch()
    epoch_seconds: _PerEpoch = _PerEpoch()
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
        given = self.__dict__
        profile = _profile_of(self, given["batch_sizes"], given["epoch_seconds"])
        given["batch_sizes"] = given["epoch_seconds"] = profile
        try:
            _check_job(self)
        finally:
            given.pop("_profile_problem", None)

    @property
    def profile(self) -> EpochProfile:
        """The epoch profile, run-length encoded (what the job holds; see ``batch_sizes``)."""
        profile: EpochProfile = self.__dict__["batch_sizes"]
        return profile

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, also a job pickled when jobs held their profiles expanded."""
        state = dict(state)
        if not isinstance(state.get("batch_sizes"), EpochProfile):
            profile = EpochProfile.from_epochs(state["batch_sizes"], state["epoch_seconds"])
            state["batch_sizes"] = state["epoch_seconds"] = profile
        self.__dict__.update(state)

    @property
    def num_epochs(self) -> int:
        """Number of epochs (the last one may be partial in the original, but counts as whole)."""
        return self.profile.num_epochs

    @property
    def initial_batch_size(self) -> int:
        """Batch size of the first epoch."""
        return int(self.profile.batch_sizes[0])

    @property
    def job_type(self) -> str:
        """The original's job type text, ``"Model (batch size B0)"``."""
        return format_job_type(self.model, self.initial_batch_size)

    @property
    def exclusive_seconds(self) -> float:
        """Sum of the epoch durations: the job's runtime alone on its gang, seconds.

        This is the original's ``duration`` and the denominator of finish-time fairness. Summed
        as ``numpy.sum`` sums the expanded durations (the simulator's own total sums them epoch by
        epoch: :attr:`EpochProfile.total_seconds`).
        """
        return self.profile.pairwise_total

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
            and self.profile == other.profile
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
    problem = job.__dict__.get("_profile_problem")
    if problem is not None:
        raise bad(*problem)
    profile = job.profile
    if profile.batch_sizes.min() < 1:
        raise bad("batch_sizes", "every batch size must be >= 1")
    seconds = profile.seconds
    # usual case first (NaN fails both comparisons): every epoch in [MIN_EPOCH_SECONDS,
    # MAX_SECONDS], so the sum of at most MAX_EPOCHS_PER_JOB of them cannot overflow
    if not (seconds.min() >= MIN_EPOCH_SECONDS and seconds.max() <= MAX_SECONDS):
        _check_unusual_epochs(profile, bad)
    total = profile.total_seconds
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


def _check_unusual_epochs(profile: EpochProfile, bad: Callable[[str, str], JobFieldError]) -> None:
    """The epoch-duration checks of :func:`_check_job` for durations outside
    ``[MIN_EPOCH_SECONDS, MAX_SECONDS]``."""
    seconds = profile.seconds
    if not np.isfinite(seconds).all() or (seconds <= 0).any():
        raise bad("epoch_seconds", "every epoch duration must be finite and > 0 seconds")
    if (seconds < MIN_EPOCH_SECONDS).any():
        raise bad(
            "epoch_seconds",
            f"every epoch duration must be at least {MIN_EPOCH_SECONDS:g} s (shorter ones make "
            "throughputs overflow)",
        )
    total = profile.total_seconds  # an overflowing sum (inf) is refused here
    if not total <= MAX_SECONDS:
        raise bad("epoch_seconds", f"the epochs last {total:g} s in all; at most {MAX_SECONDS:g}")


def _profile_of(job: Job, sizes: Any, seconds: Any) -> EpochProfile:
    """The job's profile from the values given for ``batch_sizes`` and ``epoch_seconds`` (arrays,
    or the same :class:`EpochProfile` for both). A malformed profile is noted on the job
    (``_profile_problem``) for :func:`_check_job` to report in its turn, with a placeholder
    profile."""
    placeholder = _PLACEHOLDER
    if isinstance(sizes, EpochProfile) or isinstance(seconds, EpochProfile):
        if sizes is not seconds:
            raise JobFieldError(
                job.job_id, "epoch_seconds", "give the same EpochProfile for batch_sizes and for it"
            )
        profile: EpochProfile = sizes
        if profile.num_segments > 1 and not profile.is_canonical():
            profile = EpochProfile.from_segments(
                profile.batch_sizes, profile.seconds, profile.counts
            )
        if profile.num_segments == 0:
            job.__dict__["_profile_problem"] = (
                "batch_sizes",
                "must be a non-empty 1-D sequence (one entry per epoch)",
            )
            return placeholder
        if profile.num_epochs > MAX_EPOCHS_PER_JOB:
            raise JobFieldError(
                job.job_id,
                "batch_sizes",
                f"{profile.num_epochs} epochs; a job may have at most {MAX_EPOCHS_PER_JOB}",
            )
        return profile
    bs, bs_counts, size_epochs = _column(job.job_id, "batch_sizes", sizes, "iu", np.int64)
    secs, secs_counts, second_epochs = _column(
        job.job_id, "epoch_seconds", seconds, "iuf", np.float64
    )
    if bs.ndim != 1 or bs.shape[0] == 0:
        job.__dict__["_profile_problem"] = (
            "batch_sizes",
            "must be a non-empty 1-D sequence (one entry per epoch)",
        )
        return placeholder
    if secs.ndim != 1 or second_epochs != size_epochs:
        job.__dict__["_profile_problem"] = (
            "epoch_seconds",
            f"has {second_epochs} entries but batch_sizes has {size_epochs}",
        )
        return placeholder
    if bs_counts is None and secs_counts is None:
        return EpochProfile.from_epochs(bs, secs)
    ones = np.ones(size_epochs, dtype=np.int64)
    return merge_columns(
        bs,
        ones if bs_counts is None else bs_counts,
        secs,
        ones if secs_counts is None else secs_counts,
    )


#: The profile a job with a malformed profile holds until :func:`_check_job` refuses it.
_PLACEHOLDER = EpochProfile.from_segments([1], [1.0], [1])


def _column(
    job_id: object, name: str, values: Any, kinds: str, dtype: type[np.generic]
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64] | None, int]:
    """A per-epoch field given as an array (counts ``None``) or an :class:`EpochColumn` (its
    run values and counts), checked as :func:`_as_array` checks an array; and its epochs."""
    if not isinstance(values, EpochColumn):
        array = _as_array(job_id, name, values, kinds, dtype)
        return array, None, int(array.shape[0]) if array.ndim == 1 else int(array.size)
    counts = _as_array(job_id, name, values.counts, "iu", np.int64)
    if counts.ndim != 1 or (counts.size and int(counts.min()) < 1):
        raise JobFieldError(job_id, name, "run counts must be integers >= 1")
    total = int(counts.sum())
    if total > MAX_EPOCHS_PER_JOB:
        raise JobFieldError(
            job_id, name, f"{total} epochs; a job may have at most {MAX_EPOCHS_PER_JOB}"
        )
    run_values = _as_array(job_id, name, values.values, kinds, dtype)
    if run_values.shape != counts.shape:
        raise JobFieldError(
            job_id, name, f"{run_values.size} run values but {counts.size} run counts"
        )
    return run_values, counts, total


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
        costs: for a runnable workload, what a real run costs on the machine its throughputs
            were measured on (restart and round overhead, from ``shockwave cluster profile``):
            ``shockwave simulate`` takes them as its defaults; ``None`` otherwise.
    """

    jobs: tuple[Job, ...]
    throughputs: ThroughputTable | None = None
    source: str = field(default="<memory>", compare=False)
    conversion: Mapping[str, Any] | None = field(default=None, compare=False)
    costs: RuntimeCosts | None = field(default=None, compare=False)

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
