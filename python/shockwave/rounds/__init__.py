"""The round loop: one sequence of round boundaries under every simulation and real run.

* :mod:`~shockwave.rounds.loop`: :class:`RoundLoop`, the sequence of a boundary (admissions,
  the policy call and the check of its answer, the round's record, the observers);
* :mod:`~shockwave.rounds.world`: :class:`ClusterWorld`, the protocol of the cluster the loop
  runs (the exact profiles, the original simulator's mechanics, the planned view and the live
  cluster of a real run implement it), and the round's :class:`Decision`;
* :mod:`~shockwave.rounds.ledger`: :class:`JobLedger`, the per-job and per-round books;
* :mod:`~shockwave.rounds.allocation`: how an allocation policy's fractions become rounds
  (:class:`EveryRound`, :class:`OnChanges`) through Gavel's round mechanism
  (:mod:`~shockwave.rounds.mechanism`);
* :mod:`~shockwave.rounds.decision`: the checks of a policy's answer;
* :mod:`~shockwave.rounds.observers`: :class:`RoundReport` and :class:`RoundObserver` (the
  journal, the progress display, the checkpointer);
* :mod:`~shockwave.rounds.snapshot`: :class:`RoundSnapshot`, the loop's state as data, the one
  snapshot that simulation checkpoints and real runs' journals hold.

``docs/architecture.md`` shows where the loop sits between a trace and a result.
"""

from __future__ import annotations

from shockwave.rounds.allocation import AllocationRounds, EveryRound, OnChanges
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.loop import RoundLoop, check_policy
from shockwave.rounds.observers import (
    ProgressCallback,
    ProgressObserver,
    RoundObserver,
    RoundReport,
)
from shockwave.rounds.snapshot import RoundSnapshot
from shockwave.rounds.world import ClusterWorld, Decision, ProgressColumns

__all__ = [
    "AllocationRounds",
    "ClusterWorld",
    "Decision",
    "EveryRound",
    "JobLedger",
    "OnChanges",
    "ProgressCallback",
    "ProgressColumns",
    "ProgressObserver",
    "RoundLoop",
    "RoundObserver",
    "RoundReport",
    "RoundSnapshot",
    "check_policy",
]
