"""Trace-driven simulation of a GPU cluster scheduled in rounds.

:func:`simulate` replays a :class:`~shockwave.workload.Workload` on ``G`` identical GPUs under a
policy and returns its metrics (:class:`~shockwave.metrics.SimulationResult`). The settings are a
:class:`~shockwave.scheduling.SimulationConfig`; two mechanics, each a cluster world under the
one round loop (:mod:`shockwave.rounds`):

* ``exact`` (default, :mod:`~shockwave.sim.exact`): each job follows its per-epoch profile
  exactly; the policy is consulted every round; restart penalty; work conserving; optional
  seeded throughput noise. With ``actual=`` the planned view (:mod:`~shockwave.sim.plan_view`):
  jobs follow their actual profiles while the policy sees their plans;
* ``gavel`` (:mod:`~shockwave.sim.gavel`): the original (Gavel/Shockwave) simulator's
  mechanics, quirks included, so that results can be set beside the paper's.

A long run can be checkpointed and resumed bit for bit (:class:`Simulation`,
:class:`CheckpointSettings`, :func:`resume_simulation`; :mod:`~shockwave.sim.checkpoint`).

See ``docs/simulator.md`` for both mechanics and ``docs/architecture.md`` for the layout.
"""

from __future__ import annotations

from shockwave.sim.checkpoint import CheckpointSettings
from shockwave.sim.simulation import Simulation, resume_simulation, simulate

__all__ = [
    "CheckpointSettings",
    "Simulation",
    "resume_simulation",
    "simulate",
]
