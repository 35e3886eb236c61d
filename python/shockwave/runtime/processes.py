"""The jobs' processes of a real run: leases, launches, stops, and the events they send back.

:class:`JobProcesses` moves each job through its phases (:mod:`shockwave.runtime.lifecycle`):

* **Leases.** At a boundary every running job waits, with its report, for the decision. A job
  chosen again gets a new lease up to the next boundary and keeps running (no restart); a job not
  chosen is told to stop: it checkpoints and exits, and its slots go to newly chosen jobs, which
  start (or resume from their checkpoints) as soon as slots are free, in the order they were
  chosen. A job that completes inside a round leaves its slots idle until the round ends.
* **Events.** A process's messages (hello, boundary, checkpointed, finished, failed) and its exit
  move its job on; a message of an earlier incarnation is ignored. Reports are folded in by
  :mod:`shockwave.runtime.accounting`.
* **Typed slots.** On a heterogeneous cluster every chosen job comes with the GPU type of its
  gang: it starts on free slots of that type only (:func:`~shockwave.runtime.config.type_slots`),
  and a job at its boundary chosen on another type than its process's is stopped (it
  checkpoints) and starts again on the new type: a restart.
* **Faults.** Crashes, timeouts and reports that break a job's spec are decided by the
  :class:`~shockwave.runtime.failures.FailurePolicy`.

Every launch, stop, crash, kill, completion and failure is an event row of the journal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shockwave.job.protocol import JobMessage, Lease, SchedulerMessage
from shockwave.job.spec import SlotKind
from shockwave.runtime.accounting import fold_report, report_problem, start_counting
from shockwave.runtime.config import RuntimeConfig, type_slots
from shockwave.runtime.executor import Executor, ExecutorEvent, JobExited, job_launch
from shockwave.runtime.failures import Fail, FailurePolicy, Restart
from shockwave.runtime.journal import Journal
from shockwave.runtime.lifecycle import (
    AtBoundary,
    Done,
    Ending,
    Failed,
    LiveJob,
    Outcome,
    Process,
    Starting,
    Stopping,
    Training,
    Waiting,
)
from shockwave.workload import Job

IntArray = npt.NDArray[np.int64]


@dataclass
class RunClock:
    """The run's clocks: the wall clock (``wall``, seconds; tests drive a simulated one) and the
    trace clock (:meth:`trace_now`: seconds since the run started, plus the first arrival; a
    resumed run starts its trace clock at the end of the round that was in flight)."""

    wall: Callable[[], float]
    base: float
    started: float

    def trace_now(self) -> float:
        """The trace clock, seconds."""
        return self.base + (self.wall() - self.started)


@dataclass
class PendingLaunch:
    """A job queued to start (its slots may not be free yet); ``crash_restart``: it restarts a
    crashed process within its round."""

    job: int
    crash_restart: bool


class JobProcesses:
    """The processes of a run's jobs (see the module notes).

    Args:
        jobs: the workload's jobs, by internal index.
        job_ids: their ids, by internal index.
        regimes: per job, its planned batch sizes (a report outside them breaks the spec).
        config: the run's settings.
        executor: where processes run.
        journal: the run's journal (event rows).
        slot_kind: what a slot is.
        clock: the run's clocks.
    """

    def __init__(
        self,
        jobs: list[Job],
        job_ids: IntArray,
        regimes: list[dict[int, float]],
        config: RuntimeConfig,
        executor: Executor,
        journal: Journal,
        slot_kind: SlotKind,
        clock: RunClock,
    ) -> None:
        self.jobs = jobs
        self.job_ids = job_ids
        self.regimes = regimes
        self.config = config
        self.executor = executor
        self.journal = journal
        self.slot_kind = slot_kind
        self.clock = clock
        self.failures = FailurePolicy(config)
        self.live = [LiveJob() for _ in jobs]
        self.internal = {int(job_id): i for i, job_id in enumerate(job_ids.tolist())}
        self.free_slots = list(range(config.gpus))
        #: per GPU type, its slots (``None`` on a homogeneous cluster)
        self.type_slots = type_slots(config)
        #: per job (internal index), the GPU type of its gang in the latest round it was chosen
        self.gang_type: dict[int, str] = {}
        self.queue: list[PendingLaunch] = []
        #: the round the latest dispatch was for (-1: none since the scheduler started)
        self.current_round = -1
        #: the trace time that round ends
        self.round_end = -np.inf
        #: wall-clock time of the latest dispatch
        self.dispatch_wall = 0.0
        #: the round journaled events belong to
        self.round_index = 0
        #: the run is stopping (an interruption): nothing starts any more
        self.stopping = False

    # ---------------------------------------------------------------------------- paths
    def checkpoint_path(self, j: int) -> Path:
        """Where job ``j`` (internal index) keeps its checkpoint."""
        return self.config.run_dir / "checkpoints" / f"job-{int(self.job_ids[j])}.ckpt"

    def log_path(self, j: int) -> Path:
        """The log of job ``j``'s processes."""
        return self.config.run_dir / "logs" / f"job-{int(self.job_ids[j])}.log"

    # ------------------------------------------------------------------------- queries
    def all_over(self) -> bool:
        """Whether every job is done or has failed."""
        return all(isinstance(job.phase, (Done, Failed)) for job in self.live)

    def any_in(self, *phases: type) -> bool:
        """Whether some job is in one of ``phases``."""
        return any(isinstance(job.phase, phases) for job in self.live)

    def slots_busy(self) -> int:
        """Slots held by live processes."""
        return self.config.gpus - len(self.free_slots)

    # ------------------------------------------------------------------------ dispatch
    def dispatch(
        self,
        chosen: IntArray,
        round_index: int,
        round_end: float,
        types: list[str] | None = None,
    ) -> None:
        """Carry out round ``round_index``'s decision (``chosen``: internal indices, in the order
        jobs start; ``types``: the GPU type of each one's gang, on a heterogeneous cluster):
        extend, stop, start."""
        self.current_round = round_index
        self.round_end = round_end
        self.dispatch_wall = self.clock.wall()
        picked = set(chosen.tolist())
        if types is not None:
            self.gang_type.update(zip(chosen.tolist(), types, strict=True))
        for j, job in enumerate(self.live):
            phase = job.phase
            if isinstance(phase, AtBoundary):
                moves = j in picked and phase.process.gpu_type != self.gang_type.get(j)
                if j in picked and not moves:
                    job.lease_round = round_index
                    job.round.batch_size = job.progress.batch_size
                    self._grant(j, phase.process)
                else:
                    job.history.preemptions += 1
                    job.phase = Stopping(phase.process)
                    self._send(j, phase.process, SchedulerMessage(None))
                    self._event("preempt", j, None if not moves else f"to {self.gang_type[j]}")
            elif isinstance(phase, Training):
                phase.due_at = 0.0
            elif isinstance(phase, Starting) and j not in picked:
                phase.stop_on_hello = True
        queued = {entry.job for entry in self.queue}
        for j in chosen.tolist():
            job = self.live[j]
            job.lease_round = round_index
            phase = job.phase
            if isinstance(phase, (Waiting, Stopping)) and j not in queued:
                self.queue.append(PendingLaunch(j, crash_restart=False))
                queued.add(j)
            elif isinstance(phase, Starting):
                if phase.process.gpu_type == self.gang_type.get(j):
                    phase.stop_on_hello = False
                else:  # started on another type: stopped at its hello, it restarts on this one
                    phase.stop_on_hello = True
                    if j not in queued:
                        self.queue.append(PendingLaunch(j, crash_restart=False))
                        queued.add(j)
        self.start_queued()

    def due_at_boundary(self) -> None:
        """The round's end has come: every training job is due at its boundary from now."""
        now = self.clock.wall()
        for job in self.live:
            if isinstance(job.phase, Training):
                job.phase.due_at = now

    def _grant(self, j: int, process: Process) -> None:
        """Send a lease up to the round's end (asking for a checkpoint when one is due)."""
        job = self.live[j]
        now = self.clock.wall()
        every = self.config.checkpoint_every_seconds
        due = now - job.history.last_checkpoint_at >= every
        lease = Lease(
            round_index=self.current_round,
            seconds=max(0.0, self.round_end - self.clock.trace_now()),
            checkpoint=due and process.launched_at < now - every,
        )
        if lease.checkpoint:
            job.history.last_checkpoint_at = now
        job.phase = Training(process)
        self._send(j, process, SchedulerMessage(lease))

    def start_queued(self) -> None:
        """Start the queued jobs whose slots are free, in queue order."""
        if not self.queue or self.stopping:
            return
        waiting: list[PendingLaunch] = []
        for entry in self.queue:
            job = self.live[entry.job]
            if job.lease_round != self.current_round or isinstance(job.phase, (Done, Failed)):
                continue
            if not isinstance(job.phase, Waiting):
                waiting.append(entry)  # its previous process is still stopping
                continue
            gang = self.jobs[entry.job].gang_size
            free = self._free_for(entry.job)
            if len(free) < gang:
                waiting.append(entry)
                continue
            slots = tuple(free[:gang])
            taken = set(slots)
            self.free_slots = [s for s in self.free_slots if s not in taken]
            self._launch(entry, slots)
        self.queue = waiting

    def _free_for(self, j: int) -> list[int]:
        """The free slots job ``j`` may start on: those of its gang's type on a heterogeneous
        cluster, any otherwise."""
        if self.type_slots is None:
            return self.free_slots
        mine = set(self.type_slots[self.gang_type[j]])
        return [s for s in self.free_slots if s in mine]

    def _launch(self, entry: PendingLaunch, slots: tuple[int, ...]) -> None:
        j = entry.job
        job = self.live[j]
        spec = self.jobs[j]
        incarnation = job.history.launches
        job.history.launches += 1
        gpu_type = None if self.type_slots is None else self.gang_type[j]
        process = Process(
            incarnation, slots, self.clock.wall(), gpu_type, steps_seen=job.progress.steps
        )
        job.phase = Starting(process, crash_restart=entry.crash_restart)
        launch = job_launch(
            spec, incarnation, slots, self.slot_kind, str(self.checkpoint_path(j)), gpu_type
        )
        where = "" if gpu_type is None else f"{gpu_type} "
        self._event("launch", j, f"incarnation {incarnation} on {where}slots {list(slots)}")
        try:
            self.executor.start(launch, self.config.workdir, self.log_path(j))
        except OSError as exc:  # e.g. a user command that does not exist: it never will
            self._release(process)
            job.phase = Waiting()
            self._fail(j, self.failures.cannot_start(job, exc).reason)

    def _release(self, process: Process) -> None:
        self.free_slots = sorted(self.free_slots + list(process.slots))
        process.slots = ()

    def _send(self, j: int, process: Process, message: SchedulerMessage) -> None:
        self.executor.send(int(self.job_ids[j]), process.incarnation, message)

    def _event(self, kind: str, j: int, detail: str | None = None) -> None:
        self.journal.event(
            kind, job=int(self.job_ids[j]), round_index=self.round_index, detail=detail
        )

    # -------------------------------------------------------------------------- events
    def handle(self, event: ExecutorEvent) -> None:
        """One event of the executor."""
        j = self.internal.get(event.job_id)
        if j is None:
            return
        job = self.live[j]
        process = job.process
        if process is None or event.incarnation != process.incarnation:
            return  # a late message of an earlier process
        if isinstance(event, JobExited):
            self._on_exit(j, process, event)
            return
        if event.kind == "hello" and event.report is not None:
            start_counting(process, event.report)
        if event.report is not None:
            problem = report_problem(event.report, self.regimes[j], self.jobs[j].num_epochs)
            if problem is not None:
                self.failures.bad_report(job)
                self.kill(j, process, problem)
                return
            fold_report(job, process, event.report)
        self._on_message(j, process, event)

    def _on_message(self, j: int, process: Process, message: JobMessage) -> None:
        job = self.live[j]
        if message.kind == "hello":
            self._on_hello(j, process, restored=message.text == "restored")
        elif message.kind == "boundary":
            if isinstance(job.phase, Training):
                job.phase = AtBoundary(process)
        elif message.kind == "checkpointed":
            job.history.last_checkpoint_at = self.clock.wall()
            if not isinstance(job.phase, Stopping):  # stopped on its own (lost connection, SIGTERM)
                job.phase = Stopping(process)
        elif message.kind == "finished":
            job.outcome = Outcome("finished", self.clock.trace_now(), message.digest)
            job.phase = Ending(process)
            self._event("finished", j, message.digest)
        elif message.kind == "failed":
            job.error = message.text or "the job reported a failure"
            job.permanent = job.permanent or message.permanent
            self._event("job-error", j, job.error)

    def _on_hello(self, j: int, process: Process, *, restored: bool) -> None:
        job = self.live[j]
        phase = job.phase
        now = self.clock.wall()
        job.round.batch_size = job.progress.batch_size or self.jobs[j].initial_batch_size
        starting = phase if isinstance(phase, Starting) else None
        crash_restart = starting is not None and starting.crash_restart
        by_dispatch = not crash_restart and job.lease_round == self.current_round
        job.history.starts.append(
            [
                float(self.current_round),
                now - self.dispatch_wall if by_dispatch else 0.0,
                now - process.launched_at,
                1.0 if restored else 0.0,
                1.0 if crash_restart else 0.0,
            ]
        )
        stop = starting is not None and starting.stop_on_hello
        if stop or job.lease_round != self.current_round:
            self._send(j, process, SchedulerMessage(None))
            job.phase = Stopping(process)
        elif self.clock.trace_now() >= self.round_end:
            job.phase = AtBoundary(process)  # too late for this round: it waits for the decision
        else:
            self._grant(j, process)

    def _on_exit(self, j: int, process: Process, event: JobExited) -> None:
        job = self.live[j]
        phase = job.phase
        self._release(process)
        detail = f"exit {event.returncode}" + (f": {event.error}" if event.error else "")
        if isinstance(phase, Ending):
            job.phase = Done()
            return
        if isinstance(phase, Stopping) and event.returncode == 0 and not process.killed:
            job.phase = Waiting()
            self._event("stopped", j)
            self.start_queued()
            return
        job.history.crashes += 1
        reason = event.error or job.error or detail
        job.error = reason
        self._event("crash", j, f"{detail}; {reason}")
        in_round = job.lease_round == self.current_round and not isinstance(phase, Stopping)
        job.phase = Waiting()
        verdict = self.failures.after_crash(job, reason, in_round=in_round)
        if isinstance(verdict, Fail):
            self._fail(j, verdict.reason)
        elif isinstance(verdict, Restart) and all(entry.job != j for entry in self.queue):
            self.queue.append(PendingLaunch(j, crash_restart=True))
        self.start_queued()

    def _fail(self, j: int, reason: str) -> None:
        job = self.live[j]
        job.phase = Failed()
        job.outcome = Outcome("failed", self.clock.trace_now())
        job.error = reason
        self._event("failed", j, reason)

    def kill(self, j: int, process: Process, reason: str) -> None:
        """Kill job ``j``'s process (its exit is then a crash)."""
        process.killed = True
        self.live[j].error = reason
        self._event("kill", j, reason)
        self.executor.kill(int(self.job_ids[j]))

    def check_timeouts(self) -> None:
        """Kill the processes the failure policy finds overdue."""
        now = self.clock.wall()
        for j, job in enumerate(self.live):
            reason = self.failures.overdue(job, now)
            process = job.process
            if reason is not None and process is not None:
                self.kill(j, process, reason)

    # ------------------------------------------------------------------------ shutdown
    def stop_everything(self) -> None:
        """Tell every live job to checkpoint and stop; kill what is left after the timeout."""
        self.stopping = True
        self.queue = []
        for j, job in enumerate(self.live):
            phase = job.phase
            if isinstance(phase, Starting):
                phase.stop_on_hello = True  # not connected yet: stopped when it says hello
            elif isinstance(phase, (Training, AtBoundary)):
                job.phase = Stopping(phase.process)
                self._send(j, phase.process, SchedulerMessage(None))
        deadline = self.clock.wall() + self.config.stop_timeout_seconds
        try:
            while self.any_in(Stopping, Starting):
                if self.clock.wall() > deadline:
                    break
                for event in self.executor.poll(0.1):
                    self.handle(event)
        except KeyboardInterrupt:  # a second Ctrl-C: do not wait
            pass

    def forget_processes(self) -> None:
        """The scheduler restarted: no process of before is alive; every live job waits."""
        for job in self.live:
            if job.process is not None:
                job.phase = Waiting()
            job.round.busy_seconds = 0.0
            job.round.steps = 0
        self.free_slots = list(range(self.config.gpus))
        self.queue = []
        self.current_round = -1
        self.round_end = -np.inf
