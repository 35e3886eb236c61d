"""Exact progress through per-epoch profiles, vectorised over jobs (``exact`` mechanics).

A job's progress is the exclusive run time it has completed, ``s`` seconds in ``[0, T]`` with
``T`` the sum of its epoch durations. Epoch ``e`` spans ``[C_e, C_{e+1})`` with ``C`` the
cumulative durations, so the epoch in progress, the fraction done, the batch size and the
iterations run follow from ``s`` exactly, epoch boundaries inside a round included.

Profiles are piecewise constant: a job trains many consecutive epochs at one batch size, each of
the same duration. They are stored as *segments* (runs of identical epochs), not epochs: a
20,000-job generated trace has about 24 million epochs but only about 40,000 segments. Within a
segment that starts at ``C_k`` with epochs of ``d`` seconds, epoch ``first_k + floor((s - C_k) /
d)`` is in progress. All jobs' segments live in flat arrays; a single ``searchsorted`` on keys
``job * B + C_k`` (``B`` a power of two above every ``T``) finds every job's segment at once,
and one correction pass on the exact (unshifted) values removes any rounding in the shifted keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.catalog import MODEL_FAMILIES
from shockwave.epoch_profile import EpochProfile
from shockwave.workload import Job

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def iterations_per_epoch(job: Job) -> npt.NDArray[np.int64]:
    """Iterations of every epoch: ``ceil(samples_per_epoch / batch_size)``.

    The samples per epoch come from the job, else from the model's dataset (catalog); a job of an
    unknown model without them counts one iteration per epoch.
    """
    return np.repeat(_segment_iterations(job), job.profile.counts)


def _segment_iterations(job: Job) -> npt.NDArray[np.int64]:
    """Iterations of one epoch of each of the job's segments (see :func:`iterations_per_epoch`)."""
    samples = _samples_per_epoch(job)
    sizes = job.profile.batch_sizes
    if samples <= 0:
        return np.ones(sizes.shape[0], dtype=np.int64)
    return -(-samples // sizes)


def _samples_per_epoch(job: Job) -> int:
    """The job's samples per epoch, else its model's (catalog); 0 when unknown."""
    samples = job.samples_per_epoch
    if samples is None and job.model in MODEL_FAMILIES:
        samples = MODEL_FAMILIES[job.model].samples_per_epoch
    return 0 if samples is None else int(samples)


class ProfileProgress:
    """The profiles of a list of jobs, as flat segment arrays for vectorised lookups.

    Per job: ``epochs`` (E), ``total_seconds`` (T, the epoch durations summed in epoch order),
    ``total_iterations``. Per segment (flat, job after job): first epoch, epoch count, epoch
    duration, batch size, iterations per epoch, and the seconds and iterations the job has done
    before the segment.

    Args:
        jobs: the jobs (their samples per epoch give the iterations of each epoch).
        profiles: one profile per job to follow instead of the jobs' own (a job's profile on
            one GPU type, :meth:`~shockwave.workload.Job.profile_on`: the same batch sizes,
            other durations); ``None``: each job's :attr:`~shockwave.workload.Job.profile`.
    """

    def __init__(self, jobs: Sequence[Job], profiles: Sequence[EpochProfile] | None = None) -> None:
        n = len(jobs)
        # The segments are the profiles' own, as the jobs hold them (run-length encoded);
        # everything below is vectorised over all jobs' segments at once.
        if profiles is None:
            profiles = [job.profile for job in jobs]
        elif len(profiles) != n:
            raise ValueError(f"{len(profiles)} profiles for {n} jobs")
        self.epochs = np.array([r.num_epochs for r in profiles], dtype=np.int64)
        self.segments = np.array([r.num_segments for r in profiles], dtype=np.int64)
        self.segment_start = np.concatenate(([0], np.cumsum(self.segments)[:-1])).astype(np.int64)
        owner_index = np.repeat(np.arange(n, dtype=np.int64), self.segments)
        start_of_owner = self.segment_start[owner_index]

        def flat(values: list[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
            return np.concatenate(values).astype(dtype) if values else np.zeros(0, dtype=dtype)

        self.count: IntArray = flat([r.counts for r in profiles], np.int64)
        self.duration: FloatArray = flat([r.seconds for r in profiles], np.float64)
        self.batch_size: IntArray = flat([r.batch_sizes for r in profiles], np.int64)
        running = flat([r.running_seconds for r in profiles], np.float64)
        # epochs, and iterations (exact integers), before each segment within its job
        epochs_through = np.cumsum(self.count)
        self.first_epoch: IntArray = (
            (epochs_through - self.count)
            - (epochs_through[start_of_owner] - self.count[start_of_owner])
        ).astype(np.int64)
        samples = np.array([_samples_per_epoch(job) for job in jobs], dtype=np.int64)
        per_segment = samples[owner_index]
        whole = np.where(per_segment > 0, -(-per_segment // np.maximum(self.batch_size, 1)), 1)
        self.iterations: FloatArray = whole.astype(np.float64)
        done_through = np.cumsum(whole * self.count)
        self.iterations_before: FloatArray = (
            (done_through - whole * self.count)
            - (done_through[start_of_owner] - (whole * self.count)[start_of_owner])
        ).astype(np.float64)
        # seconds before each segment: the profile's own running sum at its first epoch
        self.seconds_before = np.zeros(running.shape[0], dtype=np.float64)
        inner = np.flatnonzero(np.arange(running.shape[0]) != start_of_owner)
        self.seconds_before[inner] = running[inner - 1]
        totals = np.array([r.total_seconds for r in profiles], dtype=np.float64)
        self.total_seconds = totals
        last = self.segment_start + self.segments - 1
        self.total_iterations = (
            self.iterations_before[last] + self.iterations[last] * self.count[last]
        )
        owner = np.repeat(np.arange(n, dtype=np.float64), self.segments)
        span = float(self.total_seconds.max()) + 1.0 if n else 1.0
        self._shift = float(2.0 ** np.ceil(np.log2(span)))
        self._keys = owner * self._shift + self.seconds_before
        self._epoch_base = float(self.epochs.max() + 1) if n else 1.0
        self._first_keys = owner * self._epoch_base + self.first_epoch

    def _segment(self, jobs: IntArray, index: IntArray) -> IntArray:
        """The (flat) segment holding epoch ``index`` of each job."""
        start = self.segment_start[jobs]
        keys = jobs.astype(np.float64) * self._epoch_base + index
        found = np.searchsorted(self._first_keys, keys, side="right") - 1
        return np.clip(found, start, start + self.segments[jobs] - 1).astype(np.int64)

    def epoch_index(self, jobs: IntArray, seconds: FloatArray) -> IntArray:
        """The epoch in progress after ``seconds`` of work (``E - 1`` once the profile is done)."""
        keys = jobs.astype(np.float64) * self._shift + seconds
        start = self.segment_start[jobs]
        end = start + self.segments[jobs] - 1
        segment = np.clip(np.searchsorted(self._keys, keys, side="right") - 1, start, end)
        # exact correction of the shifted-key rounding (at most one segment either way)
        segment = np.where(
            (self.seconds_before[segment] > seconds) & (segment > start), segment - 1, segment
        )
        up = np.minimum(segment + 1, end)
        segment = np.where((segment < end) & (self.seconds_before[up] <= seconds), up, segment)
        within = np.floor((seconds - self.seconds_before[segment]) / self.duration[segment])
        within = np.clip(within, 0, self.count[segment] - 1).astype(np.int64)
        return np.minimum(self.first_epoch[segment] + within, self.epochs[jobs] - 1)

    def _locate(self, jobs: IntArray, index: IntArray) -> tuple[IntArray, FloatArray]:
        """Segment of epoch ``index`` and the seconds done before that epoch."""
        segment = self._segment(jobs, index)
        before = (
            self.seconds_before[segment]
            + (index - self.first_epoch[segment]) * self.duration[segment]
        )
        return segment, before

    def seconds_at(self, jobs: IntArray, index: IntArray, fraction: FloatArray) -> FloatArray:
        """Seconds of work done at ``fraction`` (in ``[0, 1]``) of epoch ``index`` (the inverse
        of :meth:`epoch_index` and :meth:`fraction`)."""
        segment, before = self._locate(jobs, index)
        return np.asarray(before + fraction * self.duration[segment], dtype=np.float64)

    def fraction(self, jobs: IntArray, index: IntArray, seconds: FloatArray) -> FloatArray:
        """The fraction of epoch ``index`` done after ``seconds`` of work."""
        segment, before = self._locate(jobs, index)
        return np.asarray(
            np.clip((seconds - before) / self.duration[segment], 0.0, 1.0), dtype=np.float64
        )

    def iterations_done(self, jobs: IntArray, index: IntArray, seconds: FloatArray) -> FloatArray:
        """Iterations run after ``seconds`` of work, epoch ``index`` in progress (piecewise linear
        within each epoch)."""
        segment, before = self._locate(jobs, index)
        whole = (
            self.iterations_before[segment]
            + (index - self.first_epoch[segment]) * (self.iterations[segment])
        )
        fraction = np.clip((seconds - before) / self.duration[segment], 0.0, 1.0)
        return np.asarray(whole + fraction * self.iterations[segment], dtype=np.float64)

    def epoch_facts(
        self, jobs: IntArray, index: IntArray
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Batch size, iterations and duration (seconds) of epoch ``index`` of each job."""
        segment = self._segment(jobs, index)
        return self.batch_size[segment], self.iterations[segment], self.duration[segment]
