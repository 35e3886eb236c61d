"""The protocol of a cluster world: what the round loop asks of the cluster it schedules.

The round loop (:mod:`shockwave.rounds.loop`) owns the sequence of a round boundary; a
:class:`ClusterWorld` owns what happens between boundaries and when the next one comes. One
implementation per world:

* :class:`~shockwave.sim.exact.ExactProfiles` (``exact`` mechanics): jobs follow their profiles
  exactly on a fixed grid of rounds;
* :class:`~shockwave.sim.gavel.GavelMechanics` (``gavel`` mechanics): the original simulator,
  whose rounds end at their latest finish, with its idle jumps and quirks;
* :class:`~shockwave.sim.plan_view.PlannedView`: exact profiles that the policy sees only as
  plans, as in a real run;
* :class:`~shockwave.runtime.live_cluster.LiveCluster`: real job processes on the wall clock.

The loop calls, per boundary ``k``: :meth:`~ClusterWorld.close_round` (move the clock to the
boundary, book what ran), then after admitting arrivals :meth:`~ClusterWorld.admitted`; when no
job is active, :meth:`~ClusterWorld.idle_until`; then, after the policy's decision,
:meth:`~ClusterWorld.run_round`. A world reads and writes the shared books
(:class:`~shockwave.rounds.ledger.JobLedger`) and, for an allocation policy, records run time
in the round mechanism (:mod:`shockwave.rounds.allocation`).

A world also says, in three class attributes, what its progress counters mean for a policy
(copied into every :class:`~shockwave.scheduling.ClusterState`, see
:mod:`shockwave.scheduling.state`), and the name the record gives it (``mechanics``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader
from shockwave.scheduling.state import BatchSizeChanges, ProgressCounter

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class ProgressColumns(TypedDict):
    """The per-job state columns whose values a world computes (see ClusterState)."""

    epochs_done: IntArray
    epoch_progress: FloatArray
    steps_run: FloatArray
    total_steps: FloatArray
    remaining_steps: FloatArray
    batch_size: IntArray
    throughput: FloatArray
    remaining_seconds: FloatArray


def _no_pairs() -> IntArray:
    return np.zeros((0, 2), dtype=np.int64)


@dataclass(frozen=True)
class Decision:
    """What runs in a round: the gangs of ``jobs`` (internal job indices, in the order the policy
    or the round mechanism chose them; a world places them in its own order).

    On a homogeneous cluster a gang is a number of identical GPUs, and ``types`` is ``None``.
    On a typed cluster (:mod:`shockwave.heterogeneous`) ``types[j]`` is the GPU type (an index
    into the cluster's types) the gang of ``jobs[j]`` runs on: a gang is never split over
    types. ``pairs`` (``(P, 2)``, jobs of ``jobs``) are jobs that share one gang of GPUs (a
    packing policy's pairs, on a typed cluster); each pair's two jobs run on the same type.
    """

    jobs: IntArray
    types: IntArray | None = None
    pairs: IntArray = field(default_factory=_no_pairs)

    def gpus_used(self, gang: IntArray) -> int:
        """GPUs the round's gangs hold (``gang``: every job's gang size; a pair holds one)."""
        used = int(gang[self.jobs].sum())
        if self.pairs.shape[0]:
            used -= int(gang[self.pairs[:, 1]].sum())
        return used


class ClusterWorld(ABC):
    """A cluster the round loop runs (see the module notes)."""

    #: what the progress counters count (:attr:`ClusterState.progress_counter`)
    progress_counter: ClassVar[ProgressCounter] = "profile"
    #: how jobs change batch size (:attr:`ClusterState.batch_size_changes`)
    batch_size_changes: ClassVar[BatchSizeChanges] = "profile"
    #: whether policies keep the original's quirks (:attr:`ClusterState.original_quirks`)
    original_quirks: ClassVar[bool] = False
    #: the world's name in the record (``SimulationRecord.mechanics``)
    mechanics: ClassVar[str]

    @abstractmethod
    def close_round(self, round_index: int) -> float:
        """Move the clock to boundary ``round_index`` and book what ran since the previous one
        (run time, throughput samples, completions); return the boundary's time, seconds."""

    def admitted(self, jobs: IntArray) -> None:  # noqa: B027 - most worlds need nothing
        """Jobs (internal indices) the loop has just admitted."""

    @abstractmethod
    def idle_until(self, arrival: float, round_index: int) -> float:
        """No job is active and the next one arrives at ``arrival``: move the clock to the
        first boundary at which it can be admitted (the same round index); return its time."""

    @abstractmethod
    def progress_columns(self, active: IntArray) -> ProgressColumns:
        """The world's state columns of ``active`` (see :class:`ClusterState`)."""

    def throughput(self, active: IntArray) -> FloatArray:
        """Isolated throughput of ``active`` at their current batch sizes (the round
        mechanism's eligibility test when the policy is not asked)."""
        return self.progress_columns(active)["throughput"]

    @abstractmethod
    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        """Carry out round ``round_index``'s decision, starting at ``now``."""

    @abstractmethod
    def makespan(self) -> float:
        """The clock when the last job finished (or now, for a run that stopped early)."""

    def gpu_busy_seconds(self) -> FloatArray | None:
        """Per-GPU useful execution time, where the world places jobs on GPUs."""
        return None

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """The world's state at a boundary, as data (:mod:`shockwave.persistence`)."""

    @abstractmethod
    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot`, every field checked.

        Raises:
            shockwave.persistence.StateFormatError: naming the field that does not fit.
        """
