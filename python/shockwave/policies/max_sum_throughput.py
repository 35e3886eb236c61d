"""``mst``: maximum sum of throughputs (the original's ``max_sum_throughput_perf``).

    maximise  sum_i thr_i x_i   s.t.  0 <= x <= 1,  sum_i w_i x_i <= G,

with ``thr_i`` the raw throughput in iterations per second at the job's current batch size (the
original computes a normalisation but never uses it). This is a fractional knapsack: jobs are
filled in descending ``thr_i / w_i`` until the GPUs run out, the marginal job gets the remainder.

The original solves it with an interior-point solver, whose answer is not the vertex: jobs of the
same type tie and share the margin equally, and a job the optimum leaves out still gets a tiny
share ``~ mu / (reduced cost)``, larger the closer it came to being chosen. Those tiny shares decide
the order in which the round mechanism backfills idle GPUs with left-out jobs. We return the point
of the program's central path at a small barrier weight ``mu`` (relative to the largest
throughput), which has both properties
(:func:`shockwave.policies.analytic_center.central_path_point`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shockwave.policies.analytic_center import central_path_point
from shockwave.scheduling import AllocationPolicy, ClusterState


@dataclass
class MaxSumThroughput(AllocationPolicy):
    """Fractional knapsack on raw throughput.

    Attributes:
        barrier_weight: ``mu`` relative to the largest throughput (default 1e-9): how far from
            the vertex the returned point is. Smaller is closer to the exact LP optimum.
    """

    barrier_weight: float = 1e-9
    name = "mst"

    def __post_init__(self) -> None:
        if not 0.0 < self.barrier_weight < 1e-3:
            raise ValueError(f"barrier_weight must be in (0, 1e-3), got {self.barrier_weight!r}")

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        n = state.num_active
        if n == 0:
            return np.zeros(0)
        gang = state.gang_size.astype(np.float64)
        throughput = state.throughput
        scale = float(throughput.max())
        if scale <= 0.0:
            return np.zeros(n)
        return central_path_point(throughput, gang, float(state.gpus), self.barrier_weight * scale)
