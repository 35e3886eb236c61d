"""A simulated clock and executor, to drive the runtime's scheduler without real processes.

:class:`FakeExecutor` plays the job side of the lease protocol with ideal jobs: each follows its
planning profile exactly (progress is exclusive run time, as in the ``exact`` simulator), says
hello ``startup`` seconds after its launch, trains until its lease ends, waits at the boundary,
checkpoints when told to stop. Time is a :class:`FakeClock` that ``poll`` advances to the next
event, so a run of hours takes milliseconds and is exactly reproducible. Faults are scripted:
a crash after some seconds of an incarnation, a hang, a bad batch size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shockwave.job.protocol import JobMessage, Report, SchedulerMessage
from shockwave.job.spec import JobLaunch
from shockwave.runtime.executor import Executor, ExecutorEvent, JobExited
from shockwave.sim.profile_progress import ProfileProgress
from shockwave.workload import Job, Workload


class FakeClock:
    """A clock that only moves when told (seconds)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass
class Fault:
    """A scripted fault of one incarnation: ``kind`` is ``crash`` (exit 1 after ``after``
    seconds of training), ``hang`` (never reaches its boundary), ``bad-batch`` (reports a batch
    size outside its regimes) or ``no-hello`` (never connects)."""

    kind: str
    after: float = 0.0


@dataclass
class _Process:
    launch: JobLaunch
    job: Job
    index: int
    started: float
    work: float  # seconds of exclusive work done (restored from the checkpoint)
    status: str = "launching"  # launching, waiting (for an answer), running, exiting
    deadline: float = math.inf
    busy: float = 0.0
    stats: dict[int, list[float]] = field(default_factory=dict)
    fault: Fault | None = None
    trained: float = 0.0  # seconds trained by this incarnation
    outbox: list[ExecutorEvent] = field(default_factory=list)


