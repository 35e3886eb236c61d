"""``gavel``: Gavel's max-min fairness (the original's ``max_min_fairness``).

The original replaces every throughput by 1 before solving, so the program equalises GPU shares:

    maximise  min_i (w_i / weight_i) x_i   s.t.  0 <= x <= 1,  sum_i w_i x_i <= G.

With ``c* = min(min_i w_i / weight_i, G / sum_i weight_i)`` the optimum is unique when
``c* = G / sum weight`` (always when there are at least as many jobs as GPUs):
``x_i = (G / sum weight) * weight_i / w_i``, every job gets the same GPU share and a ``w``-GPU job
``1/w`` of a 1-GPU job's time. Otherwise the jobs at the minimum are pinned at ``x = 1`` and the
others may take anything in ``[c* weight_i / w_i, 1]`` within the capacity: we return the analytic
center of that optimal face (what the original's interior-point solver converges to).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shockwave.policies.analytic_center import interior_point
from shockwave.scheduling import AllocationPolicy, ClusterState


class MaxMinFairness(AllocationPolicy):
    """Max-min fairness over GPU shares (no parameters)."""

    name = "gavel"

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        if state.num_active == 0:
            return np.zeros(0)
        gang = state.gang_size.astype(np.float64)
        weight = state.weight
        coefficient = gang / weight
        fair_share = state.gpus / float(weight.sum())
        lowest = float(coefficient.min())
        if fair_share <= lowest:
            return fair_share * weight / gang
        floor = lowest / coefficient
        return interior_point([np.zeros_like(floor), floor], np.ones_like(floor), gang, state.gpus)
