"""Gavel's round mechanism: turns time fractions into the jobs that run in a round.

An allocation policy returns per-job time fractions ``x_i`` (the share of time job ``i`` should
hold its gang). Each round the mechanism ranks the jobs and packs whole gangs greedily:

* **time received** ``t_i``: starts at ``tau / 2`` when the job is admitted and when the counters
  are reset; grows by the job's execution time (net of restart penalties) after every run;
* **priority** ``p_i = x_i / (t_i / W)`` with ``W`` the sum of the counters at the last reset plus
  all execution time since (the original's ``worker_time_so_far``); 0 for a job without an
  allocation, with ``x_i = 0`` or with zero throughput;
* **deficit**: at every reset, ``deficit_i += (time it should have received) - (t_i - tau / 2)``;
* **selection**: sort by ``(p_i, deficit_i, x_i)`` descending, ties in admission order; scan the
  list, skipping a gang that does not fit in the GPUs left (smaller ones further down still may).

All arithmetic is done in the same order as the original so that ties resolve identically.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Priority of an allocated job whose time fraction of the cluster is 0 (the original's
#: ``allocation * 1e9`` default, used only before any time is recorded).
_UNSEEN_PRIORITY_SCALE = 1e9


class RoundMechanism:
    """Per-job state of the mechanism, for every job of a workload (indexed by internal index).

    Args:
        num_jobs: jobs in the workload.
        round_seconds: round length tau, seconds.
    """

    def __init__(self, num_jobs: int, round_seconds: float) -> None:
        self.half_round = round_seconds / 2.0
        self.fraction = np.zeros(num_jobs, dtype=np.float64)
        self.in_allocation = np.zeros(num_jobs, dtype=bool)
        self.time_received = np.full(num_jobs, self.half_round, dtype=np.float64)
        self.deficit = np.zeros(num_jobs, dtype=np.float64)
        # Time each job was entitled to since the last reset, accrued round by round (exact
        # mechanics); the gavel mechanics use ``x * elapsed`` at the reset instead.
        self.entitlement = np.zeros(num_jobs, dtype=np.float64)
        self.total_time = 0.0
        self.last_reset_time = 0.0

    def snapshot(self) -> dict[str, Any]:
        """The mechanism's state, as data (:mod:`shockwave.persistence`)."""
        return {
            "fraction": self.fraction.copy(),
            "in_allocation": self.in_allocation.copy(),
            "time_received": self.time_received.copy(),
            "deficit": self.deficit.copy(),
            "entitlement": self.entitlement.copy(),
            "total_time": self.total_time,
            "last_reset_time": self.last_reset_time,
        }

    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot` (of a mechanism over as many jobs), every field checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the field that does not fit.
        """
        jobs = (self.fraction.shape[0],)
        fraction = saved.array("fraction", np.float64, jobs)
        in_allocation = saved.array("in_allocation", np.bool_, jobs)
        time_received = saved.array("time_received", np.float64, jobs)
        deficit = saved.array("deficit", np.float64, jobs)
        entitlement = saved.array("entitlement", np.float64, jobs)
        total_time = saved.number("total_time")
        last_reset_time = saved.number("last_reset_time")
        saved.done()
        self.fraction, self.in_allocation = fraction, in_allocation
        self.time_received, self.deficit, self.entitlement = time_received, deficit, entitlement
        self.total_time, self.last_reset_time = total_time, last_reset_time

    def admit(self, jobs: IntArray) -> None:
        """Start the counters of newly admitted jobs (no allocation until the next recompute)."""
        self.time_received[jobs] = self.half_round
        self.deficit[jobs] = 0.0
        self.entitlement[jobs] = 0.0
        self.in_allocation[jobs] = False
        self.fraction[jobs] = 0.0

    def reset_counters(self, active: IntArray, now: float, *, accrued: bool) -> None:
        """Fold the time received since the last reset into the deficits; restart the counters.

        ``accrued``: use the entitlement accrued round by round (exact mechanics) instead of the
        original's ``x * (now - last_reset)`` with the fractions in force at the reset.
        """
        received = self.time_received[active] - self.half_round
        if accrued:
            should = self.entitlement[active]
        else:
            elapsed = now - self.last_reset_time
            should = np.where(self.in_allocation[active], self.fraction[active] * elapsed, 0.0)
        self.deficit[active] += should - received
        self.time_received[active] = self.half_round
        self.entitlement[active] = 0.0
        total = 0.0
        for _ in range(active.shape[0]):  # the original adds tau/2 per job, in order
            total += self.half_round
        self.total_time = total
        self.last_reset_time = now

    def set_allocation(self, active: IntArray, fractions: FloatArray) -> None:
        """Install a new allocation over ``active`` (every other job has none)."""
        self.in_allocation[:] = False
        self.in_allocation[active] = True
        self.fraction[active] = fractions

    def accrue(self, active: IntArray, seconds: float) -> None:
        """Credit ``seconds`` of round time at the current fractions (exact mechanics)."""
        allocated = active[self.in_allocation[active]]
        self.entitlement[allocated] += self.fraction[allocated] * seconds

    def record_run(self, jobs: IntArray, execution_seconds: FloatArray) -> None:
        """Add each job's execution time to its counter and to the total, in the given order."""
        self.time_received[jobs] += execution_seconds
        total = self.total_time
        for seconds in execution_seconds.tolist():
            total += seconds
        self.total_time = total

    def priorities(self, active: IntArray, throughput: FloatArray) -> FloatArray:
        """``p_i`` of every active job (``throughput`` aligned with ``active``)."""
        x = self.fraction[active]
        allocated = self.in_allocation[active]
        if self.total_time == 0.0:
            share = np.zeros(active.shape[0], dtype=np.float64)
        else:
            share = self.time_received[active] / self.total_time
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(share > 0.0, x / share, x * _UNSEEN_PRIORITY_SCALE)
        return np.where(allocated & (x != 0.0) & (throughput != 0.0), ratio, 0.0)

    def select(
        self,
        active: IntArray,
        gang_size: IntArray,
        throughput: FloatArray,
        gpus: int,
        *,
        run_zero_priority: bool,
    ) -> IntArray:
        """The jobs (internal indices, selection order) the greedy scan picks for one round.

        ``gang_size`` and ``throughput`` are aligned with ``active``. A job with zero throughput
        never runs; one with zero priority runs only if ``run_zero_priority``.
        """
        if active.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        priority = self.priorities(active, throughput)
        x = np.where(self.in_allocation[active], self.fraction[active], 0.0)
        deficit = self.deficit[active]
        # Descending on (priority, deficit, x); ties keep admission order (stable).
        order = np.lexsort((np.arange(active.shape[0]), -x, -deficit, -priority))
        eligible = throughput[order] > 0.0
        if not run_zero_priority:
            eligible &= priority[order] > 0.0
        candidates = order[eligible]
        return active[greedy_pack(gang_size[candidates], gpus, candidates)]


def greedy_pack(gangs: IntArray, gpus: int, labels: IntArray) -> IntArray:
    """Scan ``gangs`` in order, taking each one that fits in the GPUs left; return its labels.

    The prefix that fits as a whole is taken with one cumulative sum; after that the scan goes
    job by job and stops as soon as no remaining gang can fit.
    """
    if gangs.shape[0] == 0:
        return labels[:0]
    cumulative = np.cumsum(gangs)
    prefix = int(np.searchsorted(cumulative, gpus, side="right"))
    taken = [labels[:prefix]]
    left = gpus - (int(cumulative[prefix - 1]) if prefix else 0)
    if prefix < gangs.shape[0] and left > 0:
        rest = gangs[prefix:]
        smallest_after = np.minimum.accumulate(rest[::-1])[::-1]
        picked: list[int] = []
        for offset, gang in enumerate(rest.tolist()):
            if left < smallest_after[offset]:
                break
            if gang <= left:
                picked.append(prefix + offset)
                left -= gang
        taken.append(labels[np.asarray(picked, dtype=np.int64)])
    return np.concatenate(taken)
