"""The entry points: simulate a workload under a policy, checkpoint a run, resume it.

:func:`simulate` runs a simulation to the end. A :class:`Simulation` can also stop at a round
boundary, be saved to a checkpoint file (:mod:`shockwave.sim.checkpoint`: data, never a pickle)
and be resumed, possibly in another process: the resumed run's result is bit for bit the
uninterrupted run's.

A simulation is the round loop (:mod:`shockwave.rounds`) over one of three cluster worlds: the
exact profiles (:mod:`shockwave.sim.exact`), the original simulator's mechanics
(:mod:`shockwave.sim.gavel`) or the planned view (:mod:`shockwave.sim.plan_view`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from os import PathLike
from typing import Any

import numpy as np

from shockwave.metrics import SimulationResult, summarize
from shockwave.persistence import StateFormatError, StateReader, load_state_file, save_state_file
from shockwave.policies import built_in_parameters, make_policy
from shockwave.rounds.allocation import AllocationRounds, EveryRound, OnChanges
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.loop import RoundLoop, check_policy
from shockwave.rounds.observers import ProgressCallback, ProgressObserver, RoundObserver
from shockwave.rounds.snapshot import RoundSnapshot
from shockwave.rounds.world import ClusterWorld
from shockwave.scheduling.config import SimulationConfig
from shockwave.scheduling.protocol import AllocationPolicy, Policy
from shockwave.scheduling.record import SimulationRecord
from shockwave.sim.checkpoint import (
    CHECKPOINT_KIND,
    CheckpointSettings,
    checkpointing,
    config_data,
    config_of,
    workload_bytes,
    workload_of,
)
from shockwave.sim.exact import ExactProfiles
from shockwave.sim.gavel import GavelMechanics
from shockwave.sim.plan_view import PlannedView, check_same_jobs
from shockwave.workload import Workload


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
        check_policy(policy)
        policy.reset()
        self.workload = workload
        self.actual = actual
        self.config = config
        self.policy = policy
        self.loop = _round_loop(workload, policy, config, actual)
        #: wall time spent running before the latest resume, seconds
        self.wall_seconds = 0.0
        self.finished = False
        self._saved_workloads: dict[str, np.ndarray[Any, np.dtype[np.uint8]] | None] = {}

    @property
    def round_index(self) -> int:
        """The next round boundary the simulation will process."""
        return self.loop.round_index

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
        loop = self.loop
        started = time.perf_counter()
        try:
            with checkpointing(self, checkpoint, started) as checkpointer:
                observers: list[RoundObserver] = []
                if checkpointer is not None:
                    observers.append(checkpointer)
                if progress is not None:
                    observers.append(ProgressObserver(progress))
                loop.observers = observers
                done = loop.run(until_round)
        finally:
            self.wall_seconds += time.perf_counter() - started
            loop.observers = []
        if not done:
            return None
        self.finished = True
        return summarize(self.record())

    def record(self) -> SimulationRecord:
        """The raw record of the run so far."""
        loop = self.loop
        world, ledger = loop.world, loop.ledger
        assert isinstance(ledger, JobLedger)
        return ledger.record(
            policy_name=self.policy.name,
            mechanics=world.mechanics,
            round_seconds=self.config.round_seconds,
            seed=self.config.seed,
            makespan=world.makespan(),
            wall_seconds=self.wall_seconds,
            gpu_busy_seconds=world.gpu_busy_seconds(),
        )

    def save(self, path: str | PathLike[str]) -> None:
        """Write this simulation to ``path`` (atomically; see :mod:`shockwave.sim.checkpoint`)."""
        data = {
            "config": config_data(self.config),
            "policy": {"name": self.policy.name, "parameters": built_in_parameters(self.policy)},
            "workload": self._workload_data("workload", self.workload),
            "actual": self._workload_data("actual", self.actual),
            "wall_seconds": self.wall_seconds,
            "finished": self.finished,
            "snapshot": self.loop.snapshot().to_data(),
        }
        save_state_file(path, CHECKPOINT_KIND, data)

    def _workload_data(
        self, name: str, workload: Workload | None
    ) -> np.ndarray[Any, np.dtype[np.uint8]] | None:
        """A workload as saved (encoded once per simulation)."""
        if name not in self._saved_workloads:
            self._saved_workloads[name] = None if workload is None else workload_bytes(workload)
        return self._saved_workloads[name]

    @classmethod
    def load(cls, path: str | PathLike[str], *, policy: Policy | None = None) -> Simulation:
        """A simulation saved by :meth:`save`.

        Args:
            path: the checkpoint file.
            policy: an instance equivalent to the saved simulation's policy, required when
                that policy is not a built-in one (a built-in one is rebuilt from its name and
                parameters).

        Raises:
            OSError: when the file cannot be read.
            shockwave.persistence.StateFormatError: (a ``ValueError``) naming the file and
                what is wrong, when it is not a checkpoint of this shockwave version, is
                corrupted or does not fit its schema.
            ValueError: for a simulation that has already finished, or a missing or
                superfluous ``policy``.
        """
        where = str(path)
        saved = StateReader(load_state_file(path, CHECKPOINT_KIND), where)
        config = config_of(saved.table("config"))
        instance = _saved_policy(saved.table("policy"), policy, where)
        workload = workload_of(saved, "workload")
        actual = None if saved.raw("actual") is None else workload_of(saved, "actual")
        wall_seconds = saved.number("wall_seconds", finite=True, minimum=0.0)
        finished = saved.boolean("finished")
        snapshot = RoundSnapshot.from_data(saved.raw("snapshot"), f"{where}: the snapshot")
        saved.done()
        if finished:
            raise ValueError(f"{path}: the checkpointed simulation has already finished")
        try:
            simulation = cls(workload, instance, config, actual=actual)
        except ValueError as exc:
            raise StateFormatError(f"{where}: {exc}") from None
        simulation.loop.restore(snapshot, f"{where}: the snapshot")
        simulation.wall_seconds = wall_seconds
        simulation._saved_workloads = {
            "workload": saved.tree["workload"],
            "actual": saved.tree["actual"],
        }
        return simulation


def _saved_policy(saved: StateReader, given: Policy | None, where: str) -> Policy:
    """The policy of a checkpoint: rebuilt from its name and parameters, or ``given``."""
    name = saved.text("name")
    parameters = saved.raw("parameters")
    saved.done()
    if parameters is None:
        if given is None:
            raise ValueError(
                f"{where}: the simulation's policy {name!r} is not a built-in one: pass an "
                "equivalent instance (policy=...)"
            )
        if given.name != name:
            raise ValueError(f"{where}: saved with policy {name!r}, given {given.name!r}")
        return given
    if given is not None:
        raise ValueError(f"{where}: the simulation used the built-in policy {name!r}")
    if not isinstance(parameters, dict):
        raise saved.error("parameters", "expected a table of parameters")
    try:
        return make_policy(name, parameters)
    except (TypeError, ValueError) as exc:
        raise saved.error("name", str(exc)) from None


def _round_loop(
    workload: Workload, policy: Policy, config: SimulationConfig, actual: Workload | None
) -> RoundLoop:
    """The round loop of a simulation over the world of ``config`` (and ``actual``)."""
    if actual is not None:
        if config.mechanics != "exact":
            raise ValueError("actual: jobs with actual profiles need the exact mechanics")
        check_same_jobs(workload, actual)
        ledger = JobLedger(actual, config.gpus, view=workload)
    else:
        ledger = JobLedger(workload, config.gpus)
    allocation: AllocationRounds | None = None
    if isinstance(policy, AllocationPolicy):
        cadence = OnChanges if config.mechanics == "gavel" else EveryRound
        allocation = cadence(
            ledger.n, float(config.round_seconds), config.gpus, config.recompute_interval_seconds
        )
    world: ClusterWorld
    if actual is not None:
        world = PlannedView(ledger, config, allocation)
    elif config.mechanics == "gavel":
        world = GavelMechanics(ledger, config, allocation)
    else:
        world = ExactProfiles(ledger, config, allocation)
    return RoundLoop(
        ledger,
        world,
        policy,
        round_seconds=config.round_seconds,
        allocation=allocation,
        max_rounds=config.max_rounds,
    )


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
            (an :class:`~shockwave.scheduling.AllocationPolicy` or a
            :class:`~shockwave.scheduling.RoundPolicy`); an instance is ``reset()`` first.
        config: the cluster and the mechanics.
        policy_parameters: parameters of a built-in policy given by name.
        progress: called after every round with (rounds done, jobs finished, jobs in total).
        checkpoint: save the running simulation periodically and on Ctrl-C
            (:class:`CheckpointSettings`; resume with :func:`resume_simulation`).
        actual: the same jobs as they really run (for example what a real run's jobs did:
            :func:`shockwave.runtime.realized.realized_workload`): they progress along these
            profiles while the policy and its state see ``workload``'s as their plans, as in a
            real run (:mod:`shockwave.sim.plan_view`). ``exact`` mechanics only.

    Returns:
        The metrics, with the raw :class:`~shockwave.scheduling.SimulationRecord`.

    Raises:
        ValueError: for bad arguments, a workload the mechanics cannot run, or a policy output
            the simulator cannot execute (:class:`~shockwave.scheduling.PolicyOutputError`).
        SimulationStalledError: if the run does not finish within ``config.max_rounds``.
    """
    simulation = Simulation(
        workload, policy, config, policy_parameters=policy_parameters, actual=actual
    )
    result = simulation.run(progress=progress, checkpoint=checkpoint)
    assert result is not None
    return result


def resume_simulation(
    path: str | PathLike[str],
    *,
    policy: Policy | None = None,
    progress: ProgressCallback | None = None,
    checkpoint: CheckpointSettings | None = None,
) -> SimulationResult:
    """Continue the simulation checkpointed in ``path`` to its end.

    The result is bit for bit the one the uninterrupted run would have given (its timing adds
    the wall time before the checkpoint).

    Raises:
        OSError, ValueError: as :meth:`Simulation.load`; otherwise as :func:`simulate`.
    """
    result = Simulation.load(path, policy=policy).run(progress=progress, checkpoint=checkpoint)
    assert result is not None
    return result
