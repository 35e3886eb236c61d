"""What a job's reports count: its progress, what it did in the round, its measured throughput.

A job's process reports cumulative counters (steps, samples, busy seconds, per batch size the
steps and seconds it trained); :func:`fold_report` checks a report against the job's spec and
folds what is new since the process's previous report into the job's record
(:class:`~shockwave.runtime.lifecycle.LiveJob`): the round's tally (busy seconds and steps, from
which the round's throughput sample is taken), the measured throughput per batch size over the
whole run, and the progress high-water mark.
"""

from __future__ import annotations

from shockwave.job.protocol import Report
from shockwave.runtime.lifecycle import LiveJob, Process


def report_problem(report: Report, regimes: dict[int, float], num_epochs: int) -> str | None:
    """Why ``report`` breaks its job's spec (a batch size the job's profile does not list,
    more epochs than it has), or ``None``."""
    sizes = [report.batch_size] + [b for b, _ in report.epoch_batch_sizes]
    bad = [b for b in sizes if b not in regimes]
    if bad:
        return (
            f"reported batch size {bad[0]}, not one of its regimes {sorted(regimes)} "
            "(the batch sizes of its profile in the workload)"
        )
    if report.epochs_completed > num_epochs:
        return f"reported {report.epochs_completed} epochs of {num_epochs}"
    return None


def start_counting(process: Process, report: Report) -> None:
    """A new process said hello: its counters start from its checkpoint's."""
    process.busy_seen = 0.0
    process.steps_seen = report.steps
    process.stats_seen = {}


def fold_report(job: LiveJob, process: Process, report: Report) -> None:
    """Fold a (checked) report of ``process`` into ``job`` (see the module notes)."""
    busy = report.busy_seconds - process.busy_seen
    if busy > 0:
        job.round.busy_seconds += busy
        process.busy_seen = report.busy_seconds
    if report.steps > process.steps_seen:
        job.round.steps += report.steps - process.steps_seen
        process.steps_seen = report.steps
    throughput = job.history.throughput
    for size, steps, seconds in report.batch_stats:
        seen = process.stats_seen.get(size, (0, 0.0))
        if steps > seen[0]:
            tally = throughput.setdefault(size, [0.0, 0.0])
            tally[0] += steps - seen[0]
            tally[1] += seconds - seen[1]
            process.stats_seen[size] = (steps, seconds)
    progress = job.progress
    if report.samples >= progress.samples:
        progress.samples = report.samples
        progress.steps = max(progress.steps, report.steps)
        progress.batch_size = report.batch_size
        if report.epochs_completed >= sum(c for _, c in progress.epoch_log):
            progress.epoch_log = report.epoch_batch_sizes
