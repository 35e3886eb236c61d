"""The policy protocol: what a scheduling policy is given and what it returns.

There are two kinds of policy. Both receive a :class:`~shockwave.scheduling.ClusterState` (the
cluster at a round boundary: struct-of-arrays over the active jobs).

* An :class:`AllocationPolicy` (Gavel style) returns a time fraction ``x_i`` in ``[0, 1]`` per
  active job: the share of time job ``i`` should hold its gang, normally with
  ``sum_i gang_size_i * x_i <= gpus``. The round loop's round mechanism (priorities
  ``x_i / time received``, deficits, greedy gang packing) turns the fractions into rounds. Under
  ``gavel`` mechanics the allocation is recomputed as the original does (at most every 1,000 s,
  only after arrivals or completions); under ``exact`` mechanics and in real runs, every round.
* A :class:`RoundPolicy` returns the ``job_id`` of every job to run in the coming round, directly.
  It is asked every round. The chosen gangs must fit in the cluster.

Policies may keep state between calls (AlloX's sticky allocations, Themis' cumulative isolated
time); the round loop calls :meth:`~PolicyBase.reset` before a run, so an instance can be
reused. A checkpoint (a simulation's ``--checkpoint``, a real run's journal) saves that state as
data through :meth:`~PolicyBase.snapshot` and :meth:`~PolicyBase.restore`; the defaults save
every instance attribute, which must then be data (numbers, strings, lists, tuples, sets,
dicts, numpy arrays). A policy holding anything else (a solver object, a Rust model) defines
both methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from shockwave import persistence
from shockwave.scheduling.state import ClusterState


class PolicyBase(ABC):  # noqa: B024 - the two kinds of policy add the abstract method
    """What both kinds of policy share: a name, :meth:`reset`, and their state as data."""

    name: ClassVar[str] = "policy"

    def reset(self) -> None:  # noqa: B027 - optional hook, stateless policies need nothing
        """Forget any state kept from a previous run."""

    def snapshot(self) -> dict[str, Any]:
        """The state this policy keeps between calls, as data (see :mod:`shockwave.persistence`).

        The default returns every instance attribute.

        Raises:
            TypeError: naming an attribute that is not data (define :meth:`snapshot` and
                :meth:`restore` then).
        """
        out = dict(vars(self))
        for key, value in out.items():
            try:
                persistence.encode(value)
            except TypeError as exc:
                raise TypeError(
                    f"policy {self.name!r}: attribute {key!r} cannot be saved in a checkpoint "
                    f"({exc}); define snapshot() and restore() for this policy"
                ) from None
        return out

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take back the state of :meth:`snapshot` (called on a freshly :meth:`reset` policy).

        The default sets every attribute back, each checked to be of the type it has now.

        Raises:
            persistence.StateFormatError: naming the attribute that does not fit.
        """
        current = vars(self)
        where = f"policy {self.name!r}"
        if set(state) != set(current):
            raise persistence.StateFormatError(
                f"{where}: the saved attributes {sorted(state)} are not {sorted(current)}"
            )
        for key, value in state.items():
            now = current[key]
            if type(value) is not type(now):
                raise persistence.StateFormatError(
                    f"{where}.{key}: expected a {type(now).__name__}, got {type(value).__name__}"
                )
            if isinstance(now, np.ndarray):
                reader = persistence.StateReader({key: value}, where)
                reader.array(key, now.dtype, (None,) * now.ndim)
        for key, value in state.items():
            object.__setattr__(self, key, value)


class AllocationPolicy(PolicyBase):
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


class RoundPolicy(PolicyBase):
    """A policy that picks the jobs of each round itself (e.g. the Shockwave planner)."""

    name: ClassVar[str] = "round-policy"

    @abstractmethod
    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        """The ``job_id`` of each job to run in the coming round (each at most once)."""


#: Either kind of policy.
Policy = AllocationPolicy | RoundPolicy
