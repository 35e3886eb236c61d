"""The Python entry point of a heterogeneous simulation."""

from __future__ import annotations

from os import PathLike

from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.engine import GavelTypedEngine, HeterogeneousConfig
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.heterogeneous.registry import make_typed_policy
from shockwave.heterogeneous.result import HeterogeneousResult
from shockwave.heterogeneous.typed_jobs import TypedJobs, read_typed_trace
from shockwave.heterogeneous.typed_throughputs import TypedThroughputTable


def simulate_heterogeneous(
    jobs: TypedJobs,
    policy: str | TypedAllocationPolicy,
    config: HeterogeneousConfig | None = None,
) -> HeterogeneousResult:
    """Simulate ``jobs`` on their cluster under ``policy`` with Gavel's mechanics.

    Args:
        jobs: the jobs and their throughput on each type of the cluster
            (:func:`load_typed_trace`, :func:`~shockwave.heterogeneous.typed_jobs.read_typed_trace`
            or :func:`~shockwave.heterogeneous.typed_jobs.typed_jobs_from_workload`).
        policy: a name (``gavel``, ``gavel-agnostic``, ``themis``, ``mst``, ``ossp``, ``fifo``,
            ..., or Gavel's names such as ``max_min_fairness_perf``) or a policy instance.
        config: round length, seed, recompute interval (Gavel's defaults: 360 s, 0, 1,920 s).
    """
    config = config or HeterogeneousConfig()
    if isinstance(policy, str):
        policy = make_typed_policy(policy, config.seed)
    return GavelTypedEngine(jobs, policy, config).run()


def load_typed_trace(
    trace: str | PathLike[str],
    throughputs: str | PathLike[str] | TypedThroughputTable,
    cluster: str | ClusterSpec,
) -> TypedJobs:
    """Read a ``.trace`` for ``cluster`` (a spec or its text, ``v100:12,p100:12,k80:12``) with a
    throughput file (or table) that has every type of the cluster."""
    spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
    table = (
        throughputs
        if isinstance(throughputs, TypedThroughputTable)
        else TypedThroughputTable.from_file(throughputs)
    )
    return read_typed_trace(trace, table, spec)
