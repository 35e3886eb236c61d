"""Reader for the Gavel (10-field) and Shockwave (12-field) ``.trace`` formats.

One job per line, tab-separated, no header, no comments; the line order defines the job ids.

==  ===================  =====================================================================
 #  field                meaning
==  ===================  =====================================================================
 1  ``job_type``         ``"<Model> (batch size <B>)"``; B is the initial batch size
 2  ``command``          unused in simulation
 3  ``working_directory``  unused
 4  ``num_steps_arg``    unused
 5  ``needs_data_dir``   ``0`` or ``1``; unused
 6  ``total_steps``      iterations at the initial batch size (the job's work)
 7  ``scale_factor``     gang size in GPUs, >= 1
 8  ``mode``             Shockwave only: ``static``, ``accordion`` or ``gns``
 9  ``priority_weight``  float > 0 (1 in every shipped trace)
10  ``SLO``              float; negative means none; unused
11  ``duration``         Shockwave only: nominal exclusive runtime, integer seconds
12  ``arrival_time``     submission time, seconds, non-decreasing down the file
==  ===================  =====================================================================

The Gavel variant omits ``mode`` and ``duration``; its jobs are static.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

from shockwave.catalog import ADAPTATION_MODES, MODEL_FAMILIES, AdaptationMode
from shockwave.errors import JobFieldError, TraceError
from shockwave.limits import INT64_MAX, MAX_EPOCHS_PER_JOB
from shockwave.profile_rules import batch_size_schedule, epoch_durations, num_epochs
from shockwave.throughputs import BUNDLED_THROUGHPUTS, ThroughputTable, parse_job_type
from shockwave.workload import Job, Workload

GAVEL_FIELDS = (
    "job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
    "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time",
)  # fmt: skip
SHOCKWAVE_FIELDS = (
    "job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
    "total_steps", "scale_factor", "mode", "priority_weight", "SLO", "duration", "arrival_time",
)  # fmt: skip


@dataclass(frozen=True)
class TraceRecord:
    """One parsed line of a ``.trace`` file (see the module docs for the fields).

    Attributes:
        line: 1-based line number in the file.
        model: model name, from ``job_type``.
        initial_batch_size: B, from ``job_type``.
        slo: ``None`` when the file holds a negative value.
        duration: ``None`` for the Gavel variant.
    """

    line: int
    job_type: str
    model: str
    initial_batch_size: int
    command: str
    working_directory: str
    num_steps_arg: str
    needs_data_dir: bool
    total_steps: int
    scale_factor: int
    mode: AdaptationMode
    priority_weight: float
    slo: float | None
    duration: float | None
    arrival_time: float


T = TypeVar("T")


def parse_trace_lines(text: str, *, path: str | PathLike[str] = "<input>") -> list[TraceRecord]:
    """Parse the text of a ``.trace`` file into records, validating every field.

    Raises:
        TraceError: naming ``path``, the line and the field, for a malformed line, an unknown
            model, a negative or non-finite number, a gang size of 0, decreasing arrival times,
            or an empty trace.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    records: list[TraceRecord] = []
    for number, raw in enumerate(lines, start=1):
        record = _parse_line(raw.rstrip("\r"), number, path)
        if records and record.arrival_time < records[-1].arrival_time:
            raise TraceError(
                f"arrival times must be non-decreasing ({record.arrival_time:g} s after "
                f"{records[-1].arrival_time:g} s on line {records[-1].line})",
                path=path, line=number, field="arrival_time",
            )  # fmt: skip
        records.append(record)
    if not records:
        raise TraceError("the trace holds no jobs", path=path)
    return records


