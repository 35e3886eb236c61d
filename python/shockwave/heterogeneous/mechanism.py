"""Gavel's round mechanism on a typed cluster: per-type priorities and a greedy scan per type.

An allocation ``X[e, k]`` is the share of time entry ``e`` should run on GPUs of type ``k``; an
entry is a job or, for the packing policies, a pair of jobs sharing the same GPUs (Gavel's
``JobIdPair``). Each round, for every type ``k`` (as Gavel's ``scheduler.py``, commit c4fa400):

* **time received** ``t[e, k]``: ``tau / 2`` at a job's admission and at every reset (``0`` for a
  pair until the first reset after its creation), plus the execution time of every run of the
  entry on type ``k`` since;
* **type total** ``W[k]``: ``tau / 2`` per entry alive at the last reset (entries created later
  are not counted) plus all execution on type ``k`` since;
* **priority** ``p[e, k] = X[e, k] / (t[e, k] / W[k])``; 0 for an entry without an allocation
  (created since the last reset), with ``X[e, k] = 0`` or with no throughput on ``k`` (for a
  pair: either job's co-located throughput); ``X[e, k] * 1e9`` while ``t`` or ``W[k]`` is 0;
* **deficit** at each reset: ``d[e, k] += X[e, k] (now - last reset) - (t[e, k] - tau / 2)``
  (Gavel's), or, when the allocation changes every round (the ``exact`` mechanics), the share
  of time the entry was entitled to, accrued round by round at the allocation in force;
* **scan**: the types are visited in order (the cluster's, or shuffled every round for the
  heterogeneity-agnostic policies, as Gavel shuffles them for its policies without ``Perf`` or
  ``Packing`` in their names); each type's entries are sorted by ``(p, d, X)`` descending, ties in
  the order the entries were created (a job at its admission, then its pairs with the jobs
  already active, in their admission order), and the lists concatenated; the scan takes each
  entry none of whose jobs is taken yet, with a throughput on the type, whose gang fits in that
  type's GPUs left (FIFO: only entries with ``p > 0``).

Pairs exist only under a packing policy: every two active jobs with the same gang size form one
(created when the second is admitted, with their co-located throughputs), until either finishes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: A job ``(i,)`` or a pair of jobs ``(i, j)`` (internal indices, the lower job id first).
Entry = tuple[int, ...]

#: Priority scale of an allocated entry before any time is recorded on its type (Gavel's 1e9).
_UNSEEN_PRIORITY_SCALE = 1e9


class _Pairs:
    """The pair entries: growable arrays indexed by slot, ``alive`` marking existing pairs."""

    def __init__(self, num_types: int, capacity: int = 64) -> None:
        k = num_types
        self.slot: dict[Entry, int] = {}
        self.size = 0
        self.members = np.zeros((capacity, 2), dtype=np.int64)
        self.time_received = np.zeros((capacity, k))
        self.deficit = np.zeros((capacity, k))
        self.allocation = np.zeros((capacity, k))
        self.throughput = np.zeros((capacity, k, 2))
        self.in_allocation = np.zeros(capacity, dtype=bool)
        self.alive = np.zeros(capacity, dtype=bool)
        self.position = np.zeros(capacity, dtype=np.int64)

    def _grow(self) -> None:
        def doubled(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
            out = np.zeros((2 * a.shape[0], *a.shape[1:]), dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        self.members = doubled(self.members).astype(np.int64)
        self.time_received = doubled(self.time_received).astype(np.float64)
        self.deficit = doubled(self.deficit).astype(np.float64)
        self.allocation = doubled(self.allocation).astype(np.float64)
        self.throughput = doubled(self.throughput).astype(np.float64)
        self.in_allocation = doubled(self.in_allocation).astype(bool)
        self.alive = doubled(self.alive).astype(bool)
        self.position = doubled(self.position).astype(np.int64)

    def add(self, first: int, second: int, throughput: FloatArray, position: int) -> None:
        if self.size == self.members.shape[0]:
            self._grow()
        s = self.size
        self.size += 1
        self.slot[(first, second)] = s
        self.members[s] = (first, second)
        self.time_received[s] = 0.0
        self.deficit[s] = 0.0
        self.allocation[s] = 0.0
        self.throughput[s] = throughput
        self.in_allocation[s] = False
        self.alive[s] = True
        self.position[s] = position

    def remove_job(self, job: int) -> None:
        live = np.flatnonzero(self.alive[: self.size])
        hit = live[np.any(self.members[live] == job, axis=1)]
        for s in hit.tolist():
            self.alive[s] = False
            del self.slot[(int(self.members[s, 0]), int(self.members[s, 1]))]

    def live(self) -> IntArray:
        """Slots of the existing pairs, in creation order."""
        return np.flatnonzero(self.alive[: self.size]).astype(np.int64)

    def snapshot(self) -> dict[str, Any]:
        used = self.size
        return {name: getattr(self, name)[:used].copy() for name in _PAIR_ARRAYS}

    def restore(self, saved: StateReader, num_jobs: int, num_types: int) -> None:
        members = saved.array("members", np.int64, (None, 2))
        size = members.shape[0]
        if np.any((members < 0) | (members >= num_jobs)):
            raise saved.error("members", "a job index is out of range")
        shapes = {
            "time_received": (size, num_types),
            "deficit": (size, num_types),
            "allocation": (size, num_types),
            "throughput": (size, num_types, 2),
            "in_allocation": (size,),
            "alive": (size,),
            "position": (size,),
        }
        arrays = {"members": members}
        for name, shape in shapes.items():
            arrays[name] = saved.array(name, _PAIR_ARRAYS[name], shape)
        saved.done()
        capacity = max(size, 1)
        for name, value in arrays.items():
            full = np.zeros((capacity, *value.shape[1:]), dtype=value.dtype)
            full[:size] = value
            setattr(self, name, full)
        self.size = size
        self.slot = {
            (int(a), int(b)): s
            for s, (a, b) in enumerate(members.tolist())
            if bool(arrays["alive"][s])
        }


#: The arrays of the pairs in a snapshot, with their dtypes.
_PAIR_ARRAYS: dict[str, type[np.generic]] = {
    "members": np.int64,
    "time_received": np.float64,
    "deficit": np.float64,
    "allocation": np.float64,
    "throughput": np.float64,
    "in_allocation": np.bool_,
    "alive": np.bool_,
    "position": np.int64,
}
#: The per-job arrays of the mechanism in a snapshot, with their dtypes.
_JOB_ARRAYS: dict[str, type[np.generic]] = {
    "time_received": np.float64,
    "deficit": np.float64,
    "allocation": np.float64,
    "entitlement": np.float64,
    "in_allocation": np.bool_,
    "position": np.int64,
}


class TypedRoundMechanism:
    """Per-entry, per-type counters of Gavel's mechanism for every job of a workload (and, with
    ``colocated``, the pairs of a packing policy).

    Args:
        num_jobs: jobs in the workload (internal indices ``0 .. num_jobs - 1``).
        num_types: GPU types of the cluster.
        round_seconds: the round length tau, seconds.
        colocated: for a packing policy, ``(i, j) -> (K, 2)`` co-located throughputs of two jobs
            (``None``: no pairs).
    """

    def __init__(
        self,
        num_jobs: int,
        num_types: int,
        round_seconds: float,
        colocated: Callable[[int, int], FloatArray] | None = None,
    ) -> None:
        self.half_round = round_seconds / 2.0
        self.time_received = np.full((num_jobs, num_types), self.half_round, dtype=np.float64)
        self.type_total = np.zeros(num_types, dtype=np.float64)
        self.deficit = np.zeros((num_jobs, num_types), dtype=np.float64)
        self.allocation = np.zeros((num_jobs, num_types), dtype=np.float64)
        # Time each job was entitled to on each type since the last reset, accrued round by
        # round (the exact mechanics); Gavel's mechanics use ``X * elapsed`` at the reset.
        self.entitlement = np.zeros((num_jobs, num_types), dtype=np.float64)
        self.in_allocation = np.zeros(num_jobs, dtype=bool)
        self.position = np.zeros(num_jobs, dtype=np.int64)
        self.last_reset_time = 0.0
        self._created = 0
        self._colocated = colocated
        self.pairs = _Pairs(num_types) if colocated is not None else None

    @property
    def packing(self) -> bool:
        return self.pairs is not None

    def snapshot(self) -> dict[str, Any]:
        """The mechanism's state, as data (:mod:`shockwave.persistence`)."""
        out: dict[str, Any] = {name: getattr(self, name).copy() for name in _JOB_ARRAYS}
        out.update(
            type_total=self.type_total.copy(),
            last_reset_time=self.last_reset_time,
            created=self._created,
            pairs=None if self.pairs is None else self.pairs.snapshot(),
        )
        return out

    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot` (of a mechanism over as many jobs and types, with pairs
        or without as this one), every field checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the field that does not fit.
        """
        n, k = self.allocation.shape
        arrays = {
            name: saved.array(name, dtype, (n, k) if dtype is np.float64 else (n,))
            for name, dtype in _JOB_ARRAYS.items()
        }
        type_total = saved.array("type_total", np.float64, (k,))
        last_reset_time = saved.number("last_reset_time")
        created = saved.integer("created", 0)
        if (saved.raw("pairs") is None) != (self.pairs is None):
            raise saved.error("pairs", "saved for a policy that packs jobs differently")
        if self.pairs is not None:
            self.pairs.restore(saved.table("pairs"), n, k)
        saved.done()
        for name, value in arrays.items():
            setattr(self, name, value)
        self.type_total, self.last_reset_time, self._created = type_total, last_reset_time, created

    def admit(self, jobs: IntArray, active: IntArray, gang: IntArray, job_ids: IntArray) -> None:
        """Start the counters of newly admitted ``jobs`` (no allocation until the next reset);
        ``active`` are the jobs admitted before them, in admission order, ``gang`` and
        ``job_ids`` those of every job (for the pairs of a packing policy)."""
        self.time_received[jobs] = self.half_round
        self.deficit[jobs] = 0.0
        self.allocation[jobs] = 0.0
        self.entitlement[jobs] = 0.0
        self.in_allocation[jobs] = False
        present = active.tolist()
        for job in jobs.tolist():
            self.position[job] = self._created
            self._created += 1
            if self.pairs is not None and self._colocated is not None:
                for other in present:
                    if gang[other] != gang[job]:
                        continue
                    first, second = (other, job) if job_ids[other] < job_ids[job] else (job, other)
                    self.pairs.add(first, second, self._colocated(first, second), self._created)
                    self._created += 1
            present.append(job)

    def remove(self, job: int) -> None:
        """A job finished or was dropped: its pairs are gone."""
        if self.pairs is not None:
            self.pairs.remove_job(job)

    def pair_entries(self) -> list[Entry]:
        """The existing pairs, in creation order."""
        if self.pairs is None:
            return []
        members = self.pairs.members[self.pairs.live()]
        return [(int(a), int(b)) for a, b in members.tolist()]

    def pair_throughput(self) -> FloatArray:
        """``(P, K, 2)``: co-located throughputs of :meth:`pair_entries`."""
        if self.pairs is None:
            return np.zeros((0, self.type_total.shape[0], 2))
        return np.array(self.pairs.throughput[self.pairs.live()], dtype=np.float64)

    def reset(self, active: IntArray, now: float, *, accrued: bool = False) -> None:
        """Fold the time received since the last reset into the deficits; restart the counters.

        ``accrued``: use the entitlement accrued round by round (:meth:`accrue`) instead of
        Gavel's ``X * (now - last reset)`` with the allocation in force at the reset.
        """
        elapsed = now - self.last_reset_time
        received = self.time_received[active] - self.half_round
        allocated = self.in_allocation[active][:, None]
        if accrued:
            should = self.entitlement[active]
        else:
            should = np.where(allocated, self.allocation[active] * elapsed, 0.0)
        self.deficit[active] += should - received
        self.time_received[active] = self.half_round
        self.entitlement[active] = 0.0
        entries = active.shape[0]
        if self.pairs is not None:
            live = self.pairs.live()
            p = self.pairs
            owed = np.where(p.in_allocation[live][:, None], p.allocation[live] * elapsed, 0.0)
            p.deficit[live] += owed - (p.time_received[live] - self.half_round)
            p.time_received[live] = self.half_round
            entries += live.shape[0]
        total = 0.0
        for _ in range(entries):  # Gavel adds tau/2 entry by entry
            total += self.half_round
        self.type_total[:] = total
        self.last_reset_time = now

    def set_allocation(
        self, active: IntArray, allocation: FloatArray, pair_allocation: FloatArray | None = None
    ) -> None:
        """Install ``allocation`` (rows aligned with ``active``) and, for a packing policy,
        ``pair_allocation`` (rows aligned with :meth:`pair_entries`); every other entry has
        none."""
        self.in_allocation[:] = False
        self.in_allocation[active] = True
        self.allocation[active] = allocation
        if self.pairs is not None:
            live = self.pairs.live()
            self.pairs.in_allocation[:] = False
            self.pairs.in_allocation[live] = True
            if pair_allocation is None:
                pair_allocation = np.zeros((live.shape[0], self.type_total.shape[0]))
            self.pairs.allocation[live] = pair_allocation

    def accrue(self, active: IntArray, seconds: float) -> None:
        """Credit ``seconds`` of round time at the allocation in force (the exact mechanics;
        packing policies, whose pairs it does not credit, run under Gavel's only)."""
        allocated = active[self.in_allocation[active]]
        self.entitlement[allocated] += self.allocation[allocated] * seconds

    def record_run(self, entry: Entry, worker_type: int, seconds: float) -> None:
        """Add one run's execution time to the entry's counter on its type and to the type's
        total."""
        if len(entry) == 1:
            self.time_received[entry[0], worker_type] += seconds
        else:
            assert self.pairs is not None
            self.pairs.time_received[self.pairs.slot[entry], worker_type] += seconds
        self.type_total[worker_type] += seconds

    def priorities(self, active: IntArray, throughput: FloatArray) -> FloatArray:
        """``p[i, k]`` of the active jobs (``throughput`` aligned with ``active``)."""
        keep = self.in_allocation[active][:, None] & (throughput != 0.0)
        return self._priority(self.allocation[active], self.time_received[active], keep)

    def _priority(
        self, x: FloatArray, received: FloatArray, keep: npt.NDArray[np.bool_]
    ) -> FloatArray:
        total = self.type_total[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total != 0.0, received / total, 0.0)
            ratio = np.where(share > 0.0, x / share, x * _UNSEEN_PRIORITY_SCALE)
        return np.where(keep & (x != 0.0), ratio, 0.0)

    def select(
        self,
        active: IntArray,
        gang: IntArray,
        throughput: FloatArray,
        counts: IntArray,
        type_order: list[int],
        *,
        run_zero_priority: bool,
        priorities_first: bool = False,
    ) -> list[tuple[Entry, int]]:
        """The round's ``(entry, type)`` pairs in the scan's order.

        ``gang`` and ``throughput`` are aligned with ``active``; ``counts`` are the GPUs of each
        type. Entries without an allocation are included (Gavel reserves their GPUs in the scan;
        its placement then drops them): see :meth:`allocated`. ``priorities_first`` (the exact
        mechanics): scan every type for the entries of positive priority first, then fill the
        GPUs left with the others (Gavel's single scan lets the first type visited take an
        entry of priority 0 there before a later type where its priority is positive).
        """
        n = active.shape[0]
        if n == 0:
            return []
        priority = self.priorities(active, throughput)
        x = np.where(self.in_allocation[active][:, None], self.allocation[active], 0.0)
        deficit = self.deficit[active]
        position = self.position[active]
        runnable = throughput > 0.0
        members: list[Entry] = [(int(j),) for j in active.tolist()]
        entry_gang = gang.tolist()
        if self.pairs is not None:
            live = self.pairs.live()
            if live.shape[0]:
                p = self.pairs
                thr = p.throughput[live]
                keep = (
                    p.in_allocation[live][:, None] & (thr[:, :, 0] != 0.0) & (thr[:, :, 1] != 0.0)
                )
                x_pairs = np.where(p.in_allocation[live][:, None], p.allocation[live], 0.0)
                priority = np.concatenate(
                    [priority, self._priority(x_pairs, p.time_received[live], keep)]
                )
                x = np.concatenate([x, x_pairs])
                deficit = np.concatenate([deficit, p.deficit[live]])
                position = np.concatenate([position, p.position[live]])
                runnable = np.concatenate([runnable, (thr[:, :, 0] > 0.0) & (thr[:, :, 1] > 0.0)])
                pair_members = p.members[live].tolist()
                members += [(int(a), int(b)) for a, b in pair_members]
                gang_of = dict(zip(active.tolist(), gang.tolist(), strict=True))
                entry_gang += [gang_of[int(a)] for a, _ in pair_members]
        left = counts.astype(np.int64).copy()
        taken: set[int] = set()
        chosen: list[tuple[Entry, int]] = []
        scans = (False, True) if priorities_first else (run_zero_priority,)
        for zero_priority in scans:
            for k in type_order:
                order = np.lexsort((position, -x[:, k], -deficit[:, k], -priority[:, k]))
                ok = runnable[order, k]
                if not zero_priority:
                    ok &= priority[order, k] > 0.0
                for e in order[ok].tolist():
                    if left[k] == 0:
                        break
                    entry = members[e]
                    if any(job in taken for job in entry) or entry_gang[e] > left[k]:
                        continue
                    left[k] -= entry_gang[e]
                    taken.update(entry)
                    chosen.append((entry, k))
        return chosen

    def allocated(self, entry: Entry) -> bool:
        """Whether ``entry`` is part of the allocation in force."""
        if len(entry) == 1:
            return bool(self.in_allocation[entry[0]])
        assert self.pairs is not None
        slot = self.pairs.slot.get(entry)
        return slot is not None and bool(self.pairs.in_allocation[slot])
