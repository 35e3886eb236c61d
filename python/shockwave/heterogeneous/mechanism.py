"""Gavel's round mechanism on a typed cluster: per-type priorities and a greedy scan per type.

An allocation ``X[i, k]`` is the share of time job ``i`` should run on GPUs of type ``k``.
Each round, for every type ``k`` (as Gavel's ``scheduler.py``, commit c4fa400):

* **time received** ``t[i, k]``: ``tau / 2`` at admission and at every reset, plus the execution
  time of every run of job ``i`` on type ``k`` since;
* **type total** ``W[k]``: ``tau / 2`` per job active at the last reset (jobs admitted later are
  not counted) plus all execution on type ``k`` since;
* **priority** ``p[i, k] = X[i, k] / (t[i, k] / W[k])``; 0 for a job without an allocation (admitted
  since the last reset), with ``X[i, k] = 0`` or with no throughput on ``k``;
  ``X[i, k] * 1e9`` while ``W[k] = 0``;
* **deficit** at each reset: ``d[i, k] += X[i, k] (now - last reset) - (t[i, k] - tau / 2)``;
* **scan**: the types are visited in order (the cluster's, or shuffled every round for the
  heterogeneity-agnostic policies, as Gavel shuffles them for its policies without ``Perf`` in
  their names); each type's jobs are sorted by ``(p, d, X)`` descending (ties in admission
  order) and the lists concatenated; the scan takes each job not yet taken, with a throughput on
  the type, whose gang fits in that type's GPUs left (FIFO: only jobs with ``p > 0``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Priority scale of an allocated job before any time is recorded on its type (Gavel's 1e9).
_UNSEEN_PRIORITY_SCALE = 1e9


class TypedRoundMechanism:
    """Per-job, per-type counters of Gavel's mechanism, for every job of a workload.

    Args:
        num_jobs: jobs in the workload (internal indices ``0 .. num_jobs - 1``).
        num_types: GPU types of the cluster.
        round_seconds: the round length tau, seconds.
    """

    def __init__(self, num_jobs: int, num_types: int, round_seconds: float) -> None:
        self.half_round = round_seconds / 2.0
        self.time_received = np.full((num_jobs, num_types), self.half_round, dtype=np.float64)
        self.type_total = np.zeros(num_types, dtype=np.float64)
        self.deficit = np.zeros((num_jobs, num_types), dtype=np.float64)
        self.allocation = np.zeros((num_jobs, num_types), dtype=np.float64)
        self.in_allocation = np.zeros(num_jobs, dtype=bool)
        self.last_reset_time = 0.0

    def admit(self, jobs: IntArray) -> None:
        """Start the counters of newly admitted jobs (no allocation until the next reset)."""
        self.time_received[jobs] = self.half_round
        self.deficit[jobs] = 0.0
        self.allocation[jobs] = 0.0
        self.in_allocation[jobs] = False

    def reset(self, active: IntArray, now: float) -> None:
        """Fold the time received since the last reset into the deficits; restart the counters."""
        elapsed = now - self.last_reset_time
        received = self.time_received[active] - self.half_round
        allocated = self.in_allocation[active][:, None]
        should = np.where(allocated, self.allocation[active] * elapsed, 0.0)
        self.deficit[active] += should - received
        self.time_received[active] = self.half_round
        total = 0.0
        for _ in range(active.shape[0]):  # Gavel adds tau/2 job by job
            total += self.half_round
        self.type_total[:] = total
        self.last_reset_time = now

    def set_allocation(self, active: IntArray, allocation: FloatArray) -> None:
        """Install ``allocation`` (rows aligned with ``active``); every other job has none."""
        self.in_allocation[:] = False
        self.in_allocation[active] = True
        self.allocation[active] = allocation

    def record_run(self, job: int, worker_type: int, seconds: float) -> None:
        """Add one run's execution time to the job's counter on its type and to the type's total."""
        self.time_received[job, worker_type] += seconds
        self.type_total[worker_type] += seconds

    def priorities(self, active: IntArray, throughput: FloatArray) -> FloatArray:
        """``p[i, k]`` of the active jobs (``throughput`` aligned with ``active``)."""
        x = self.allocation[active]
        total = self.type_total[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total != 0.0, self.time_received[active] / total, 0.0)
            ratio = np.where(share > 0.0, x / share, x * _UNSEEN_PRIORITY_SCALE)
        keep = self.in_allocation[active][:, None] & (x != 0.0) & (throughput != 0.0)
        return np.where(keep, ratio, 0.0)

    def select(
        self,
        active: IntArray,
        gang: IntArray,
        throughput: FloatArray,
        counts: IntArray,
        type_order: list[int],
        *,
        run_zero_priority: bool,
    ) -> list[tuple[int, int]]:
        """The round's ``(job, type)`` pairs (internal job indices) in the scan's order.

        ``gang`` and ``throughput`` are aligned with ``active``; ``counts`` are the GPUs of each
        type. Jobs without an allocation are included (Gavel reserves their GPUs in the scan;
        its placement then drops them): see :meth:`allocated`.
        """
        if active.shape[0] == 0:
            return []
        priority = self.priorities(active, throughput)
        x = np.where(self.in_allocation[active][:, None], self.allocation[active], 0.0)
        deficit = self.deficit[active]
        left = counts.astype(np.int64).copy()
        taken = np.zeros(active.shape[0], dtype=bool)
        chosen: list[tuple[int, int]] = []
        position = np.arange(active.shape[0])
        gangs = gang.tolist()
        for k in type_order:
            order = np.lexsort((position, -x[:, k], -deficit[:, k], -priority[:, k]))
            runnable = throughput[order, k] > 0.0
            if not run_zero_priority:
                runnable &= priority[order, k] > 0.0
            for j in order[runnable].tolist():
                if left[k] == 0:
                    break
                if taken[j] or gangs[j] > left[k]:
                    continue
                left[k] -= gangs[j]
                taken[j] = True
                chosen.append((int(active[j]), k))
        return chosen

    def allocated(self, job: int) -> bool:
        """Whether ``job`` is part of the allocation in force."""
        return bool(self.in_allocation[job])
