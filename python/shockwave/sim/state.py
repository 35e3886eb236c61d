"""What a policy sees: a snapshot of the cluster at a round boundary.

Moved to :mod:`shockwave.scheduling.state`,
shared by the simulator, the runtime, the policies and the metrics; this path keeps
importing the same objects.
"""

from __future__ import annotations

from shockwave.scheduling.state import (
    ClusterState,
    SampleLog,
    ThroughputSamples,
)

__all__ = [
    "ClusterState",
    "SampleLog",
    "ThroughputSamples",
]
