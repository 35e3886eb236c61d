"""The heterogeneous benchmark: a typed cluster against one type, the same jobs, the same run.

``shockwave bench heterogeneous`` (issue 22, "Done when": 20,000 jobs on a 3-type cluster of
6,500 GPUs simulate within 1.5x the time of the homogeneous run of the same trace). One trace of
Gavel-style static jobs is generated (:func:`static_workload`: the trace generator with every
job static, its steps from the table's first-type throughputs), then, per policy, simulated with
Gavel's mechanics (:func:`~shockwave.heterogeneous.simulate_heterogeneous`) on the typed cluster
and on a cluster of as many GPUs of one type (its throughputs only), one after the other in this
process. Reported: the wall time of each simulation (the jobs already built), the ratio typed /
one type, rounds, policy time, and the metrics of both.

With ``repeats`` above 1 each policy runs that many pairs (typed, then one type, back to back):
the times reported are the medians, and the ratio the median of the pairs' ratios, so that a
machine whose speed drifts (shared VMs vary 2x within minutes) compares like with like.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

from shockwave.heterogeneous import (
    ClusterSpec,
    HeterogeneousConfig,
    HeterogeneousResult,
    TypedJobs,
    TypedThroughputTable,
    simulate_heterogeneous,
    typed_jobs_from_workload,
)
from shockwave.workload import Workload

#: Seed of the generated trace.
SEED = 1
#: The issue's size.
DEFAULT_JOBS = 20000
DEFAULT_CLUSTER = "v100:2200,p100:2150,k80:2150"
DEFAULT_POLICIES = ("fifo", "gavel")
#: The bound of issue 22: typed wall time over one-type wall time.
TARGET_RATIO = 1.5

HEADER = (
    "| jobs | cluster | policy | typed (s) | one type (s) | ratio | rounds (typed / one) | "
    "policy s (typed / one) | makespan h (typed / one) | avg JCT h (typed / one) | "
    "worst rho (typed / one) |"
)


def static_workload(
    jobs: int, gpus: int, throughputs: str | PathLike[str], seed: int = SEED
) -> Workload:
    """``jobs`` static jobs for a cluster of ``gpus`` GPUs, drawn by the trace generator (its
    defaults: the original's templates, gang sizes, durations and arrival rate per GPU) with
    ``throughputs`` (a Gavel-style file; its first type gives each job's step count)."""
    from shockwave.traces import GeneratorParameters, generate_workload

    parameters = GeneratorParameters(
        jobs=jobs, gpus=gpus, seed=seed, mode_mix=(1.0, 0.0, 0.0), throughputs=str(throughputs)
    )
    return generate_workload(parameters)


def typed_pair(
    workload: Workload, table: TypedThroughputTable, cluster: ClusterSpec, one_type: str
) -> tuple[TypedJobs, TypedJobs]:
    """The jobs on ``cluster`` and on ``cluster.total_gpus`` GPUs of ``one_type``."""
    homogeneous = ClusterSpec.homogeneous(cluster.total_gpus, one_type)
    return (
        typed_jobs_from_workload(workload, table, cluster),
        typed_jobs_from_workload(workload, table, homogeneous),
    )


def run(
    jobs: int,
    cluster: ClusterSpec,
    throughputs: str | PathLike[str],
    policies: Sequence[str],
    *,
    one_type: str | None = None,
    seed: int = SEED,
    repeats: int = 1,
    echo: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per policy (module notes: ``repeats`` pairs of runs each); ``echo`` is called
    with each row as it is done."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    table = TypedThroughputTable.from_file(throughputs)
    one_type = one_type or cluster.types[0]
    started = time.perf_counter()
    workload = static_workload(jobs, cluster.total_gpus, throughputs, seed)
    typed, single = typed_pair(workload, table, cluster, one_type)
    generated = time.perf_counter() - started
    config = HeterogeneousConfig()
    rows = []
    for policy in policies:
        pairs = [
            (simulate_heterogeneous(typed, policy, config),
             simulate_heterogeneous(single, policy, config))
            for _ in range(repeats)
        ]  # fmt: skip
        a, b = pairs[0]
        typed_runs = [x.wall_seconds for x, _ in pairs]
        one_runs = [y.wall_seconds for _, y in pairs]
        row = {
            "jobs": jobs,
            "cluster": str(cluster),
            "one_type": f"{one_type}:{cluster.total_gpus}",
            "policy": a.policy,
            "generate_seconds": generated,
            "typed_seconds": statistics.median(typed_runs),
            "one_type_seconds": statistics.median(one_runs),
            "ratio": statistics.median(t / o for t, o in zip(typed_runs, one_runs, strict=True)),
            "typed_runs": typed_runs,
            "one_type_runs": one_runs,
            "typed": _metrics(a),
            "one": _metrics(b),
        }
        rows.append(row)
        if echo is not None:
            echo(row)
    return rows


def _metrics(result: HeterogeneousResult) -> dict[str, Any]:
    return {
        "rounds": result.rounds,
        "policy_seconds": result.policy_seconds,
        "makespan": result.makespan,
        "avg_jct": result.avg_jct,
        "worst_ftf": result.worst_ftf,
        "unfair_fraction": result.unfair_fraction,
        "utilization_by_type": dict(result.utilization_by_type),
    }


def format_row(row: dict[str, Any]) -> str:
    a, b = row["typed"], row["one"]
    return (
        f"| {row['jobs']:,} | {row['cluster']} | {row['policy']} | {row['typed_seconds']:.1f} | "
        f"{row['one_type_seconds']:.1f} | {row['ratio']:.2f} | {a['rounds']} / {b['rounds']} | "
        f"{a['policy_seconds']:.1f} / {b['policy_seconds']:.1f} | "
        f"{a['makespan'] / 3600:.2f} / {b['makespan'] / 3600:.2f} | "
        f"{a['avg_jct'] / 3600:.2f} / {b['avg_jct'] / 3600:.2f} | "
        f"{a['worst_ftf']:.2f} / {b['worst_ftf']:.2f} |"
    )


def report(rows: Sequence[dict[str, Any]]) -> str:
    """The Markdown table, with the machine it ran on."""
    lines = [
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"{platform.system()}; wall seconds of each simulation, the jobs already built (the "
        f"median of the repeats); ratio = typed / one type, the median of the pairs' ratios "
        f"(bound {TARGET_RATIO}).",
        "",
        HEADER,
        "|" + "---|" * 11,
        *(format_row(r) for r in rows),
    ]
    return "\n".join(lines) + "\n"
