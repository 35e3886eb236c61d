"""Simulation settings: the cluster, the round length and the mechanics.

Moved to :mod:`shockwave.scheduling.config` (shared by the simulator, the runtime and the
metrics); this path keeps importing the same objects.
"""

from __future__ import annotations

from shockwave.scheduling.config import (
    DEFAULT_RESTART_PENALTY_SECONDS,
    DEFAULT_ROUND_SECONDS,
    GAVEL_MAX_FAILED_ATTEMPTS,
    GAVEL_MIN_SECONDS_BETWEEN_RECOMPUTES,
    GAVEL_OVERTIME_FACTOR,
    GAVEL_PENALTY_MARGIN_SECONDS,
    MAX_ROUND_SECONDS,
    MAX_THROUGHPUT_NOISE,
    MECHANICS,
    MIN_ROUND_SECONDS,
    Mechanics,
    SimulationConfig,
)

__all__ = [
    "DEFAULT_RESTART_PENALTY_SECONDS",
    "DEFAULT_ROUND_SECONDS",
    "GAVEL_MAX_FAILED_ATTEMPTS",
    "GAVEL_MIN_SECONDS_BETWEEN_RECOMPUTES",
    "GAVEL_OVERTIME_FACTOR",
    "GAVEL_PENALTY_MARGIN_SECONDS",
    "MAX_ROUND_SECONDS",
    "MAX_THROUGHPUT_NOISE",
    "MECHANICS",
    "MIN_ROUND_SECONDS",
    "Mechanics",
    "SimulationConfig",
]
