"""The one snapshot type: a round loop's whole state at a round boundary, as data.

A simulation checkpoint (:mod:`shockwave.sim.checkpoint`) and a real run's journal
(:mod:`shockwave.runtime.journal`) both hold a :class:`RoundSnapshot`, and both resume the same
way: a round loop built afresh over the same workload, policy and settings takes the snapshot
back (:meth:`shockwave.rounds.loop.RoundLoop.restore`), every part checked against its schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shockwave.persistence import StateReader

#: Version of the snapshot's layout (its parts' schemas).
SNAPSHOT_VERSION = 1


@dataclass(frozen=True)
class RoundSnapshot:
    """A round loop at a boundary.

    Attributes:
        round_index: the next boundary the loop processes.
        ledger: the books (:meth:`shockwave.rounds.ledger.JobLedger.snapshot`).
        allocation: the round mechanism and its cadence (``None`` for a round policy).
        world: the cluster world's own state (:meth:`ClusterWorld.snapshot`).
        policy: the policy's state (:meth:`shockwave.scheduling.PolicyBase.snapshot`).
    """

    round_index: int
    ledger: dict[str, Any]
    allocation: dict[str, Any] | None
    world: dict[str, Any]
    policy: dict[str, Any]

    def to_data(self) -> dict[str, Any]:
        """As a data tree (:mod:`shockwave.persistence`)."""
        return {
            "version": SNAPSHOT_VERSION,
            "round_index": self.round_index,
            "ledger": self.ledger,
            "allocation": self.allocation,
            "world": self.world,
            "policy": self.policy,
        }

    @classmethod
    def from_data(cls, tree: Any, where: str) -> RoundSnapshot:
        """The snapshot of :meth:`to_data`'s tree; its parts are checked when restored.

        Raises:
            shockwave.persistence.StateFormatError: naming ``where`` and the field.
        """
        saved = StateReader(tree, where)
        version = saved.integer("version")
        if version != SNAPSHOT_VERSION:
            raise saved.error("version", f"{version}; this shockwave reads {SNAPSHOT_VERSION}")
        allocation = saved.raw("allocation")
        snapshot = cls(
            round_index=saved.integer("round_index", 0),
            ledger=saved.table("ledger").tree,
            allocation=None if allocation is None else saved.table("allocation").tree,
            world=saved.table("world").tree,
            policy=saved.table("policy").tree,
        )
        saved.done()
        return snapshot
