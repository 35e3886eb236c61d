"""A job of a real run: its phases, each a small class carrying its own data, and its record.

A job is always in exactly one phase:

* :class:`Waiting`: no process (not started yet, stopped at a boundary, or crashed);
* :class:`Starting`: a process was launched and has not said hello;
* :class:`Training`: its process trains under a lease up to the round's end;
* :class:`AtBoundary`: its process reached the round's end and waits for the decision;
* :class:`Stopping`: its process was told to stop (or stopped on its own): it checkpoints and
  exits;
* :class:`Ending`: it finished; its process exits;
* :class:`Done`, :class:`Failed`: over (a failed job keeps failing, or its error is permanent).

The four live phases hold the job's :class:`Process` (the incarnation, its GPU slots, and the
counters its reports are measured from). Everything kept over the whole run is in the job's
:class:`LiveJob`: the progress it reported (:class:`Progress`, the high-water mark), what it
did in the round in flight (:class:`RoundTally`), its history (:class:`History`: launches,
crashes, preemptions, start delays, measured throughput) and its outcome. The transitions are
made by :mod:`shockwave.runtime.processes`; restart and kill decisions by
:mod:`shockwave.runtime.failures`; reports are folded in by :mod:`shockwave.runtime.accounting`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from shockwave.persistence import StateReader


@dataclass
class Process:
    """One incarnation of a job's process.

    Attributes:
        incarnation: its index among the job's launches.
        slots: the GPU slots it holds.
        gpu_type: their GPU type on a heterogeneous cluster (``None`` on a homogeneous one).
        launched_at: wall-clock time of its launch, seconds.
        killed: whether the scheduler killed it (a timeout or a report that breaks the spec).
        busy_seen, steps_seen, stats_seen: its counters at its latest report (busy seconds,
            steps, per batch size ``(steps, seconds)``): a report counts what is new since.
    """

    incarnation: int
    slots: tuple[int, ...]
    launched_at: float
    gpu_type: str | None = None
    killed: bool = False
    busy_seen: float = 0.0
    steps_seen: int = 0
    stats_seen: dict[int, tuple[int, float]] = field(default_factory=dict)


class Phase:
    """A job's phase (see the module notes); ``name`` is how a status line shows it."""

    name: ClassVar[str]


@dataclass
class Waiting(Phase):
    """No process."""

    name: ClassVar[str] = "waiting"


@dataclass
class Starting(Phase):
    """Launched, no hello yet.

    Attributes:
        process: the launched process.
        stop_on_hello: the round it was launched for is over (or the run stops): it is told to
            stop as soon as it says hello.
        crash_restart: it restarts a crashed process within its round.
    """

    process: Process
    stop_on_hello: bool = False
    crash_restart: bool = False
    name: ClassVar[str] = "starting"


@dataclass
class Training(Phase):
    """Training under a lease.

    Attributes:
        process: its process.
        due_at: wall-clock time it was due at its boundary (0: not due yet), seconds.
    """

    process: Process
    due_at: float = 0.0
    name: ClassVar[str] = "running"


@dataclass
class AtBoundary(Phase):
    """At the round's end, waiting for the decision."""

    process: Process
    name: ClassVar[str] = "boundary"


@dataclass
class Stopping(Phase):
    """Told to stop (or stopped on its own): it checkpoints and exits."""

    process: Process
    name: ClassVar[str] = "stopping"


@dataclass
class Ending(Phase):
    """Finished; its process exits."""

    process: Process
    name: ClassVar[str] = "ending"


@dataclass
class Done(Phase):
    """Finished, its process gone."""

    name: ClassVar[str] = "done"


@dataclass
class Failed(Phase):
    """Failed for good (:attr:`LiveJob.error` says why)."""

    name: ClassVar[str] = "failed"


#: The phases of a job whose process is alive (it holds slots).
LIVE_PHASES = (Starting, Training, AtBoundary, Stopping, Ending)
#: Phases by name (a snapshot's).
PHASES: dict[str, type[Phase]] = {
    cls.name: cls
    for cls in (Waiting, Starting, Training, AtBoundary, Stopping, Ending, Done, Failed)
}

LivePhase = Starting | Training | AtBoundary | Stopping | Ending


@dataclass
class Progress:
    """The progress a job reported, its high-water mark over its incarnations (after a crash
    the job is behind it until it catches up again; progress handed to policies never goes
    back).

    Attributes:
        samples, steps: samples and steps done.
        batch_size: its batch size (0 before its first report).
        epoch_log: the batch size of every epoch done, ``((batch size, epochs), ...)``.
    """

    samples: int = 0
    steps: int = 0
    batch_size: int = 0
    epoch_log: tuple[tuple[int, int], ...] = ()


@dataclass
class RoundTally:
    """What a job did in the round in flight: seconds trained, steps, and the batch size it
    started the round at (0: unknown)."""

    busy_seconds: float = 0.0
    steps: int = 0
    batch_size: int = 0


@dataclass
class History:
    """What happened to a job over the run.

    Attributes:
        launches: processes started.
        crashes: crashed processes.
        preemptions: stops at a round boundary.
        last_checkpoint_at: wall-clock time it was last asked for (or made) a checkpoint.
        throughput: per batch size, ``[steps, seconds]`` measured by the job over its
            incarnations.
        starts: per launch, ``[round, seconds from the round's dispatch to the job's hello (0
            for a crash restart), seconds from launch to hello, 1 if it restored a checkpoint,
            1 if it restarted a crashed process]``.
        types: on a heterogeneous cluster, ``(round, GPU type)`` of every round it was
            dispatched in (its gang ran on slots of that type).
    """

    launches: int = 0
    crashes: int = 0
    preemptions: int = 0
    last_checkpoint_at: float = 0.0
    throughput: dict[int, list[float]] = field(default_factory=dict)
    starts: list[list[float]] = field(default_factory=list)
    types: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Outcome:
    """How a job ended: ``finished`` (with the digest of its final parameters) or
    ``failed``, at trace time ``time`` (seconds)."""

    kind: str
    time: float
    digest: str | None = None


