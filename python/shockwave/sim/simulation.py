"""The entry point: simulate a workload under a policy and return its metrics."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from shockwave.metrics import SimulationResult, summarize
from shockwave.policies import make_policy
from shockwave.policies.protocol import Policy
from shockwave.sim.config import SimulationConfig
from shockwave.sim.engine import Engine, ProgressCallback
from shockwave.sim.exact_engine import ExactEngine
from shockwave.sim.gavel_engine import GavelEngine
from shockwave.workload import Workload


def simulate(
    workload: Workload,
    policy: str | Policy,
    config: SimulationConfig,
    *,
    policy_parameters: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
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

    Returns:
        The metrics, with the raw :class:`~shockwave.sim.record.SimulationRecord`.

    Raises:
        ValueError: for bad arguments, a workload the mechanics cannot run, or a policy output
            the simulator cannot execute (:class:`~shockwave.sim.errors.PolicyOutputError`).
        SimulationStalledError: if the run does not finish within ``config.max_rounds``.
    """
    if isinstance(policy, str):
        policy = make_policy(policy, policy_parameters)
    elif policy_parameters:
        raise ValueError("policy_parameters apply to a policy given by name only")
    policy.reset()
    started = time.perf_counter()
    engine: Engine
    if config.mechanics == "gavel":
        engine = GavelEngine(workload, policy, config, progress)
    else:
        engine = ExactEngine(workload, policy, config, progress)
    engine.run()
    return summarize(engine.record(engine.makespan, time.perf_counter() - started))
