"""Workloads for the simulator benchmarks.

Until the trace generator lands, larger workloads are built by replicating the canonical 120-job
trace: copy ``c`` of job ``j`` arrives at ``(a_j + c * (span + gap)) * 32 / G``, which keeps the
canonical trace's arrival pattern and its load per GPU on a ``G``-GPU cluster.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from shockwave.traces import load_workload
from shockwave.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
CANONICAL_GPUS = 32


def canonical() -> Workload:
    """The canonical 120-job trace with the TACC throughputs."""
    return load_workload(
        ROOT / "traces/canonical_120jobs.trace", ROOT / "traces/tacc_throughputs.json"
    )


def replicated(jobs: int, gpus: int) -> Workload:
    """``jobs`` jobs for a ``gpus``-GPU cluster, replicated from the canonical trace."""
    base = canonical()
    arrivals = base.arrival_times
    gap = float(np.mean(np.diff(arrivals)))
    period = float(arrivals[-1] - arrivals[0]) + gap
    scale = CANONICAL_GPUS / gpus
    copies = []
    for i in range(jobs):
        job = base.jobs[i % len(base)]
        shifted = (job.arrival_time + (i // len(base)) * period) * scale
        copies.append(dataclasses.replace(job, arrival_time=float(shifted)))
    copies.sort(key=lambda j: j.arrival_time)
    return base.with_jobs([dataclasses.replace(j, job_id=k) for k, j in enumerate(copies)])
