"""``shockwave reproduce heterogeneous``: every typed policy, aware and agnostic, on Gavel's trace
and on generated static traces, as one Markdown table.

The sets (issue 22, item 6):

* ``gavel-T2``: Gavel's shared 200-job trace (``--gavel-trace``, its ``T2`` trace) on
  ``v100:12,p100:12,k80:12``;
* ``static-12``: a generated trace of static jobs on ``v100:12,p100:12,k80:12``;
* ``static-36``: a generated trace of static jobs on ``v100:36,p100:36,k80:36``;
* ``adapting-12 sS`` (and, with ``--full``, ``adapting-36 sS``): adapting workloads from
  ``shockwave trace generate --cluster`` (Shockwave's mix of static, Accordion and GNS jobs, with
  their epoch durations on every type) for the seeds :data:`ADAPTING_SEEDS`, none of which was
  used to tune the ``shockwave`` policy, under the exact mechanics (20 s restart penalty), for
  the policies :data:`ADAPTING_POLICIES`.

Generated static traces come from the trace generator with every job static
(:func:`shockwave.bench.heterogeneous.static_workload`, seed :data:`SEED`), sized for the
cluster's GPUs: :data:`QUICK_JOBS` by default (a few minutes on two cores),
:data:`FULL_JOBS` with ``--full``. The static sets run under Gavel's mechanics with its defaults
(360 s rounds, seed 0), every typed policy. A policy that refuses a trace (AlloX and its
multi-GPU jobs) is listed with the reason. The table (makespan, average JCT, worst rho, unfair
fraction, utilisation per type) is written atomically.
"""

from __future__ import annotations

import datetime
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shockwave.atomic import atomic_write_text
from shockwave.heterogeneous import (
    TYPED_POLICIES,
    ClusterSpec,
    HeterogeneousConfig,
    HeterogeneousResult,
    TypedJobs,
    TypedThroughputTable,
    read_typed_trace,
    simulate_heterogeneous,
    typed_jobs_from_workload,
)
from shockwave.heterogeneous.typed_jobs import typed_jobs_from_profiles

#: The generator's seed for the static traces.
SEED = 3
#: Jobs of the generated traces: by default, and with ``--full``.
QUICK_JOBS = {"static-12": 100, "static-36": 300}
FULL_JOBS = {"static-12": 200, "static-36": 600}
CLUSTERS = {
    "gavel-T2": "v100:12,p100:12,k80:12",
    "static-12": "v100:12,p100:12,k80:12",
    "static-36": "v100:36,p100:36,k80:36",
    "adapting-12": "v100:12,p100:12,k80:12",
    "adapting-36": "v100:36,p100:36,k80:36",
}
#: The generator's seeds of the adapting sets (never used to tune ``shockwave``).
ADAPTING_SEEDS = (11, 12, 13)
#: Jobs of the adapting sets: by default, and with ``--full``.
QUICK_ADAPTING = {"adapting-12": 100}
FULL_ADAPTING = {"adapting-12": 100, "adapting-36": 300}
#: The policies run on the adapting sets (each asked every round under the exact mechanics).
ADAPTING_POLICIES = (
    "shockwave", "gavel", "gavel-agnostic", "themis", "themis-agnostic", "fifo", "fifo-agnostic",
    "mst", "gandiva-fair", "gandiva-fair-agnostic",
)  # fmt: skip
#: Settings of the static sets (Gavel's) and of the adapting sets (the exact mechanics).
STATIC_CONFIG = HeterogeneousConfig()
ADAPTING_CONFIG = HeterogeneousConfig(mechanics="exact", restart_penalty_seconds=20.0)


@dataclass(frozen=True)
class TypedSet:
    """One set of the table: its jobs, the settings it runs under and its policies."""

    jobs: TypedJobs
    config: HeterogeneousConfig
    policies: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """One (set, policy): its result, or why it did not run."""

    set_name: str
    jobs: int
    policy: str
    result: HeterogeneousResult | None
    refused: str | None = None


