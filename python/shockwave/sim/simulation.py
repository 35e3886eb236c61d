"""The entry points: simulate a workload under a policy, checkpoint a run, resume it.

:func:`simulate` runs a simulation to the end. A :class:`Simulation` can also stop at a round
boundary, be saved to a checkpoint file and be resumed, possibly in another process:
the resumed run's result is bit for bit the uninterrupted run's.

**What a checkpoint holds.** The whole engine at a round boundary: the per-job and per-round
state of the mechanics, the random generator, the round mechanism, the record so far, and the
policy with all its state (for Shockwave: the adaptation model, serialised by its own Rust
encoding, the finish-time targets, the owed rounds and the last plan, whose market solution is
the solver's warm start), with the workload and the configuration. It is written with
:func:`shockwave.persistence.save_state` (versioned header, atomic replace).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from types import FrameType
from typing import Any

from shockwave.metrics import SimulationResult, summarize
from shockwave.persistence import load_state_file, save_state
from shockwave.policies import make_policy
from shockwave.policies.protocol import Policy
from shockwave.sim.config import SimulationConfig
from shockwave.sim.engine import Engine, ProgressCallback
from shockwave.sim.exact_engine import ExactEngine
from shockwave.sim.gavel_engine import GavelEngine
from shockwave.sim.plan_view import PlannedViewEngine
from shockwave.workload import Workload


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


class Simulation:
    """A simulation that can be run to the end, stopped at a round boundary, saved and resumed.

    Args:
        workload: as :func:`simulate`.
        policy: as :func:`simulate`.
        config: as :func:`simulate`.
        policy_parameters: as :func:`simulate`.
        actual: as :func:`simulate`.
    """

    def __init__(
        self,
        workload: Workload,
        policy: str | Policy,
        config: SimulationConfig,
        *,
        policy_parameters: Mapping[str, Any] | None = None,
        actual: Workload | None = None,
    ) -> None:
        if isinstance(policy, str):
            policy = make_policy(policy, policy_parameters)
        elif policy_parameters:
            raise ValueError("policy_parameters apply to a policy given by name only")
        policy.reset()
        self.engine: Engine
        if actual is not None:
            if config.mechanics != "exact":
                raise ValueError("actual: jobs with actual profiles need the exact mechanics")
            self.engine = PlannedViewEngine(workload, actual, policy, config, None)
        elif config.mechanics == "gavel":
            self.engine = GavelEngine(workload, policy, config, None)
        else:
            self.engine = ExactEngine(workload, policy, config, None)
        #: wall time spent running before the latest resume, seconds
        self.wall_seconds = 0.0
        self.finished = False

    @property
    def round_index(self) -> int:
        """The next round boundary the simulation will process."""
        return self.engine.round_index

    def run(
        self,
        *,
        progress: ProgressCallback | None = None,
        until_round: int | None = None,
        checkpoint: CheckpointSettings | None = None,
    ) -> SimulationResult | None:
        """Run to the end (the result) or to round boundary ``until_round`` (``None``).

        With ``checkpoint``, the simulation saves itself every ``checkpoint.every_seconds`` and,
        if asked, when interrupted (see :class:`CheckpointSettings`).

        Raises:
            SimulationStalledError: if the run does not finish within ``config.max_rounds``.
            KeyboardInterrupt: when interrupted (after saving, with a checkpoint).
        """
        if self.finished:
            raise ValueError("this simulation has already run to its end")
        engine = self.engine
        engine.progress = progress
        started = time.perf_counter()
        hook: Callable[[int], None] | None = None
        try:
            with _checkpointing(self, checkpoint, started) as hook:
                done = engine.run(until_round=until_round, at_boundary=hook)
        finally:
            self.wall_seconds += time.perf_counter() - started
            engine.progress = None
        if not done:
            return None
        self.finished = True
        return summarize(engine.record(engine.makespan, self.wall_seconds))

    def save(self, path: str | PathLike[str]) -> None:
        """Write this simulation to ``path`` (atomically; see the module notes)."""
        save_state(path, self)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Simulation:
        """A simulation saved by :meth:`save`.

        Raises:
            OSError: when the file cannot be read.
            ValueError: naming the file when it is not a checkpoint of this shockwave version
                or is corrupted.
        """
        simulation = load_state_file(path, cls)
        if simulation.finished:
            raise ValueError(f"{path}: the checkpointed simulation has already finished")
        return simulation


@contextmanager
def _checkpointing(
    simulation: Simulation, settings: CheckpointSettings | None, started: float
) -> Iterator[Callable[[int], None] | None]:
    """The boundary hook that saves on schedule and on SIGINT (``None`` without settings)."""
    if settings is None:
        yield None
        return
    interrupted = False
    last_save = time.monotonic()

    def at_boundary(round_index: int) -> None:
        nonlocal last_save
        due = time.monotonic() - last_save >= settings.every_seconds
        if due or interrupted:
            elapsed = time.perf_counter() - started
            simulation.wall_seconds += elapsed
            try:
                simulation.save(settings.path)
            finally:
                simulation.wall_seconds -= elapsed
            last_save = time.monotonic()
        if interrupted:
            raise KeyboardInterrupt

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if interrupted:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        interrupted = True

    previous = None
    install = settings.on_interrupt and _is_main_thread()
    if install:
        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield at_boundary
    finally:
        if install:
            signal.signal(signal.SIGINT, previous)


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def simulate(
    workload: Workload,
    policy: str | Policy,
    config: SimulationConfig,
    *,
    policy_parameters: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    checkpoint: CheckpointSettings | None = None,
    actual: Workload | None = None,
) -> SimulationResult:
    """Replay ``workload`` on a cluster under ``policy``.

    Args:
        workload: the jobs (``shockwave.traces.load_workload``).
        policy: a built-in policy's name (``shockwave.policies.POLICIES``) or a policy instance
            (an :class:`~shockwave.policies.protocol.AllocationPolicy` or a
            :class:`~shockwave.policies.protocol.RoundPolicy`); an instance is ``reset()``
            first.
        config: the cluster and the mechanics.
        policy_parameters: parameters of a built-in policy given by name.
        progress: called after every round with (rounds done, jobs finished, jobs in total).
        checkpoint: save the running simulation periodically and on Ctrl-C
            (:class:`CheckpointSettings`; resume with :func:`resume`).
        actual: the same jobs as they really run (for example what a real run's jobs did:
            :func:`shockwave.runtime.realized.realized_workload`): they progress along these
            profiles while the policy and its state see ``workload``'s as their plans, as in a
            real run (:mod:`shockwave.sim.plan_view`). ``exact`` mechanics only.

    Returns:
        The metrics, with the raw :class:`~shockwave.sim.record.SimulationRecord`.

    Raises:
        ValueError: for bad arguments, a workload the mechanics cannot run, or a policy output
            the simulator cannot execute (:class:`~shockwave.sim.errors.PolicyOutputError`).
        SimulationStalledError: if the run does not finish within ``config.max_rounds``.
    """
    simulation = Simulation(
        workload, policy, config, policy_parameters=policy_parameters, actual=actual
    )
    result = simulation.run(progress=progress, checkpoint=checkpoint)
    assert result is not None
    return result


def resume(
    path: str | PathLike[str],
    *,
    progress: ProgressCallback | None = None,
    checkpoint: CheckpointSettings | None = None,
) -> SimulationResult:
    """Continue the simulation checkpointed in ``path`` to its end.

    The result is bit for bit the one the uninterrupted run would have given (its timing adds
    the wall time before the checkpoint).

    Raises:
        OSError, ValueError: as :meth:`Simulation.load`; otherwise as :func:`simulate`.
    """
    result = Simulation.load(path).run(progress=progress, checkpoint=checkpoint)
    assert result is not None
    return result
