"""What a heterogeneity-aware allocation policy sees and returns.

A :class:`TypedAllocationPolicy` returns ``X[i, k]``: the share of time job ``i`` should run on
GPUs of type ``k`` (rows sum to at most 1; ``sum_i gang_i X[i, k] <= N_k`` normally). The round
mechanism (:mod:`shockwave.heterogeneous.mechanism`) turns it into rounds. Policies are asked
only when Gavel's simulator recomputes its allocation (after an arrival, a completion or a
failure, and at least ``recompute_interval_seconds`` after the previous one).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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

    @property
    def num_active(self) -> int:
        return int(self.job_ids.shape[0])


class TypedAllocationPolicy(ABC):
    """A heterogeneity-aware (or deliberately agnostic) allocation policy.

    Class attributes:
        name: the policy's name (``gavel``, ``fifo-agnostic``, ...).
        gavel_name: Gavel's name for it (``max_min_fairness_perf``, ...).
        runs_zero_priority_jobs: whether the scan may run a job whose priority on a type is 0
            (Gavel: every policy but FIFO).
        shuffles_type_order: whether the mechanism visits the types in a new random order every
            round (Gavel does so for its policies without ``Perf`` in their names).
    """

    name: str = "typed-policy"
    gavel_name: str = ""
    runs_zero_priority_jobs: bool = True
    shuffles_type_order: bool = False

    def reset(self) -> None:
        """Forget any state kept between calls (called before a simulation)."""
        return None

    @abstractmethod
    def allocate(self, state: TypedAllocationState) -> FloatArray:
        """``X`` of shape ``(state.num_active, len(state.types))`` in ``[0, 1]``."""
