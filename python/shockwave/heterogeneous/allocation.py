"""How a typed policy's ``X[e, k]`` becomes each round's decision: the round loop's allocator on
a typed cluster.

:class:`TypedRounds` holds Gavel's typed round mechanism
(:class:`~shockwave.heterogeneous.mechanism.TypedRoundMechanism`: per-type priorities, deficits,
the greedy scan type by type), the order in which the scan visits the types, and when the
policy is asked. It returns a :class:`~shockwave.rounds.Decision` whose ``types`` say the GPU
type of every gang (and whose ``pairs`` are a packing policy's jobs sharing one gang). Two
cadences, as for homogeneous clusters (:mod:`shockwave.rounds.allocation`):

* ``on-changes`` (the ``gavel`` mechanics, Gavel's ``scheduler.py`` at commit c4fa400): the
  allocation is recomputed only after an arrival, a completion or a failure **and** at least
  ``recompute_interval_seconds`` (Gavel: 1,920 s) after the previous reset, or when the
  previous reset happened at t = 0 (so the first two happen at the first two boundaries), or
  when the trace has no more arrivals and nothing ran (the world then forgets the last reset:
  :meth:`TypedRounds.forget_reset`); entries created since the last reset are dropped after the
  scan (their GPUs idle for the round); FIFO does not run a job of priority 0;
* ``every-round`` (the ``exact`` mechanics): the policy is asked every round with up-to-date
  state; the counters are reset (deficits folded with the share of time each entry was entitled
  to, accrued round by round) at the first round and then at most every
  ``recompute_interval_seconds``; the scan places the entries of positive priority on every
  type first, then any entry that still fits (work conservation).

The types are visited in the cluster's order, or in a new random order every round
(``random.Random(seed + 5)``, Gavel's) for the policies that shuffle it (the heterogeneity-
agnostic ones). A job's speed on each type comes from the world
(:meth:`~shockwave.heterogeneous.typed_world.TypedWorld.throughput_by_type`).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from shockwave.blas_threads import one_blas_thread
from shockwave.heterogeneous.mechanism import Entry, TypedRoundMechanism
from shockwave.heterogeneous.protocol import TypedAllocationPolicy, TypedAllocationState
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.persistence import StateReader
from shockwave.rounds.allocation import AllocationStep, RoundAllocator
from shockwave.rounds.decision import check_typed_allocation
from shockwave.rounds.ledger import JobBooks
from shockwave.rounds.world import Decision
from shockwave.scheduling.protocol import PolicyBase

if TYPE_CHECKING:
    from shockwave.heterogeneous.typed_world import TypedView, TypedWorld
    from shockwave.rounds.loop import RoundLoop

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: When a typed policy is asked (see the module notes).
TypedCadence = Literal["on-changes", "every-round"]


class TypedRounds(RoundAllocator):
    """The typed round mechanism of one run and when it asks the policy (see the module notes).

    Args:
        books: the run's books (their jobs are ``jobs``, in the same order).
        jobs: the typed jobs (gang sizes, co-located throughputs of a packing policy's pairs).
        policy: the run's policy.
        cadence: ``on-changes`` or ``every-round``.
        round_seconds: round length tau, seconds.
        recompute_interval_seconds: least time between two resets of the counters, seconds.
        seed: the run's seed (the type order's generator is ``random.Random(seed + 5)``).
    """

    def __init__(
        self,
        books: JobBooks,
        jobs: TypedJobs,
        policy: TypedAllocationPolicy,
        *,
        cadence: TypedCadence,
        round_seconds: float,
        recompute_interval_seconds: float,
        seed: int,
    ) -> None:
        self.books = books
        self.jobs = jobs
        self.policy = policy
        self.cadence = cadence
        self.recompute_interval_seconds = recompute_interval_seconds
        self.counts = np.asarray(jobs.cluster.counts, dtype=np.int64)
        self.mechanism = TypedRoundMechanism(
            len(jobs),
            jobs.cluster.num_types,
            round_seconds,
            jobs.colocated if policy.packs_jobs else None,
        )
        self.type_rng = random.Random(seed + 5)
        #: Gavel's ``_need_to_update_allocation``: set by an arrival, a completion, a failure
        self.changed = True

    def check_policy(self, policy: PolicyBase) -> None:
        if policy is not self.policy:
            raise ValueError("a typed cluster's allocator serves the policy it was built for")

    def admit(self, jobs: IntArray) -> None:
        if jobs.shape[0] == 0:
            return
        active = self.books.active()
        before = active[~np.isin(active, jobs)]
        self.mechanism.admit(jobs, before, self.books.gang, self.books.job_ids)
        self.changed = True

    def note_change(self) -> None:
        self.changed = True

    def forget_reset(self) -> None:
        """Gavel forgets its last reset when the trace has no more arrivals and nothing ran."""
        self.mechanism.last_reset_time = 0.0

    # --------------------------------------------------------------------------- rounds
    def choose(
        self, loop: RoundLoop, round_index: int, now: float, active: IntArray
    ) -> AllocationStep:
        from shockwave.heterogeneous.typed_world import TypedView

        world = loop.world
        assert isinstance(world, TypedView)
        mechanism = self.mechanism
        fractions = None
        if self.cadence == "every-round":
            if round_index == 0 or (
                now - mechanism.last_reset_time >= self.recompute_interval_seconds
            ):
                mechanism.reset(active, now, accrued=True)
            fractions = self._recompute(world, now, active, round_index)
        elif self.changed and self._reset_due(now):
            mechanism.reset(active, now)
            fractions = self._recompute(world, now, active, round_index)
            self.changed = False
        order = self._type_order()
        throughput = world.throughput_by_type(active)
        chosen = mechanism.select(
            active,
            self.books.gang[active],
            throughput,
            self.counts,
            order,
            run_zero_priority=self.policy.runs_zero_priority_jobs,
            priorities_first=self.cadence == "every-round",
        )
        if self.cadence == "every-round":
            mechanism.accrue(active, world.round_seconds)
        # Entries created since the last reset have no allocation: Gavel reserves their GPUs
        # in the scan, then drops them, and the GPUs stay idle for the round.
        runs = [(entry, k) for entry, k in chosen if mechanism.allocated(entry)]
        return AllocationStep(_decision(runs), None, fractions)

    def empty_boundary(self, world: TypedWorld, now: float) -> None:
        """A boundary at which no job is active (the cluster emptied before a later arrival):
        Gavel still recomputes there when due (over no job) and draws the round's type order."""
        if self.cadence == "on-changes" and self.changed and self._reset_due(now):
            empty = np.zeros(0, dtype=np.int64)
            self.mechanism.reset(empty, now)
            self._recompute(world, now, empty, world.rounds)
            self.changed = False
        self._type_order()

    def _reset_due(self, now: float) -> bool:
        last = self.mechanism.last_reset_time
        return now - last >= self.recompute_interval_seconds or last == 0

    def _type_order(self) -> list[int]:
        order = list(range(self.counts.shape[0]))
        if self.policy.shuffles_type_order:
            self.type_rng.shuffle(order)
        return order

    def _state(
        self, world: TypedView, now: float, active: IntArray, round_index: int
    ) -> TypedAllocationState:
        """What the policy sees of ``active`` at ``now``."""
        mechanism = self.mechanism
        pairs = mechanism.pair_entries()
        row = {int(j): i for i, j in enumerate(active.tolist())}
        jobs = self.jobs
        return TypedAllocationState(
            time=now,
            types=jobs.cluster.types,
            counts=self.counts.copy(),
            job_ids=jobs.job_ids[active],
            throughput=world.throughput_by_type(active),
            gang=jobs.gang[active],
            weight=jobs.weight[active],
            remaining_steps=world.remaining_steps(active),
            time_since_arrival=now - jobs.arrival[active],
            pairs=np.array([[row[a], row[b]] for a, b in pairs], dtype=np.int64).reshape(-1, 2),
            pair_throughput=mechanism.pair_throughput(),
            round_index=round_index,
            round_seconds=world.round_seconds,
            positions=active.copy(),
            total_steps=jobs.total_steps[active],
            epochs_done=world.epochs_done(active),
            profiles=jobs.profiles,
            restart_penalty_seconds=world.restart_penalty_seconds,
            previous_types=world.previous_types(active, round_index),
        )

    def _recompute(
        self, world: TypedView, now: float, active: IntArray, round_index: int
    ) -> FloatArray:
        """Ask the policy (its time booked) and install its checked allocation."""
        mechanism = self.mechanism
        pairs = mechanism.pair_entries()
        state = self._state(world, now, active, round_index)
        policy = self.policy
        started = time.perf_counter()
        with one_blas_thread():
            raw = policy.allocate(state)
        self.books.policy_seconds += time.perf_counter() - started
        rows = active.shape[0] + (len(pairs) if policy.packs_jobs else 0)
        x = check_typed_allocation(policy.name, raw, (rows, self.counts.shape[0]))
        n = active.shape[0]
        mechanism.set_allocation(active, x[:n], x[n:] if policy.packs_jobs else None)
        return x

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism.snapshot(),
            "type_rng": self.type_rng.getstate(),
            "changed": self.changed,
        }

    def restore(self, saved: StateReader) -> None:
        self.mechanism.restore(saved.table("mechanism"))
        rng = saved.raw("type_rng")
        changed = saved.boolean("changed")
        saved.done()
        try:
            self.type_rng.setstate(rng)
        except (TypeError, ValueError) as exc:
            raise saved.error("type_rng", f"not a random generator's state ({exc})") from None
        self.changed = changed


def _decision(runs: list[tuple[Entry, int]]) -> Decision:
    """The decision of the scan's runs, in its order: every job with its type, pairs apart."""
    jobs = [job for entry, _ in runs for job in entry]
    types = [k for entry, k in runs for _ in entry]
    pairs = [entry for entry, _ in runs if len(entry) == 2]
    return Decision(
        np.asarray(jobs, dtype=np.int64),
        np.asarray(types, dtype=np.int64),
        np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
    )


def decision_entries(decision: Decision) -> list[tuple[Entry, int]]:
    """The ``(entry, type)`` runs of a typed decision, in its order (a pair as one entry)."""
    assert decision.types is not None
    partner = {int(a): int(b) for a, b in decision.pairs.tolist()}
    second = set(partner.values())
    runs: list[tuple[Entry, int]] = []
    for job, k in zip(decision.jobs.tolist(), decision.types.tolist(), strict=True):
        if job in second:
            continue
        entry = (job, partner[job]) if job in partner else (job,)
        runs.append((entry, k))
    return runs
