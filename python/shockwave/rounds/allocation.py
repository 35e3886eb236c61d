"""How an allocation policy's time fractions become a round's gangs: two cadences.

An :class:`~shockwave.scheduling.AllocationPolicy` returns fractions; the round mechanism
(:class:`~shockwave.rounds.mechanism.RoundMechanism`: priorities, deficits, greedy packing)
turns them into the gangs of each round. When the policy is asked and when the mechanism's
counters are reset is a property of the world:

* :class:`EveryRound` (exact profiles, the planned view, real runs): the policy is asked every
  round; the counters are reset (deficits folded, with the entitlement accrued round by round)
  at the first round and then at most every ``recompute_interval_seconds``, as Gavel's own
  scheduler does; every job that fits may run (work conservation).
* :class:`OnChanges` (the original simulator's mechanics): the allocation is recomputed only
  after an arrival, a completion or a failure **and** at least ``recompute_interval_seconds``
  after the previous recompute (the first two recomputes fall at t = 0 and at the first
  boundary); jobs admitted since the last recompute have no allocation and are dropped after
  the mechanism's scan (their GPUs stay idle); a job of priority 0 runs only if the policy
  allows it.

Both return the chosen jobs (internal indices) in the mechanism's selection order.

Both are :class:`RoundAllocator` s: what the round loop asks of whatever turns an allocation
policy's answer into a round's :class:`~shockwave.rounds.world.Decision`. A typed cluster's
policies (``X[i, k]``, a share of time on each GPU type) have theirs in
:mod:`shockwave.heterogeneous.allocation`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader
from shockwave.rounds.mechanism import RoundMechanism
from shockwave.rounds.world import Decision
from shockwave.scheduling.protocol import AllocationPolicy, PolicyBase, RoundPolicy
from shockwave.scheduling.state import ClusterState

if TYPE_CHECKING:
    from shockwave.rounds.loop import RoundLoop

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class AllocationStep:
    """One boundary's use of an allocator: the round's decision and, when the policy was
    asked, the state it saw (``None`` for a typed policy, whose state is its own) and its
    checked answer (a homogeneous policy's fractions, a typed policy's ``X[e, k]``)."""

    decision: Decision
    state: ClusterState | None
    fractions: FloatArray | None


class RoundAllocator(ABC):
    """Turns an allocation policy's answer into each round's decision, and says when the policy
    is asked (see the module notes); the round loop holds one for an allocation policy."""

    @abstractmethod
    def check_policy(self, policy: PolicyBase) -> None:
        """Refuse a policy of another kind.

        Raises:
            ValueError: naming what the allocator needs.
        """

    @abstractmethod
    def admit(self, jobs: IntArray) -> None:
        """Start the counters of the jobs (internal indices) the loop has just admitted."""

    @abstractmethod
    def choose(
        self, loop: RoundLoop, round_index: int, now: float, active: IntArray
    ) -> AllocationStep:
        """The decision of round ``round_index`` among ``active``; the policy is asked through
        ``loop`` (its state, its answer checked, its time booked)."""

    def note_change(self) -> None:  # noqa: B027 - only the on-changes cadences listen
        """The set of jobs changed (an arrival, a completion or a failure)."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """The allocator's state, as data."""

    @abstractmethod
    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot`, every field checked."""


class AllocationRounds(RoundAllocator):
    """Gavel's round mechanism over a homogeneous cluster's fractions, and its cadence (see the
    module notes).

    Args:
        jobs: jobs in the workload.
        round_seconds: round length tau, seconds.
        gpus: GPUs in the cluster.
        recompute_interval_seconds: see the module notes.
    """

    def __init__(
        self, jobs: int, round_seconds: float, gpus: int, recompute_interval_seconds: float
    ) -> None:
        self.mechanism = RoundMechanism(jobs, round_seconds)
        self.round_seconds = round_seconds
        self.gpus = gpus
        self.recompute_interval_seconds = recompute_interval_seconds

    def check_policy(self, policy: PolicyBase) -> None:
        if isinstance(policy, RoundPolicy):
            raise ValueError("an allocation policy needs a round mechanism, a round policy none")
        if not isinstance(policy, AllocationPolicy):
            raise TypeError(
                f"policy must be an AllocationPolicy or a RoundPolicy, got {type(policy).__name__}"
            )

    def admit(self, jobs: IntArray) -> None:
        self.mechanism.admit(jobs)

    def choose(
        self, loop: RoundLoop, round_index: int, now: float, active: IntArray
    ) -> AllocationStep:
        policy = loop.policy
        assert isinstance(policy, AllocationPolicy)
        chosen, state, fractions = self.select(
            policy,
            round_index,
            now,
            active,
            loop.ledger.gang[active],
            lambda: loop.state(now, round_index, active),
            loop.ask_fractions,
            lambda: loop.world.throughput(active),
        )
        return AllocationStep(Decision(chosen), state, fractions)

    @abstractmethod
    def select(
        self,
        policy: AllocationPolicy,
        round_index: int,
        now: float,
        active: IntArray,
        gang: IntArray,
        state: Callable[[], ClusterState],
        ask: Callable[[ClusterState], FloatArray],
        throughput: Callable[[], FloatArray],
    ) -> tuple[IntArray, ClusterState | None, FloatArray | None]:
        """The gangs of round ``round_index`` among ``active`` (``gang`` aligned with it), the
        state the policy saw and its fractions (``None`` when it was not asked).

        ``state()`` builds the policy's state, ``ask(state)`` asks the policy (checked
        fractions), ``throughput()`` gives ``active``'s isolated throughputs without a state.
        """

    def snapshot(self) -> dict[str, Any]:
        """The mechanism's state (and the cadence's), as data."""
        return {"mechanism": self.mechanism.snapshot()}

    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot`, every field checked."""
        self.mechanism.restore(saved.table("mechanism"))
        saved.done()


class EveryRound(AllocationRounds):
    """The policy is asked every round (see the module notes)."""

    def select(
        self,
        policy: AllocationPolicy,
        round_index: int,
        now: float,
        active: IntArray,
        gang: IntArray,
        state: Callable[[], ClusterState],
        ask: Callable[[ClusterState], FloatArray],
        throughput: Callable[[], FloatArray],
    ) -> tuple[IntArray, ClusterState | None, FloatArray | None]:
        mechanism = self.mechanism
        seen = state()
        first = round_index == 0
        if first or now - mechanism.last_reset_time >= self.recompute_interval_seconds:
            mechanism.reset_counters(active, now, accrued=True)
        fractions = ask(seen)
        mechanism.set_allocation(active, fractions)
        chosen = mechanism.select(
            active, gang, np.asarray(seen.throughput), self.gpus, run_zero_priority=True
        )
        mechanism.accrue(active, self.round_seconds)
        return chosen, seen, fractions


class OnChanges(AllocationRounds):
    """The allocation is recomputed after changes, at most every interval (see the module
    notes)."""

    def __init__(
        self, jobs: int, round_seconds: float, gpus: int, recompute_interval_seconds: float
    ) -> None:
        super().__init__(jobs, round_seconds, gpus, recompute_interval_seconds)
        #: the original's ``_need_to_update_allocation`` (set by worker registration at start)
        self.changed = True

    def note_change(self) -> None:
        self.changed = True

    def select(
        self,
        policy: AllocationPolicy,
        round_index: int,
        now: float,
        active: IntArray,
        gang: IntArray,
        state: Callable[[], ClusterState],
        ask: Callable[[ClusterState], FloatArray],
        throughput: Callable[[], FloatArray],
    ) -> tuple[IntArray, ClusterState | None, FloatArray | None]:
        mechanism = self.mechanism
        seen = fractions = None
        since = now - mechanism.last_reset_time
        interval_elapsed = since >= self.recompute_interval_seconds
        if self.changed and (interval_elapsed or mechanism.last_reset_time == 0):
            mechanism.reset_counters(active, now, accrued=False)
            seen = state()
            fractions = ask(seen)
            mechanism.set_allocation(active, fractions)
            self.changed = False
        selected = mechanism.select(
            active,
            gang,
            throughput(),
            self.gpus,
            run_zero_priority=policy.runs_zero_priority_jobs,
        )
        # Jobs admitted since the last recompute have no allocation: the original reserves their
        # GPUs in the scan, then drops them, and the GPUs stay idle for the round.
        return selected[mechanism.in_allocation[selected]], seen, fractions

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "changed": self.changed}

    def restore(self, saved: StateReader) -> None:
        self.changed = saved.boolean("changed")
        super().restore(saved)
