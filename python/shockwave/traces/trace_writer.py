"""Writer for the ``.trace`` formats (the inverse of :mod:`shockwave.traces.gavel_format`).

Numbers are formatted as the original's ``Job.__str__`` and trace generator format them, so a
generated trace is byte-for-byte what the original would write: ``needs_data_dir``,
``total_steps``, ``scale_factor``, ``priority_weight``, ``duration`` and ``arrival_time`` as
integers (``%d``), ``SLO`` as ``%f`` with ``-1.000000`` for none. A value those formats would
change (a priority weight of 1.5, an arrival at 12.25 s, an SLO of 1e-7) is written in full
instead, which the readers accept: writing never loses information.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike

from shockwave.atomic import atomic_writer
from shockwave.traces.gavel_format import TraceRecord


def format_trace_line(record: TraceRecord) -> str:
    """One ``.trace`` line, without its newline: the 12-field Shockwave variant, or the 10-field
    Gavel variant when ``record.duration`` is ``None``.

    Raises:
        ValueError: for a Gavel-variant record whose mode is not ``static`` (that variant has no
            mode field, so the mode would be lost).
    """
    fields = [
        record.job_type,
        record.command,
        record.working_directory,
        record.num_steps_arg,
        str(int(record.needs_data_dir)),
        str(int(record.total_steps)),
        str(int(record.scale_factor)),
        _whole(record.priority_weight),
        _fixed(-1.0 if record.slo is None else record.slo),
    ]
    if record.duration is None:
        if record.mode != "static":
            raise ValueError(
                f"record on line {record.line}: a trace without durations (Gavel format) cannot "
                f"hold mode {record.mode!r}"
            )
    else:
        fields.insert(7, record.mode)
        fields.append(_whole(record.duration))
    fields.append(_whole(record.arrival_time))
    return "\t".join(fields)


def _whole(value: float) -> str:
    """``%d`` text of a whole number; any other number in full."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _fixed(value: float) -> str:
    """``%f`` text of a number, unless that would change it; then the number in full."""
    text = f"{value:f}"
    return text if float(text) == value else repr(float(value))


def write_trace(records: Iterable[TraceRecord], path: str | PathLike[str]) -> None:
    """Write records to ``path`` as a ``.trace`` file, one line each, in the order given.

    Records are streamed (an iterator is consumed one record at a time) into a temporary file
    that replaces ``path`` atomically once all are written (:mod:`shockwave.atomic`): an
    interrupted or failed write leaves the previous file intact and no partial file.
    """
    with atomic_writer(path) as out:
        for record in records:
            out.write(format_trace_line(record))
            out.write("\n")
