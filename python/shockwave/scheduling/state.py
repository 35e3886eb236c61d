"""What a policy sees: a snapshot of the cluster at a round boundary.

The snapshot is *struct-of-arrays*: one numpy array per quantity, aligned with the active jobs
(admitted and not completed), in admission order. A policy over thousands of jobs reads whole
columns (``state.gang_size``, ``state.remaining_seconds``) instead of walking per-job objects.
Per-job static facts (the profile: batch size and duration of every epoch) stay on the
:class:`~shockwave.workload.Job` objects, reachable through :meth:`ClusterState.job`.

The state says, in three fields, what differs between the cluster worlds that build it, so
that a policy never needs to know which world it runs in (:mod:`shockwave.rounds.world`):

* ``progress_counter``: what the cluster's progress counters count. ``"profile"`` (exact
  profiles, the planned view, real runs): the position along each job's profile;
  ``remaining_seconds`` is the profile's time left and ``steps_run`` / ``total_steps`` count the
  profile's iterations (an epoch at batch size ``b`` has ``ceil(samples_per_epoch / b)`` of
  them). ``"steps"`` (the original simulator's mechanics): the original's step counters, in
  iterations at the *current* batch size, rescaled whenever the batch size changes;
  ``remaining_steps`` is the counter and ``remaining_seconds = remaining_steps / throughput``.
* ``batch_size_changes``: ``"profile"``: every batch size a job reaches is one of its profile's;
  ``"runtime-rules"``: jobs change batch size by the original simulator's runtime rules
  (:mod:`shockwave.sim.runtime_batch_size`), possibly to sizes their profile does not list, at
  the rates of the workload's throughput table.
* ``original_quirks``: the cluster reproduces the original Gavel/Shockwave simulator, so a
  policy whose original implementation has a quirk the original's results depend on keeps it
  (FIFO's count of free GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from shockwave.id_lookup import positions_of
from shockwave.persistence import StateReader
from shockwave.workload import Job, Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: What a cluster's progress counters count (:attr:`ClusterState.progress_counter`).
ProgressCounter = Literal["profile", "steps"]
#: How jobs change batch size (:attr:`ClusterState.batch_size_changes`).
BatchSizeChanges = Literal["profile", "runtime-rules"]


@dataclass(frozen=True)
class ThroughputSamples:
    """The measured throughput of one job, one sample per round it ran.

    As the original's ``_throughput_timeline``: ``rounds[k]`` is the index of the round boundary
    at which the run ended (one more than the index of the round that ran),
    ``steps_per_second[k]`` the iterations per second measured over that run (net of the restart
    penalty), ``batch_sizes[k]`` the batch size the run started with.
    """

    rounds: IntArray
    steps_per_second: FloatArray
    batch_sizes: IntArray

    def __len__(self) -> int:
        return int(self.rounds.shape[0])


class SampleLog:
    """Throughput samples of every job of a workload, appended by the simulator as rounds end.

    Args:
        position: for each internal job index, its position in the workload.
    """

    def __init__(self, position: IntArray) -> None:
        jobs = position.shape[0]
        # Every sample in flat arrays (capacity grown by doubling), each job's samples chained
        # from its latest backwards (``_previous``, -1 ends the chain): no Python object per
        # sample, so a long simulation's log stays small.
        self._size = 0
        self._round = np.zeros(0, dtype=np.int64)
        self._rate = np.zeros(0, dtype=np.float64)
        self._batch = np.zeros(0, dtype=np.int64)
        self._previous = np.zeros(0, dtype=np.int64)
        self._latest = np.full(jobs, -1, dtype=np.int64)
        self._internal = np.empty(jobs, dtype=np.int64)
        self._internal[position] = np.arange(jobs, dtype=np.int64)
        #: the latest sample of each internal job (round -1: none yet)
        self.last_round = np.full(jobs, -1, dtype=np.int64)
        self.last_rate = np.zeros(jobs, dtype=np.float64)
        self.last_batch_size = np.zeros(jobs, dtype=np.int64)

    def _reserve(self, extra: int) -> None:
        needed = self._size + extra
        if needed <= self._round.shape[0]:
            return
        capacity = max(needed, 2 * self._round.shape[0], 1024)
        for name in ("_round", "_rate", "_batch", "_previous"):
            old = getattr(self, name)
            grown = np.empty(capacity, dtype=old.dtype)
            grown[: self._size] = old[: self._size]
            setattr(self, name, grown)

    def record(
        self, jobs: IntArray, round_index: int, steps_per_second: FloatArray, batch_size: IntArray
    ) -> None:
        """Record one run of each internal job in ``jobs`` (distinct), ending at boundary
        ``round_index``."""
        count = int(jobs.shape[0])
        self._reserve(count)
        new = slice(self._size, self._size + count)
        self._round[new] = round_index
        self._rate[new] = steps_per_second
        self._batch[new] = batch_size
        self._previous[new] = self._latest[jobs]
        self._latest[jobs] = np.arange(self._size, self._size + count, dtype=np.int64)
        self._size += count
        self.last_round[jobs] = round_index
        self.last_rate[jobs] = steps_per_second
        self.last_batch_size[jobs] = batch_size

    def of_position(self, position: int, through_round: int) -> ThroughputSamples:
        """The samples of the job at ``position`` in the workload, up to boundary
        ``through_round`` (a snapshot taken then must not see later rounds)."""
        chain: list[int] = []
        sample = int(self._latest[int(self._internal[position])])
        while sample >= 0:
            chain.append(sample)
            sample = int(self._previous[sample])
        rows = np.array(chain[::-1], dtype=np.int64)
        rows = rows[self._round[rows] <= through_round]
        return ThroughputSamples(
            self._round[rows].copy(), self._rate[rows].copy(), self._batch[rows].copy()
        )

    def snapshot(self) -> dict[str, Any]:
        """Every sample and the latest per job, as data (:mod:`shockwave.persistence`)."""
        size = self._size
        return {
            "round": self._round[:size].copy(),
            "rate": self._rate[:size].copy(),
            "batch": self._batch[:size].copy(),
            "previous": self._previous[:size].copy(),
            "latest": self._latest.copy(),
            "last_round": self.last_round.copy(),
            "last_rate": self.last_rate.copy(),
            "last_batch_size": self.last_batch_size.copy(),
        }

    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot` (of a log over the same jobs), every array checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the field that does not fit.
        """
        jobs = self._latest.shape[0]
        rounds = saved.array("round", np.int64, (None,))
        size = rounds.shape[0]
        rate = saved.array("rate", np.float64, (size,))
        batch = saved.array("batch", np.int64, (size,))
        previous = saved.array("previous", np.int64, (size,))
        latest = saved.array("latest", np.int64, (jobs,))
        if (
            np.any(previous >= np.arange(size))
            or np.any(previous < -1)
            or np.any(latest >= size)
            or np.any(latest < -1)
        ):
            raise saved.error("previous", "the chains of samples point forward or out of range")
        last = (
            saved.array("last_round", np.int64, (jobs,)),
            saved.array("last_rate", np.float64, (jobs,)),
            saved.array("last_batch_size", np.int64, (jobs,)),
        )
        saved.done()
        self._size = size
        self._round, self._rate, self._batch, self._previous = rounds, rate, batch, previous
        self._latest = latest
        self.last_round, self.last_rate, self.last_batch_size = last


