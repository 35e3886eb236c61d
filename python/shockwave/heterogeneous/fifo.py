"""Gavel's FIFO on a typed cluster: ``fifo`` (the fastest free type) and ``fifo-agnostic``.

Gavel's ``FIFOPolicy`` keeps an assignment ``job -> type`` (``X[i, k] = 1``) across calls:

* ``fifo`` (Gavel's ``fifo_perf``): the assignment is rebuilt at every call; jobs in arrival order
  each take the type with the highest throughput among those with room for the gang (the first in
  alphabetical order on ties); a job that fits nowhere ends the pass.
* ``fifo-agnostic`` (Gavel's ``fifo``): assigned jobs keep their type until they finish; a
  finished job's type is handed to the head of the queue if the head fits in the GPUs counted free
  *so far* (Gavel's replacement quirk); then jobs take free types in arrival order. Gavel draws a
  random type index (``random.Random(seed)``), but assigns the job to the alphabetically last
  type with free GPUs, whether or not the gang fits there, and when that type fills up it removes
  the type at the drawn index from its list: the type that was full may stay in the list with
  negative room. All of it is reproduced, draws included.
"""

from __future__ import annotations

import random

import numpy as np

from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState


class TypedFifo(TypedAllocationPolicy):
    """Gavel's FIFO (see the module notes). ``aware``: ``fifo_perf``; else ``fifo``."""

    runs_zero_priority_jobs = False

    def __init__(self, *, aware: bool = True, seed: int = 0) -> None:
        self.aware = aware
        self.seed = seed
        self.name = "fifo" if aware else "fifo-agnostic"
        self.gavel_name = "fifo_perf" if aware else "fifo"
        self.shuffles_type_order = not aware
        self.reset()

    def reset(self) -> None:
        self._assigned: dict[int, str] = {}
        self._rng = random.Random(self.seed)

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        types = list(state.types)
        column = {name: k for k, name in enumerate(types)}
        ids = state.job_ids.tolist()
        row = {job: i for i, job in enumerate(ids)}
        gang = dict(zip(ids, state.gang.tolist(), strict=True))
        thr = {job: dict(zip(types, state.throughput[i].tolist(), strict=True))
               for i, job in enumerate(ids)}  # fmt: skip
        free = {name: int(c) for name, c in zip(types, state.counts.tolist(), strict=True)}
        if self.aware:
            self._assigned = {}
        queue = [job for job in sorted(ids) if job not in self._assigned]
        for job in sorted(self._assigned):
            worker_type = self._assigned[job]
            if job in row:
                free[worker_type] -= gang[job]
                continue
            if queue:  # a finished job's type goes to the head of the queue if it fits
                head = queue[0]
                if gang[head] <= free[worker_type] and thr[head][worker_type] > 0.0:
                    queue.pop(0)
                    self._assigned[head] = worker_type
                    free[worker_type] -= gang[head]
            del self._assigned[job]
        open_types = sorted(name for name in free if free[name] > 0)
        while queue and open_types:
            job = queue.pop(0)
            fitting: list[str] = []
            where: list[int] = []
            # Gavel's loop variable: after this loop it names the last open type, which the
            # agnostic mode then uses whatever it drew.
            for index, worker_type in enumerate(open_types):
                if free[worker_type] >= gang[job]:
                    fitting.append(worker_type)
                    where.append(index)
            if not fitting:
                break
            if self.aware:
                best = -1.0
                pick = 0
                for index, name in enumerate(fitting):
                    if thr[job][name] > best:
                        best, worker_type, pick = thr[job][name], name, index
            else:
                pick = self._rng.randrange(len(fitting))  # drawn, then unused (Gavel's bug)
            if thr[job][worker_type] > 0.0:
                self._assigned[job] = worker_type
                free[worker_type] -= gang[job]
                if free[worker_type] == 0:
                    open_types.pop(where[pick])
        x = np.zeros((len(ids), len(types)), dtype=np.float64)
        for job, worker_type in self._assigned.items():
            if job in row:
                x[row[job], column[worker_type]] = 1.0
        return x
