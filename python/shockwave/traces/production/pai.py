"""Alibaba PAI (cluster-trace-gpu-v2020): two CSV tables **without header rows**.

* ``pai_job_table.csv``: ``job_name,inst_id,user,status,start_time,end_time``; ``start_time`` is
  the submission (seconds, with an offset);
* ``pai_task_table.csv``: ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,
  plan_mem,plan_gpu,gpu_type``; ``plan_gpu`` is a percentage of one GPU per instance, empty for
  CPU tasks; a job has one or more tasks (``ps``, ``worker``, ...).

Rules: gang size = the sum over the job's tasks of ``inst_num x ceil(plan_gpu / 100)`` (an
instance with a fraction of a GPU takes a whole one; the fractional request, the sum of
``inst_num x plan_gpu / 100``, is kept as ``requested_gpus``); run time = the latest end minus the
earliest start of the job's **GPU tasks** (``plan_gpu`` > 0) that have both times: the time the
job held GPUs (a CPU task such as a parameter server holds none). GPU types: the ``gpu_type``
of the job's GPU tasks, lower-cased (``V100M32`` is ``v100m32``), become the job's
``gpu_types`` constraint (the types it may run on, in the order first seen); a job any of whose
GPU tasks names no specific type (empty, or ``MISC``: PAI's other kinds) is unconstrained.

The task table is read once and summarised per job (one small record per job with GPU tasks,
about 350 bytes: memory grows with the number of GPU jobs, not with the rows); the job table is
then streamed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from os import PathLike
from pathlib import Path

from shockwave.errors import TraceError
from shockwave.traces.production.csv_input import check_width, csv_rows
from shockwave.traces.production.fields import (
    MISSING,
    Where,
    optional_text,
    parse_count,
    parse_number,
)
from shockwave.traces.production.records import SourceJob, SourceSchema
from shockwave.worker_types import is_worker_type_name

SCHEMA = SourceSchema(
    name="pai",
    clock="seconds",
    submit_field="start_time",
    gpus_field="inst_num x plan_gpu",
    duration_field="task start_time/end_time",
    status_field="status",
    vc_field=None,
)
#: PAI's ``gpu_type`` for "other kinds" of GPU (lower-cased): no specific type.
UNNAMED_GPU_TYPE = "misc"
JOB_TABLE = "pai_job_table.csv"
TASK_TABLE = "pai_task_table.csv"
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name", "task_name", "inst_num", "status", "start_time", "end_time",
    "plan_cpu", "plan_mem", "plan_gpu", "gpu_type",
)  # fmt: skip


def resolve_pai(path: str | PathLike[str]) -> tuple[Path, Path]:
    """``(job table, task table)``: from the release's directory, or from either table's path
    (the other is expected beside it)."""
    given = Path(path)
    if given.is_dir():
        directory = given
    elif given.is_file() and given.name in (JOB_TABLE, TASK_TABLE):
        directory = given.parent
    elif given.is_file():
        raise TraceError(
            f"a PAI trace is two tables: give the directory holding {JOB_TABLE} and "
            f"{TASK_TABLE}, or one of them by that name",
            path=given,
        )
    else:
        raise TraceError("no such file or directory", path=given)
    tables = directory / JOB_TABLE, directory / TASK_TABLE
    for table in tables:
        if not table.is_file():
            raise TraceError(
                f"no {table.name} here (a PAI trace needs both tables)", path=directory
            )
    return tables


class _GpuTasks:
    """What the task table says about one job's GPU tasks."""

    __slots__ = ("any_type", "claimed", "end", "gpus", "requested", "start", "types")

    def __init__(self) -> None:
        #: the named GPU types of its tasks, in order; ``any_type``: a task named none
        self.types: list[str] = []
        self.any_type = False
        self.gpus = 0
        self.requested = 0.0
        self.start = math.inf
        self.end = -math.inf
        #: (pass, line) of the job-table row that took these tasks, to catch repeated job names.
        self.claimed = (0, 0)


