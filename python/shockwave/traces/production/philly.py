"""Microsoft Philly ``cluster_job_log``: one JSON array of jobs.

Each job (the release's README): ``{"status": "Pass"|"Killed"|"Failed", "vc", "jobid", "user",
"submitted_time": "YYYY-MM-DD HH:MM:SS", "attempts": [{"start_time", "end_time", "detail":
[{"ip", "gpus": ["gpu0", ...]}]}]}``. A job may have no attempts; an attempt may lack a start or
an end time (``null``, the text ``"None"``, or no key); a missing last end time means the job was
still running when the log was taken.

Rules: gang size = the GPUs of the job's **last attempt that recorded GPUs**, summed over its
machines; run time = the sum of ``end - start`` over the attempts that have both times.
"""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike
from typing import Any

from shockwave.traces.production.csv_input import resolve_file
from shockwave.traces.production.fields import MISSING, Where, parse_datetime
from shockwave.traces.production.json_array import json_array_elements
from shockwave.traces.production.records import SourceJob, SourceSchema

SCHEMA = SourceSchema(
    name="philly",
    clock="datetime",
    submit_field="submitted_time",
    gpus_field="attempts[].detail[].gpus",
    duration_field="attempts[].start_time/end_time",
    status_field="status",
    vc_field="vc",
    gpus_need_a_run=True,
)
#: The release's file name.
FILE_NAME = "cluster_job_log"


class PhillyReader:
    """A Philly ``cluster_job_log`` (``path``: the file or its directory)."""

    schema = SCHEMA

    def __init__(self, path: str | PathLike[str]) -> None:
        self.file = resolve_file(path, FILE_NAME, "Philly")
        self.inputs: tuple[str, ...] = (str(self.file),)

    def jobs(self) -> Iterator[SourceJob]:
        """Every element of the array as a :class:`SourceJob`, streamed."""
        name = str(self.file)
        for index, element in json_array_elements(self.file):
            yield philly_job(element, Where(name, element=index))


def philly_job(element: Any, where: Where) -> SourceJob:
    """One job of the log, by the rules of the module notes."""
    if not isinstance(element, dict):
        raise where.error(None, f"each job must be a JSON object, got {type(element).__name__}")
    job_id = element.get("jobid")
    if isinstance(job_id, bool) or not isinstance(job_id, (str, int)) or job_id == "":
        raise where.error("jobid", f"must be a job id (text), got {job_id!r}")
    submitted = element.get("submitted_time")
    if not isinstance(submitted, str):
        raise where.error(
            "submitted_time", f"must be a time 'YYYY-MM-DD HH:MM:SS', got {submitted!r}"
        )
    submit = parse_datetime(submitted, where, "submitted_time")
    attempts = element.get("attempts")
    if attempts is None:
        attempts = []
    if not isinstance(attempts, list):
        raise where.error("attempts", f"must be a list, got {type(attempts).__name__}")
    gpus = 0
    duration = 0.0
    for number, attempt in enumerate(attempts):
        field = f"attempts[{number}]"
        if not isinstance(attempt, dict):
            raise where.error(field, f"must be an object, got {type(attempt).__name__}")
        start = _optional_time(attempt.get("start_time"), where, f"{field}.start_time")
        end = _optional_time(attempt.get("end_time"), where, f"{field}.end_time")
        if start is not None and end is not None:
            if end < start:
                raise where.error(f"{field}.end_time", "is before the attempt's start_time")
            duration += end - start
        recorded = _attempt_gpus(attempt.get("detail"), where, f"{field}.detail")
        if recorded > 0:
            gpus = recorded  # the last attempt that recorded GPUs wins
    return SourceJob(
        source_id=str(job_id),
        submit=submit,
        gpus=gpus,
        duration=duration,
        user=_optional_text(element.get("user"), where, "user"),
        vc=_optional_text(element.get("vc"), where, "vc"),
        status=_optional_text(element.get("status"), where, "status"),
        requested_gpus=None,
        where=where,
    )


def _optional_time(value: Any, where: Where, field: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip() in MISSING):
        return None
    if not isinstance(value, str):
        raise where.error(field, f"must be a time 'YYYY-MM-DD HH:MM:SS' or null, got {value!r}")
    return parse_datetime(value.strip(), where, field)


def _attempt_gpus(detail: Any, where: Where, field: str) -> int:
    """GPUs an attempt recorded: the ``gpus`` lists of its machines, summed."""
    if detail is None:
        return 0
    if not isinstance(detail, list):
        raise where.error(field, f"must be a list of machines, got {type(detail).__name__}")
    total = 0
    for number, machine in enumerate(detail):
        if not isinstance(machine, dict):
            raise where.error(f"{field}[{number}]", 'must be an object {"ip", "gpus"}')
        gpus = machine.get("gpus")
        if gpus is None:
            continue
        if not isinstance(gpus, list):
            raise where.error(
                f"{field}[{number}].gpus", f"must be a list of GPU names, got {gpus!r}"
            )
        total += len(gpus)
    return total


def _optional_text(value: Any, where: Where, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise where.error(field, f"must be text, got {value!r}")
    text = str(value).strip()
    return None if text in MISSING else text
