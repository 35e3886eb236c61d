"""SenseTime Helios ``cluster_log.csv``: one row per job, with a header row.

Columns (the release's README): ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,
start_time,end_time,duration,queue``; times ``YYYY-MM-DD HH:MM:SS``; ``duration`` = end - start in
seconds; states ``COMPLETED``, ``CANCELLED``, ``FAILED``, ``TIMEOUT``, ``NODE_FAIL``; CPU-only
jobs have ``gpu_num`` 0. The conversion reads ``job_id``, ``user``, ``vc``, ``gpu_num``,
``state``, ``submit_time`` and ``duration`` (other columns may be absent); gang size =
``gpu_num``, run time = ``duration`` (an empty ``duration``: the job never ran).
"""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike

from shockwave.traces.production.csv_input import header_table, resolve_file
from shockwave.traces.production.fields import (
    MISSING,
    Where,
    optional_text,
    parse_count,
    parse_datetime,
    parse_seconds,
)
from shockwave.traces.production.records import SourceJob, SourceSchema

SCHEMA = SourceSchema(
    name="helios",
    clock="datetime",
    submit_field="submit_time",
    gpus_field="gpu_num",
    duration_field="duration",
    status_field="state",
    vc_field="vc",
)
#: The release's file name.
FILE_NAME = "cluster_log.csv"
#: Columns the conversion reads.
COLUMNS = ("job_id", "user", "vc", "gpu_num", "state", "submit_time", "duration")


class HeliosReader:
    """A Helios ``cluster_log.csv`` (``path``: the file or its directory)."""

    schema = SCHEMA

    def __init__(self, path: str | PathLike[str]) -> None:
        self.file = resolve_file(path, FILE_NAME, "Helios")
        self.inputs: tuple[str, ...] = (str(self.file),)

    def jobs(self) -> Iterator[SourceJob]:
        """Every row as a :class:`SourceJob`, streamed."""
        path = self.file
        (c_id, c_user, c_vc, c_gpus, c_state, c_submit, c_duration), rows = header_table(
            path, COLUMNS
        )
        name = str(path)
        for line, row in rows:
            where = Where(name, line)
            source_id = optional_text(row[c_id])
            if source_id is None:
                raise where.error("job_id", "missing")
            duration_text = row[c_duration].strip()
            yield SourceJob(
                source_id=source_id,
                submit=parse_datetime(row[c_submit].strip(), where, "submit_time"),
                gpus=parse_count(row[c_gpus], where, "gpu_num"),
                duration=(
                    0.0
                    if duration_text in MISSING
                    else parse_seconds(duration_text, where, "duration")
                ),
                user=optional_text(row[c_user]),
                vc=optional_text(row[c_vc]),
                status=optional_text(row[c_state]),
                requested_gpus=None,
                where=where,
            )
