"""The live cluster of a real run: the cluster world whose jobs are real processes.

:class:`LiveCluster` is the :class:`~shockwave.rounds.world.ClusterWorld` of
:mod:`shockwave.runtime`: the round loop (:mod:`shockwave.rounds.loop`) drives it exactly as it
drives a simulated cluster.

* **Rounds** form the ``exact`` mechanics' grid, ``tau`` seconds apart from the first arrival,
  on the wall clock (the run's *trace clock*: seconds since the run started, plus the first
  arrival). A job is admitted at the first boundary at or after its arrival; rounds with no
  active job are skipped.
* **Closing a round** (:meth:`LiveCluster.close_round`) serves the jobs' events until the trace
  clock reaches the boundary, waits until every job training in the round has reached it (or
  ended), then books the round: each job's seconds of training and steps (its throughput
  sample) and the jobs that finished or failed since.
* **State from reports only.** The state's progress columns are built from what the jobs
  reported: samples done (the epoch progress is ``samples / samples_per_epoch``), steps and the
  current batch size; what the jobs have not reported comes from their *planning profile* (the
  workload's per-epoch batch sizes and durations: :class:`~shockwave.sim.plan_view.PlanView`,
  the same information model as the planned-view simulator). A job's future is never read.
* **Running a round** (:meth:`LiveCluster.run_round`) hands the decision to the jobs' processes
  (:mod:`shockwave.runtime.processes`: leases, stops, starts).
* **Typed slots.** On a cluster of several GPU types (``typed``: the jobs' planned speed on
  each type, :mod:`shockwave.runtime.typed_slots`) the live cluster is also the typed
  allocator's view (:class:`~shockwave.heterogeneous.typed_world.TypedView`): a decision's
  ``types`` go with its jobs to their processes (each gang on slots of its type; a gang that
  moves to another type restarts there), every job's type in every round it is dispatched is
  kept (``LiveJob.history.types``), and the time each job ran is booked on its type.
* **A restart** of the scheduler (:meth:`LiveCluster.restore`) loses the round that was in
  flight: the trace clock restarts at its end, and every job whose process was alive waits
  until a round dispatches it again (it resumes from its checkpoint).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.allocation import TypedRounds
from shockwave.heterogeneous.mechanism import TypedRoundMechanism
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.persistence import StateReader
from shockwave.rounds.allocation import AllocationRounds
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.world import ClusterWorld, Decision, ProgressColumns
from shockwave.runtime.config import RuntimeConfig
from shockwave.runtime.lifecycle import LiveJob, Training
from shockwave.runtime.processes import JobProcesses
from shockwave.sim.plan_view import PlanView

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class JobStatus:
    """One job in a :class:`RunStatus`: its id, phase name, crashes and latest error."""

    job_id: int
    phase: str
    crashes: int
    error: str | None


@dataclass(frozen=True)
class RunStatus:
    """Where a real run stands (for a live display).

    Attributes:
        round_index: the round the run is at.
        elapsed_seconds: trace seconds since the first arrival.
        gpus: slots in the cluster; ``slots_busy``: held by live processes.
        jobs: every job's status, by internal index.
    """

    round_index: int
    elapsed_seconds: float
    gpus: int
    slots_busy: int
    jobs: tuple[JobStatus, ...]

    def count(self, *phases: str) -> int:
        """Jobs in any of ``phases`` (names: ``waiting``, ``starting``, ``running``,
        ``boundary``, ``stopping``, ``ending``, ``done``, ``failed``)."""
        return sum(job.phase in phases for job in self.jobs)


#: Called often while a real run goes on (every event-loop turn and every round).
RunProgressCallback = Callable[[RunStatus], None]


class LiveCluster(ClusterWorld):
    """Real job processes on the wall clock (see the module notes).

    Args:
        ledger: the run's books.
        config: the run's settings.
        processes: the jobs' processes.
        allocation: the round mechanism of an allocation policy (``None`` for a round policy).
        plan: the jobs' planning profiles (by internal index).
        progress: live-display callback.
        typed: the jobs' planned speed on each GPU type of a heterogeneous cluster (``None``
            on a homogeneous one).
    """

    mechanics = "physical"

    def __init__(
        self,
        ledger: JobLedger,
        config: RuntimeConfig,
        processes: JobProcesses,
        allocation: AllocationRounds | TypedRounds | None,
        plan: PlanView,
        progress: RunProgressCallback | None = None,
        typed: TypedJobs | None = None,
    ) -> None:
        self.ledger = ledger
        self.typed = typed
        self.config = config
        self.processes = processes
        self.clock = processes.clock
        self.mechanism = None if allocation is None else allocation.mechanism
        self.progress = progress
        self.tau = float(config.round_seconds)
        self.round_seconds = self.tau
        #: what a typed planner charges a start or a move: unknown before the run (0)
        self.restart_penalty_seconds = 0.0
        self.origin = float(ledger.arrival[0])
        self.samples_per_epoch = np.array(
            [float(job.samples_per_epoch or 1) for job in ledger.jobs], dtype=np.float64
        )
        self.plan = plan
        self.grid = 0
        self.in_flight = -1  # the round dispatched and not yet booked
        self.dispatched = np.zeros(0, dtype=np.int64)
        #: the GPU type index of each dispatched job (typed slots; empty otherwise)
        self.dispatched_types = np.zeros(0, dtype=np.int64)
        self.round_boundary_wait: list[float] = []
        self.round_decision_seconds: list[float] = []
        self._deciding_since = 0.0

    @property
    def live(self) -> list[LiveJob]:
        """Every job's record, by internal index."""
        return self.processes.live

    # ------------------------------------------------------------------------- state
    def progress_columns(self, active: IntArray) -> ProgressColumns:
        """The state's progress columns from the jobs' reports and their plans."""
        live = [self.live[j] for j in active.tolist()]
        samples = np.array([job.progress.samples for job in live], dtype=np.float64)
        return self.plan.columns(
            active,
            samples / self.samples_per_epoch[active],
            np.array([job.progress.steps for job in live], dtype=np.float64),
            np.array(
                [
                    job.progress.batch_size or self.ledger.jobs[j].initial_batch_size
                    for job, j in zip(live, active.tolist(), strict=True)
                ],
                dtype=np.int64,
            ),
        )

    def throughput_by_type(self, active: IntArray) -> FloatArray:
        """``T[i, k]`` of each job of ``active`` from its planning profiles (typed slots)."""
        assert self.typed is not None
        return self.typed.throughput[active]

    def remaining_steps(self, active: IntArray) -> IntArray:
        """Iterations each job of ``active`` has left: its plan's total less the steps it
        reported (typed slots)."""
        assert self.typed is not None
        steps = np.array([self.live[j].progress.steps for j in active.tolist()], dtype=np.int64)
        left: IntArray = np.maximum(self.typed.total_steps[active] - steps, 0)
        return left

    def epochs_done(self, active: IntArray) -> FloatArray | None:
        """``None``: a real run's typed view has no epoch profiles on every type (its policy
        plans from ``T[i, k]`` and the iterations left)."""
        return None

    def previous_types(self, active: IntArray, round_index: int) -> IntArray:
        """-1 for every job: a real run's planner charges no restart (its cost is not known
        before the run)."""
        return np.full(active.shape[0], -1, dtype=np.int64)

    def status(self) -> RunStatus:
        """Where the run stands."""
        return RunStatus(
            round_index=self.processes.round_index,
            elapsed_seconds=self.clock.trace_now() - self.origin,
            gpus=self.config.gpus,
            slots_busy=self.processes.slots_busy(),
            jobs=tuple(
                JobStatus(int(job_id), job.phase.name, job.history.crashes, job.error)
                for job_id, job in zip(self.ledger.job_ids.tolist(), self.live, strict=True)
            ),
        )

    # ---------------------------------------------------------------------------- clock
    def close_round(self, round_index: int) -> float:
        self.processes.round_index = round_index
        boundary = self.origin + self.grid * self.tau
        self._serve_until(boundary)
        if self.in_flight >= 0:
            self._gather_boundary()
            self._book_round(round_index)
        self._book_ended(round_index)
        self._deciding_since = self.clock.wall()
        return boundary

    def idle_until(self, arrival: float, round_index: int) -> float:
        self.grid = max(self.grid + 1, math.ceil((arrival - self.origin) / self.tau))
        return self.close_round(round_index)

    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        round_end = self.origin + (self.grid + 1) * self.tau
        self.in_flight = round_index
        self.dispatched = np.sort(decision.jobs)
        names = None
        if self.typed is not None:
            assert decision.types is not None
            order = np.argsort(decision.jobs, kind="stable")
            self.dispatched_types = decision.types[order]
            types = self.typed.cluster.types
            names = [types[k] for k in self.dispatched_types.tolist()]
            for j, name in zip(self.dispatched.tolist(), names, strict=True):
                self.live[j].history.types.append((round_index, name))
        self.processes.dispatch(self.dispatched, round_index, round_end, names)
        self.round_decision_seconds.append(self.clock.wall() - self._deciding_since)
        self.grid += 1
        self.processes.round_index = round_index + 1
        self._show()

    def makespan(self) -> float:
        done = self.ledger.completion_time[~np.isnan(self.ledger.completion_time)]
        return float(done.max()) if done.shape[0] else self.clock.trace_now()

    # ------------------------------------------------------------------------ serving
    def _serve_until(self, deadline: float) -> None:
        """Handle events until the trace clock reaches ``deadline`` (or, once every job has
        ended and no job is left to arrive, at once: nothing can happen before the boundary)."""
        while True:
            left = deadline - self.clock.trace_now()
            if left <= 0 or self._all_ended():
                return
            self.turn(min(left, 0.25))

    def _all_ended(self) -> bool:
        return self.ledger.next_arrival >= self.ledger.n and self.processes.all_over()

    def turn(self, timeout: float) -> None:
        """One turn of the event loop: events, timeouts, queued starts, the display."""
        processes = self.processes
        for event in processes.executor.poll(timeout):
            processes.handle(event)
        processes.check_timeouts()
        processes.start_queued()
        self._show()

    def _gather_boundary(self) -> None:
        """Wait until every job training in the round has reached its boundary (or ended)."""
        started = self.clock.wall()
        self.processes.due_at_boundary()
        while self.processes.any_in(Training):
            self.turn(0.05)
        self.round_boundary_wait.append(self.clock.wall() - started)

    def _show(self) -> None:
        if self.progress is not None:
            self.progress(self.status())

    # ----------------------------------------------------------------------- booking
    def _book_round(self, k: int) -> None:
        """Book the round that just ended (boundary ``k``): service, throughput samples."""
        ledger = self.ledger
        jobs = self.dispatched
        tallies = [self.live[j] for j in jobs.tolist()]
        run_seconds = np.array([job.round.busy_seconds for job in tallies], dtype=float)
        steps = np.array([job.round.steps for job in tallies], dtype=np.float64)
        sizes = np.array(
            [job.round.batch_size or job.progress.batch_size for job in tallies], dtype=np.int64
        )
        ledger.service[jobs] += run_seconds
        ledger.book_busy(k, run_seconds, ledger.gang[jobs])
        if self.typed is not None:
            typed_mechanism = self.mechanism
            assert isinstance(typed_mechanism, TypedRoundMechanism)
            for job, k, seconds in zip(
                jobs.tolist(), self.dispatched_types.tolist(), run_seconds.tolist(), strict=True
            ):
                typed_mechanism.record_run((job,), k, seconds)
        elif self.mechanism is not None:
            assert not isinstance(self.mechanism, TypedRoundMechanism)
            self.mechanism.record_run(jobs, run_seconds)
        measured = (run_seconds > 0) & (sizes > 0)
        if measured.any():
            rates = steps[measured] / run_seconds[measured]
            ledger.samples.record(jobs[measured], k, rates, sizes[measured])
        for job in self.live:
            job.round.busy_seconds = 0.0
            job.round.steps = 0
        self.in_flight = -1

    def _book_ended(self, k: int) -> None:
        """Complete the jobs that finished or failed since the last boundary."""
        ledger = self.ledger
        ended = [
            j for j, job in enumerate(self.live) if job.outcome is not None and not ledger.done[j]
        ]
        if not ended:
            return
        jobs = np.array(ended, dtype=np.int64)
        when = np.empty(len(ended), dtype=np.float64)
        for i, j in enumerate(ended):
            outcome = self.live[j].outcome
            assert outcome is not None
            when[i] = outcome.time
            if outcome.kind == "failed":
                ledger.dropped[j] = True
        ledger.complete(jobs, when, k)
        if self.typed is not None:
            typed_mechanism = self.mechanism
            assert isinstance(typed_mechanism, TypedRoundMechanism)
            for job in ended:
                typed_mechanism.remove(job)

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        return {
            "jobs": [job.snapshot() for job in self.live],
            "grid": self.grid,
            "in_flight": self.in_flight,
            "dispatched": self.dispatched.copy(),
            "dispatched_types": self.dispatched_types.copy(),
            "round_boundary_wait": np.array(self.round_boundary_wait, dtype=np.float64),
            "round_decision_seconds": np.array(self.round_decision_seconds, dtype=np.float64),
        }

    def restore(self, saved: StateReader) -> None:
        """Take back a snapshot taken after a round's decision (the journal's), discarding that
        round (see the module notes)."""
        jobs = saved.raw("jobs")
        if not isinstance(jobs, list) or len(jobs) != self.ledger.n:
            raise saved.error("jobs", f"expected one record per job ({self.ledger.n})")
        live = [
            LiveJob.from_snapshot(StateReader(job, f"{saved.where}.jobs[{i}]"))
            for i, job in enumerate(jobs)
        ]
        grid = saved.integer("grid", 0)
        in_flight = saved.integer("in_flight", -1)
        dispatched = saved.array("dispatched", np.int64, (None,))
        if np.any((dispatched < 0) | (dispatched >= self.ledger.n)):
            raise saved.error("dispatched", "a job index is out of range")
        types = self.typed.cluster.num_types if self.typed is not None else 0
        dispatched_types = saved.array(
            "dispatched_types", np.int64, (dispatched.shape[0] if types else 0,)
        )
        if np.any((dispatched_types < 0) | (dispatched_types >= types)):
            raise saved.error("dispatched_types", "a GPU type index is out of range")
        waits = saved.array("round_boundary_wait", np.float64, (None,)).tolist()
        decisions = saved.array("round_decision_seconds", np.float64, (None,)).tolist()
        saved.done()
        self.processes.live = live
        self.processes.forget_processes()
        self.in_flight, self.dispatched = in_flight, dispatched
        self.dispatched_types = dispatched_types
        self.round_boundary_wait, self.round_decision_seconds = waits, decisions
        self.grid = grid + 1  # the round in flight is lost
        self.clock.base = self.origin + self.grid * self.tau
