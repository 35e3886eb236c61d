"""The round loop: the one sequence of round boundaries under every simulation and real run.

At every boundary ``k`` the loop:

1. tells its observers (:meth:`~shockwave.rounds.observers.RoundObserver.at_boundary`: a
   checkpointer may save here), stops if asked to stop at ``k``, and stops with
   :class:`~shockwave.scheduling.SimulationStalledError` past its round limit;
2. asks the world to close the previous round (:meth:`ClusterWorld.close_round`: the clock moves
   to the boundary, what ran is booked, completions included);
3. admits the jobs that arrived by then (:class:`~shockwave.rounds.ledger.JobLedger`); when no
   job is active, the world moves the clock to the next arrival's boundary
   (:meth:`ClusterWorld.idle_until`), or the run ends when no job is left to arrive;
4. asks the policy and checks its answer (:mod:`shockwave.rounds.decision`): a round policy's
   jobs directly; an allocation policy's answer through the loop's allocator
   (:class:`~shockwave.rounds.allocation.RoundAllocator`: the round mechanism of a homogeneous
   cluster's fractions, :mod:`shockwave.rounds.allocation`, or of a typed cluster's shares per
   GPU type, :mod:`shockwave.heterogeneous.allocation`, whose decision says each gang's type);
5. logs the round, tells the observers (:meth:`RoundObserver.round_decided`: a journal writes
   the round here, before it acts), and has the world carry the decision out
   (:meth:`ClusterWorld.run_round`).

The loop's whole state lives in the ledger, the mechanism, the world and the policy; each
saves itself as data, so :meth:`RoundLoop.snapshot` at a boundary and
:meth:`RoundLoop.restore` into a fresh loop continue the run bit for bit
(:mod:`shockwave.rounds.snapshot`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from shockwave.blas_threads import one_blas_thread
from shockwave.persistence import StateFormatError, StateReader
from shockwave.rounds.allocation import RoundAllocator
from shockwave.rounds.decision import check_fractions, check_round
from shockwave.rounds.ledger import JobBooks, JobLedger
from shockwave.rounds.observers import RoundObserver, RoundReport
from shockwave.rounds.snapshot import RoundSnapshot
from shockwave.rounds.world import ClusterWorld, Decision
from shockwave.scheduling.errors import SimulationStalledError
from shockwave.scheduling.protocol import AllocationPolicy, Policy, PolicyBase, RoundPolicy
from shockwave.scheduling.state import ClusterState

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def check_policy(policy: object) -> Policy:
    """``policy`` if it is an allocation or a round policy.

    Raises:
        TypeError: naming what it is instead.
    """
    if not isinstance(policy, (AllocationPolicy, RoundPolicy)):
        raise TypeError(
            f"policy must be an AllocationPolicy or a RoundPolicy, got {type(policy).__name__}"
        )
    return policy


class RoundLoop:
    """The loop over round boundaries (see the module notes).

    Args:
        ledger: the books of the run's jobs (a :class:`JobLedger` over a workload, or the
            books of a typed cluster's jobs).
        world: the cluster.
        policy: the policy (an allocation policy needs ``allocation``, a round policy none).
        round_seconds: round length tau, seconds.
        allocation: the round mechanism and its cadence, for an allocation policy (a
            homogeneous one's :class:`~shockwave.rounds.allocation.AllocationRounds`, a typed
            one's :class:`~shockwave.heterogeneous.allocation.TypedRounds`).
        max_rounds: stop with :class:`SimulationStalledError` after this many boundaries
            (``None``: a bound derived from the workload).
        observers: follow the run (journal, display, checkpoints).
    """

    def __init__(
        self,
        ledger: JobBooks,
        world: ClusterWorld,
        policy: PolicyBase,
        *,
        round_seconds: float,
        allocation: RoundAllocator | None,
        max_rounds: int | None = None,
        observers: Iterable[RoundObserver] = (),
    ) -> None:
        if allocation is None:
            if not isinstance(check_policy(policy), RoundPolicy):
                raise ValueError(
                    "an allocation policy needs a round mechanism, a round policy none"
                )
        else:
            allocation.check_policy(policy)
        self.ledger = ledger
        self.world = world
        self.policy = policy
        self.allocation = allocation
        self.round_seconds = float(round_seconds)
        self.max_rounds = max_rounds or ledger.default_max_rounds(self.round_seconds)
        self.observers = list(observers)
        #: the next round boundary the loop processes
        self.round_index = 0

    # ---------------------------------------------------------------------------- loop
    def run(self, until_round: int | None = None) -> bool:
        """Run until every job has completed (``True``), or until boundary ``until_round``
        (``False``; ``run`` can then be called again, or the loop saved and restored first)."""
        ledger, world = self.ledger, self.world
        while ledger.finished < ledger.n:
            k = self.round_index
            for observer in self.observers:
                observer.at_boundary(self)
            if until_round is not None and k >= until_round:
                return False
            self._check_round_limit(k)
            now = world.close_round(k)
            self._admit(now, k)
            active = ledger.active()
            if active.shape[0] == 0:
                upcoming = ledger.pending_arrival_time()
                if upcoming is None:
                    break
                now = world.idle_until(upcoming, k)
                self._admit(now, k)
                active = ledger.active()
                if active.shape[0] == 0:
                    continue
            report = self._decide(now, k, active)
            decision = report.decision
            ledger.record_round(k, now, active, decision.jobs, decision.gpus_used(ledger.gang))
            for observer in self.observers:
                observer.round_decided(self, report)
            world.run_round(k, now, report.decision)
            self.round_index = k + 1
            del report  # the state it holds is not kept while the next one is built
        return True

    def _check_round_limit(self, round_index: int) -> None:
        if round_index >= self.max_rounds:
            raise SimulationStalledError(
                f"the simulation has not finished after {round_index} rounds "
                f"({self.ledger.finished} of {self.ledger.n} jobs done); the policy may be "
                "starving jobs (raise SimulationConfig.max_rounds if this is expected)"
            )

    def _admit(self, now: float, round_index: int) -> None:
        new = self.ledger.admit_until(now, round_index)
        if self.allocation is not None:
            self.allocation.admit(new)
        self.world.admitted(new)

    # ------------------------------------------------------------------------ decisions
    def _decide(self, now: float, k: int, active: IntArray) -> RoundReport:
        ledger = self.ledger
        if self.allocation is None:
            state = self.state(now, k, active)
            chosen = self._ask_round(state, active)
            return RoundReport(k, now, active, state, None, Decision(chosen), ledger.job_ids)
        step = self.allocation.choose(self, k, now, active)
        return RoundReport(
            k, now, active, step.state, step.fractions, step.decision, ledger.job_ids
        )

    def state(self, now: float, round_index: int, active: IntArray) -> ClusterState:
        """What the policy sees at boundary ``round_index`` (consumes the arrival and
        completion events since the last state)."""
        world, ledger = self.world, self.ledger
        assert isinstance(ledger, JobLedger), "a ClusterState needs the books of a workload"
        return ledger.state(
            now,
            round_index,
            active,
            world.progress_columns(active),
            round_seconds=self.round_seconds,
            progress_counter=world.progress_counter,
            batch_size_changes=world.batch_size_changes,
            original_quirks=world.original_quirks,
        )

    def ask_fractions(self, state: ClusterState) -> FloatArray:
        """The allocation policy's fractions for ``state``, checked (its time booked)."""
        policy = self.policy
        assert isinstance(policy, AllocationPolicy)
        started = time.perf_counter()
        with one_blas_thread():
            raw = policy.allocate(state)
        self.ledger.policy_seconds += time.perf_counter() - started
        return check_fractions(policy.name, raw, state)

    def _ask_round(self, state: ClusterState, active: IntArray) -> IntArray:
        policy = self.policy
        assert isinstance(policy, RoundPolicy)
        started = time.perf_counter()
        with one_blas_thread():
            raw = policy.schedule(state)
        self.ledger.policy_seconds += time.perf_counter() - started
        return check_round(policy.name, raw, state, active, self.ledger.gang, self.ledger.gpus)

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> RoundSnapshot:
        """The loop's whole state (take it at a boundary: from
        :meth:`RoundObserver.at_boundary`, or after a round is decided for a world that
        discards the round in flight on resume, as a real run does)."""
        return RoundSnapshot(
            round_index=self.round_index,
            ledger=self.ledger.snapshot(),
            allocation=None if self.allocation is None else self.allocation.snapshot(),
            world=self.world.snapshot(),
            policy=self.policy.snapshot(),
        )

    def restore(self, snapshot: RoundSnapshot, where: str) -> None:
        """Continue from ``snapshot`` (of a loop over the same workload, policy and settings).

        Raises:
            shockwave.persistence.StateFormatError: naming ``where`` and the field that does
                not fit.
        """
        if (snapshot.allocation is None) != (self.allocation is None):
            raise StateFormatError(f"{where}: saved for another kind of policy")
        self.ledger.restore(StateReader(snapshot.ledger, f"{where}.ledger"))
        if self.allocation is not None:
            self.allocation.restore(StateReader(snapshot.allocation, f"{where}.allocation"))
        self.world.restore(StateReader(snapshot.world, f"{where}.world"))
        self.policy.reset()
        try:
            self.policy.restore(snapshot.policy)
        except StateFormatError as exc:
            raise StateFormatError(f"{where}: {exc}") from None
        self.round_index = snapshot.round_index
