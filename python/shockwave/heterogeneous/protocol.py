"""What a heterogeneity-aware allocation policy sees and returns.

A :class:`TypedAllocationPolicy` returns ``X[i, k]``: the share of time job ``i`` should run on
GPUs of type ``k`` (rows sum to at most 1; ``sum_i gang_i X[i, k] <= N_k`` normally). The round
mechanism (:mod:`shockwave.heterogeneous.mechanism`) turns it into rounds. Policies are asked
only when Gavel's simulator recomputes its allocation (after an arrival, a completion or a
failure, and at least ``recompute_interval_seconds`` after the previous one).
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateFormatError
from shockwave.scheduling.protocol import PolicyBase

if TYPE_CHECKING:
    from shockwave.heterogeneous.typed_profiles import TypedProfiles

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TypedAllocationState:
    """A snapshot at a recompute, over the active jobs in admission order.

    Attributes:
        time: the clock, seconds.
        types: GPU type names (columns of ``throughput``), in the cluster's order.
        counts: GPUs of each type.
        job_ids: the jobs' identifiers.
        throughput: ``T[i, k]``, iterations/s of job ``i`` on its gang of type ``k`` (0: cannot
            run there).
        gang: GPUs each job needs.
        weight: priority weights.
        remaining_steps: iterations left.
        time_since_arrival: seconds since each job arrived.
        pairs: for a packing policy, the pairs of jobs that may share GPUs (rows of the
            arrays above, ``(P, 2)``, the lower job id first); empty otherwise.
        pair_throughput: ``(P, K, 2)``: iterations/s of each job of a pair sharing ``gang``
            GPUs of type ``k`` (0: they cannot share that type).
        round_index: the round about to start (counted from the first; at an empty boundary of
            Gavel's mechanics, the rounds held so far).
        round_seconds: round length tau, seconds.
        positions: each job's row in the run's jobs (stable while it is active).
        total_steps: iterations of each job's whole run.
        epochs_done: for jobs that follow their epoch profiles, the epochs done plus the
            fraction of the one in progress (``None``: static jobs, or a real run).
        profiles: those jobs' profiles on every type, rows by ``positions`` (``None`` as
            above).
        restart_penalty_seconds: what a job loses in a round in which it starts, restarts or
            moves to another type (0 under Gavel's mechanics).
        previous_types: the type each job ran on in the previous round (-1: it did not run).
    """

    time: float
    types: tuple[str, ...]
    counts: IntArray
    job_ids: IntArray
    throughput: FloatArray
    gang: IntArray
    weight: FloatArray
    remaining_steps: IntArray
    time_since_arrival: FloatArray
    pairs: IntArray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    pair_throughput: FloatArray = field(default_factory=lambda: np.zeros((0, 0, 2)))
    round_index: int = 0
    round_seconds: float = 0.0
    positions: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    total_steps: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    epochs_done: FloatArray | None = None
    profiles: TypedProfiles | None = None
    restart_penalty_seconds: float = 0.0
    previous_types: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def num_active(self) -> int:
        return int(self.job_ids.shape[0])


class TypedAllocationPolicy(PolicyBase):
    """A heterogeneity-aware (or deliberately agnostic) allocation policy.

    Class attributes:
        name: the policy's name (``gavel``, ``fifo-agnostic``, ...).
        gavel_name: Gavel's name for it (``max_min_fairness_perf``, ...).
        runs_zero_priority_jobs: whether the scan may run a job whose priority on a type is 0
            (Gavel: every policy but FIFO).
        shuffles_type_order: whether the mechanism visits the types in a new random order every
            round (Gavel does so for its policies without ``Perf`` or ``Packing`` in their names).
        packs_jobs: whether the policy allocates time to pairs of jobs sharing GPUs too (Gavel's
            packing policies): its allocation then has one row per job of the state and one
            per pair of ``state.pairs``, in that order.
    """

    name: str = "typed-policy"  # type: ignore[misc]  # set per instance (aware or agnostic)
    gavel_name: str = ""
    runs_zero_priority_jobs: bool = True
    shuffles_type_order: bool = False
    packs_jobs: bool = False

    def snapshot(self) -> dict[str, Any]:
        """Every instance attribute, as data; a random generator as its state (the round loop
        saves it in a :class:`~shockwave.rounds.RoundSnapshot`)."""
        plain = {
            key: (value.getstate() if isinstance(value, random.Random) else value)
            for key, value in vars(self).items()
        }
        saved = dict(vars(self))
        try:
            vars(self).update(plain)
            return super().snapshot()
        finally:
            vars(self).update(saved)

    def restore(self, state: Mapping[str, Any]) -> None:
        generators = {k: v for k, v in vars(self).items() if isinstance(v, random.Random)}
        plain = {key: value.getstate() for key, value in generators.items()}
        vars(self).update(plain)
        try:
            super().restore(state)
            for key, generator in generators.items():
                try:
                    generator.setstate(vars(self)[key])
                except (TypeError, ValueError) as exc:
                    raise StateFormatError(
                        f"policy {self.name!r}.{key}: not a random generator's state ({exc})"
                    ) from None
        finally:
            vars(self).update(generators)

    def check_jobs(self, job_ids: list[int], gang: list[int]) -> None:
        """Raise ``ValueError`` naming a job the policy cannot schedule (called before a run)."""
        return None

    @abstractmethod
    def allocate(self, state: TypedAllocationState) -> FloatArray:
        """``X`` of shape ``(state.num_active, len(state.types))`` in ``[0, 1]`` (a packing
        policy: ``(state.num_active + len(state.pairs), len(state.types))``)."""
