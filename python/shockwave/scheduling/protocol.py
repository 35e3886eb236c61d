"""The policy protocol: what a scheduling policy is given and what it returns.

There are two kinds of policy. Both receive a :class:`~shockwave.scheduling.ClusterState` (the
cluster at a round boundary: struct-of-arrays over the active jobs).

* An :class:`AllocationPolicy` (Gavel style) returns a time fraction ``x_i`` in ``[0, 1]`` per
  active job: the share of time job ``i`` should hold its gang, normally with
  ``sum_i gang_size_i * x_i <= gpus``. The simulator's round mechanism (priorities
  ``x_i / time received``, deficits, greedy gang packing) turns the fractions into rounds. Under
  ``gavel`` mechanics the allocation is recomputed as the original does (at most every 1,000 s,
  only after arrivals or completions); under ``exact`` mechanics, every round.
* A :class:`RoundPolicy` returns the ``job_id`` of every job to run in the coming round, directly.
  It is asked every round. The chosen gangs must fit in the cluster.

Policies may keep state between calls (AlloX's sticky allocations, Themis' cumulative isolated
time); the simulator calls :meth:`reset` before a simulation, so an instance can be reused.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from shockwave.scheduling.state import ClusterState


class AllocationPolicy(ABC):
    """A Gavel-style policy: per-job time fractions, turned into rounds by the mechanism.

    Class attributes:
        name: the policy's name on the command line.
        runs_zero_priority_jobs: whether the ``gavel`` mechanics may run a job whose priority is
            0 when GPUs are left (the original refuses for FIFO only). The ``exact`` mechanics
            always do (no idle GPU while a runnable job fits).
    """

    name: ClassVar[str] = "allocation-policy"
    runs_zero_priority_jobs: ClassVar[bool] = True

    @abstractmethod
    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        """Time fractions in ``[0, 1]``, one per active job, aligned with ``state``'s arrays."""

    def reset(self) -> None:  # noqa: B027 - optional hook, stateless policies need nothing
        """Forget any state kept from a previous simulation."""


class RoundPolicy(ABC):
    """A policy that picks the jobs of each round itself (e.g. the Shockwave planner)."""

    name: ClassVar[str] = "round-policy"

    @abstractmethod
    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        """The ``job_id`` of each job to run in the coming round (each at most once)."""

    def reset(self) -> None:  # noqa: B027 - optional hook, stateless policies need nothing
        """Forget any state kept from a previous simulation."""


#: Either kind of policy.
Policy = AllocationPolicy | RoundPolicy