def _parse_line(raw: str, number: int, path: str | PathLike[str]) -> TraceRecord:
    parts = raw.split("\t")
    if len(parts) == len(SHOCKWAVE_FIELDS):
        values = dict(zip(SHOCKWAVE_FIELDS, parts, strict=True))
    elif len(parts) == len(GAVEL_FIELDS):
        values = dict(zip(GAVEL_FIELDS, parts, strict=True))
    else:
        raise TraceError(
            f"expected {len(GAVEL_FIELDS)} (Gavel) or {len(SHOCKWAVE_FIELDS)} (Shockwave) "
            f"tab-separated fields, got {len(parts)}",
            path=path, line=number,
        )  # fmt: skip

    def field(name: str, convert: Callable[[str], T], check: Callable[[T], str | None]) -> T:
        text = values[name].strip()
        try:
            value = convert(text)
        except ValueError:
            raise TraceError(
                f"cannot read {text!r} as {convert.__name__}", path=path, line=number, field=name
            ) from None
        problem = check(value)
        if problem is not None:
            raise TraceError(f"{problem}, got {text!r}", path=path, line=number, field=name)
        return value

    def finite_at_least(low: float, *, strict: bool = False) -> Callable[[float], str | None]:
        def check(value: float) -> str | None:
            if not math.isfinite(value):
                return "must be finite"
            if value < low or (strict and value == low):
                return f"must be {'>' if strict else '>='} {low:g}"
            return None

        return check

    job_type = values["job_type"]
    try:
        model, initial_bs = parse_job_type(job_type)
    except ValueError as exc:
        raise TraceError(str(exc), path=path, line=number, field="job_type") from None
    if model not in MODEL_FAMILIES:
        raise TraceError(
            f"unknown model {model!r} (known: {', '.join(sorted(MODEL_FAMILIES))})",
            path=path, line=number, field="job_type",
        )  # fmt: skip
    if not 1 <= initial_bs <= INT64_MAX:
        raise TraceError(
            f"batch size must be >= 1 (and at most 2**63 - 1), got {initial_bs}",
            path=path, line=number, field="job_type",
        )  # fmt: skip

    def mode_check(value: AdaptationMode) -> str | None:
        return None if value in ADAPTATION_MODES else f"must be one of {ADAPTATION_MODES}"

    def flag_check(value: int) -> str | None:
        return None if value in (0, 1) else "must be 0 or 1"

    def as_mode(text: str) -> AdaptationMode:
        return text  # type: ignore[return-value]  # mode_check narrows it

    mode: AdaptationMode = "static"
    duration: float | None = None
    if "mode" in values:
        mode = field("mode", as_mode, mode_check)
        duration = field("duration", float, finite_at_least(0.0))
    slo = field("SLO", float, lambda v: None if not math.isnan(v) else "must not be NaN")
    return TraceRecord(
        line=number,
        job_type=job_type,
        model=model,
        initial_batch_size=initial_bs,
        command=values["command"],
        working_directory=values["working_directory"],
        num_steps_arg=values["num_steps_arg"],
        needs_data_dir=bool(field("needs_data_dir", int, flag_check)),
        total_steps=field("total_steps", int, _integer_in(1, INT64_MAX)),
        scale_factor=field("scale_factor", int, _integer_in(1, INT64_MAX, unit=" GPU")),
        mode=mode,
        priority_weight=field("priority_weight", float, finite_at_least(0.0, strict=True)),
        slo=slo if slo >= 0 else None,
        duration=duration,
        arrival_time=field("arrival_time", float, finite_at_least(0.0)),
    )


def _integer_in(low: int, high: int, *, unit: str = "") -> Callable[[int], str | None]:
    def check(value: int) -> str | None:
        if value < low:
            return f"must be >= {low}{unit}"
        if value > high:
            return f"must be at most {high}"
        return None

    return check


