"""A job's epoch profile (the batch size and duration of every epoch), held run-length encoded.

A job's profile is piecewise constant: it trains many consecutive epochs at one batch size, each
of the same duration (a 100,000-job generated trace has about 120 million epochs but only about
200,000 segments). :class:`EpochProfile` keeps only the *segments* (the runs of identical
epochs), so a workload's memory grows with its segments, not its epochs;
:class:`~shockwave.workload.Job` stores its profile this way
(:attr:`~shockwave.workload.Job.profile`) and expands ``batch_sizes`` and ``epoch_seconds`` only
when they are read.

Everything the simulator derives from a profile is derived from the segments *bit for bit* as
from the expanded arrays: the running sums of the epoch durations at the end of each segment are the
sequential (epoch by epoch) float sums that ``numpy.cumsum`` gives on the expanded profile, and
:attr:`EpochProfile.pairwise_total` is ``numpy.sum`` of the expanded durations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

__all__ = ["EpochColumn", "EpochProfile"]


def _frozen(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class EpochProfile:
    """A per-epoch profile as maximal segments: runs of consecutive epochs with the same batch
    size and the same duration.

    Build one with :meth:`from_epochs` (from the expanded arrays) or :meth:`from_segments` (from
    segments, adjacent equal segments merged); the constructor takes canonical (maximal)
    segments as is. Contents are not validated here (:class:`~shockwave.workload.Job` validates
    its profile).

    Attributes:
        batch_sizes: batch size of each segment's epochs, shape ``(R,)``, int64.
        seconds: duration of each of the segment's epochs, seconds, shape ``(R,)``, float64.
        counts: epochs in each segment (>= 1), shape ``(R,)``, int64.
        running_seconds: the sum of the epoch durations from the first epoch to the last epoch
            of each segment, summed epoch by epoch in epoch order (``numpy.cumsum`` of the
            expanded durations, at the segments' last epochs), shape ``(R,)``.
    """

    batch_sizes: IntArray
    seconds: FloatArray
    counts: IntArray
    running_seconds: FloatArray = field(init=False)

    @classmethod
    def _of_fresh(cls, sizes: IntArray, seconds: FloatArray, counts: IntArray) -> EpochProfile:
        """Canonical segments from arrays of the right types and shapes that nothing else holds
        (adopted without copies or checks)."""
        profile = object.__new__(cls)
        with np.errstate(over="ignore", invalid="ignore"):
            running = _running_ends(seconds, counts)
        for name, value in (
            ("batch_sizes", sizes),
            ("seconds", seconds),
            ("counts", counts),
            ("running_seconds", running),
        ):
            object.__setattr__(profile, name, _frozen(value))
        return profile

    def __post_init__(self) -> None:
        sizes = _frozen(np.array(self.batch_sizes, dtype=np.int64, copy=True).reshape(-1))
        seconds = _frozen(np.array(self.seconds, dtype=np.float64, copy=True).reshape(-1))
        counts = _frozen(np.array(self.counts, dtype=np.int64, copy=True).reshape(-1))
        if not sizes.shape == seconds.shape == counts.shape:
            raise ValueError(
                f"runs: {sizes.size} batch sizes, {seconds.size} durations and {counts.size} "
                "counts; one of each per run"
            )
        if counts.size and int(counts.min()) < 1:
            raise ValueError("runs: every run count must be >= 1")
        object.__setattr__(self, "batch_sizes", sizes)
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "counts", counts)
        with np.errstate(over="ignore", invalid="ignore"):  # a job refuses an infinite total
            running = _running_ends(seconds, counts)
        object.__setattr__(self, "running_seconds", _frozen(running))

    # ---------------------------------------------------------------------- construction
    @classmethod
    def from_epochs(cls, batch_sizes: npt.ArrayLike, epoch_seconds: npt.ArrayLike) -> EpochProfile:
        """The segments of expanded per-epoch arrays (of equal length)."""
        sizes = np.asarray(batch_sizes, dtype=np.int64).reshape(-1)
        seconds = np.asarray(epoch_seconds, dtype=np.float64).reshape(-1)
        if sizes.shape != seconds.shape:
            raise ValueError(
                f"epoch_seconds has {seconds.size} entries but batch_sizes has {sizes.size}"
            )
        if sizes.size == 0:
            return cls(sizes, seconds, np.zeros(0, dtype=np.int64))
        change = np.flatnonzero((seconds[1:] != seconds[:-1]) | (sizes[1:] != sizes[:-1])) + 1
        first = np.concatenate(([0], change)).astype(np.int64)
        counts = np.diff(np.concatenate((first, [sizes.shape[0]]))).astype(np.int64)
        return cls._of_fresh(sizes[first], seconds[first], counts)

    @classmethod
    def from_segments(
        cls, batch_sizes: npt.ArrayLike, seconds: npt.ArrayLike, counts: npt.ArrayLike
    ) -> EpochProfile:
        """Segments given as (batch size, seconds, count) triples; adjacent equal ones are merged.

        Raises:
            ValueError: for arrays of different lengths or a count below 1.
        """
        sizes = np.array(batch_sizes, dtype=np.int64, copy=True).reshape(-1)
        secs = np.array(seconds, dtype=np.float64, copy=True).reshape(-1)
        number = np.array(counts, dtype=np.int64, copy=True).reshape(-1)
        if not sizes.shape == secs.shape == number.shape:
            raise ValueError(
                f"runs: {sizes.size} batch sizes, {secs.size} durations and {number.size} "
                "counts; one of each per run"
            )
        if number.size and int(number.min()) < 1:
            raise ValueError("runs: every run count must be >= 1")
        if sizes.size <= 1:
            return cls._of_fresh(sizes, secs, number)
        starts = np.flatnonzero((secs[1:] != secs[:-1]) | (sizes[1:] != sizes[:-1])) + 1
        if starts.size == sizes.size - 1:  # already maximal segments
            return cls._of_fresh(sizes, secs, number)
        starts = np.concatenate(([0], starts))
        merged = np.add.reduceat(number, starts).astype(np.int64)
        return cls._of_fresh(sizes[starts], secs[starts], merged)

    # --------------------------------------------------------------------------- reading
    @property
    def num_segments(self) -> int:
        """Number of segments ``R``."""
        return int(self.counts.shape[0])

    @property
    def num_epochs(self) -> int:
        """Number of epochs ``E`` (the counts summed)."""
        return int(self.counts.sum())

    @property
    def first_epochs(self) -> IntArray:
        """Index of the first epoch of each segment, shape ``(R,)``."""
        return np.concatenate(([0], np.cumsum(self.counts)[:-1])).astype(np.int64)

    @property
    def seconds_before(self) -> FloatArray:
        """Seconds of the epochs before each segment (running sums, as :attr:`running_seconds`)."""
        return np.concatenate(([0.0], self.running_seconds[:-1])).astype(np.float64)

    @property
    def total_seconds(self) -> float:
        """The epoch durations summed epoch by epoch: ``numpy.cumsum(epoch_seconds)[-1]``."""
        return float(self.running_seconds[-1]) if self.running_seconds.size else 0.0

    @property
    def pairwise_total(self) -> float:
        """``numpy.sum(epoch_seconds)`` of the expanded profile (numpy's pairwise sum), computed
        on a transient expansion."""
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.sum(self.expand_seconds()))

    def is_canonical(self) -> bool:
        """Whether the segments are maximal (no two neighbours have the same batch size and
        duration), as :meth:`from_epochs` and :meth:`from_segments` make them."""
        same = (self.batch_sizes[1:] == self.batch_sizes[:-1]) & (
            self.seconds[1:] == self.seconds[:-1]
        )
        return not bool(same.any())

    def distinct_batch_sizes(self) -> IntArray:
        """The batch sizes the profile uses, ascending."""
        return np.unique(self.batch_sizes)

    def expand_batch_sizes(self) -> IntArray:
        """The batch size of every epoch, shape ``(E,)`` (a new, read-only array)."""
        return _frozen(np.repeat(self.batch_sizes, self.counts))

    def expand_seconds(self) -> FloatArray:
        """The duration of every epoch, shape ``(E,)`` (a new, read-only array)."""
        return _frozen(np.repeat(self.seconds, self.counts))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EpochProfile):
            return NotImplemented
        return (
            np.array_equal(self.batch_sizes, other.batch_sizes)
            and np.array_equal(self.seconds, other.seconds)
            and np.array_equal(self.counts, other.counts)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"EpochProfile({self.num_segments} segments, {self.num_epochs} epochs: "
            f"batch_sizes={self.batch_sizes.tolist()!r}, seconds={self.seconds.tolist()!r}, "
            f"counts={self.counts.tolist()!r})"
        )


@dataclass(frozen=True, eq=False)
class EpochColumn:
    """One per-epoch array (batch sizes or durations), run-length encoded: ``values[k]`` repeated
    ``counts[k]`` times. What a file's ``{"runs": [[value, count], ...]}`` holds; give one to
    :class:`~shockwave.workload.Job` for ``batch_sizes`` or ``epoch_seconds`` to build the job
    without expanding it. Not validated here (the job validates the values and counts).

    Attributes:
        values: the value of each run, as given (any array-like; the job converts and checks it).
        counts: the epochs of each run (integers >= 1).
        epochs: the counts summed, if the caller knows it (saves summing them again).
    """

    values: Any
    counts: Any
    epochs: int | None = None

    @property
    def num_epochs(self) -> int:
        """The counts summed."""
        if self.epochs is not None:
            return self.epochs
        return int(np.sum(np.asarray(self.counts, dtype=np.int64)))

    def expand(self) -> npt.NDArray[Any]:
        """The per-epoch array."""
        return np.repeat(np.asarray(self.values), np.asarray(self.counts, dtype=np.int64))


def merge_columns(
    sizes: npt.NDArray[np.int64],
    size_counts: npt.NDArray[np.int64],
    seconds: npt.NDArray[np.float64],
    second_counts: npt.NDArray[np.int64],
) -> EpochProfile:
    """The segments of two run-length encoded columns over the same epochs (equal count sums):
    split wherever either column changes, then equal neighbours merged."""
    if np.array_equal(size_counts, second_counts):  # the usual case: the same segments
        return EpochProfile.from_segments(sizes, seconds, size_counts)
    size_ends = np.cumsum(size_counts)
    second_ends = np.cumsum(second_counts)
    ends = np.union1d(size_ends, second_ends)
    starts = np.concatenate(([0], ends[:-1]))
    size_at = np.searchsorted(size_ends, starts, side="right")
    second_at = np.searchsorted(second_ends, starts, side="right")
    return EpochProfile.from_segments(sizes[size_at], seconds[second_at], ends - starts)


#: Longest stretch of epochs expanded at once when summing (bounds the transient memory).
_CHUNK_EPOCHS = 1 << 20


def _running_ends(seconds: FloatArray, counts: IntArray) -> FloatArray:
    """The sequential running sum of the expanded durations at each segment's last epoch.

    Bit for bit ``numpy.cumsum(numpy.repeat(seconds, counts))[ends]``: the sum is accumulated
    epoch by epoch, on transient expansions of at most :data:`_CHUNK_EPOCHS` epochs.
    """
    segments = seconds.shape[0]
    out = np.empty(segments, dtype=np.float64)
    if segments == 0:
        return out
    if segments == 1:  # the usual static profile
        count = int(counts[0])
        if count <= _CHUNK_EPOCHS:
            out[0] = np.cumsum(np.full(count, seconds[0]))[-1]
            return out
    else:
        ends = np.cumsum(counts)
        if int(ends[-1]) <= _CHUNK_EPOCHS:
            out[:] = np.cumsum(np.repeat(seconds, counts))[ends - 1]
            return out
    carry = 0.0
    for index, (value, count) in enumerate(zip(seconds.tolist(), counts.tolist(), strict=True)):
        left = int(count)
        while left > 0:
            take = min(left, _CHUNK_EPOCHS)
            block = np.full(take + 1, value, dtype=np.float64)
            block[0] = carry
            carry = float(np.cumsum(block)[-1])
            left -= take
        out[index] = carry
    return out
