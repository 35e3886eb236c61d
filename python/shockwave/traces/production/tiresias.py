"""Tiresias simulator CSV: one row per job, with a header row.

Columns: ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval`` (submit time and
duration in seconds). The conversion reads ``job_id``, ``num_gpu``, ``submit_time`` and
``duration``: gang size = ``num_gpu``, run time = ``duration``. The format has no user, virtual
cluster or status. Its ``model_name`` names models the bundled throughput tables do not hold;
jobs get a model family by the same seeded rule as the other sources.
"""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike
from pathlib import Path

from shockwave.errors import TraceError
from shockwave.traces.production.csv_input import header_table
from shockwave.traces.production.fields import (
    Where,
    optional_text,
    parse_count,
    parse_number,
    parse_seconds,
)
from shockwave.traces.production.records import SourceJob, SourceSchema

SCHEMA = SourceSchema(
    name="tiresias",
    clock="seconds",
    submit_field="submit_time",
    gpus_field="num_gpu",
    duration_field="duration",
    status_field=None,
    vc_field=None,
)
#: Columns the conversion reads.
COLUMNS = ("job_id", "num_gpu", "submit_time", "duration")


def resolve_tiresias(path: str | PathLike[str]) -> Path:
    """The trace file: ``path``, or the one ``.csv`` file of the directory ``path``."""
    given = Path(path)
    if given.is_dir():
        found = sorted(p for p in given.iterdir() if p.suffix == ".csv" and p.is_file())
        if len(found) != 1:
            raise TraceError(
                f"the directory holds {len(found)} .csv files; name the trace file itself",
                path=given,
            )
        return found[0]
    if not given.is_file():
        raise TraceError("no such file or directory", path=given)
    return given


class TiresiasReader:
    """A Tiresias-format CSV (``path``: the file, or a directory holding just it)."""

    schema = SCHEMA

    def __init__(self, path: str | PathLike[str]) -> None:
        self.file = resolve_tiresias(path)
        self.inputs: tuple[str, ...] = (str(self.file),)

    def jobs(self) -> Iterator[SourceJob]:
        """Every row as a :class:`SourceJob`, streamed."""
        path = self.file
        (c_id, c_gpus, c_submit, c_duration), rows = header_table(path, COLUMNS)
        name = str(path)
        for line, row in rows:
            where = Where(name, line)
            source_id = optional_text(row[c_id])
            if source_id is None:
                raise where.error("job_id", "missing")
            yield SourceJob(
                source_id=source_id,
                submit=parse_number(row[c_submit], where, "submit_time"),
                gpus=parse_count(row[c_gpus], where, "num_gpu"),
                duration=parse_seconds(row[c_duration], where, "duration"),
                user=None,
                vc=None,
                status=None,
                requested_gpus=None,
                where=where,
            )
