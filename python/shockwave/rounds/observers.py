"""What the round loop tells the world outside it: each round's record, and each boundary.

Observers are how the journal of a real run, a progress display and a checkpointer follow a
run without the loop knowing them:

* :meth:`RoundObserver.at_boundary` is called at the start of every round boundary, where the
  loop's state is consistent (a checkpointer saves there);
* :meth:`RoundObserver.round_decided` is called with the :class:`RoundReport` of every round,
  after the round is logged and before the world carries it out (a journal writes it there,
  so that a decision is durable before it acts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from shockwave.rounds.world import Decision
from shockwave.scheduling.state import ClusterState

if TYPE_CHECKING:
    from shockwave.rounds.loop import RoundLoop

IntArray = npt.NDArray[np.int64]

#: Called after every round with (rounds done, jobs finished, jobs in the workload).
ProgressCallback = Callable[[int, int, int], None]


@dataclass(frozen=True)
class RoundReport:
    """One round as the loop decided it.

    Attributes:
        round_index: the round.
        time: its boundary, seconds.
        active: the active jobs (internal indices).
        state: what the policy saw (``None`` when it was not asked: under the original's
            mechanics an allocation is recomputed only now and then).
        fractions: an allocation policy's checked time fractions, aligned with ``state``
            (``None`` for a round policy, or when it was not asked).
        decision: what runs (after the round mechanism, for an allocation policy).
        job_ids: every job's id, by internal index.
    """

    round_index: int
    time: float
    active: IntArray
    state: ClusterState | None
    fractions: npt.NDArray[np.float64] | None
    decision: Decision
    job_ids: IntArray

    @property
    def answer(self) -> npt.NDArray[np.float64] | IntArray | None:
        """The policy's checked answer: its fractions, or the ids of the jobs a round policy
        chose, sorted (``None`` when the policy was not asked)."""
        if self.fractions is not None or self.state is None:
            return self.fractions
        return np.sort(self.job_ids[self.decision.jobs])


class RoundObserver:
    """Follows a round loop (see the module notes); both hooks do nothing by default."""

    def at_boundary(self, loop: RoundLoop) -> None:
        """The loop is at the start of boundary ``loop.round_index`` (its state consistent)."""

    def round_decided(self, loop: RoundLoop, report: RoundReport) -> None:
        """Round ``report.round_index`` is decided and logged, not yet carried out."""


class ProgressObserver(RoundObserver):
    """Calls ``callback(rounds done, jobs finished, jobs in all)`` after every round."""

    def __init__(self, callback: ProgressCallback) -> None:
        self.callback = callback

    def round_decided(self, loop: RoundLoop, report: RoundReport) -> None:
        self.callback(report.round_index + 1, loop.ledger.finished, loop.ledger.n)
