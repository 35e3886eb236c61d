"""``fifo``: first in, first out, non-preemptive (the original's ``fifo``, base mode).

Jobs get ``x = 1`` in arrival order while the queue's head fits in the free GPUs; the first head
that does not fit stops the allocation (head-of-line blocking, no backfill). An allocated job keeps
its ``x = 1`` until it completes; when one completes, the queue's head takes its place if it fits.

Where the cluster reproduces the original simulator (``state.original_quirks``: the ``gavel``
mechanics) two quirks of the original are kept: when replacing completed jobs, the free GPUs are
counted only over the allocated jobs *examined so far* (ascending id), so the allocation can
oversubscribe the cluster and the round mechanism then preempts by time received; and the
mechanism never runs a job whose priority is 0, so freed GPUs idle until the next recompute.
Elsewhere the free GPUs are counted correctly, and the mechanism's work conservation backfills
idle GPUs with queued jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader
from shockwave.scheduling import AllocationPolicy, ClusterState


class Fifo(AllocationPolicy):
    """First in, first out (no parameters; remembers its allocation)."""

    name = "fifo"
    runs_zero_priority_jobs = False

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._allocated: set[int] = set()

    def snapshot(self) -> dict[str, Any]:
        return {"allocated": np.array(sorted(self._allocated), dtype=np.int64)}

    def restore(self, state: Mapping[str, Any]) -> None:
        saved = StateReader(dict(state), f"policy {self.name!r}")
        allocated = saved.array("allocated", np.int64, (None,))
        saved.done()
        self._allocated = set(allocated.tolist())

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        ids = state.job_ids.tolist()
        gang = dict(zip(ids, state.gang_size.tolist(), strict=True))
        active = set(ids)
        queue = sorted(j for j in ids if j not in self._allocated)
        free = state.gpus
        if state.original_quirks:
            for job in sorted(self._allocated):
                if job in active:
                    free -= gang[job]
                    continue
                if queue and gang[queue[0]] <= free:
                    head = queue.pop(0)
                    self._allocated.add(head)
                    free -= gang[head]
                self._allocated.discard(job)
        else:
            self._allocated &= active
            free -= sum(gang[j] for j in self._allocated)
        while queue and free > 0:
            head = queue.pop(0)
            if gang[head] > free:
                break
            self._allocated.add(head)
            free -= gang[head]
        return np.array([1.0 if j in self._allocated else 0.0 for j in ids])
