"""``ossp``: minimum total duration (the original's ``min_total_duration``).

The original binary-searches the smallest horizon ``T`` for which every active job can finish
within ``T`` at a constant share:

    find x  s.t.  0 <= x <= 1,  sum_i w_i x_i <= G,  x_i >= R_i / T,

``R_i`` being the job's remaining run time at full speed (``remaining_steps / thr``), with the
same search: ``T`` in ``[100, 10^6]`` s halved until ``1.05 * T_low >= T_high``, the bracket moved
up tenfold while nothing is feasible. Feasibility has a closed form here (every bound at most 1 and
the bounds' load within ``G``). The original returns whatever point its solver finds in the
feasible set of the last feasible ``T``; we return its analytic center, the point an
interior-point solver on a constant objective converges to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shockwave.policies.analytic_center import interior_point
from shockwave.scheduling import AllocationPolicy, ClusterState


@dataclass
class MinTotalDuration(AllocationPolicy):
    """Binary search on the horizon.

    Attributes:
        tolerance: stop when ``tolerance * T_low >= T_high`` (the original's 1.05).
        initial_low_seconds, initial_high_seconds: the first bracket (100 s and 10^6 s).
    """

    tolerance: float = 1.05
    initial_low_seconds: float = 100.0
    initial_high_seconds: float = 1_000_000.0
    name = "ossp"

    def __post_init__(self) -> None:
        if not self.tolerance > 1.0:
            raise ValueError(f"tolerance must be > 1, got {self.tolerance!r}")
        if not 0.0 < self.initial_low_seconds < self.initial_high_seconds:
            raise ValueError("need 0 < initial_low_seconds < initial_high_seconds")

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        n = state.num_active
        if n == 0:
            return np.zeros(0)
        remaining = state.remaining_seconds
        gang = state.gang_size.astype(np.float64)
        capacity = float(state.gpus)
        if not np.all(np.isfinite(remaining)):
            raise ValueError("ossp: every active job needs a finite remaining run time")

        def feasible(horizon: float) -> bool:
            bound = remaining / horizon
            return bool(np.all(bound <= 1.0)) and float(gang @ np.maximum(bound, 0.0)) <= capacity

        high = self.initial_high_seconds
        low = self.initial_low_seconds
        last_high = high
        horizon: float | None = None
        while horizon is None:
            while self.tolerance * low < high:
                middle = (low + high) / 2.0
                if feasible(middle):
                    horizon = middle
                    high = middle
                else:
                    low = middle
            high = last_high * 10.0
            low = last_high
            last_high *= 10.0
        bound = remaining / horizon
        return interior_point([np.zeros(n), bound], np.ones(n), gang, capacity)