@dataclass(frozen=True, eq=False)
class ClusterState:
    """The cluster at a round boundary, as handed to a policy.

    Scalars:
        time: the boundary, seconds since the trace's time origin.
        round_index: index of the round about to be scheduled (0-based).
        gpus: GPUs in the cluster (G).
        round_seconds: round length tau, seconds.
        progress_counter: what the progress counters count, ``"profile"`` or ``"steps"`` (see
            the module notes).
        batch_size_changes: ``"profile"`` or ``"runtime-rules"`` (see the module notes).
        original_quirks: whether policies keep the original's quirks (see the module notes).
        workload: the simulated workload (every job, static facts).

    Arrays, one entry per active job, in admission order:
        positions: index of the job in ``workload.jobs``.
        job_ids: the jobs' ``Job.job_id``.
        arrival_time: trace arrival, seconds.
        admission_time: the round boundary at which the job was admitted, seconds.
        admission_round: index of that boundary.
        gang_size: GPUs per job (w).
        weight: priority weights (1 in every original trace).
        num_epochs: epochs of each job's profile (E).
        epochs_done: whole epochs completed (``floor`` of ``epoch_progress``).
        epoch_progress: epochs completed, fractional (``progress_counter == "profile"``: the
            position in the profile; ``"steps"``: the original's steps run divided by iterations
            per epoch).
        steps_run, total_steps, remaining_steps: iteration counters (see the module notes).
        batch_size: the batch size the job runs at now.
        throughput: isolated throughput at the current batch size, iterations per second for the
            whole gang (noise-free).
        remaining_seconds: exclusive run time left at full speed, seconds (``"profile"``: the
            rest of the profile; ``"steps"``: ``remaining_steps / throughput``, the original's
            view).
        service_seconds: run time received so far, seconds, net of restart penalties.
        rounds_run, rounds_queued: rounds the job ran / waited since admission.
        ran_last_round: whether the job ran in the previous round.
        last_sample_round, last_sample_steps_per_second, last_sample_batch_size: the job's
            latest throughput sample (as in :class:`ThroughputSamples`; round -1 and zeros when
            it has none). A sample with ``last_sample_round == round_index`` is new: the job ran
            in the round that just ended.

    Events since the previous call of this policy:
        arrived: ``job_ids`` of jobs admitted since then (all active).
        completed: ``job_ids`` of jobs that completed since then (no longer active).
    """

    time: float
    round_index: int
    gpus: int
    round_seconds: float
    progress_counter: ProgressCounter
    batch_size_changes: BatchSizeChanges
    original_quirks: bool
    workload: Workload
    positions: IntArray
    job_ids: IntArray
    arrival_time: FloatArray
    admission_time: FloatArray
    admission_round: IntArray
    gang_size: IntArray
    weight: FloatArray
    num_epochs: IntArray
    epochs_done: IntArray
    epoch_progress: FloatArray
    steps_run: FloatArray
    total_steps: FloatArray
    remaining_steps: FloatArray
    batch_size: IntArray
    throughput: FloatArray
    remaining_seconds: FloatArray
    service_seconds: FloatArray
    rounds_run: IntArray
    rounds_queued: IntArray
    ran_last_round: BoolArray
    last_sample_round: IntArray
    last_sample_steps_per_second: FloatArray
    last_sample_batch_size: IntArray
    arrived: IntArray
    completed: IntArray
    _samples: SampleLog

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
                if name not in ("arrived", "completed") and value.shape != self.positions.shape:
                    raise ValueError(f"state field {name!r} is not aligned with the active jobs")

    @property
    def num_active(self) -> int:
        """Number of active jobs (length of every per-job array)."""
        return int(self.positions.shape[0])

    @property
    def time_since_arrival(self) -> FloatArray:
        """``time - arrival_time`` per active job, seconds (the original's times since start)."""
        return self.time - self.arrival_time

    def job(self, index: int) -> Job:
        """The static :class:`Job` of the ``index``-th active job."""
        return self.workload.jobs[int(self.positions[index])]

    @property
    def jobs(self) -> tuple[Job, ...]:
        """The static :class:`Job` of every active job, in the arrays' order."""
        jobs = self.workload.jobs
        return tuple(jobs[int(p)] for p in self.positions)

    def throughput_samples(self, index: int) -> ThroughputSamples:
        """Measured throughput samples of the ``index``-th active job (see
        :class:`ThroughputSamples`)."""
        return self._samples.of_position(int(self.positions[index]), self.round_index)

    def index_of(self, job_ids: npt.ArrayLike) -> IntArray:
        """Indices into the per-job arrays of the given ``job_ids``.

        Raises:
            ValueError: naming the first id that is not an active job.
        """
        wanted = np.asarray(job_ids, dtype=np.int64).reshape(-1)
        rows = positions_of(self.job_ids, wanted)
        if (rows < 0).any():
            bad = int(wanted[np.argmax(rows < 0)])
            raise ValueError(f"job id {bad} is not an active job at t={self.time:g} s")
        return rows
