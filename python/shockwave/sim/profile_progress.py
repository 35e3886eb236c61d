"""Exact progress through per-epoch profiles, vectorised over jobs (``exact`` mechanics).

A job's progress is the exclusive run time it has completed, ``s`` seconds in ``[0, T]`` with
``T`` the sum of its epoch durations. Epoch ``e`` spans ``[C_e, C_{e+1})`` with ``C`` the
cumulative durations, so the epoch in progress, the fraction done, the batch size and the
iterations run follow from ``s`` exactly, epoch boundaries inside a round included.

All jobs' cumulative arrays live in one flat array; a single ``searchsorted`` on keys
``job * B + s`` (``B`` a power of two above every ``T``) finds every job's epoch at once, and one
correction pass on the exact (unshifted) values removes any rounding in the shifted keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shockwave.catalog import MODEL_FAMILIES
from shockwave.workload import Job

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def iterations_per_epoch(job: Job) -> npt.NDArray[np.int64]:
    """Iterations of every epoch: ``ceil(samples_per_epoch / batch_size)``.

    The samples per epoch come from the job, else from the model's dataset (catalog); a job of an
    unknown model without them counts one iteration per epoch.
    """
    samples = job.samples_per_epoch
    if samples is None and job.model in MODEL_FAMILIES:
        samples = MODEL_FAMILIES[job.model].samples_per_epoch
    if samples is None:
        return np.ones(job.num_epochs, dtype=np.int64)
    return -(-samples // job.batch_sizes)


class ProfileProgress:
    """The profiles of a list of jobs, flattened for vectorised lookups."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        epochs = np.array([j.num_epochs for j in jobs], dtype=np.int64)
        self.epochs = epochs
        # epoch-level arrays (one entry per epoch)
        self.epoch_start = np.concatenate(([0], np.cumsum(epochs)[:-1])).astype(np.int64)
        self.duration = np.concatenate([j.epoch_seconds for j in jobs])
        self.batch_size = np.concatenate([j.batch_sizes for j in jobs]).astype(np.int64)
        self.iterations = np.concatenate([iterations_per_epoch(j) for j in jobs]).astype(np.float64)
        # boundary-level arrays (E + 1 entries per job: 0, C_1, ..., C_E)
        self.boundary_start = self.epoch_start + np.arange(len(jobs), dtype=np.int64)
        cumulative_seconds = [np.concatenate(([0.0], np.cumsum(j.epoch_seconds))) for j in jobs]
        self.cumulative_seconds = np.concatenate(cumulative_seconds)
        self.cumulative_iterations = np.concatenate(
            [np.concatenate(([0.0], np.cumsum(iterations_per_epoch(j)))) for j in jobs]
        ).astype(np.float64)
        self.total_seconds = np.array([c[-1] for c in cumulative_seconds])
        self.total_iterations = self.cumulative_iterations[self.boundary_start + epochs]
        span = float(self.total_seconds.max()) + 1.0
        self._shift = float(2.0 ** np.ceil(np.log2(span)))
        owner = np.repeat(np.arange(len(jobs), dtype=np.float64), epochs + 1)
        self._keys = owner * self._shift + self.cumulative_seconds

    def epoch_index(self, jobs: IntArray, seconds: FloatArray) -> IntArray:
        """The epoch in progress after ``seconds`` of work (``E - 1`` once the profile is done)."""
        keys = jobs.astype(np.float64) * self._shift + seconds
        index = np.searchsorted(self._keys, keys, side="right") - 1 - self.boundary_start[jobs]
        last = self.epochs[jobs] - 1
        index = np.clip(index, 0, last)
        base = self.boundary_start[jobs]
        # exact correction of the shifted-key rounding (at most one epoch either way)
        index = np.where(self.cumulative_seconds[base + index] > seconds, index - 1, index)
        index = np.clip(index, 0, last)
        after = np.minimum(index + 1, last)
        step_up = (index < last) & (self.cumulative_seconds[base + after] <= seconds)
        return np.where(step_up, after, index).astype(np.int64)

    def fraction(self, jobs: IntArray, index: IntArray, seconds: FloatArray) -> FloatArray:
        """The fraction of epoch ``index`` done after ``seconds`` of work."""
        start = self.cumulative_seconds[self.boundary_start[jobs] + index]
        length = self.duration[self.epoch_start[jobs] + index]
        return np.asarray(np.clip((seconds - start) / length, 0.0, 1.0), dtype=np.float64)

    def iterations_done(self, jobs: IntArray, index: IntArray, seconds: FloatArray) -> FloatArray:
        """Iterations run after ``seconds`` of work, epoch ``index`` in progress (piecewise linear
        within each epoch)."""
        done = self.cumulative_iterations[self.boundary_start[jobs] + index]
        partial = (
            self.fraction(jobs, index, seconds) * self.iterations[self.epoch_start[jobs] + index]
        )
        return np.asarray(done + partial, dtype=np.float64)
