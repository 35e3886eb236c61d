"""What a heterogeneous simulation reports: makespan, JCTs, utilisation per type."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from shockwave.heterogeneous.protocol import TypedAllocationPolicy
    from shockwave.heterogeneous.simulate import HeterogeneousConfig
    from shockwave.heterogeneous.typed_jobs import TypedJobs

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class HeterogeneousResult:
    """One run, per-job arrays in trace order.

    Attributes:
        policy: the policy's name; ``gavel_policy``: Gavel's name for it.
        cluster: the cluster spec (``v100:12,p100:12,k80:12``).
        round_seconds, seed, mechanics: the run's settings.
        job_ids: the jobs; ``arrival``, ``completion``: seconds (``completion`` NaN for a
            dropped job); ``jct``: completion minus arrival, seconds (NaN when dropped).
        dropped: jobs Gavel's failure rule dropped.
        makespan: the clock when the last job is done, seconds from t = 0 (Gavel's).
        avg_jct: mean JCT of the jobs that completed, seconds.
        utilization: busy GPU-seconds over ``GPUs x makespan`` (Gavel's per-GPU mean; GPUs
            shared by a pair of jobs count once).
        utilization_by_type: the same for each type.
        gpu_seconds: ``[i, k]``: GPU-seconds job ``i`` ran on type ``k`` (shared GPUs count for
            each job sharing them).
        lease_extension_share: the fraction of Gavel's lease-extension opportunities (a job of
            the previous round still active) in which an entry kept exactly its GPUs (Gavel's
            ``get_num_lease_extensions``, as a fraction; 0 under the exact mechanics, which do
            not place gangs on GPUs).
        rounds: round boundaries simulated.
        wall_seconds, policy_seconds: wall time of the run and of the policy calls (not
            results: they are left out of :meth:`to_dict`).
    """

    policy: str
    gavel_policy: str
    cluster: str
    types: tuple[str, ...]
    round_seconds: float
    seed: int
    mechanics: str
    job_ids: IntArray
    arrival: FloatArray
    completion: FloatArray
    jct: FloatArray
    dropped: npt.NDArray[np.bool_]
    makespan: float
    avg_jct: float
    utilization: float
    utilization_by_type: dict[str, float]
    gpu_seconds: FloatArray
    lease_extension_share: float
    rounds: int
    wall_seconds: float
    policy_seconds: float

    @classmethod
    def build(
        cls,
        jobs: TypedJobs,
        policy: TypedAllocationPolicy,
        config: HeterogeneousConfig,
        *,
        makespan: float,
        completion: FloatArray,
        dropped: npt.NDArray[np.bool_],
        gpu_seconds: FloatArray,
        busy_seconds: FloatArray,
        lease_extension_share: float,
        rounds: int,
        policy_seconds: float,
        wall_seconds: float,
    ) -> HeterogeneousResult:
        jct = completion - jobs.arrival
        finished = ~dropped
        avg = float(np.mean(jct[finished])) if finished.any() else float("nan")
        counts = np.asarray(jobs.cluster.counts, dtype=np.float64)
        busy = busy_seconds
        span = makespan if makespan > 0.0 else 1.0
        return cls(
            policy=policy.name,
            gavel_policy=policy.gavel_name,
            cluster=str(jobs.cluster),
            types=jobs.cluster.types,
            round_seconds=float(config.round_seconds),
            seed=config.seed,
            mechanics=config.mechanics,
            job_ids=jobs.job_ids.copy(),
            arrival=jobs.arrival.copy(),
            completion=completion.copy(),
            jct=jct,
            dropped=dropped.copy(),
            makespan=float(makespan),
            avg_jct=avg,
            utilization=float(busy.sum() / (counts.sum() * span)),
            utilization_by_type={
                name: float(busy[k] / (counts[k] * span))
                for k, name in enumerate(jobs.cluster.types)
            },
            gpu_seconds=gpu_seconds.copy(),
            lease_extension_share=float(lease_extension_share),
            rounds=rounds,
            wall_seconds=wall_seconds,
            policy_seconds=policy_seconds,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; depends only on the inputs (no wall times)."""

        def floats(values: FloatArray) -> list[float | None]:
            return [None if np.isnan(v) else float(v) for v in values.tolist()]

        return {
            "policy": self.policy,
            "gavel_policy": self.gavel_policy,
            "cluster": self.cluster,
            "mechanics": self.mechanics,
            "round_seconds": self.round_seconds,
            "seed": self.seed,
            "jobs": int(self.job_ids.shape[0]),
            "rounds": self.rounds,
            "makespan": self.makespan,
            "avg_jct": self.avg_jct,
            "utilization": self.utilization,
            "utilization_by_type": dict(self.utilization_by_type),
            "lease_extension_share": self.lease_extension_share,
            "job_ids": self.job_ids.tolist(),
            "jct": floats(self.jct),
            "completion_time": floats(self.completion),
            "dropped_jobs": self.job_ids[self.dropped].tolist(),
            "gpu_seconds_by_type": {
                name: self.gpu_seconds[:, k].tolist() for k, name in enumerate(self.types)
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n"
