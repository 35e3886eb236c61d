"""Gavel's ``allox`` on a typed cluster: AlloX's min-cost matching of jobs to GPUs of each type.

Gavel's ``AlloXPolicy`` (``policies/allox.py``, commit c4fa400, ``alpha = 1``; AlloX is Le et
al., EuroSys '20) handles single-GPU jobs only (it asserts so; a multi-GPU job is refused here
before the run, naming it). At every call:

* a job whose previous shares sum to exactly 1 keeps them, and holds that GPU;
* every other job, oldest first (at most ``max(alpha m, G)`` of them, ``G`` the GPUs not held),
  is matched to a (GPU, position) pair by ``scipy.optimize.linear_sum_assignment`` on the cost
  ``p (remaining_i / T[i, type of the GPU]) + age_i`` for position ``p = 1 .. m`` from the end of
  the GPU's queue (a zero throughput counts as ``1e-10``); GPUs are numbered type by type in the
  types' alphabetical order, as Gavel numbers them;
* the job at the head of each GPU's queue gets ``X[i, type] = 1``; every other job keeps its
  previous shares.

The matching has exactly tied optima (identical GPUs of a type); the tie-breaking is scipy's, as
in Gavel's own run.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState

#: Gavel replaces a zero throughput by this before dividing.
_TINY_THROUGHPUT = 1e-10


class GavelAlloX(TypedAllocationPolicy):
    """Gavel's ``allox`` (see the module notes)."""

    name: str = "allox"  # type: ignore[misc]  # the base's per-instance name
    gavel_name = "allox"

    def __init__(self, alpha: float = 1.0) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        self.alpha = alpha
        self.reset()

    def reset(self) -> None:
        self._previous: dict[int, FloatArray] = {}

    def check_jobs(self, job_ids: list[int], gang: list[int]) -> None:
        for job, size in zip(job_ids, gang, strict=True):
            if size != 1:
                raise ValueError(
                    f"job {job} needs {size} GPUs: Gavel's AlloX schedules single-GPU jobs only "
                    "(use another policy for multi-GPU jobs)"
                )

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        ids = state.job_ids.tolist()
        self.check_jobs(ids, state.gang.tolist())
        k = len(state.types)
        names = sorted(range(k), key=lambda t: state.types[t])  # Gavel's type order
        unallocated: list[int] = []
        holding: list[int] = []
        for i, job in enumerate(ids):
            previous = self._previous.get(job)
            total = 0.0
            if previous is not None:
                for t in names:
                    total += float(previous[t])
            (holding if previous is not None and total == 1.0 else unallocated).append(i)
        worker_type: list[int] = []
        for t in names:
            free = int(state.counts[t]) - sum(
                1 for i in holding if self._previous[ids[i]][t] == 1.0
            )
            worker_type.extend([t] * max(free, 0))
        gpus = len(worker_type)
        age = state.time_since_arrival
        unallocated.sort(key=lambda i: -age[i])
        unallocated = unallocated[: max(int(self.alpha * len(unallocated)), gpus)]
        m = len(unallocated)
        x = np.zeros((len(ids), k))
        for i, job in enumerate(ids):
            if job in self._previous:
                x[i] = self._previous[job]
        if m and gpus:
            rows = np.array(unallocated)
            thr = state.throughput[rows][:, worker_type]
            seconds = state.remaining_steps[rows][:, None] / np.where(
                thr == 0.0, _TINY_THROUGHPUT, thr
            )
            cost = np.concatenate([p * seconds for p in range(1, m + 1)], axis=1)
            cost = cost + age[rows][:, None]
            matched_rows, columns = linear_sum_assignment(cost)
            queues: dict[int, list[tuple[int, int]]] = {g: [] for g in range(gpus)}
            for r, col in zip(matched_rows.tolist(), columns.tolist(), strict=True):
                queues[col % gpus].append((unallocated[r], col // gpus))
            for g in range(gpus):
                if queues[g]:
                    head = max(queues[g], key=lambda item: item[1])  # the last position runs first
                    x[head[0], worker_type[g]] = 1.0
        self._previous = {job: x[i].copy() for i, job in enumerate(ids)}
        return x
