"""Writer for the ``.trace`` formats (the inverse of :mod:`shockwave.traces.gavel_format`).

Numbers are formatted as the original's ``Job.__str__`` and trace generator format them, so a
generated trace is byte-for-byte what the original would write: ``needs_data_dir``,
``total_steps``, ``scale_factor``, ``priority_weight``, ``duration`` and ``arrival_time`` as
integers (``%d``, truncating), ``SLO`` as ``%f`` with ``-1.000000`` for none. A priority weight
that is not a whole number is written in full (``1.5``), which the readers accept, rather than
truncated as the original would.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from pathlib import Path

from shockwave.traces.gavel_format import TraceRecord


def format_trace_line(record: TraceRecord) -> str:
    """One ``.trace`` line, without its newline: the 12-field Shockwave variant, or the 10-field
    Gavel variant when ``record.duration`` is ``None``.

    Raises:
        ValueError: for a Gavel-variant record whose mode is not ``static`` (that variant has no
            mode field, so the mode would be lost).
    """
    weight = record.priority_weight
    fields = [
        record.job_type,
        record.command,
        record.working_directory,
        record.num_steps_arg,
        str(int(record.needs_data_dir)),
        str(int(record.total_steps)),
        str(int(record.scale_factor)),
        str(int(weight)) if float(weight).is_integer() else repr(float(weight)),
        f"{-1.0 if record.slo is None else record.slo:f}",
    ]
    if record.duration is None:
        if record.mode != "static":
            raise ValueError(
                f"record on line {record.line}: a trace without durations (Gavel format) cannot "
                f"hold mode {record.mode!r}"
            )
    else:
        fields.insert(7, record.mode)
        fields.append(str(int(record.duration)))
    fields.append(str(int(record.arrival_time)))
    return "\t".join(fields)


def write_trace(records: Iterable[TraceRecord], path: str | PathLike[str]) -> None:
    """Write records to ``path`` as a ``.trace`` file, one line each, in the order given."""
    with Path(path).open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(format_trace_line(record))
            out.write("\n")