class PaiReader:
    """An Alibaba PAI v2020 trace (``path``: the directory, or one of its two tables)."""

    schema = SCHEMA

    def __init__(self, path: str | PathLike[str]) -> None:
        self.job_table, self.task_table = resolve_pai(path)
        self.inputs: tuple[str, ...] = (str(self.job_table), str(self.task_table))
        self._tasks: dict[str, _GpuTasks] | None = None
        self._passes = 0

    def jobs(self) -> Iterator[SourceJob]:
        """Every row of the job table as a :class:`SourceJob`, streamed (the task table is
        summarised on the first call)."""
        if self._tasks is None:
            self._tasks = _summarise_tasks(self.task_table)
        tasks = self._tasks
        self._passes += 1
        this_pass = self._passes
        name = str(self.job_table)
        for line, row in csv_rows(self.job_table):
            check_width(row, len(JOB_COLUMNS), self.job_table, line)
            where = Where(name, line)
            job_name = optional_text(row[0])
            if job_name is None:
                raise where.error("job_name", "missing")
            submitted = row[4].strip()
            if submitted in MISSING:
                raise where.error("start_time", "missing (the submission time)")
            submit = parse_number(submitted, where, "start_time")
            summary = tasks.get(job_name)
            gpus, duration, requested, types = 0, 0.0, None, None
            if summary is not None:
                if summary.claimed[0] == this_pass:
                    raise where.error(
                        "job_name", f"job {job_name!r} appears twice (first on line "
                        f"{summary.claimed[1]})",
                    )  # fmt: skip
                summary.claimed = (this_pass, line)
                gpus = summary.gpus
                if summary.end >= summary.start:
                    duration = summary.end - summary.start
                if summary.requested < gpus:  # fractional (a float sum a rounding above: whole)
                    requested = summary.requested
                if summary.types and not summary.any_type:
                    types = tuple(summary.types)
            yield SourceJob(
                source_id=job_name,
                submit=submit,
                gpus=gpus,
                duration=duration,
                user=optional_text(row[2]),
                vc=None,
                status=optional_text(row[3]),
                requested_gpus=requested,
                where=where,
                gpu_types=types,
            )


def _summarise_tasks(path: Path) -> dict[str, _GpuTasks]:
    """Per job with GPU tasks: GPUs (whole and requested) and the span of its GPU tasks."""
    summaries: dict[str, _GpuTasks] = {}
    name = str(path)
    for line, row in csv_rows(path):
        check_width(row, len(TASK_COLUMNS), path, line)
        plan_text = row[8].strip()
        if plan_text in MISSING:
            continue  # a CPU task
        where = Where(name, line)
        plan = parse_number(plan_text, where, "plan_gpu")
        if plan < 0:
            raise where.error("plan_gpu", f"must be >= 0 (percent of a GPU), got {plan_text!r}")
        instances = parse_count(row[2], where, "inst_num")
        if plan == 0 or instances == 0:
            continue
        job_name = optional_text(row[0])
        if job_name is None:
            raise where.error("job_name", "missing")
        summary = summaries.get(job_name)
        if summary is None:
            summary = summaries[job_name] = _GpuTasks()
        summary.gpus += instances * math.ceil(plan / 100)
        gpu_type = row[9].strip()
        if gpu_type in MISSING or gpu_type.lower() == UNNAMED_GPU_TYPE:
            summary.any_type = True
        elif not is_worker_type_name(gpu_type):
            raise where.error("gpu_type", f"{row[9].strip()!r} is not a GPU type name")
        elif gpu_type.lower() not in summary.types:
            summary.types.append(gpu_type.lower())
        summary.requested += instances * plan / 100
        start_text, end_text = row[4].strip(), row[5].strip()
        if start_text not in MISSING and end_text not in MISSING:
            start = parse_number(start_text, where, "start_time")
            end = parse_number(end_text, where, "end_time")
            if end < start:
                raise where.error("end_time", "is before the task's start_time")
            summary.start = min(summary.start, start)
            summary.end = max(summary.end, end)
    return summaries