def workloads(
    throughputs: str | os.PathLike[str], gavel_trace: str | os.PathLike[str] | None, full: bool
) -> dict[str, TypedSet]:
    """The sets (``gavel-T2`` only when its trace is given)."""
    from shockwave.bench.heterogeneous import static_workload
    from shockwave.traces import generate_workload
    from shockwave.traces.generator_parameters import GeneratorParameters

    table = TypedThroughputTable.from_file(throughputs)
    every = tuple(TYPED_POLICIES)
    sets: dict[str, TypedSet] = {}
    if gavel_trace is not None:
        jobs = read_typed_trace(gavel_trace, table, ClusterSpec.parse(CLUSTERS["gavel-T2"]))
        sets["gavel-T2"] = TypedSet(jobs, STATIC_CONFIG, every)
    for name, count in (FULL_JOBS if full else QUICK_JOBS).items():
        cluster = ClusterSpec.parse(CLUSTERS[name])
        workload = static_workload(count, cluster.total_gpus, throughputs, SEED)
        sets[name] = TypedSet(
            typed_jobs_from_workload(workload, table, cluster), STATIC_CONFIG, every
        )
    for name, count in (FULL_ADAPTING if full else QUICK_ADAPTING).items():
        for seed in ADAPTING_SEEDS:
            parameters = GeneratorParameters.for_cluster(count, CLUSTERS[name], seed=seed)
            jobs = typed_jobs_from_profiles(generate_workload(parameters), CLUSTERS[name])
            sets[f"{name} s{seed}"] = TypedSet(jobs, ADAPTING_CONFIG, ADAPTING_POLICIES)
    return sets


def run(sets: dict[str, TypedSet], echo: Callable[[Row], None] | None = None) -> list[Row]:
    """Every set's policies on it."""
    rows = []
    for name, typed_set in sets.items():
        jobs, config = typed_set.jobs, typed_set.config
        for policy in typed_set.policies:
            try:
                row = Row(name, len(jobs), policy, simulate_heterogeneous(jobs, policy, config))
            except ValueError as exc:  # a policy that refuses the jobs (AlloX: multi-GPU)
                row = Row(name, len(jobs), policy, None, str(exc).splitlines()[0])
            rows.append(row)
            if echo is not None:
                echo(row)
    return rows


def format_row(row: Row) -> str:
    r = row.result
    if r is None:
        return f"| {row.set_name} | {row.jobs} | `{row.policy}` | refused: {row.refused} |||||"
    by_type = ", ".join(f"{k} {100 * v:.1f}" for k, v in r.utilization_by_type.items())
    return (
        f"| {row.set_name} | {row.jobs} | `{row.policy}` | {r.makespan / 3600:.2f} | "
        f"{r.avg_jct / 3600:.2f} | {r.worst_ftf:.2f} | {100 * r.unfair_fraction:.1f} | "
        f"{100 * r.utilization:.1f} | {by_type} |"
    )


HEADER = (
    "| set | jobs | policy | makespan (h) | avg JCT (h) | worst rho | unfair (%) | "
    "utilisation (%) | per type (%) |\n|---|---|---|---|---|---|---|---|---|"
)


def render(rows: list[Row], *, full: bool, seconds: float, command: str) -> str:
    """The Markdown page of the table."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sizes = FULL_JOBS if full else QUICK_JOBS
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    return "\n".join(
        [
            "# Heterogeneous clusters: every policy, aware and agnostic",
            "",
            f"Written by `{command}` on {now} ({machine}; {seconds:.0f} s). Static sets: "
            "Gavel's mechanics, 360 s rounds, seed 0 (`docs/simulator.md`, \"Heterogeneous "
            'clusters"); adapting sets: the exact mechanics, 360 s rounds, 20 s restart penalty.',
            "",
            "Sets: `gavel-T2` is Gavel's shared 200-job trace on `v100:12,p100:12,k80:12`; "
            f"`static-12` ({sizes['static-12']} jobs) and `static-36` ({sizes['static-36']} jobs) "
            f"are generated static traces (`shockwave trace generate` with every job static, seed "
            f"{SEED}, steps from the v100 throughputs) on `v100:12,p100:12,k80:12` and "
            "`v100:36,p100:36,k80:36`; `adapting-12 sS` "
            f"({(FULL_ADAPTING if full else QUICK_ADAPTING)['adapting-12']} jobs"
            + (", and `adapting-36 sS`, 300 jobs on `v100:36,p100:36,k80:36`" if full else "")
            + ") are adapting workloads of `shockwave trace generate --cluster "
            "v100:12,p100:12,k80:12 --seed S` (seeds "
            f"{', '.join(str(s) for s in ADAPTING_SEEDS)}, never used to tune `shockwave`). "
            "Rho is each job's JCT over its runtime on Gavel's isolated "
            "share of the cluster at its mean contention; unfair: rho > 1.05; utilisation: busy "
            "GPU-seconds over GPUs x makespan, then per type (v100, p100, k80).",
            "",
            HEADER,
            *(format_row(r) for r in rows),
            "",
        ]
    )


def reproduce(
    throughputs: str, gavel_trace: str | None, full: bool, table: Path, command: str,
    echo: Callable[[Row], None] | None = None,
) -> list[Row]:  # fmt: skip
    """Build the sets, run every policy, write the table to ``table``."""
    started = time.perf_counter()
    rows = run(workloads(throughputs, gavel_trace, full), echo)
    atomic_write_text(table, render(rows, full=full, seconds=time.perf_counter() - started,
                              command=command))  # fmt: skip
    return rows
