"""Reading and writing workloads: ``.trace`` files (Gavel/Shockwave) and the native format.

* :func:`load_workload` reads either kind, by file name: ``*.jsonl`` is native, anything else is a
  ``.trace`` and needs a throughput table;
* :func:`convert_trace` turns a ``.trace`` plus a throughput file into a native file;
* :func:`summarize` computes what ``shockwave trace inspect`` prints;
* :func:`generate_workload` draws a synthetic trace (:class:`GeneratorParameters`), as the
  original's generator does; :func:`write_generated` writes one as ``.jsonl`` or ``.trace``.
"""

from __future__ import annotations

import dataclasses
from os import PathLike
from pathlib import Path

from shockwave.errors import TraceError
from shockwave.profile_rules import epoch_durations
from shockwave.throughputs import ThroughputTable
from shockwave.traces.gavel_format import (
    TraceRecord,
    load_throughputs,
    parse_trace_lines,
    read_gavel_trace,
)
from shockwave.traces.generate import generate_records, generate_workload, write_generated
from shockwave.traces.generator_parameters import GeneratorParameterError, GeneratorParameters
from shockwave.traces.native import FORMAT_VERSION, read_native, write_native
from shockwave.traces.summary import WorkloadSummary, summarize
from shockwave.traces.trace_writer import write_trace
from shockwave.workload import Job, Workload

__all__ = [
    "FORMAT_VERSION",
    "GeneratorParameterError",
    "GeneratorParameters",
    "TraceRecord",
    "WorkloadSummary",
    "convert_trace",
    "generate_records",
    "generate_workload",
    "load_throughputs",
    "load_workload",
    "parse_trace_lines",
    "read_gavel_trace",
    "read_native",
    "summarize",
    "write_generated",
    "write_native",
    "write_trace",
]


def is_native(path: str | PathLike[str]) -> bool:
    """Whether ``path`` names a native workload file (by its ``.jsonl`` suffix)."""
    return Path(path).suffix == ".jsonl"


def load_workload(
    path: str | PathLike[str],
    throughputs: ThroughputTable | str | PathLike[str] | None = None,
) -> Workload:
    """Read a workload from a native ``.jsonl`` file or a ``.trace`` file.

    Args:
        path: the file.
        throughputs: required for a ``.trace`` (a table, a throughput JSON path, or ``"tacc"`` /
            ``"wisr"`` for a bundled table). For a native file it replaces the table the file
            carries, if given, and the epoch durations of its runnable jobs (those with a
            ``run`` spec) are recomputed from it: ``(samples_per_epoch / bs) / thr(model, bs,
            gang)`` seconds, the table measured by ``shockwave cluster profile`` (whose
            runtime costs, when it has them, replace the file's). ``"machine"`` names this
            machine's own profile (:func:`shockwave.runtime.machine.machine_profile`).

    Raises:
        TraceError: for malformed input, or a ``.trace`` without throughputs.
    """
    if is_native(path):
        workload = read_native(path)
        if throughputs is not None:
            table = load_throughputs(throughputs)
            jobs = tuple(_durations_from_table(job, table, path) for job in workload.jobs)
            workload = dataclasses.replace(
                workload,
                jobs=jobs,
                throughputs=table,
                costs=table.costs if table.costs is not None else workload.costs,
            )
        return workload
    if throughputs is None:
        raise TraceError(
            "a .trace file needs a throughput table (--throughputs FILE, or 'tacc'/'wisr')",
            path=path,
        )
    return read_gavel_trace(path, throughputs)


def convert_trace(
    trace: str | PathLike[str],
    throughputs: ThroughputTable | str | PathLike[str],
    output: str | PathLike[str],
) -> Workload:
    """Convert a ``.trace`` and its throughput table into a native workload file; return it."""
    workload = read_gavel_trace(trace, throughputs)
    write_native(workload, output)
    return workload


def _durations_from_table(job: Job, table: ThroughputTable, path: str | PathLike[str]) -> Job:
    """``job`` with the epoch durations of ``table`` if it is runnable, else unchanged."""
    if job.run is None or job.samples_per_epoch is None:
        return job
    try:
        seconds = epoch_durations(
            job.model, job.batch_sizes, job.gang_size, table, job.samples_per_epoch
        )
    except (KeyError, ValueError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        raise TraceError(f"job {job.job_id}: {message}", path=path) from None
    return dataclasses.replace(job, epoch_seconds=seconds)
