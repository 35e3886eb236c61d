"""``allox``: AlloX (the original's ``allox`` with ``alpha = 0.2``).

Each recompute matches jobs to GPUs by a min-cost assignment (Hungarian method,
``scipy.optimize.linear_sum_assignment``) that minimises the sum of completion times on
identical GPUs:

* jobs that already hold a whole GPU (previous ``x = 1``) keep it, and the pool shrinks by one
  GPU for each; the other jobs, oldest first, are the candidates, at most
  ``max(floor(alpha * m), n)`` of them (``m`` candidates, ``n`` free GPUs);
* the cost of putting job ``i`` ``k``-th from last on a GPU is ``k * R_i`` (plus its waiting
  time, a row constant that does not change the optimum), ``R_i`` its remaining run time
  (``state.remaining_seconds``: under the original's mechanics that is the original's own
  ``remaining_steps / throughput``; the original's guard against a zero throughput is moot
  there, as the mechanics refuse jobs that cannot run);
* on each GPU the job in the highest position runs first and receives ``x = 1 / w_i`` (the
  original ignores gang sizes in the matching);
* every other job keeps its previous fraction: allocations are sticky, so a multi-GPU job keeps
  ``1 / w`` and re-enters the matching at every recompute.

All GPUs are identical, so the assignment has many exactly tied optima and the result depends on
the solver's tie-breaking. We pass scipy the original's cost matrix (all ``m`` positions per GPU)
while it has at most ``full_matrix_limit`` entries; above that only the positions an optimal
assignment can use when all run times are positive (``ceil(m / n)`` per GPU, plus one), which
keeps large clusters tractable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import linear_sum_assignment

from shockwave.persistence import StateReader
from shockwave.policies.saved_state import id_table, read_id_table
from shockwave.scheduling import AllocationPolicy, ClusterState


@dataclass
class AlloX(AllocationPolicy):
    """AlloX with sticky allocations.

    Attributes:
        alpha: share of the candidates considered (the original's experiments use 0.2).
        full_matrix_limit: largest cost matrix (entries) built in the original's full form.
    """

    alpha: float = 0.2
    full_matrix_limit: int = 4_000_000
    _previous: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    name = "allox"

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha!r}")
        if self.full_matrix_limit < 1:
            raise ValueError("full_matrix_limit must be >= 1")

    def reset(self) -> None:
        self._previous = {}

    def snapshot(self) -> dict[str, Any]:
        return {"previous": id_table(self._previous)}

    def restore(self, state: Mapping[str, Any]) -> None:
        saved = StateReader(dict(state), f"policy {self.name!r}")
        previous = read_id_table(saved.table("previous"))
        saved.done()
        self._previous = previous

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        n_active = state.num_active
        if n_active == 0:
            self._previous = {}
            return np.zeros(0)
        ids = state.job_ids.tolist()
        previous = np.array([self._previous.get(j, 0.0) for j in ids])
        holds_gpu = np.array([j in self._previous and self._previous[j] == 1.0 for j in ids])
        free_gpus = state.gpus - int(holds_gpu.sum())
        candidates = np.flatnonzero(~holds_gpu)
        waited = state.time_since_arrival
        # oldest first (stable: admission order among equal arrival times)
        candidates = candidates[np.argsort(-waited[candidates], kind="stable")]
        keep = max(int(self.alpha * candidates.shape[0]), free_gpus)
        candidates = candidates[:keep]
        x = previous.copy()
        if candidates.shape[0] and free_gpus > 0:
            first = self._first_on_each_gpu(candidates, state, free_gpus)
            x[first] = 1.0 / state.gang_size[first]
        self._previous = dict(zip(ids, x.tolist(), strict=True))
        return np.asarray(x, dtype=np.float64)

    def _first_on_each_gpu(
        self, candidates: npt.NDArray[np.int64], state: ClusterState, gpus: int
    ) -> npt.NDArray[np.int64]:
        m = candidates.shape[0]
        seconds = state.remaining_seconds[candidates]
        positions = m
        if m * m * gpus > self.full_matrix_limit:
            positions = min(m, math.ceil(m / gpus) + 1)
        waited = state.time_since_arrival[candidates]
        multipliers = np.repeat(np.arange(1, positions + 1, dtype=np.float64), gpus)
        cost = seconds[:, None] * multipliers[None, :] + waited[:, None]
        rows, columns = linear_sum_assignment(cost)
        gpu = columns % gpus
        position = columns // gpus
        # on each GPU the job in the highest position runs first
        best = np.full(gpus, -1, dtype=np.int64)
        best_position = np.full(gpus, -1, dtype=np.int64)
        for row, g, p in zip(rows.tolist(), gpu.tolist(), position.tolist(), strict=True):
            if p > best_position[g]:
                best_position[g] = p
                best[g] = row
        return candidates[best[best >= 0]]
