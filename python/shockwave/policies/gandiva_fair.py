"""``gandiva-fair``: equal time shares (the original's ``gandiva_fair``).

Every active job gets ``x_i = min(1, G / N)``, whatever its gang size or weight. There are no
tickets and no stride scheduler in the original: the stride-like behaviour ("the job that received
the least time runs first") comes entirely from the round mechanism's ``x_i / time received``
priorities. ``sum_i w_i x_i`` can exceed ``G``; the mechanism packs by priority.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shockwave.scheduling import AllocationPolicy, ClusterState


class GandivaFair(AllocationPolicy):
    """Equal time shares (no parameters)."""

    name = "gandiva-fair"

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        n = state.num_active
        if n == 0:
            return np.zeros(0)
        share = state.gpus / n
        return np.full(n, share / max(share, 1.0))