def record_to_job(
    record: TraceRecord,
    job_id: int,
    throughputs: ThroughputTable,
    *,
    path: str | PathLike[str] = "<input>",
) -> Job:
    """Build a job's per-epoch profile from its trace line, as the original does.

    Raises:
        TraceError: if the throughput table lacks a batch size the profile needs, or a needed
            throughput is zero.
    """
    family = MODEL_FAMILIES[record.model]
    epochs = num_epochs(record.total_steps, family.samples_per_epoch, record.initial_batch_size)
    if epochs > MAX_EPOCHS_PER_JOB:
        raise TraceError(
            f"{record.total_steps} steps make {epochs} epochs; a job may have at most "
            f"{MAX_EPOCHS_PER_JOB} (shockwave.limits.MAX_EPOCHS_PER_JOB)",
            path=path, line=record.line, field="total_steps",
        )  # fmt: skip
    schedule = batch_size_schedule(
        record.mode, record.model, record.initial_batch_size, record.scale_factor, epochs
    )
    try:
        seconds = epoch_durations(record.model, schedule, record.scale_factor, throughputs)
    except KeyError as exc:
        raise TraceError(
            f"{exc.args[0]} (unknown batch size or gang size for this model)",
            path=path, line=record.line, field="job_type",
        ) from None  # fmt: skip
    except ValueError as exc:
        raise TraceError(str(exc), path=path, line=record.line, field="job_type") from None
    try:
        return _job(record, job_id, family, schedule, seconds)
    except JobFieldError as exc:
        field = _TRACE_FIELD_OF_JOB_FIELD.get(exc.field, exc.field)
        raise TraceError(exc.reason, path=path, line=record.line, field=field) from None


#: The ``.trace`` field each :class:`Job` field comes from.
_TRACE_FIELD_OF_JOB_FIELD = {
    "arrival_time": "arrival_time",
    "gang_size": "scale_factor",
    "weight": "priority_weight",
    "epoch_seconds": "total_steps",
    "batch_sizes": "total_steps",
    "total_steps": "total_steps",
    "trace_duration": "duration",
    "mode": "mode",
    "model": "job_type",
}


def _job(record: TraceRecord, job_id: int, family: Any, schedule: Any, seconds: Any) -> Job:
    return Job(
        job_id=job_id,
        arrival_time=record.arrival_time,
        gang_size=record.scale_factor,
        model=record.model,
        dataset=family.dataset,
        mode=record.mode,
        batch_sizes=schedule,
        epoch_seconds=seconds,
        weight=record.priority_weight,
        total_steps=record.total_steps,
        samples_per_epoch=family.samples_per_epoch,
        trace_duration=record.duration,
    )


def read_gavel_trace(
    path: str | PathLike[str], throughputs: ThroughputTable | str | PathLike[str]
) -> Workload:
    """Read a ``.trace`` file and profile its jobs with a throughput table.

    Args:
        path: the ``.trace`` file (10 or 12 fields per line).
        throughputs: a :class:`ThroughputTable`, the path of a throughput JSON file, or the name
            of a bundled table (``"tacc"``, ``"wisr"``).

    Returns:
        The workload; job ``i`` is line ``i + 1``. The throughput table is kept on it, restricted
        to the models of the trace.

    Raises:
        TraceError: for any malformed input, naming the file, the line and the field.
    """
    table = load_throughputs(throughputs)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"cannot read trace ({exc.strerror})", path=path) from None
    except UnicodeDecodeError:
        raise TraceError("not a text file (not UTF-8)", path=path) from None
    records = parse_trace_lines(text, path=path)
    jobs = tuple(record_to_job(r, i, table, path=path) for i, r in enumerate(records))
    models = {r.model for r in records}
    return Workload(jobs, table.restricted_to(models), source=str(path))


def load_throughputs(throughputs: ThroughputTable | str | PathLike[str]) -> ThroughputTable:
    """Accept a table, a throughput file path, a bundled table's name, or ``"machine"``: this
    machine's cached profile (:mod:`shockwave.runtime.machine`; an error if it was never
    measured)."""
    if isinstance(throughputs, ThroughputTable):
        return throughputs
    if isinstance(throughputs, str) and throughputs == "machine":
        from shockwave.runtime.machine import machine_profile  # the runtime measures it

        return machine_profile(measure=False)
    if isinstance(throughputs, str) and throughputs in BUNDLED_THROUGHPUTS:
        return ThroughputTable.bundled(throughputs)
    return ThroughputTable.from_file(throughputs)
