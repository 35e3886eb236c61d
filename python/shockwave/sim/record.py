"""The raw record of a simulation run.

Moved to :mod:`shockwave.scheduling.record`,
shared by the simulator, the runtime, the policies and the metrics; this path keeps
importing the same objects.
"""

from __future__ import annotations

from shockwave.scheduling.record import (
    SimulationRecord,
)

__all__ = [
    "SimulationRecord",
]
