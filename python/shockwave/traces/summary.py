"""Summary statistics of a workload (what ``shockwave trace inspect`` prints)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

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
        adapting_jobs=sum(int(len(np.unique(job.batch_sizes)) > 1) for job in workload),
    )
