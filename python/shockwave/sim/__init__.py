"""Trace-driven simulation of a GPU cluster scheduled in rounds.

:func:`simulate` replays a :class:`~shockwave.workload.Workload` on ``G`` identical GPUs under a
policy and returns its metrics (:class:`~shockwave.metrics.SimulationResult`). Two mechanics:

* ``exact`` (default): each job follows its per-epoch profile exactly; the policy is consulted
  every round; restart penalty; work conserving; optional seeded throughput noise;
* ``gavel``: the original (Gavel/Shockwave) simulator's mechanics, quirks included, so that
  results can be set beside the paper's.

A long run can be checkpointed and resumed bit for bit (:class:`Simulation`,
:class:`CheckpointSettings`, :func:`resume`).

See ``docs/simulator.md`` for both mechanics and the policy protocol.
"""

from __future__ import annotations

from shockwave.sim.config import MECHANICS, Mechanics, SimulationConfig
from shockwave.sim.engine import ProgressCallback
from shockwave.sim.errors import PolicyOutputError, SimulationStalledError
from shockwave.sim.record import SimulationRecord
from shockwave.sim.simulation import CheckpointSettings, Simulation, resume, simulate
from shockwave.sim.state import ClusterState, ThroughputSamples

__all__ = [
    "MECHANICS",
    "CheckpointSettings",
    "ClusterState",
    "Mechanics",
    "PolicyOutputError",
    "ProgressCallback",
    "Simulation",
    "SimulationConfig",
    "SimulationRecord",
    "SimulationStalledError",
    "ThroughputSamples",
    "resume",
    "simulate",
]
