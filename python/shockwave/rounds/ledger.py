"""The per-job and per-round books every cluster world shares: admissions, completions, counters.

Jobs are kept in *admission order* internally (stable sort on arrival time), so that "the active
jobs" is always an increasing index array and ties resolve in admission order, as in the
original. Results are reported in trace order. The round loop (:mod:`shockwave.rounds.loop`)
admits jobs and logs rounds here; the cluster world (:mod:`shockwave.rounds.world`) books what
ran (service, throughput samples, completions); :meth:`JobLedger.state` builds what a policy
sees and :meth:`JobLedger.record` what the metrics read.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from shockwave.blas_threads import one_blas_thread
from shockwave.persistence import StateReader
from shockwave.scheduling.record import SimulationRecord
from shockwave.scheduling.state import BatchSizeChanges, ClusterState, ProgressCounter, SampleLog
from shockwave.workload import Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

Scalar = TypeVar("Scalar", bound=np.generic)

#: The per-job arrays of the books (saved in a snapshot), with their dtypes.
_JOB_ARRAYS: dict[str, type[np.generic]] = {
    "admitted": np.bool_,
    "done": np.bool_,
    "dropped": np.bool_,
    "admission_time": np.float64,
    "admission_round": np.int64,
    "completion_time": np.float64,
    "completion_round": np.int64,
    "rounds_run": np.int64,
    "rounds_queued": np.int64,
    "last_round_run": np.int64,
    "previous_round_run": np.int64,
    "service": np.float64,
}


class JobBooks:
    """The books of one run over jobs given as arrays, in admission order (internal indices).

    The round loop needs only these; :class:`JobLedger` adds the workload (its profiles, the
    policy's state and the record). A typed cluster's jobs (:mod:`shockwave.heterogeneous`)
    keep their books here directly.

    Args:
        job_ids: each job's identifier.
        arrival: arrival times, seconds, non-decreasing.
        gang: GPUs each job needs.
        weight: priority weights.
        exclusive: seconds each job needs alone (the bound on the rounds any sane policy needs).
        gpus: GPUs in the cluster.
        position: each job's position in its workload or trace (``None``: the same order).
    """

    def __init__(
        self,
        *,
        job_ids: IntArray,
        arrival: FloatArray,
        gang: IntArray,
        weight: FloatArray,
        exclusive: FloatArray,
        gpus: int,
        position: IntArray | None = None,
    ) -> None:
        n = int(job_ids.shape[0])
        if n == 0:
            raise ValueError("the workload holds no jobs")
        self.n = n
        self.gpus = gpus
        self.position = np.arange(n, dtype=np.int64) if position is None else position
        self.job_ids = job_ids
        self.arrival = arrival
        self.gang = gang
        self.weight = weight
        self.exclusive = exclusive
        self.admitted = np.zeros(n, dtype=bool)
        self.done = np.zeros(n, dtype=bool)
        self.dropped = np.zeros(n, dtype=bool)
        self.admission_time = np.full(n, np.nan)
        self.admission_round = np.full(n, -1, dtype=np.int64)
        self.completion_time = np.full(n, np.nan)
        self.completion_round = np.full(n, -1, dtype=np.int64)
        self.rounds_run = np.zeros(n, dtype=np.int64)
        self.rounds_queued = np.zeros(n, dtype=np.int64)
        self.last_round_run = np.full(n, -1, dtype=np.int64)
        self.previous_round_run = np.full(n, -1, dtype=np.int64)
        self.service = np.zeros(n, dtype=np.float64)
        self.samples = SampleLog(self.position)
        self.next_arrival = 0
        self.finished = 0
        self._arrived_since: list[int] = []
        self._completed_since: list[int] = []
        self.round_start: list[float] = []
        self.round_active: list[int] = []
        self.round_gpus_used: list[int] = []
        self.round_busy: list[float] = []
        self.round_policy_seconds: list[float] = []
        #: wall time spent in the policy since the last logged round, seconds
        self.policy_seconds = 0.0

    # -------------------------------------------------------------------------- queries
    def default_max_rounds(self, round_seconds: float) -> int:
        """A generous bound on the rounds any sane policy needs (every job alone, plus slack)."""
        span = float(self.arrival[-1] - self.arrival[0])
        work = float(np.sum(self.exclusive)) * 2.0 + span
        return int(work / round_seconds) + 10 * self.n + 1000

    def active(self) -> IntArray:
        """Internal indices of the admitted, unfinished jobs, in admission order."""
        return np.flatnonzero(self.admitted & ~self.done).astype(np.int64)

    def pending_arrival_time(self) -> float | None:
        """Arrival time of the next job not yet admitted, or ``None``."""
        if self.next_arrival < self.n:
            return float(self.arrival[self.next_arrival])
        return None

    # --------------------------------------------------------------------------- events
    def admit_until(self, now: float, round_index: int) -> IntArray:
        """Admit every job that arrived at or before ``now``; return their internal indices."""
        start = self.next_arrival
        end = int(np.searchsorted(self.arrival, now, side="right"))
        if end <= start:
            return np.zeros(0, dtype=np.int64)
        new = np.arange(start, end, dtype=np.int64)
        self.next_arrival = end
        self.admitted[new] = True
        self.admission_time[new] = now
        self.admission_round[new] = round_index
        self._arrived_since.extend(new.tolist())
        return new

    def complete(self, jobs: IntArray, when: FloatArray, round_index: int) -> None:
        """Mark ``jobs`` complete at ``when`` (seconds), processed at boundary ``round_index``."""
        self.done[jobs] = True
        self.completion_time[jobs] = when
        self.completion_round[jobs] = round_index
        self.finished += int(jobs.shape[0])
        self._completed_since.extend(jobs.tolist())

    def book_busy(self, round_index: int, run: FloatArray, gang: IntArray) -> None:
        """Book the useful GPU-seconds of the round that ended at boundary ``round_index``:
        ``run . gang`` (``run`` each job's seconds of execution, ``gang`` its GPUs), a BLAS dot
        product on one BLAS thread (:func:`one_blas_thread`)."""
        with one_blas_thread():
            self.round_busy[round_index - 1] = float(run @ gang)

    def record_round(
        self, round_index: int, now: float, active: IntArray, dispatched: IntArray, gpus_used: int
    ) -> None:
        """Log the round (``gpus_used``: the GPUs its gangs hold) and update the per-job
        run/queue counters."""
        self.round_start.append(now)
        self.round_active.append(int(active.shape[0]))
        self.round_gpus_used.append(gpus_used)
        self.round_busy.append(0.0)
        self.round_policy_seconds.append(self.policy_seconds)
        self.policy_seconds = 0.0
        self.rounds_queued[active] += 1
        self.rounds_queued[dispatched] -= 1
        self.rounds_run[dispatched] += 1
        self.previous_round_run[dispatched] = self.last_round_run[dispatched]
        self.last_round_run[dispatched] = round_index

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        """The books' state, as data (:mod:`shockwave.persistence`)."""
        out: dict[str, Any] = {name: getattr(self, name).copy() for name in _JOB_ARRAYS}
        out.update(
            samples=self.samples.snapshot(),
            next_arrival=self.next_arrival,
            finished=self.finished,
            arrived_since=np.array(self._arrived_since, dtype=np.int64),
            completed_since=np.array(self._completed_since, dtype=np.int64),
            round_start=np.array(self.round_start, dtype=np.float64),
            round_active=np.array(self.round_active, dtype=np.int64),
            round_gpus_used=np.array(self.round_gpus_used, dtype=np.int64),
            round_busy=np.array(self.round_busy, dtype=np.float64),
            round_policy_seconds=np.array(self.round_policy_seconds, dtype=np.float64),
        )
        return out

    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot` (of books over the same workload), every field checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the field that does not fit.
        """
        n = self.n
        arrays = {name: saved.array(name, dtype, (n,)) for name, dtype in _JOB_ARRAYS.items()}
        self.samples.restore(saved.table("samples"))
        next_arrival = saved.integer("next_arrival", 0, n)
        finished = saved.integer("finished", 0, n)
        events = {}
        for name in ("arrived_since", "completed_since"):
            events[name] = saved.array(name, np.int64, (None,))
            if np.any((events[name] < 0) | (events[name] >= n)):
                raise saved.error(name, "a job index is out of range")
        rounds = saved.array("round_start", np.float64, (None,))
        logged = (rounds.shape[0],)
        logs = (
            saved.array("round_active", np.int64, logged),
            saved.array("round_gpus_used", np.int64, logged),
            saved.array("round_busy", np.float64, logged),
            saved.array("round_policy_seconds", np.float64, logged),
        )
        saved.done()
        for name, value in arrays.items():
            setattr(self, name, value)
        self.next_arrival, self.finished = next_arrival, finished
        self._arrived_since = events["arrived_since"].tolist()
        self._completed_since = events["completed_since"].tolist()
        self.round_start = rounds.tolist()
        self.round_active = logs[0].tolist()
        self.round_gpus_used = logs[1].tolist()
        self.round_busy = logs[2].tolist()
        self.round_policy_seconds = logs[3].tolist()
        self.policy_seconds = 0.0


class JobLedger(JobBooks):
    """The books of one run over ``workload`` on ``gpus`` GPUs.

    Args:
        workload: the jobs as they run (their profiles drive the world; their summed epoch
            durations are the finish-time-fairness denominators).
        gpus: GPUs in the cluster.
        view: the workload handed to policies and recorded, when it differs from the jobs as
            they run (the planned view: the same jobs with their plans as profiles).

    Raises:
        ValueError: for an empty workload, or a job whose gang does not fit in the cluster.
    """

    def __init__(self, workload: Workload, gpus: int, view: Workload | None = None) -> None:
        if len(workload) == 0:
            raise ValueError("the workload holds no jobs")
        self.workload = workload
        self.view = workload if view is None else view
        raw_arrival = workload.arrival_times
        # internal index -> position in workload.jobs (admission order)
        position = np.lexsort((np.arange(len(workload)), raw_arrival)).astype(np.int64)
        self.jobs = [workload.jobs[int(p)] for p in position]
        gang = np.array([j.gang_size for j in self.jobs], dtype=np.int64)
        too_big = np.flatnonzero(gang > gpus)
        if too_big.shape[0]:
            job = self.jobs[int(too_big[0])]
            raise ValueError(
                f"job {job.job_id} needs {job.gang_size} GPUs but the cluster has {gpus}"
            )
        self.num_epochs = np.array([j.num_epochs for j in self.jobs], dtype=np.int64)
        super().__init__(
            job_ids=np.array([j.job_id for j in self.jobs], dtype=np.int64),
            arrival=raw_arrival[position],
            gang=gang,
            weight=np.array([j.weight for j in self.jobs], dtype=np.float64),
            # Summed in epoch order, as the original's sum() over the profile list.
            exclusive=np.array([j.profile.total_seconds for j in self.jobs], dtype=np.float64),
            gpus=gpus,
            position=position,
        )

    # ---------------------------------------------------------------------------- views
    def state(
        self,
        now: float,
        round_index: int,
        active: IntArray,
        columns: Any,
        *,
        round_seconds: float,
        progress_counter: ProgressCounter,
        batch_size_changes: BatchSizeChanges,
        original_quirks: bool,
    ) -> ClusterState:
        """What the policy sees (consumes the arrival and completion events since the last
        state); ``columns`` are the world's progress columns of ``active``."""
        arrived = self.job_ids[np.asarray(self._arrived_since, dtype=np.int64)]
        completed = self.job_ids[np.asarray(self._completed_since, dtype=np.int64)]
        self._arrived_since.clear()
        self._completed_since.clear()
        previous = round_index - 1
        return ClusterState(
            time=now,
            round_index=round_index,
            gpus=self.gpus,
            round_seconds=round_seconds,
            progress_counter=progress_counter,
            batch_size_changes=batch_size_changes,
            original_quirks=original_quirks,
            workload=self.view,
            positions=self.position[active],
            job_ids=self.job_ids[active],
            arrival_time=self.arrival[active],
            admission_time=self.admission_time[active],
            admission_round=self.admission_round[active],
            gang_size=self.gang[active],
            weight=self.weight[active],
            num_epochs=self.num_epochs[active],
            service_seconds=self.service[active],
            rounds_run=self.rounds_run[active],
            rounds_queued=self.rounds_queued[active],
            ran_last_round=(self.last_round_run[active] == previous) & (previous >= 0),
            last_sample_round=self.samples.last_round[active],
            last_sample_steps_per_second=self.samples.last_rate[active],
            last_sample_batch_size=self.samples.last_batch_size[active],
            arrived=arrived,
            completed=completed,
            _samples=self.samples,
            **columns,
        )

    def record(
        self,
        *,
        policy_name: str,
        mechanics: str,
        round_seconds: float,
        seed: int,
        makespan: float,
        wall_seconds: float,
        gpu_busy_seconds: FloatArray | None,
    ) -> SimulationRecord:
        """The run's record, per-job arrays back in trace order."""
        trace_order = np.empty(self.n, dtype=np.int64)
        trace_order[self.position] = np.arange(self.n, dtype=np.int64)

        def back(values: npt.NDArray[Scalar]) -> npt.NDArray[Scalar]:
            return values[trace_order]

        return SimulationRecord(
            workload=self.view,
            gpus=self.gpus,
            round_seconds=round_seconds,
            seed=seed,
            mechanics=mechanics,
            policy_name=policy_name,
            arrival_time=back(self.arrival),
            admission_time=back(self.admission_time),
            completion_time=back(self.completion_time),
            admission_round=back(self.admission_round),
            completion_round=back(self.completion_round),
            rounds_run=back(self.rounds_run),
            rounds_queued=back(self.rounds_queued),
            last_round_run=back(self.last_round_run),
            service_seconds=back(self.service),
            exclusive_seconds=back(self.exclusive),
            dropped=back(self.dropped),
            round_start=np.array(self.round_start, dtype=np.float64),
            round_active_jobs=np.array(self.round_active, dtype=np.int64),
            round_gpus_used=np.array(self.round_gpus_used, dtype=np.int64),
            round_busy_gpu_seconds=np.array(self.round_busy, dtype=np.float64),
            round_policy_seconds=np.array(self.round_policy_seconds, dtype=np.float64),
            makespan=makespan,
            gpu_busy_seconds=gpu_busy_seconds,
            wall_seconds=wall_seconds,
        )