class FakeExecutor(Executor):
    """Ideal job processes on a simulated clock (see the module notes).

    Args:
        workload: the run's workload (the jobs follow its profiles).
        clock: the clock the engine reads too.
        startup: seconds from a launch to the job's hello.
        faults: ``{(job id, incarnation): Fault}``.
        checkpoints: shared "disk": job id -> seconds of work in its checkpoint.
        interrupt_at: raise ``KeyboardInterrupt`` from ``poll`` once the clock passes this.
    """

    name = "fake"

    def __init__(
        self,
        workload: Workload,
        clock: FakeClock,
        *,
        startup: float = 0.0,
        faults: dict[tuple[int, int], Fault] | None = None,
        checkpoints: dict[int, float] | None = None,
        interrupt_at: float = math.inf,
    ) -> None:
        self.clock = clock
        self.jobs = {int(job.job_id): job for job in workload.jobs}
        self.index = {int(job.job_id): i for i, job in enumerate(workload.jobs)}
        self.profiles = ProfileProgress(list(workload.jobs))
        self.startup = startup
        self.faults = faults or {}
        self.checkpoints = checkpoints if checkpoints is not None else {}
        self.interrupt_at = interrupt_at
        self.processes: dict[int, _Process] = {}
        self.launches: list[JobLaunch] = []
        self.closed = False

    # -------------------------------------------------------------------- protocol
    def start(self, launch: JobLaunch, workdir: Path, log_path: Path) -> None:
        job = self.jobs[launch.job_id]
        self.launches.append(launch)
        self.processes[launch.job_id] = _Process(
            launch,
            job,
            self.index[launch.job_id],
            self.clock.now,
            self.checkpoints.get(launch.job_id, 0.0),
            fault=self.faults.get((launch.job_id, launch.incarnation)),
        )

    def send(self, job_id: int, incarnation: int, message: SchedulerMessage) -> bool:
        p = self.processes.get(job_id)
        if p is None or p.launch.incarnation != incarnation or p.status == "exiting":
            return False
        if message.lease is None:
            self.checkpoints[job_id] = p.work
            p.outbox.append(self._message(p, "checkpointed"))
            p.outbox.append(JobExited(job_id, incarnation, 0))
            p.status = "exiting"
        else:
            p.status = "running"
            p.deadline = self.clock.now + message.lease.seconds
            if message.lease.checkpoint:
                self.checkpoints[job_id] = p.work
        return True

    def poll(self, timeout: float) -> list[ExecutorEvent]:
        if self.clock.now >= self.interrupt_at:
            self.interrupt_at = math.inf
            raise KeyboardInterrupt
        events = self._drain()
        if events:
            return events
        target = self.clock.now + max(timeout, 0.0)
        for p in self.processes.values():
            target = min(target, self._next_event(p))
        self._advance(max(target, self.clock.now))
        for p in list(self.processes.values()):
            self._fire(p)
        return self._drain()

    def kill(self, job_id: int) -> None:
        p = self.processes.get(job_id)
        if p is not None and p.status != "exiting":
            p.outbox.append(JobExited(job_id, p.launch.incarnation, -9))
            p.status = "exiting"

    def close(self) -> None:
        self.closed = True
        self.processes.clear()

    # ------------------------------------------------------------------- the jobs
    def _total(self, p: _Process) -> float:
        return float(self.profiles.total_seconds[p.index])

    def _next_event(self, p: _Process) -> float:
        now = self.clock.now
        if p.status == "launching":
            if p.fault is not None and p.fault.kind == "no-hello":
                return math.inf
            return p.started + self.startup
        if p.status != "running":
            return math.inf
        events = [p.deadline, now + (self._total(p) - p.work)]
        if p.fault is not None and p.fault.kind == "crash":
            events.append(now + max(0.0, p.fault.after - p.trained))
        if p.fault is not None and p.fault.kind == "hang":
            return math.inf
        return min(events)

    def _advance(self, target: float) -> None:
        step = target - self.clock.now
        if step <= 0:
            return
        for p in self.processes.values():
            if p.status == "running":
                if p.fault is not None and p.fault.kind == "hang":
                    continue  # stuck in a step: no progress, never at its boundary
                gained = min(step, self._total(p) - p.work, max(0.0, p.deadline - self.clock.now))
                self._tally(p, gained)
                p.work += gained
                p.busy += gained
                p.trained += gained
        self.clock.now = target

    def _tally(self, p: _Process, seconds: float) -> None:
        """Count the steps of ``seconds`` of training from ``p.work``, per batch size."""
        jobs = np.array([p.index], dtype=np.int64)
        position = p.work
        end = p.work + seconds
        while position < end - 1e-12:
            here = np.array([position], dtype=np.float64)
            epoch = int(self.profiles.epoch_index(jobs, here)[0])
            size, steps, duration = (
                float(v[0]) for v in self.profiles.epoch_facts(jobs, np.array([epoch]))
            )
            epoch_end = float(self.profiles.seconds_at(jobs, np.array([epoch]), np.ones(1))[0])
            upto = min(end, epoch_end) if epoch_end > position else end
            tally = p.stats.setdefault(int(size), [0.0, 0.0])
            tally[0] += (upto - position) / duration * steps
            tally[1] += upto - position
            position = upto

    def _fire(self, p: _Process) -> None:
        now = self.clock.now
        job_id, incarnation = p.launch.job_id, p.launch.incarnation
        if p.status == "launching" and now >= p.started + self.startup:
            if p.fault is not None and p.fault.kind == "no-hello":
                return
            p.status = "waiting"
            p.outbox.append(self._message(p, "hello", text="restored" if p.work > 0 else "fresh"))
            return
        if p.status != "running":
            return
        if p.fault is not None and p.fault.kind == "crash" and p.trained >= p.fault.after:
            p.outbox.append(JobExited(job_id, incarnation, 1, None))
            p.status = "exiting"
            return
        if p.work >= self._total(p) - 1e-9:
            p.work = self._total(p)
            digest = f"digest-{job_id}"
            p.outbox.append(self._message(p, "finished", digest=digest))
            p.outbox.append(JobExited(job_id, incarnation, 0))
            p.status = "exiting"
            return
        if p.fault is not None and p.fault.kind == "hang":
            return
        if now >= p.deadline:
            p.status = "waiting"
            p.outbox.append(self._message(p, "boundary"))

    def _drain(self) -> list[ExecutorEvent]:
        events: list[ExecutorEvent] = []
        for job_id, p in list(self.processes.items()):
            events.extend(p.outbox)
            p.outbox.clear()
            if p.status == "exiting":
                del self.processes[job_id]
        return events

    def _message(
        self, p: _Process, kind: str, *, text: str | None = None, digest: str | None = None
    ) -> JobMessage:
        return JobMessage(
            kind,  # type: ignore[arg-type]
            p.launch.job_id,
            p.launch.incarnation,
            self._report(p),
            digest,
            text,
        )

    def _report(self, p: _Process) -> Report:
        """The job's progress after ``p.work`` seconds of its profile."""
        job = p.job
        jobs = np.array([p.index], dtype=np.int64)
        seconds = np.array([min(p.work, self._total(p))], dtype=np.float64)
        epoch = int(self.profiles.epoch_index(jobs, seconds)[0])
        fraction = float(self.profiles.fraction(jobs, np.array([epoch]), seconds)[0])
        samples_per_epoch = int(job.samples_per_epoch or 1)
        if p.work >= self._total(p) - 1e-9:
            epoch, fraction = job.num_epochs, 0.0
        samples = epoch * samples_per_epoch + math.floor(fraction * samples_per_epoch)
        last = np.array([min(epoch, job.num_epochs - 1)], dtype=np.int64)
        steps = math.floor(float(self.profiles.iterations_done(jobs, last, seconds)[0]))
        batch = int(job.batch_sizes[min(epoch, job.num_epochs - 1)])
        if p.fault is not None and p.fault.kind == "bad-batch":
            batch = 7919
        log = _runs(job.batch_sizes[:epoch].tolist())
        stats = tuple(
            (size, math.floor(steps + 1e-9), seconds)
            for size, (steps, seconds) in sorted(p.stats.items())
        )
        return Report(steps, samples, batch, log, p.busy, stats)


def _runs(values: list[int]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([int(v), 1])
    return tuple((b, c) for b, c in out)
