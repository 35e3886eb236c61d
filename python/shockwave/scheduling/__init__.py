"""What the round loop, the policies and the metrics share.

The round loop (:mod:`shockwave.rounds`) hands a policy (:mod:`shockwave.policies`) the cluster
at every round boundary, in a simulation (:mod:`shockwave.sim`) and in a real run
(:mod:`shockwave.runtime`) alike, and records what happened; :mod:`shockwave.metrics` turns the
record into the reported metrics. The types they exchange live here, each under this one import
path:

* :class:`ClusterState` (and :class:`ThroughputSamples`, :class:`SampleLog`): what a policy
  sees (:mod:`~shockwave.scheduling.state`);
* :class:`AllocationPolicy`, :class:`RoundPolicy`, :data:`Policy`: the policy protocol, with
  its state as data (:mod:`~shockwave.scheduling.protocol`);
* :class:`SimulationConfig` (and :data:`Mechanics`): the settings of a simulation, with every
  constant of the original simulator (:mod:`~shockwave.scheduling.config`);
* :class:`SimulationRecord`: the raw record of a run (:mod:`~shockwave.scheduling.record`);
* :class:`PolicyOutputError`, :class:`SimulationStalledError`: what goes wrong in the round loop
  (:mod:`~shockwave.scheduling.errors`).
"""

from __future__ import annotations

from shockwave.scheduling.config import MECHANICS, Mechanics, SimulationConfig
from shockwave.scheduling.errors import PolicyOutputError, SimulationStalledError
from shockwave.scheduling.protocol import AllocationPolicy, Policy, PolicyBase, RoundPolicy
from shockwave.scheduling.record import SimulationRecord
from shockwave.scheduling.state import (
    BatchSizeChanges,
    ClusterState,
    ProgressCounter,
    SampleLog,
    ThroughputSamples,
)

__all__ = [
    "MECHANICS",
    "AllocationPolicy",
    "BatchSizeChanges",
    "ClusterState",
    "Mechanics",
    "Policy",
    "PolicyBase",
    "PolicyOutputError",
    "ProgressCounter",
    "RoundPolicy",
    "SampleLog",
    "SimulationConfig",
    "SimulationRecord",
    "SimulationStalledError",
    "ThroughputSamples",
]
