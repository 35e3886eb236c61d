"""Summary statistics of a workload (what ``shockwave trace inspect`` prints)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.workload import Workload


@dataclass(frozen=True)
class WorkloadSummary:
    """Aggregate facts about a workload.

    Attributes:
        jobs: number of jobs.
        exclusive_gpu_hours: total exclusive work, sum over jobs of epoch seconds x gang size,
            in GPU-hours.
        first_arrival, last_arrival: seconds.
        gang_sizes: jobs per gang size (GPUs).
        modes: jobs per adaptation mode.
        models: jobs per model.
        epochs_min, epochs_median, epochs_max: epochs per job.
        exclusive_hours_min, exclusive_hours_median, exclusive_hours_max: exclusive runtime per
            job on its gang, hours.
        adapting_jobs: jobs whose batch size changes at least once in their profile.
        gang_size_buckets: jobs per gang-size bucket (``1``, ``2``, ``3-4``, ``5-8``, ... powers
            of two), smallest first.
        exclusive_seconds_percentiles: exclusive runtime per job at the percentiles
            :data:`PERCENTILES`, seconds.
        exclusive_seconds_buckets: jobs per runtime bucket (:data:`RUNTIME_BUCKETS`).
    """

    jobs: int
    exclusive_gpu_hours: float
    first_arrival: float
    last_arrival: float
    gang_sizes: dict[int, int]
    modes: dict[str, int]
    models: dict[str, int]
    epochs_min: int
    epochs_median: float
    epochs_max: int
    exclusive_hours_min: float
    exclusive_hours_median: float
    exclusive_hours_max: float
    adapting_jobs: int
    gang_size_buckets: dict[str, int] = field(default_factory=dict)
    exclusive_seconds_percentiles: dict[int, float] = field(default_factory=dict)
    exclusive_seconds_buckets: dict[str, int] = field(default_factory=dict)

    @property
    def arrival_span(self) -> float:
        """Seconds between the first and the last arrival."""
        return self.last_arrival - self.first_arrival

    def contention(self, gpus: int) -> float:
        """Exclusive GPU-hours of work per GPU-hour of the arrival span on ``gpus`` GPUs."""
        span = max(self.arrival_span, 1.0) / 3600.0
        return self.exclusive_gpu_hours / (gpus * span)

    def render(self) -> str:
        """A few human-readable lines."""

        def mix(counts: Mapping[Any, int]) -> str:
            return ", ".join(
                f"{key}: {n} ({100 * n / self.jobs:.0f}%)" for key, n in sorted(counts.items())
            )

        def share(counts: Mapping[str, int]) -> str:  # in the given order, empty ones left out
            return ", ".join(
                f"{key}: {n:,} ({100 * n / self.jobs:.1f}%)" for key, n in counts.items() if n
            )

        return "\n".join(
            [
                f"jobs:                 {self.jobs}",
                f"exclusive work:       {self.exclusive_gpu_hours:,.1f} GPU-hours",
                f"arrivals:             {self.first_arrival:,.0f} s .. {self.last_arrival:,.0f} s"
                f" (span {self.arrival_span / 3600:.2f} h)",
                f"gang sizes (GPUs):    {mix(self.gang_sizes)}",
                f"adaptation modes:     {mix(self.modes)}"
                f"; batch size changes in {self.adapting_jobs} profiles",
                f"models:               {mix(self.models)}",
                f"epochs per job:       min {self.epochs_min}, median {self.epochs_median:g},"
                f" max {self.epochs_max}",
                f"exclusive runtime:    min {self.exclusive_hours_min:.2f} h, median "
                f"{self.exclusive_hours_median:.2f} h, max {self.exclusive_hours_max:.2f} h",
                f"gang-size buckets:    {share(self.gang_size_buckets)}",
                "runtime percentiles:  "
                + ", ".join(
                    f"p{q} {format_seconds(v)}"
                    for q, v in self.exclusive_seconds_percentiles.items()
                ),
                f"runtime buckets:      {share(self.exclusive_seconds_buckets)}",
            ]
        )


def summarize(workload: Workload) -> WorkloadSummary:
    """Compute the :class:`WorkloadSummary` of a workload."""
    epochs = np.array([job.num_epochs for job in workload])
    hours = workload.exclusive_seconds / 3600.0
    arrivals = workload.arrival_times
    return WorkloadSummary(
        jobs=len(workload),
        exclusive_gpu_hours=float((hours * workload.gang_sizes).sum()),
        first_arrival=float(arrivals.min()),
        last_arrival=float(arrivals.max()),
        gang_sizes=dict(Counter(int(job.gang_size) for job in workload)),
        modes=dict(Counter(job.mode for job in workload)),
        models=dict(Counter(job.model for job in workload)),
        epochs_min=int(epochs.min()),
        epochs_median=float(np.median(epochs)),
        epochs_max=int(epochs.max()),
        exclusive_hours_min=float(hours.min()),
        exclusive_hours_median=float(np.median(hours)),
        exclusive_hours_max=float(hours.max()),
        adapting_jobs=sum(int(len(job.profile.distinct_batch_sizes()) > 1) for job in workload),
        gang_size_buckets=gang_size_buckets(workload.gang_sizes),
        exclusive_seconds_percentiles={
            q: float(v)
            for q, v in zip(PERCENTILES, np.percentile(hours * 3600.0, PERCENTILES), strict=True)
        },
        exclusive_seconds_buckets=runtime_buckets(workload.exclusive_seconds),
    )


#: Percentiles of the runtime distribution ``trace inspect`` prints.
PERCENTILES = (10, 25, 50, 75, 90, 99)
#: Runtime buckets: label and upper end (seconds, exclusive).
RUNTIME_BUCKETS: tuple[tuple[str, float], ...] = (
    ("< 1 min", 60.0),
    ("1-10 min", 600.0),
    ("10 min-1 h", 3600.0),
    ("1-10 h", 36_000.0),
    ("10-100 h", 360_000.0),
    (">= 100 h", math.inf),
)


def gang_size_buckets(gang_sizes: npt.NDArray[np.int64]) -> dict[str, int]:
    """Jobs per gang-size bucket ``(2**(k-1), 2**k]``: ``1``, ``2``, ``3-4``, ``5-8``, ..."""
    counts: Counter[int] = Counter(max(int(g) - 1, 0).bit_length() for g in gang_sizes.tolist())
    out: dict[str, int] = {}
    for k in sorted(counts):
        low, high = 2 ** (k - 1) + 1 if k else 1, 2**k
        out[str(high) if low == high else f"{low}-{high}"] = counts[k]
    return out


def runtime_buckets(seconds: npt.NDArray[np.float64]) -> dict[str, int]:
    """Jobs per :data:`RUNTIME_BUCKETS` bucket of exclusive runtime."""
    edges = [edge for _, edge in RUNTIME_BUCKETS[:-1]]
    counts = np.bincount(np.searchsorted(edges, seconds, side="right"), minlength=len(edges) + 1)
    return {label: int(n) for (label, _), n in zip(RUNTIME_BUCKETS, counts, strict=True)}


def format_seconds(seconds: float) -> str:
    """A duration in the largest unit that keeps it >= 1: ``42 s``, ``3.5 min``, ``2.25 h``."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"
