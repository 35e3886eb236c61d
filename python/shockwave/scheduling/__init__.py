"""What the schedulers, the policies and the metrics share.

A scheduling engine (the trace-driven simulator, :mod:`shockwave.sim`, and the runtime of real
jobs, :mod:`shockwave.runtime`) hands a policy (:mod:`shockwave.policies`) the cluster at every
round boundary and records what happened; :mod:`shockwave.metrics` turns the record into the
reported metrics. The types they exchange live here, so that each of those packages imports this
one and none imports another's internals:

* :class:`ClusterState` (and :class:`ThroughputSamples`): what a policy sees
  (:mod:`~shockwave.scheduling.state`);
* :class:`AllocationPolicy`, :class:`RoundPolicy`, :data:`Policy`: the policy protocol
  (:mod:`~shockwave.scheduling.protocol`);
* :class:`SimulationConfig` (and :data:`Mechanics`): the settings of a run, with every constant of
  the original simulator (:mod:`~shockwave.scheduling.config`);
* :class:`SimulationRecord`: the raw record of a run (:mod:`~shockwave.scheduling.record`).

The old paths (``shockwave.sim.state``, ``shockwave.sim.config``, ``shockwave.sim.record``,
``shockwave.policies.protocol``) still import the same objects.
"""

from __future__ import annotations

from shockwave.scheduling.config import MECHANICS, Mechanics, SimulationConfig
from shockwave.scheduling.protocol import AllocationPolicy, Policy, RoundPolicy
from shockwave.scheduling.record import SimulationRecord
from shockwave.scheduling.state import ClusterState, SampleLog, ThroughputSamples

__all__ = [
    "MECHANICS",
    "AllocationPolicy",
    "ClusterState",
    "Mechanics",
    "Policy",
    "RoundPolicy",
    "SampleLog",
    "SimulationConfig",
    "SimulationRecord",
    "ThroughputSamples",
]
