"""What both mechanics share: the per-job arrays, admissions, policy calls and the round log.

Jobs are kept in *admission order* internally (stable sort on arrival time), so that "the active
jobs" is always an increasing index array and ties resolve in admission order, as in the
original. Results are reported in trace order.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from shockwave.policies.protocol import AllocationPolicy, Policy, RoundPolicy
from shockwave.sim.config import SimulationConfig
from shockwave.sim.errors import PolicyOutputError, SimulationStalledError
from shockwave.sim.record import SimulationRecord
from shockwave.sim.round_mechanism import RoundMechanism
from shockwave.sim.state import ClusterState, SampleLog
from shockwave.workload import Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

Scalar = TypeVar("Scalar", bound=np.generic)


class ProgressColumns(TypedDict):
    """The per-job state columns whose meaning depends on the mechanics (see ClusterState)."""

    epochs_done: IntArray
    epoch_progress: FloatArray
    steps_run: FloatArray
    total_steps: FloatArray
    remaining_steps: FloatArray
    batch_size: IntArray
    throughput: FloatArray
    remaining_seconds: FloatArray


#: Called after every round with (rounds simulated, jobs finished, jobs in the workload).
ProgressCallback = Callable[[int, int, int], None]
#: Called at the start of every round boundary with its index (see :meth:`Engine.run`).
BoundaryHook = Callable[[int], None]

#: Tolerance on returned time fractions (a solver's 1 + 1e-12 is accepted and clipped to 1).
_FRACTION_TOLERANCE = 1e-9


class Engine(ABC):
    """The simulation loop's shared state. Subclasses implement one mechanics."""

    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        config: SimulationConfig,
        progress: ProgressCallback | None,
    ) -> None:
        if len(workload) == 0:
            raise ValueError("the workload holds no jobs")
        if not isinstance(policy, (AllocationPolicy, RoundPolicy)):
            raise TypeError(
                f"policy must be an AllocationPolicy or a RoundPolicy, got {type(policy).__name__}"
            )
        self.workload = workload
        self.policy = policy
        self.config = config
        self.progress = progress
        self.tau = float(config.round_seconds)
        self.gpus = config.gpus
        raw_arrival = workload.arrival_times
        # internal index -> position in workload.jobs (admission order)
        self.position = np.lexsort((np.arange(len(workload)), raw_arrival)).astype(np.int64)
        self.jobs = [workload.jobs[int(p)] for p in self.position]
        n = len(self.jobs)
        self.n = n
        self.arrival = raw_arrival[self.position]
        self.gang = np.array([j.gang_size for j in self.jobs], dtype=np.int64)
        self.weight = np.array([j.weight for j in self.jobs], dtype=np.float64)
        self.job_ids = np.array([j.job_id for j in self.jobs], dtype=np.int64)
        self.num_epochs = np.array([j.num_epochs for j in self.jobs], dtype=np.int64)
        # Summed in epoch order, as the original's sum() over the profile list.
        self.exclusive = np.array([j.runs.total_seconds for j in self.jobs], dtype=np.float64)
        too_big = np.flatnonzero(self.gang > self.gpus)
        if too_big.shape[0]:
            job = self.jobs[int(too_big[0])]
            raise ValueError(
                f"job {job.job_id} needs {job.gang_size} GPUs but the cluster has {self.gpus}"
            )
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
        self._policy_seconds = 0.0
        self.mechanism: RoundMechanism | None = None
        if isinstance(policy, AllocationPolicy):
            self.mechanism = RoundMechanism(n, self.tau)
        self.max_rounds = config.max_rounds or self._default_max_rounds()
        #: the simulated clock when the last job is done (set when ``run`` completes), seconds
        self.makespan = 0.0

    # ----------------------------------------------------------------------------- hooks
    @abstractmethod
    def start(self) -> None:
        """Set the loop's state to the first round boundary (called once, by ``__init__``)."""

    @property
    @abstractmethod
    def round_index(self) -> int:
        """Index of the next round boundary the loop will process."""

    @abstractmethod
    def run(self, until_round: int | None = None, at_boundary: BoundaryHook | None = None) -> bool:
        """Simulate until every job has completed, or until round boundary ``until_round``.

        The loop's state lives on the engine, so ``run`` can stop at a boundary, the engine be
        pickled (a checkpoint) and ``run`` called again (possibly on the unpickled copy): the
        continuation is bit for bit the uninterrupted run. ``at_boundary(k)`` is called at the
        start of every boundary ``k``, where the engine's state is consistent (the place to save
        a checkpoint). Returns ``True`` once every job has completed, ``False`` when stopped at
        ``until_round``.
        """

    @abstractmethod
    def progress_columns(self, active: IntArray) -> ProgressColumns:
        """The mechanics-specific state columns for ``active`` (see :class:`ClusterState`)."""

    def gpu_busy_seconds(self) -> FloatArray | None:
        """Per-GPU useful execution time, if the mechanics place jobs on GPUs."""
        return None

    # ----------------------------------------------------------------------- shared logic
    def _default_max_rounds(self) -> int:
        """A generous bound on the rounds any sane policy needs (every job alone, plus slack)."""
        span = float(self.arrival[-1] - self.arrival[0])
        work = float(np.sum(self.exclusive)) * 2.0 + span
        return int(work / self.tau) + 10 * self.n + 1000

    def check_round_limit(self, round_index: int) -> None:
        if round_index >= self.max_rounds:
            raise SimulationStalledError(
                f"the simulation has not finished after {round_index} rounds "
                f"({self.finished} of {self.n} jobs done); the policy may be starving jobs "
                "(raise SimulationConfig.max_rounds if this is expected)"
            )

    def active(self) -> IntArray:
        """Internal indices of the admitted, unfinished jobs, in admission order."""
        return np.flatnonzero(self.admitted & ~self.done).astype(np.int64)

    def pending_arrival_time(self) -> float | None:
        """Arrival time of the next job not yet admitted, or ``None``."""
        if self.next_arrival < self.n:
            return float(self.arrival[self.next_arrival])
        return None

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
        if self.mechanism is not None:
            self.mechanism.admit(new)
        return new

    def complete(self, jobs: IntArray, when: FloatArray, round_index: int) -> None:
        """Mark ``jobs`` complete at ``when`` (seconds), processed at boundary ``round_index``."""
        self.done[jobs] = True
        self.completion_time[jobs] = when
        self.completion_round[jobs] = round_index
        self.finished += int(jobs.shape[0])
        self._completed_since.extend(jobs.tolist())

    def build_state(self, now: float, round_index: int, active: IntArray) -> ClusterState:
        """The snapshot handed to the policy (consumes the arrival/completion events)."""
        columns = self.progress_columns(active)
        arrived = self.job_ids[np.asarray(self._arrived_since, dtype=np.int64)]
        completed = self.job_ids[np.asarray(self._completed_since, dtype=np.int64)]
        self._arrived_since.clear()
        self._completed_since.clear()
        previous = round_index - 1
        return ClusterState(
            time=now,
            round_index=round_index,
            gpus=self.gpus,
            round_seconds=self.tau,
            mechanics=self.config.mechanics,
            workload=self.workload,
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

    def allocate(self, state: ClusterState) -> FloatArray:
        """Ask the allocation policy for fractions; validate them."""
        assert isinstance(self.policy, AllocationPolicy)
        started = time.perf_counter()
        raw = self.policy.allocate(state)
        self._policy_seconds += time.perf_counter() - started
        try:
            x = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise PolicyOutputError(
                f"{self.policy.name}: fractions are not numeric ({exc})"
            ) from None
        if x.shape != (state.num_active,):
            raise PolicyOutputError(
                f"{self.policy.name}: expected {state.num_active} time fractions (one per active "
                f"job), got an array of shape {x.shape}"
            )
        if not np.all(np.isfinite(x)):
            raise PolicyOutputError(f"{self.policy.name}: time fractions must be finite")
        if np.any(x < -_FRACTION_TOLERANCE) or np.any(x > 1.0 + _FRACTION_TOLERANCE):
            bad = int(np.argmax((x < -_FRACTION_TOLERANCE) | (x > 1.0 + _FRACTION_TOLERANCE)))
            raise PolicyOutputError(
                f"{self.policy.name}: time fraction {x[bad]!r} of job {int(state.job_ids[bad])} "
                "is outside [0, 1]"
            )
        return np.clip(x, 0.0, 1.0)

    def schedule_round(self, state: ClusterState, active: IntArray) -> IntArray:
        """Ask the round policy for the round's jobs; validate them; return internal indices."""
        assert isinstance(self.policy, RoundPolicy)
        started = time.perf_counter()
        raw = self.policy.schedule(state)
        self._policy_seconds += time.perf_counter() - started
        try:
            ids = np.asarray(raw, dtype=np.int64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise PolicyOutputError(
                f"{self.policy.name}: job ids are not integers ({exc})"
            ) from None
        if np.unique(ids).shape[0] != ids.shape[0]:
            raise PolicyOutputError(f"{self.policy.name}: a job was scheduled twice in one round")
        try:
            chosen = active[state.index_of(ids)]
        except ValueError as exc:
            raise PolicyOutputError(f"{self.policy.name}: {exc}") from None
        used = int(self.gang[chosen].sum())
        if used > self.gpus:
            raise PolicyOutputError(
                f"{self.policy.name}: the round needs {used} GPUs but the cluster has {self.gpus}"
            )
        return chosen

    def record_round(
        self,
        round_index: int,
        now: float,
        active: IntArray,
        dispatched: IntArray,
    ) -> None:
        """Log the round and update the per-job run/queue counters."""
        self.round_start.append(now)
        self.round_active.append(int(active.shape[0]))
        self.round_gpus_used.append(int(self.gang[dispatched].sum()))
        self.round_busy.append(0.0)
        self.round_policy_seconds.append(self._policy_seconds)
        self._policy_seconds = 0.0
        self.rounds_queued[active] += 1
        self.rounds_queued[dispatched] -= 1
        self.rounds_run[dispatched] += 1
        self.previous_round_run[dispatched] = self.last_round_run[dispatched]
        self.last_round_run[dispatched] = round_index
        if self.progress is not None:
            self.progress(round_index + 1, self.finished, self.n)

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the progress callback (a terminal display is not state)."""
        state = dict(self.__dict__)
        state["progress"] = None
        return state

    def record(self, makespan: float, wall_seconds: float) -> SimulationRecord:
        """The run's record, per-job arrays back in trace order."""
        trace_order = np.empty(self.n, dtype=np.int64)
        trace_order[self.position] = np.arange(self.n, dtype=np.int64)

        def back(values: npt.NDArray[Scalar]) -> npt.NDArray[Scalar]:
            return values[trace_order]

        return SimulationRecord(
            workload=self.workload,
            config=self.config,
            policy_name=self.policy.name,
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
            gpu_busy_seconds=self.gpu_busy_seconds(),
            wall_seconds=wall_seconds,
        )