@dataclass
class LiveJob:
    """One job of a real run (see the module notes).

    Attributes:
        phase: where it is.
        lease_round: the round it is dispatched in (-1: none).
        progress, round, history: see their classes.
        error: its latest error (a crash's reason, a timeout, a failure).
        permanent: its latest error is permanent (its next crash fails it at once).
        outcome: how it ended (``None`` while it runs).
    """

    phase: Phase = field(default_factory=Waiting)
    lease_round: int = -1
    progress: Progress = field(default_factory=Progress)
    round: RoundTally = field(default_factory=RoundTally)
    history: History = field(default_factory=History)
    error: str | None = None
    permanent: bool = False
    outcome: Outcome | None = None

    @property
    def process(self) -> Process | None:
        """Its process, in a live phase."""
        phase = self.phase
        return phase.process if isinstance(phase, LIVE_PHASES) else None

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        """The job as data (a live phase is saved by name only: its process does not outlive
        the scheduler)."""
        outcome = self.outcome
        return {
            "phase": self.phase.name,
            "lease_round": self.lease_round,
            "samples": self.progress.samples,
            "steps": self.progress.steps,
            "batch_size": self.progress.batch_size,
            "epoch_log": [list(entry) for entry in self.progress.epoch_log],
            "launches": self.history.launches,
            "crashes": self.history.crashes,
            "preemptions": self.history.preemptions,
            "last_checkpoint_at": self.history.last_checkpoint_at,
            "throughput": {size: list(tally) for size, tally in self.history.throughput.items()},
            "starts": [list(start) for start in self.history.starts],
            "types": [[k, name] for k, name in self.history.types],
            "error": self.error,
            "permanent": self.permanent,
            "outcome": None
            if outcome is None
            else {"kind": outcome.kind, "time": outcome.time, "digest": outcome.digest},
        }

    @classmethod
    def from_snapshot(cls, saved: StateReader) -> LiveJob:
        """The job of :meth:`snapshot` after a scheduler restart: a job whose process was alive
        is waiting (its process is gone; its checkpoint is on disk), every field checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the field that does not fit.
        """
        name = saved.text("phase", tuple(PHASES))
        phase: Phase = Failed() if name == "failed" else Done() if name == "done" else Waiting()
        job = cls(
            phase=phase,
            lease_round=saved.integer("lease_round", -1),
            progress=Progress(
                samples=saved.integer("samples", 0),
                steps=saved.integer("steps", 0),
                batch_size=saved.integer("batch_size", 0),
                epoch_log=tuple(_pairs(saved, "epoch_log")),
            ),
            history=History(
                launches=saved.integer("launches", 0),
                crashes=saved.integer("crashes", 0),
                preemptions=saved.integer("preemptions", 0),
                last_checkpoint_at=saved.number("last_checkpoint_at", finite=True),
                throughput=_throughput(saved),
                starts=_starts(saved),
                types=_types(saved),
            ),
            error=_optional_text(saved, "error"),
            permanent=saved.boolean("permanent"),
            outcome=_outcome(saved),
        )
        saved.done()
        return job


def _optional_text(saved: StateReader, name: str) -> str | None:
    return None if saved.raw(name) is None else saved.text(name)


def _pairs(saved: StateReader, name: str) -> list[tuple[int, int]]:
    value = saved.raw(name)
    if not isinstance(value, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair)
        for pair in value
    ):
        raise saved.error(name, "expected a list of [batch size, epochs] pairs")
    return [(pair[0], pair[1]) for pair in value]


def _throughput(saved: StateReader) -> dict[int, list[float]]:
    value = saved.raw("throughput")
    if not isinstance(value, dict) or not all(
        isinstance(size, int)
        and isinstance(tally, list)
        and len(tally) == 2
        and all(isinstance(v, float) and math.isfinite(v) for v in tally)
        for size, tally in value.items()
    ):
        raise saved.error("throughput", "expected {batch size: [steps, seconds]}")
    return {size: list(tally) for size, tally in value.items()}


def _starts(saved: StateReader) -> list[list[float]]:
    value = saved.raw("starts")
    if not isinstance(value, list) or not all(
        isinstance(start, list)
        and len(start) == 5
        and all(isinstance(v, float) and math.isfinite(v) for v in start)
        for start in value
    ):
        raise saved.error("starts", "expected a list of five numbers per launch")
    return [list(start) for start in value]


def _types(saved: StateReader) -> list[tuple[int, str]]:
    if "types" not in saved.tree:  # a snapshot of a version without typed slots
        return []
    value = saved.raw("types")
    if not isinstance(value, list) or not all(
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], int)
        and not isinstance(entry[0], bool)
        and isinstance(entry[1], str)
        for entry in value
    ):
        raise saved.error("types", "expected a list of [round, GPU type] pairs")
    return [(entry[0], entry[1]) for entry in value]


def _outcome(saved: StateReader) -> Outcome | None:
    if saved.raw("outcome") is None:
        return None
    table = saved.table("outcome")
    outcome = Outcome(
        kind=table.text("kind", ("finished", "failed")),
        time=table.number("time"),
        digest=_optional_text(table, "digest"),
    )
    table.done()
    return outcome
