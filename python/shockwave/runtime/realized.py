"""What the jobs of a real run actually did, as a workload the simulator can replay.

A runnable job's profile in its workload is a *plan*: the batch sizes it may reach and their
expected epoch durations; the real job decides its batch sizes from its own gradients. After a
run, :func:`realized_workload` rebuilds every job with the batch size each epoch really ran at
(``RunResult.epoch_batch_sizes``) and epoch durations either from the throughput table (what a
simulator is given) or from the throughput the job was measured at during the run, so that the
simulator can be checked against the run with the same jobs (``benches/runtime_fidelity.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from shockwave.profile_rules import epoch_durations
from shockwave.runtime.result import RunResult
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Job, Workload

#: Where a realized workload's epoch durations come from.
DurationSource = Literal["table", "measured"]


def realized_workload(
    workload: Workload,
    result: RunResult | Mapping[str, Any],
    *,
    durations: DurationSource = "table",
    table: ThroughputTable | None = None,
) -> Workload:
    """``workload``'s jobs with the batch size every epoch ran at in ``result``.

    Args:
        workload: the run's workload (trace order as in ``result``).
        result: a finished run of it (a :class:`RunResult` or its JSON object).
        durations: ``"table"``: ``(samples_per_epoch / bs) / thr(model, bs, gang)`` from
            ``table``; ``"measured"``: from the iterations/s the job was measured at with that
            batch size during the run (the table where it never ran at it), with the table's
            formula ``(samples_per_epoch / bs) / rate``.
        table: the throughput table (default: the workload's).

    Raises:
        ValueError: if ``result`` is not a finished run of ``workload``, or a needed
            throughput is missing.
    """
    table = table or workload.throughputs
    if table is None:
        raise ValueError("realized_workload: the workload carries no throughput table; give one")
    data = result.to_dict() if isinstance(result, RunResult) else result
    try:
        job_ids, logs, rates = (
            data["job_ids"],
            data["epoch_batch_sizes"],
            data["measured_throughput"],
        )
    except KeyError as exc:
        raise ValueError(f"realized_workload: the result has no {exc.args[0]!r}") from None
    if job_ids != [int(job.job_id) for job in workload.jobs]:
        raise ValueError("realized_workload: the result is not a run of this workload")
    jobs = []
    for job, runs, measured in zip(workload.jobs, logs, rates, strict=True):
        sizes = np.array([size for size, count in runs for _ in range(count)], dtype=np.int64)
        if sizes.shape[0] != job.num_epochs:
            raise ValueError(
                f"realized_workload: job {job.job_id} reported {sizes.shape[0]} of its "
                f"{job.num_epochs} epochs (an unfinished or failed job)"
            )
        planned = dataclasses.replace(job, batch_sizes=sizes)
        jobs.append(_with_durations(planned, table, measured if durations == "measured" else {}))
    return Workload(tuple(jobs), table, source=f"realized: {workload.source}")


def _with_durations(job: Job, table: ThroughputTable, measured: dict[str, float]) -> Job:
    seconds = epoch_durations(
        job.model, job.batch_sizes, job.gang_size, table, job.samples_per_epoch
    ).copy()
    samples = float(job.samples_per_epoch or 1)
    for size_text, rate in measured.items():
        size = int(size_text)
        where = job.batch_sizes == size
        if rate > 0 and where.any():
            seconds[where] = (samples / size) / rate  # the table's formula, at the measured rate
    return dataclasses.replace(job, epoch_seconds=seconds)
