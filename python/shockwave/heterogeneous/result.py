"""What a heterogeneous simulation reports: makespan, JCTs, finish-time fairness, utilisation and
GPU-hours per type (:class:`HeterogeneousResult`; rho as :mod:`shockwave.heterogeneous.fairness`
defines it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.fairness import heterogeneous_ftf
from shockwave.metrics import unfair_fraction
from shockwave.policies.shockwave.plan import PlanningStats

if TYPE_CHECKING:
    import pandas as pd  # imported when a frame is asked for (it takes a while to import)

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
        ftf: finish-time fairness rho of each job, ``JCT / isolated_seconds`` rounded to 5
            decimals (NaN when dropped); ``isolated_seconds``: the job's runtime on Gavel's
            isolated (equal) share of the cluster at its mean contention, seconds
            (:mod:`shockwave.heterogeneous.fairness`).
        worst_ftf: the largest rho; ``unfair_fraction``: the share of jobs (0..1) with rho
            above :data:`~shockwave.metrics.UNFAIR_THRESHOLD` (1.05, the homogeneous metric's
            bar), over the jobs that completed.
        gpu_seconds: ``[i, k]``: GPU-seconds job ``i`` ran on type ``k`` (shared GPUs count for
            each job sharing them).
        lease_extension_share: the fraction of Gavel's lease-extension opportunities (a job of
            the previous round still active) in which an entry kept exactly its GPUs (Gavel's
            ``get_num_lease_extensions``, as a fraction; 0 under the exact mechanics, which do
            not place gangs on GPUs).
        rounds: round boundaries simulated.
        market: for a market policy (``shockwave``), what its solves did: ``solves``,
            ``iterations``, ``not_converged`` (solves that stopped above the tolerance: their
            certified plan was used, and they are counted here), ``worst_gap`` (the largest
            relative duality gap), ``cold_retries``; ``None`` (and no key in
            :meth:`to_dict`) for the others.
        spread_rounds: rounds each job ran with its gang spread over several servers, under the
            exact mechanics on a cluster with server sizes (``v100:36/4``; ``None`` without:
            then :meth:`to_dict` leaves it out).
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
    ftf: FloatArray
    isolated_seconds: FloatArray
    worst_ftf: float
    unfair_fraction: float
    gpu_seconds: FloatArray
    lease_extension_share: float
    rounds: int
    wall_seconds: float
    policy_seconds: float
    market: dict[str, float] | None = None
    spread_rounds: IntArray | None = None

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
        spread_rounds: IntArray | None = None,
    ) -> HeterogeneousResult:
        jct = completion - jobs.arrival
        finished = ~dropped
        avg = float(np.mean(jct[finished])) if finished.any() else float("nan")
        counts = np.asarray(jobs.cluster.counts, dtype=np.float64)
        busy = busy_seconds
        span = makespan if makespan > 0.0 else 1.0
        ftf, isolated = heterogeneous_ftf(
            jct, jobs.total_steps, jobs.throughput, jobs.gang,
            np.asarray(jobs.cluster.counts, dtype=np.int64), jobs.arrival, completion,
            profiles=jobs.profiles,
        )  # fmt: skip
        rhos = ftf[finished].tolist()
        stats = getattr(policy, "stats", None)
        market = None
        if isinstance(stats, PlanningStats):  # a market policy: what its solves did
            market = {
                "solves": stats.solves,
                "iterations": stats.solver_iterations,
                "not_converged": stats.not_converged,
                "worst_gap": stats.worst_gap,
                "cold_retries": stats.cold_retries,
            }
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
            ftf=ftf,
            isolated_seconds=isolated,
            worst_ftf=float(max(rhos)) if rhos else float("nan"),
            unfair_fraction=unfair_fraction(rhos),
            gpu_seconds=gpu_seconds.copy(),
            lease_extension_share=float(lease_extension_share),
            rounds=rounds,
            wall_seconds=wall_seconds,
            policy_seconds=policy_seconds,
            market=market,
            spread_rounds=None if spread_rounds is None else spread_rounds.copy(),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; depends only on the inputs (no wall times)."""

        def floats(values: FloatArray) -> list[float | None]:
            return [None if np.isnan(v) else float(v) for v in values.tolist()]

        out: dict[str, Any] = {
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
            "worst_ftf": self.worst_ftf,
            "unfair_fraction": self.unfair_fraction,
            "lease_extension_share": self.lease_extension_share,
            "job_ids": self.job_ids.tolist(),
            "jct": floats(self.jct),
            "completion_time": floats(self.completion),
            "ftf": floats(self.ftf),
            "isolated_seconds": floats(self.isolated_seconds),
            "dropped_jobs": self.job_ids[self.dropped].tolist(),
            "gpu_seconds_by_type": {
                name: self.gpu_seconds[:, k].tolist() for k, name in enumerate(self.types)
            },
        }
        if self.market is not None:
            out["market"] = dict(self.market)
        if self.spread_rounds is not None:  # only where gangs are placed on servers
            out["spread_rounds"] = self.spread_rounds.tolist()
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n"

    @property
    def gpu_hours_by_type(self) -> dict[str, float]:
        """GPU-hours all jobs ran on each type (shared GPUs count for each job sharing them)."""
        return {name: float(self.gpu_seconds[:, k].sum() / 3600.0)
                for k, name in enumerate(self.types)}  # fmt: skip

    def summary(self) -> str:
        """One line: the policy, the cluster and every aggregate metric."""
        by_type = ", ".join(f"{k} {v:.3f}" for k, v in self.utilization_by_type.items())
        dropped = int(self.dropped.sum())
        return (
            f"{self.policy}"
            + (f" (Gavel: {self.gavel_policy})" if self.gavel_policy else "")
            + f" on {self.cluster}, "
            f"{self.mechanics} mechanics: "
            f"makespan {self.makespan:.1f} s, average JCT {self.avg_jct:.1f} s, worst rho "
            f"{self.worst_ftf:.3f}, unfair {100.0 * self.unfair_fraction:.1f} %, utilisation "
            f"{self.utilization:.3f} ({by_type}), {self.rounds} rounds"
            + (f", {dropped} job(s) dropped" if dropped else "")
            + (
                f"; market: {self.market['solves']:.0f} solves, "
                f"{self.market['not_converged']:.0f} not converged (worst gap "
                f"{self.market['worst_gap']:.1e})"
                if self.market is not None
                else ""
            )
        )

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job (trace order): times (s), fairness, GPU-hours on each type
        (``gpu_hours_<type>``), whether dropped; the conventions of
        :meth:`shockwave.metrics.SimulationResult.jobs_frame`."""
        import pandas as pd  # imported lazily: slow to import

        columns: dict[str, Any] = {
            "job_id": self.job_ids,
            "arrival_time": self.arrival,
            "completion_time": self.completion,
            "jct": self.jct,
            "isolated_seconds": self.isolated_seconds,
            "ftf": self.ftf,
        }
        for k, name in enumerate(self.types):
            columns[f"gpu_hours_{name}"] = self.gpu_seconds[:, k] / 3600.0
        columns["dropped"] = self.dropped
        frame: pd.DataFrame = pd.DataFrame(columns)
        return frame
