"""Adapting jobs on a typed cluster: each job's epoch profile on every GPU type.

A native workload's job has an epoch profile on each GPU type it can run on
(:meth:`~shockwave.workload.Job.profile_on`): the same batch sizes epoch by epoch, with the
durations of that type (seconds per epoch alone on its gang). :class:`TypedProfiles` holds them
as one :class:`~shockwave.sim.profile_progress.ProfileProgress` per type of the cluster, so the
exact progress code of the homogeneous ``exact`` mechanics serves every type.

**A job's position** is type-independent: the epoch in progress and the fraction of it done. On
type ``k`` that position is ``seconds_at`` seconds into the job's profile on ``k``; running
``s`` seconds there moves it ``s`` seconds along that profile (epoch boundaries inside a round
included), and a job that moves to another type carries its epoch and fraction with it.

**Speed on a type** (what a typed policy takes as ``T[i, k]``, and what the round mechanism's
priorities read): iterations per second of the job's *current* epoch on type ``k``,
``iterations(e) / seconds_k(e)`` with ``iterations(e) = ceil(samples_per_epoch / batch(e))``
(0 on a type the job cannot run on). Its ``remaining_steps`` are the iterations left in its
profile. For a static job this is the table's ``T[i, k]`` and its iteration count, as for a
``.trace`` job; for an adapting job it changes as its batch size does, so a policy asked every
round (``exact``) sees the speeds of the epoch each job is in.

**Isolated time** (the denominator of finish-time fairness,
:func:`~shockwave.heterogeneous.fairness.heterogeneous_ftf`): on its isolated share ``S[i, k]``
of every type, a job advances through epoch ``e`` at ``sum_k S[i, k] / seconds_k(e)`` epochs
per second, so its isolated runtime is ``sum_e 1 / (sum_k S[i, k] / seconds_k(e))``: the sum of
its epochs' durations on its equal share. For a static job (``seconds_k(e) = iterations /
T[i, k]``) this is ``steps / sum_k T[i, k] S[i, k]``, Gavel's definition.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shockwave.sim.profile_progress import ProfileProgress
from shockwave.workload import Job

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class TypedProfiles:
    """The epoch profiles of a typed run's jobs on every GPU type (see the module notes).

    Args:
        jobs: the jobs, in the run's order.
        types: the cluster's GPU types, in its order.

    Attributes:
        usable: ``(n, K)``: whether job ``i`` can run on type ``k`` (a profile there that its
            ``gpu_types`` allow; every type for a job that says nothing of types).
        progress: one :class:`ProfileProgress` per type (a job that cannot run on a type holds
            its own profile there, never read: its speed there is 0).
        total_seconds: ``(n, K)``: the job's whole profile on each type, seconds (inf where it
            cannot run).
        total_iterations: ``(n,)``: iterations of the whole profile (the same on every type).
    """

    def __init__(self, jobs: Sequence[Job], types: Sequence[str]) -> None:
        n, k = len(jobs), len(types)
        self.types = tuple(types)
        self.usable = np.zeros((n, k), dtype=np.bool_)
        self.progress: list[ProfileProgress] = []
        for column, name in enumerate(self.types):
            profiles = []
            for i, job in enumerate(jobs):
                can = job.worker_types
                if can is None or name in can:
                    self.usable[i, column] = True
                    profiles.append(job.profile_on(name))
                else:
                    profiles.append(job.profile)
            self.progress.append(ProfileProgress(jobs, profiles))
        self.total_seconds: FloatArray = np.where(
            self.usable, np.stack([p.total_seconds for p in self.progress], axis=1), np.inf
        )
        self.total_iterations: FloatArray = self.progress[0].total_iterations.copy()
        for i, job in enumerate(jobs):
            for column, name in enumerate(self.types):
                if self.usable[i, column] and self.progress[column].epochs[i] != job.num_epochs:
                    raise ValueError(
                        f"job {job.job_id}: its profile on {name} has "
                        f"{int(self.progress[column].epochs[i])} epochs, not {job.num_epochs}"
                    )

    def throughput(self, jobs: IntArray, epoch: IntArray) -> FloatArray:
        """``(m, K)``: iterations/s of each job at epoch ``epoch`` on each type (0: cannot run
        there)."""
        out = np.zeros((jobs.shape[0], len(self.types)), dtype=np.float64)
        for k, progress in enumerate(self.progress):
            _, iterations, seconds = progress.epoch_facts(jobs, epoch)
            out[:, k] = np.where(self.usable[jobs, k], iterations / seconds, 0.0)
        return out

    def iterations_done(self, jobs: IntArray, epoch: IntArray, fraction: FloatArray) -> FloatArray:
        """Iterations run at ``fraction`` of epoch ``epoch`` (the same on every type)."""
        progress = self.progress[0]
        seconds = progress.seconds_at(jobs, epoch, fraction)
        return progress.iterations_done(jobs, epoch, seconds)

    def advance(
        self,
        jobs: IntArray,
        types: IntArray,
        epoch: IntArray,
        fraction: FloatArray,
        budget: FloatArray,
    ) -> tuple[FloatArray, BoolArray, IntArray, FloatArray]:
        """Run each job up to ``budget`` seconds on its type along its profile there.

        Returns:
            ``(run, finishes, epoch, fraction)``: seconds run (the time to its last epoch's end
            when that comes first), whether the profile is done, and the new position.
        """
        m = jobs.shape[0]
        run = np.zeros(m, dtype=np.float64)
        finishes = np.zeros(m, dtype=np.bool_)
        new_epoch = epoch.copy()
        new_fraction = fraction.copy()
        for k in np.unique(types).tolist():
            sel = types == k
            rows = jobs[sel]
            progress = self.progress[k]
            total = progress.total_seconds[rows]
            before = progress.seconds_at(rows, epoch[sel], fraction[sel])
            left = np.maximum(total - before, 0.0)
            done = left <= budget[sel]
            after = np.where(done, total, np.minimum(before + budget[sel], total))
            run[sel] = np.where(done, left, budget[sel])
            finishes[sel] = done
            index = progress.epoch_index(rows, after)
            new_epoch[sel] = index
            new_fraction[sel] = np.where(done, 1.0, progress.fraction(rows, index, after))
        return run, finishes, new_epoch, new_fraction

    def isolated_seconds(self, jobs: IntArray, shares: FloatArray) -> FloatArray:
        """Each job's runtime alone on its time shares ``shares[j, k]`` of every type: its
        epochs' durations on that share summed (module notes), seconds; inf if the shares
        give it no type it can run on."""
        out = np.empty(jobs.shape[0], dtype=np.float64)
        for row, i in enumerate(jobs.tolist()):
            ends, durations = [], []
            for k, progress in enumerate(self.progress):
                if not self.usable[i, k]:
                    continue
                start = int(progress.segment_start[i])
                stop = start + int(progress.segments[i])
                ends.append(np.cumsum(progress.count[start:stop]))
                durations.append((k, progress.duration[start:stop]))
            merged = ends[0] if len(ends) == 1 else np.unique(np.concatenate(ends))
            counts = np.diff(np.concatenate(([0], merged))).astype(np.float64)
            speed = np.zeros(merged.shape[0], dtype=np.float64)  # epochs per second
            for (k, seconds), segment_ends in zip(durations, ends, strict=True):
                at = np.searchsorted(segment_ends, merged, side="left")
                speed += shares[row, k] / seconds[at]
            with np.errstate(divide="ignore"):
                out[row] = float(np.sum(counts / speed))
        return out
