"""The scheduler of real runs: rounds on the wall clock, leases, checkpoints, faults.

:class:`RuntimeEngine` is the ``exact`` simulator's engine with reality in place of the profile:

* **Rounds** form the same grid, ``tau`` seconds apart from the first arrival, on the wall clock
  (the run's *trace clock*: seconds since the run started, plus the first arrival). A job is
  admitted at the first boundary at or after its arrival; rounds with no active job are skipped.
* **State from reports only.** At every boundary the :class:`~shockwave.sim.state.ClusterState`
  handed to the policy is built from what the jobs reported: samples done (the epoch progress is
  ``samples / samples_per_epoch``), steps, the current batch size, and the throughput measured in
  the round (steps over the seconds the job spent training). What the jobs have not reported
  comes from their *planning profile* (the workload's per-epoch batch sizes and durations): the
  remaining seconds and steps from the reported position, and the isolated throughput at the
  reported batch size. A job's future is never read. After a crash the state keeps the progress
  the job had reached (its high-water mark) until it catches up again, so progress handed to
  policies never goes back.
* **Leases.** At a boundary every running job waits, with its report, for the decision. A job
  chosen again gets a new lease up to the next boundary and keeps running (no restart); a job not
  chosen is told to stop: it checkpoints and exits, and its slots go to newly chosen jobs, which
  start (or resume from their checkpoints) as soon as slots are free. A job that completes inside
  a round leaves its slots idle until the round ends (as the ``exact`` mechanics).
* **Faults.** A job process that dies (killed, an exception, out of memory) is restarted from its
  last checkpoint, in the same round if it holds a lease, up to ``max_restarts`` times; then it
  is reported failed (and counted as dropped). A job that hangs past its boundary or never says
  hello is killed and counted the same way.
* **Journal.** Every round is journaled before its decisions are carried out
  (:mod:`shockwave.runtime.journal`); a killed scheduler resumes from the journal, replaying the
  policy's calls to rebuild the policy's own state, and loses at most the round in flight.
* **Interruption.** Ctrl-C (or SIGTERM) tells every running job to checkpoint and stop, and the
  run ends with a result marked incomplete; it can be resumed like a killed one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.job.protocol import JobMessage, Lease, Report, SchedulerMessage
from shockwave.job.spec import SlotKind
from shockwave.policies.protocol import AllocationPolicy, Policy, RoundPolicy
from shockwave.runtime import state_codec
from shockwave.runtime.config import RuntimeConfig
from shockwave.runtime.executor import Executor, ExecutorEvent, JobExited, job_launch
from shockwave.runtime.journal import Journal, JournalError, JournalRound
from shockwave.scheduling.state import SampleLog
from shockwave.sim.config import SimulationConfig
from shockwave.sim.engine import ProgressColumns
from shockwave.sim.exact_engine import ExactEngine
from shockwave.sim.plan_view import PlanView
from shockwave.sim.round_mechanism import RoundMechanism
from shockwave.sim.state import ClusterState
from shockwave.workload import Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Statuses of a job whose process is alive (it holds slots).
_LIVE = ("starting", "running", "boundary", "stopping", "ending")


@dataclasses.dataclass
class JobRun:
    """What the scheduler knows about one job of a real run (see :class:`RuntimeEngine`).

    Attributes:
        status: ``waiting`` (no process), ``starting`` (launched, no hello yet), ``running``
            (training under a lease), ``boundary`` (waiting for the decision), ``stopping``
            (told to stop), ``ending`` (finished, its process exiting), ``done``, ``failed``.
        incarnation: index of the latest launch (-1: never launched).
        slots: GPU slots its process holds.
        samples, steps, batch_size, epoch_log: the high-water progress reported.
        crashes, preemptions, launches: counts over the run.
        digest: hex digest of the final parameters, once finished.
        error: the latest error (crash reason, failure).
        end_time: trace time of completion or failure (NaN before).
        lease_round: the round the job is dispatched in (-1: none).
        throughput: per batch size, ``[steps, seconds]`` measured by the job (its reports'
            ``batch_stats``, summed over its incarnations).
        starts: per launch, ``[round, seconds from the round's dispatch to the job's hello (its
            start delay: waiting for slots, process start-up, restore; 0 for a crash restart),
            seconds from launch to hello, 1 if it restored a checkpoint, 1 if it restarted a
            crashed process]``.
    """

    status: str = "waiting"
    incarnation: int = -1
    slots: tuple[int, ...] = ()
    samples: int = 0
    steps: int = 0
    batch_size: int = 0
    epoch_log: tuple[tuple[int, int], ...] = ()
    crashes: int = 0
    preemptions: int = 0
    launches: int = 0
    digest: str | None = None
    error: str | None = None
    fatal: bool = False
    end_time: float = math.nan
    end_kind: str | None = None
    end_booked: bool = False
    lease_round: int = -1
    stop_on_hello: bool = False
    crash_restart: bool = False  # the pending launch restarts a crashed process
    killed: bool = False
    launch_wall: float = 0.0
    due_wall: float = 0.0
    last_checkpoint_wall: float = 0.0
    busy_seen: float = 0.0
    steps_seen: int = 0
    busy_in_round: float = 0.0
    steps_in_round: int = 0
    round_batch_size: int = 0
    throughput: dict[int, list[float]] = dataclasses.field(default_factory=dict)
    stats_seen: dict[int, tuple[int, float]] = dataclasses.field(default_factory=dict)
    starts: list[list[float]] = dataclasses.field(default_factory=list)


#: Called after every event loop turn and round with the engine (for a live display).
RunProgressCallback = Callable[["RuntimeEngine"], None]


class RuntimeEngine(ExactEngine):
    """Runs a workload for real (see the module notes).

    Args:
        workload: runnable jobs (each with a ``run`` spec and ``samples_per_epoch``).
        policy: any policy of the simulator.
        config: the run's settings.
        executor: where job processes run.
        journal: the run's journal (new, or opened for a resume).
        slot_kind: what a slot is.
        progress: live-display callback.
        clock: the wall clock, seconds (tests drive the engine with a simulated one).
    """

    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        config: RuntimeConfig,
        executor: Executor,
        journal: Journal,
        slot_kind: SlotKind,
        progress: RunProgressCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        sim_config = SimulationConfig(
            gpus=config.gpus,
            mechanics="exact",
            round_seconds=config.round_seconds,
            restart_penalty_seconds=0.0,
            recompute_interval_seconds=config.recompute_interval_seconds,
        )
        for job in workload.jobs:
            job_launch(job, 0, (0,), slot_kind, "")  # refuses a job that cannot run
        super().__init__(workload, policy, sim_config, None)
        self.clock = clock
        self.runtime = config
        self.executor = executor
        self.journal = journal
        self.slot_kind = slot_kind
        self.live_progress = progress
        self.runs = [JobRun() for _ in range(self.n)]
        self.internal = {int(job_id): i for i, job_id in enumerate(self.job_ids.tolist())}
        self.samples_per_epoch = np.array(
            [float(job.samples_per_epoch or 1) for job in self.jobs], dtype=np.float64
        )
        self.plan = PlanView(self.jobs)
        self.regimes = self.plan.regimes
        self.free_slots = list(range(self.gpus))
        self.queue: list[int] = []
        self.dispatched = np.zeros(0, dtype=np.int64)
        self.in_flight = -1  # index of the round dispatched and not yet booked
        self.current_round = -1
        self.round_end = -math.inf
        self.dispatch_wall = 0.0
        self.grid = 0
        self.k = 0
        self.origin = float(self.arrival[0])
        self.clock_base = self.origin
        self.wall_start = self.clock()
        self.incomplete = False
        self.round_boundary_wait: list[float] = []
        self.round_decision_seconds: list[float] = []
        self.replay_divergence: list[int] = []
        self._last_state: ClusterState | None = None
        self._last_decision: Any = None

    # ------------------------------------------------------------------------- clock
    def trace_now(self) -> float:
        """The run's clock: trace seconds (the first arrival at the start of the run)."""
        return self.clock_base + (self.clock() - self.wall_start)

    # ------------------------------------------------------------------------ policy I/O
    def build_state(self, now: float, round_index: int, active: IntArray) -> ClusterState:
        state = super().build_state(now, round_index, active)
        self._last_state = state
        return state

    def allocate(self, state: ClusterState) -> FloatArray:
        fractions = super().allocate(state)
        self._last_decision = fractions.copy()
        return fractions

    def schedule_round(self, state: ClusterState, active: IntArray) -> IntArray:
        chosen = super().schedule_round(state, active)
        self._last_decision = np.sort(self.job_ids[chosen])
        return chosen

    def progress_columns(self, active: IntArray) -> ProgressColumns:
        """The state's progress columns from the jobs' reports and their plans (see
        :class:`~shockwave.sim.plan_view.PlanView`)."""
        runs = [self.runs[j] for j in active.tolist()]
        samples = np.array([run.samples for run in runs], dtype=np.float64)
        return self.plan.columns(
            active,
            samples / self.samples_per_epoch[active],
            np.array([run.steps for run in runs], dtype=np.float64),
            np.array(
                [
                    run.batch_size or self.jobs[j].initial_batch_size
                    for run, j in zip(runs, active.tolist(), strict=True)
                ],
                dtype=np.int64,
            ),
        )

    # ------------------------------------------------------------------------- the loop
    def run(
        self, until_round: int | None = None, at_boundary: Callable[[int], None] | None = None
    ) -> bool:
        """Not available: a real run is :meth:`execute` (this is the simulator's loop)."""
        raise TypeError("RuntimeEngine runs jobs for real with execute(), not run()")

    def execute(self) -> None:
        """Run the jobs for real until every one has finished or failed (Ctrl-C: see the
        module notes). (Not :meth:`run`, the simulator's loop that this engine replaces.)"""
        tau = self.tau
        for directory in (self.checkpoint_path(0).parent, self.log_path(0).parent):
            directory.mkdir(parents=True, exist_ok=True)
        self.wall_start = self.clock()
        try:
            while self.finished < self.n:
                self.check_round_limit(self.k)
                boundary = self.origin + self.grid * tau
                self._serve_until(boundary)
                if self.in_flight >= 0:
                    self._gather_boundary()
                    self._book_round(self.k)
                self.admit_until(boundary, self.k)
                self._book_ended(self.k)
                active = self.active()
                if active.shape[0] == 0:
                    upcoming = self.pending_arrival_time()
                    if upcoming is None:
                        break
                    self.grid = max(self.grid + 1, math.ceil((upcoming - self.origin) / tau))
                    continue
                decided = self.clock()
                chosen = self._choose(boundary, self.k, active)
                self.record_round(self.k, boundary, active, chosen)
                self._journal_round(boundary)
                self._dispatch(chosen, self.origin + (self.grid + 1) * tau)
                self.round_decision_seconds.append(self.clock() - decided)
                self.grid += 1
                self.k += 1
                self._show()
        except KeyboardInterrupt:
            self.incomplete = True
            self.journal.event("interrupted", round_index=self.k)
            self._stop_everything()
        except BaseException as exc:  # a policy error, a full disk: no job loses its work
            self.journal.event("error", round_index=self.k, detail=f"{type(exc).__name__}: {exc}")
            self._stop_everything()
            raise
        finally:
            self.journal.flush()
            self.executor.close()
        done = self.completion_time[~np.isnan(self.completion_time)]
        self.makespan = float(done.max()) if done.shape[0] else self.trace_now()

    def _serve_until(self, deadline: float) -> None:
        """Handle events until the trace clock reaches ``deadline`` (or, once every job has
        ended and no process is left, at once: nothing can happen before the boundary)."""
        while True:
            left = deadline - self.trace_now()
            if left <= 0 or self._all_ended():
                return
            self._turn(min(left, 0.25))

    def _all_ended(self) -> bool:
        return self.next_arrival >= self.n and all(
            run.status in ("done", "failed") for run in self.runs
        )

    def _turn(self, timeout: float) -> None:
        """One turn of the event loop: events, timeouts, queued starts, the display."""
        for event in self.executor.poll(timeout):
            self._handle(event)
        self._check_timeouts()
        self._start_queued()
        if self.live_progress is not None:
            self.live_progress(self)

    def _gather_boundary(self) -> None:
        """Wait until every job training in the round has reached its boundary (or ended)."""
        started = self.clock()
        for run in self.runs:
            if run.status in ("running", "starting"):
                run.due_wall = started
        while any(run.status == "running" for run in self.runs):
            self._turn(0.05)
        self.round_boundary_wait.append(self.clock() - started)

    def _check_timeouts(self) -> None:
        now = self.clock()
        for j, run in enumerate(self.runs):
            if run.killed:
                continue
            if (
                run.status == "starting"
                and now - run.launch_wall > self.runtime.start_timeout_seconds
            ):
                self._kill(j, f"no hello within {self.runtime.start_timeout_seconds:g} s")
            elif (
                run.status == "running"
                and run.due_wall > 0.0
                and now - run.due_wall > self.runtime.boundary_timeout_seconds
            ):
                self._kill(
                    j, f"not at its boundary {self.runtime.boundary_timeout_seconds:g} s late"
                )

    def _kill(self, j: int, reason: str) -> None:
        run = self.runs[j]
        run.killed = True
        run.error = reason
        self.journal.event("kill", job=int(self.job_ids[j]), round_index=self.k, detail=reason)
        self.executor.kill(int(self.job_ids[j]))

    # ----------------------------------------------------------------------- events
    def _handle(self, event: ExecutorEvent) -> None:
        if isinstance(event, JobExited):
            self._on_exit(event)
            return
        j = self.internal.get(event.job_id)
        if j is None:
            return
        run = self.runs[j]
        if event.incarnation != run.incarnation or run.status not in _LIVE:
            return  # a late message of an earlier process
        if event.kind == "hello" and event.report is not None:
            run.busy_seen = 0.0  # a new process: its counters start from its checkpoint
            run.steps_seen = event.report.steps
            run.stats_seen = {}
        if event.report is not None and not self._take_report(j, event.report):
            return
        self._on_message(j, event)

    def _on_message(self, j: int, message: JobMessage) -> None:
        run = self.runs[j]
        job_id = int(self.job_ids[j])
        if message.kind == "hello":
            self._on_hello(j, restored=message.text == "restored")
        elif message.kind == "boundary":
            if run.status == "running":
                run.status = "boundary"
        elif message.kind == "checkpointed":
            run.last_checkpoint_wall = self.clock()
            if run.status != "stopping":  # stopped on its own (lost connection, SIGTERM)
                run.status = "stopping"
        elif message.kind == "finished":
            run.digest = message.digest
            run.end_kind = "finished"
            run.end_time = self.trace_now()
            run.status = "ending"
            self.journal.event("finished", job=job_id, round_index=self.k, detail=message.digest)
        elif message.kind == "failed":
            run.error = message.text or "the job reported a failure"
            run.fatal = run.fatal or message.permanent
            self.journal.event("job-error", job=job_id, round_index=self.k, detail=run.error)

    def _take_report(self, j: int, report: Report) -> bool:
        """Fold a report in; ``False`` (and the job killed) if it breaks the job's spec."""
        run = self.runs[j]
        regimes = self.regimes[j]
        sizes = [report.batch_size] + [b for b, _ in report.epoch_batch_sizes]
        bad = [b for b in sizes if b not in regimes]
        if bad or report.epochs_completed > self.num_epochs[j]:
            what = (
                f"reported batch size {bad[0]}, not one of its regimes {sorted(regimes)} "
                "(the batch sizes of its profile in the workload)"
                if bad
                else f"reported {report.epochs_completed} epochs of {self.num_epochs[j]}"
            )
            run.fatal = True
            self._kill(j, what)
            return False
        busy = report.busy_seconds - run.busy_seen
        if busy > 0:
            run.busy_in_round += busy
            run.busy_seen = report.busy_seconds
        if report.steps > run.steps_seen:
            run.steps_in_round += report.steps - run.steps_seen
            run.steps_seen = report.steps
        for size, steps, seconds in report.batch_stats:
            seen = run.stats_seen.get(size, (0, 0.0))
            if steps > seen[0]:
                tally = run.throughput.setdefault(size, [0.0, 0.0])
                tally[0] += steps - seen[0]
                tally[1] += seconds - seen[1]
                run.stats_seen[size] = (steps, seconds)
        if report.samples >= run.samples:
            run.samples = report.samples
            run.steps = max(run.steps, report.steps)
            run.batch_size = report.batch_size
            if report.epochs_completed >= sum(c for _, c in run.epoch_log):
                run.epoch_log = report.epoch_batch_sizes
        return True

    def _on_hello(self, j: int, *, restored: bool) -> None:
        run = self.runs[j]
        now = self.clock()
        run.round_batch_size = run.batch_size or self.jobs[j].initial_batch_size
        by_dispatch = run.crash_restart is False and run.lease_round == self.current_round
        run.starts.append(
            [
                float(self.current_round),
                now - self.dispatch_wall if by_dispatch else 0.0,
                now - run.launch_wall,
                1.0 if restored else 0.0,
                1.0 if run.crash_restart else 0.0,
            ]
        )
        if run.stop_on_hello or run.lease_round != self.current_round:
            self._send(j, SchedulerMessage(None))
            run.status = "stopping"
        elif self.trace_now() >= self.round_end:
            run.status = "boundary"  # too late for this round: it waits for the next decision
        else:
            self._grant(j)

    def _on_exit(self, event: JobExited) -> None:
        j = self.internal.get(event.job_id)
        if j is None:
            return
        run = self.runs[j]
        if event.incarnation != run.incarnation or run.status not in _LIVE:
            return
        self._release(j)
        job_id = int(self.job_ids[j])
        detail = f"exit {event.returncode}" + (f": {event.error}" if event.error else "")
        if run.status == "ending":
            run.status = "done"
            return
        if run.status == "stopping" and event.returncode == 0 and not run.killed:
            run.status = "waiting"
            self.journal.event("stopped", job=job_id, round_index=self.k)
            self._start_queued()
            return
        run.crashes += 1
        reason = event.error or run.error or detail
        run.error = reason
        self.journal.event("crash", job=job_id, round_index=self.k, detail=f"{detail}; {reason}")
        in_round = run.lease_round == self.current_round and run.status != "stopping"
        run.status = "waiting"
        if run.fatal or run.crashes > self.runtime.max_restarts:
            why = reason if run.fatal else f"{run.crashes} crashes, the last: {reason}"
            self._fail(j, why)
        elif in_round and j not in self.queue:
            run.crash_restart = True
            self.queue.append(j)  # restart from its checkpoint in the round it holds
        self._start_queued()

    def _fail(self, j: int, reason: str) -> None:
        run = self.runs[j]
        run.status = "failed"
        run.end_kind = "failed"
        run.end_time = self.trace_now()
        run.error = reason
        self.journal.event("failed", job=int(self.job_ids[j]), round_index=self.k, detail=reason)

    # ---------------------------------------------------------------------- dispatch
    def _dispatch(self, chosen: IntArray, round_end: float) -> None:
        """Carry out a round's decision: extend, stop, start."""
        self.current_round = self.k
        self.round_end = round_end
        self.dispatch_wall = self.clock()
        self.dispatched = chosen
        self.in_flight = self.k
        picked = set(chosen.tolist())
        for j, run in enumerate(self.runs):
            run.due_wall = 0.0
            if run.status == "boundary":
                if j in picked:
                    run.lease_round = self.k
                    run.round_batch_size = run.batch_size
                    self._grant(j)
                else:
                    run.preemptions += 1
                    run.status = "stopping"
                    self._send(j, SchedulerMessage(None))
                    self.journal.event("preempt", job=int(self.job_ids[j]), round_index=self.k)
            elif run.status == "starting" and j not in picked:
                run.stop_on_hello = True
        for j in chosen.tolist():
            run = self.runs[j]
            run.lease_round = self.k
            if run.status in ("waiting", "stopping") and j not in self.queue:
                run.crash_restart = False
                self.queue.append(j)
            elif run.status == "starting":
                run.stop_on_hello = False
        self._start_queued()

    def _grant(self, j: int) -> None:
        """Send a lease up to the round's end (asking for a checkpoint when one is due)."""
        run = self.runs[j]
        now = self.clock()
        due = now - run.last_checkpoint_wall >= self.runtime.checkpoint_every_seconds
        lease = Lease(
            round_index=self.current_round,
            seconds=max(0.0, self.round_end - self.trace_now()),
            checkpoint=due and run.launch_wall < now - self.runtime.checkpoint_every_seconds,
        )
        if lease.checkpoint:
            run.last_checkpoint_wall = now
        run.status = "running"
        self._send(j, SchedulerMessage(lease))

    def _send(self, j: int, message: SchedulerMessage) -> None:
        run = self.runs[j]
        self.executor.send(int(self.job_ids[j]), run.incarnation, message)

    def _start_queued(self) -> None:
        """Start the queued jobs whose slots are free, in queue order."""
        if not self.queue or self.incomplete:
            return
        waiting: list[int] = []
        for j in self.queue:
            run = self.runs[j]
            if run.lease_round != self.current_round or run.status in ("done", "failed"):
                continue
            if run.status != "waiting":
                waiting.append(j)  # its previous process is still stopping
                continue
            gang = int(self.gang[j])
            if len(self.free_slots) < gang:
                waiting.append(j)
                continue
            slots = tuple(self.free_slots[:gang])
            del self.free_slots[:gang]
            self._launch(j, slots)
        self.queue = waiting

    def _launch(self, j: int, slots: tuple[int, ...]) -> None:
        run = self.runs[j]
        job = self.jobs[j]
        run.incarnation += 1
        run.launches += 1
        run.slots = slots
        run.status = "starting"
        run.killed = False
        run.stop_on_hello = False
        run.launch_wall = self.clock()
        run.busy_seen = 0.0
        run.steps_seen = run.steps
        launch = job_launch(
            job, run.incarnation, slots, self.slot_kind, str(self.checkpoint_path(j))
        )
        self.journal.event(
            "launch",
            job=int(job.job_id),
            round_index=self.k,
            detail=f"incarnation {run.incarnation} on slots {list(slots)}",
        )
        try:
            self.executor.start(launch, self.runtime.workdir, self.log_path(j))
        except OSError as exc:  # e.g. a user command that does not exist: it never will
            self._release(j)
            run.status = "waiting"
            run.fatal = True
            self._fail(j, f"cannot start its process: {exc}")

    def _release(self, j: int) -> None:
        run = self.runs[j]
        self.free_slots = sorted(self.free_slots + list(run.slots))
        run.slots = ()

    def checkpoint_path(self, j: int) -> Any:
        """Where job ``j`` (internal index) keeps its checkpoint."""
        return self.runtime.run_dir / "checkpoints" / f"job-{int(self.job_ids[j])}.ckpt"

    def log_path(self, j: int) -> Any:
        """The log of job ``j``'s processes."""
        return self.runtime.run_dir / "logs" / f"job-{int(self.job_ids[j])}.log"

    # ----------------------------------------------------------------------- booking
    def _book_round(self, k: int) -> None:
        """Book the round that just ended (boundary ``k``): service, throughput, completions."""
        jobs = self.dispatched
        run_seconds = np.array([self.runs[j].busy_in_round for j in jobs.tolist()], dtype=float)
        steps = np.array([self.runs[j].steps_in_round for j in jobs.tolist()], dtype=np.float64)
        sizes = np.array(
            [self.runs[j].round_batch_size or self.runs[j].batch_size for j in jobs.tolist()],
            dtype=np.int64,
        )
        self.service[jobs] += run_seconds
        self.round_busy[k - 1] = float(run_seconds @ self.gang[jobs])
        if self.mechanism is not None:
            self.mechanism.record_run(jobs, run_seconds)
        measured = (run_seconds > 0) & (sizes > 0)
        if measured.any():
            rates = steps[measured] / run_seconds[measured]
            self.samples.record(jobs[measured], k, rates, sizes[measured])
        for run in self.runs:
            run.busy_in_round = 0.0
            run.steps_in_round = 0
        self.in_flight = -1

    def _book_ended(self, k: int) -> None:
        """Complete the jobs that finished or failed since the last boundary."""
        ended = [
            j for j, run in enumerate(self.runs) if run.end_kind is not None and not run.end_booked
        ]
        if not ended:
            return
        jobs = np.array(ended, dtype=np.int64)
        for j in ended:
            self.runs[j].end_booked = True
            if self.runs[j].end_kind == "failed":
                self.dropped[j] = True
        when = np.array([self.runs[j].end_time for j in ended], dtype=np.float64)
        self.complete(jobs, when, k)

    # ------------------------------------------------------------------------ journal
    def _journal_round(self, boundary: float) -> None:
        state = self._last_state
        assert state is not None
        fields = {
            f.name: getattr(state, f.name)
            for f in dataclasses.fields(ClusterState)
            if f.name not in ("workload", "_samples")
        }
        self.journal.append_round(self.k, boundary, fields, self._last_decision, self.snapshot())

    def snapshot(self) -> dict[str, Any]:
        """The scheduler's state after a decision (what a resume restores)."""
        return {name: getattr(self, name) for name in _SNAPSHOT_FIELDS}

    def restore(self, journal_rounds: list[JournalRound], snapshot: dict[str, Any]) -> None:
        """Continue a journaled run: replay the policy, restore the scheduler, restart the clock
        at the end of the round that was in flight (its work is lost).

        Raises:
            JournalError: for a snapshot or a journaled state that does not fit this run.
        """
        where = f"{self.journal.path}: the snapshot"
        if not isinstance(snapshot, dict) or set(snapshot) != set(_SNAPSHOT_FIELDS):
            raise JournalError(f"{where} does not hold the scheduler's fields")
        for name in _SNAPSHOT_FIELDS:
            current, saved = getattr(self, name), snapshot[name]
            if current is not None and type(saved) is not type(current):
                raise JournalError(f"{where}: {name} is a {type(saved).__name__}")
            if isinstance(current, np.ndarray) and (
                saved.dtype != current.dtype or saved.ndim != current.ndim
            ):
                raise JournalError(f"{where}: {name} has the wrong dtype or shape")
        if len(snapshot["runs"]) != self.n or not all(
            isinstance(run, JobRun) for run in snapshot["runs"]
        ):
            raise JournalError(f"{where}: runs does not hold one record per job")
        for name in _SNAPSHOT_FIELDS:
            setattr(self, name, snapshot[name])
        try:
            self._replay(journal_rounds)
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            raise JournalError(
                f"{self.journal.path}: a journaled round does not fit this run ({exc})"
            ) from None
        for run in self.runs:
            if run.status in _LIVE:
                run.status = "waiting"
            run.slots = ()
            run.busy_in_round = 0.0
            run.steps_in_round = 0
            run.killed = False
            run.due_wall = 0.0
        self.free_slots = list(range(self.gpus))
        self.queue = []
        self.grid += 1
        self.k += 1
        self.clock_base = self.origin + self.grid * self.tau
        self.current_round = -1
        self.round_end = -math.inf
        self.journal.event("resumed", round_index=self.k)

    def _replay(self, journal_rounds: list[JournalRound]) -> None:
        """Ask the policy every journaled question again, in order, to rebuild its state."""
        self.policy.reset()
        for entry in journal_rounds:
            state = ClusterState(workload=self.workload, _samples=self.samples, **entry.state)
            if isinstance(self.policy, RoundPolicy):
                answer: Any = np.sort(np.asarray(self.policy.schedule(state), dtype=np.int64))
                same = np.array_equal(answer, entry.decision)
            else:
                assert isinstance(self.policy, AllocationPolicy)
                answer = np.clip(np.asarray(self.policy.allocate(state), dtype=np.float64), 0, 1)
                same = np.array_equal(answer, entry.decision)
            if not same:
                self.replay_divergence.append(entry.index)

    # ----------------------------------------------------------------------- shutdown
    def _stop_everything(self) -> None:
        """Tell every live job to checkpoint and stop; kill what is left after the timeout."""
        self.queue = []
        for j, run in enumerate(self.runs):
            if run.status == "starting":
                run.stop_on_hello = True  # not connected yet: stopped when it says hello
            elif run.status in ("running", "boundary"):
                run.status = "stopping"
                self._send(j, SchedulerMessage(None))
        deadline = self.clock() + self.runtime.stop_timeout_seconds
        try:
            while any(run.status in ("stopping", "starting") for run in self.runs):
                if self.clock() > deadline:
                    break
                for event in self.executor.poll(0.1):
                    self._handle(event)
        except KeyboardInterrupt:  # a second Ctrl-C: do not wait
            pass

    def _show(self) -> None:
        if self.live_progress is not None:
            self.live_progress(self)

    # ------------------------------------------------------------------------ summary
    def counts(self) -> dict[str, int]:
        """Jobs per status, and slots in use."""
        out: dict[str, int] = {}
        for run in self.runs:
            out[run.status] = out.get(run.status, 0) + 1
        out["slots_busy"] = self.gpus - len(self.free_slots)
        return out


# the objects a journaled snapshot holds besides plain values and arrays (data only)
state_codec.register(JobRun)
state_codec.register(RoundMechanism, tuple(vars(RoundMechanism(0, 1.0))))
state_codec.register(SampleLog, tuple(vars(SampleLog(np.zeros(0, dtype=np.int64)))))

#: What a snapshot holds (the engine's mutable state; see :meth:`RuntimeEngine.snapshot`).
_SNAPSHOT_FIELDS = (
    "admitted",
    "done",
    "dropped",
    "admission_time",
    "admission_round",
    "completion_time",
    "completion_round",
    "rounds_run",
    "rounds_queued",
    "last_round_run",
    "previous_round_run",
    "service",
    "samples",
    "next_arrival",
    "finished",
    "round_start",
    "round_active",
    "round_gpus_used",
    "round_busy",
    "round_policy_seconds",
    "mechanism",
    "runs",
    "dispatched",
    "in_flight",
    "grid",
    "k",
    "round_boundary_wait",
    "round_decision_seconds",
)
