"""The policy protocol.

Moved to :mod:`shockwave.scheduling.protocol`,
shared by the simulator, the runtime, the policies and the metrics; this path keeps
importing the same objects.
"""

from __future__ import annotations

from shockwave.scheduling.protocol import (
    AllocationPolicy,
    Policy,
    RoundPolicy,
)

__all__ = [
    "AllocationPolicy",
    "Policy",
    "RoundPolicy",
]
