"""Simulation checkpoints: a running simulation saved as data, and resumed bit for bit.

A checkpoint file (``shockwave simulate --checkpoint``) is a state file of kind
``"simulation-checkpoint"`` (:mod:`shockwave.persistence`: a header with its format and
shockwave versions and a digest, then JSON and numpy arrays; never a pickle). It holds

* ``config``: the :class:`~shockwave.scheduling.SimulationConfig`, field by field;
* ``policy``: the policy's name and the parameters that rebuild it (``None`` for a policy that
  is not a built-in one: :meth:`Simulation.load` then needs an equivalent instance);
* ``workload`` (and ``actual``, for the planned view): the workloads in the native format
  (:mod:`shockwave.traces.native`), as UTF-8 bytes;
* ``wall_seconds``: the wall time spent before the save;
* ``snapshot``: the round loop's :class:`~shockwave.rounds.snapshot.RoundSnapshot` at a round
  boundary: the books, the round mechanism, the cluster world (for ``exact``: the random
  generator's state too) and the policy's own state (for Shockwave: its adaptation model in the
  model's own checked binary encoding, its targets, the rounds it owes and its last plan, whose
  market solution warm-starts the next solve).

Loading a file that was tampered with or corrupted cannot run code, and every part is checked
against its schema: a :class:`~shockwave.persistence.StateFormatError` names the file and what
is wrong.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from types import FrameType
from typing import Any, Protocol

import numpy as np

from shockwave.persistence import StateFormatError, StateReader
from shockwave.rounds.loop import RoundLoop
from shockwave.rounds.observers import RoundObserver
from shockwave.scheduling.config import MECHANICS, SimulationConfig
from shockwave.traces.native import native_text, parse_native
from shockwave.workload import Workload

#: The kind of state file a checkpoint is.
CHECKPOINT_KIND = "simulation-checkpoint"


@dataclass(frozen=True)
class CheckpointSettings:
    """Where and how often a running simulation saves itself.

    Attributes:
        path: the checkpoint file (replaced atomically at every save).
        every_seconds: wall-clock seconds between two saves (checked at round boundaries).
        on_interrupt: save at the next round boundary when the process receives SIGINT
            (Ctrl-C), then raise ``KeyboardInterrupt``; a second SIGINT interrupts at once,
            leaving the previous checkpoint intact.
    """

    path: str | PathLike[str]
    every_seconds: float = 60.0
    on_interrupt: bool = True

    def __post_init__(self) -> None:
        if not (isinstance(self.every_seconds, int | float) and self.every_seconds >= 0):
            raise ValueError(f"every_seconds: must be >= 0, got {self.every_seconds!r}")


# ------------------------------------------------------------------------------ the content
def workload_bytes(workload: Workload) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """``workload`` in the native format, as an array of UTF-8 bytes."""
    return np.frombuffer(native_text(workload).encode(), dtype=np.uint8)


def workload_of(saved: StateReader, name: str) -> Workload:
    """The workload saved under ``name`` (by :func:`workload_bytes`).

    Raises:
        StateFormatError: naming the field, for bytes that are not a native workload.
    """
    data = saved.array(name, np.uint8, (None,))
    try:
        return parse_native(data.tobytes().decode(), f"{saved.where}.{name}")
    except UnicodeDecodeError:
        raise saved.error(name, "not UTF-8 text") from None
    except ValueError as exc:  # TraceError: the line and field of the embedded file
        raise saved.error(name, f"not a workload ({exc})") from None


def config_data(config: SimulationConfig) -> dict[str, Any]:
    """The settings, field by field."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def config_of(saved: StateReader) -> SimulationConfig:
    """The settings of :func:`config_data`, checked by the configuration itself.

    Raises:
        StateFormatError: naming the field.
    """
    values: dict[str, Any] = {
        "gpus": saved.integer("gpus", 1),
        "mechanics": saved.text("mechanics", MECHANICS),
        "seed": saved.integer("seed", 0),
        "max_rounds": None if saved.raw("max_rounds") is None else saved.integer("max_rounds", 1),
    }
    for name in (
        "round_seconds",
        "restart_penalty_seconds",
        "round_overhead_seconds",
        "throughput_noise",
        "recompute_interval_seconds",
    ):
        values[name] = saved.number(name, finite=True)
    saved.done()
    try:
        return SimulationConfig(**values)
    except ValueError as exc:
        raise StateFormatError(f"{saved.where}: {exc}") from None


# ------------------------------------------------------------------------------ the saving
class Checkpointable(Protocol):
    """A simulation that saves itself: a homogeneous
    :class:`~shockwave.sim.simulation.Simulation` or a typed one
    (:class:`~shockwave.heterogeneous.checkpoint.TypedSimulation`)."""

    #: wall time spent running before the latest resume, seconds (saved with the simulation)
    wall_seconds: float

    def save(self, path: str | PathLike[str]) -> None:
        """Write the simulation to ``path``, atomically."""


class Checkpointer(RoundObserver):
    """Saves a simulation at round boundaries: every ``settings.every_seconds`` of wall time
    and, after a SIGINT (see :class:`CheckpointSettings`), at the next boundary, then raises
    ``KeyboardInterrupt``."""

    def __init__(
        self, simulation: Checkpointable, settings: CheckpointSettings, started: float
    ) -> None:
        self.simulation = simulation
        self.settings = settings
        self.started = started
        self.interrupted = False
        self.last_save = time.monotonic()

    def at_boundary(self, loop: RoundLoop) -> None:
        due = time.monotonic() - self.last_save >= self.settings.every_seconds
        if due or self.interrupted:
            simulation = self.simulation
            elapsed = time.perf_counter() - self.started
            simulation.wall_seconds += elapsed
            try:
                simulation.save(self.settings.path)
            finally:
                simulation.wall_seconds -= elapsed
            self.last_save = time.monotonic()
        if self.interrupted:
            raise KeyboardInterrupt

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupted:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.interrupted = True


@contextmanager
def checkpointing(
    simulation: Checkpointable, settings: CheckpointSettings | None, started: float
) -> Iterator[Checkpointer | None]:
    """The checkpointer of ``settings`` (``None`` without), with its SIGINT handler installed
    while the simulation runs (in the main thread)."""
    if settings is None:
        yield None
        return
    checkpointer = Checkpointer(simulation, settings, started)
    install = settings.on_interrupt and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, checkpointer.on_sigint) if install else None
    try:
        yield checkpointer
    finally:
        if install:
            signal.signal(signal.SIGINT, previous)
