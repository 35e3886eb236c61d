"""Converting a production trace into a native workload, streaming.

The input is read once. Every job is tested against the filters
(:data:`~shockwave.traces.production.options.DROP_REASONS`) as it is read; the jobs that pass
are written, compactly (``marshal``), to a temporary spool file (unlinked at once: nothing is
left behind, even after a crash), while the pass finds the origin of arrivals (the earliest
submission in the submission window: the whole input without ``--start``/``--end``) and, with
``--max-jobs``, the latest submission kept. A second pass over the spool then writes each kept
job to the output as soon as it is read back, its arrival its submission minus the origin, its
profile from the seeded rule (:mod:`shockwave.traces.production.assignment`). Memory holds one
job at a time (and, with ``--max-jobs``, one number per job that passes the other filters; for
PAI, the task table's summary per GPU job), never the whole input or output; the spool takes
about 100 bytes of disk per kept job. Jobs keep the input's order.
"""

from __future__ import annotations

import marshal
import math
import tempfile
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from shockwave.errors import JobFieldError, TraceError
from shockwave.limits import INT64_MAX, MAX_SECONDS
from shockwave.throughputs import ThroughputTable
from shockwave.traces.gavel_format import load_throughputs
from shockwave.traces.native import (
    FORMAT_VERSION,
    TYPED_FORMAT_VERSION,
    encode_epochs,
    write_native_records,
)
from shockwave.traces.production.assignment import JobAssigner, NoJobTypeError, job_uniforms
from shockwave.traces.production.fields import Where, format_datetime
from shockwave.traces.production.helios import HeliosReader
from shockwave.traces.production.options import (
    DROP_REASONS,
    PLAUSIBLE_SECONDS,
    ConversionOptionError,
    ConversionOptions,
)
from shockwave.traces.production.pai import PaiReader
from shockwave.traces.production.philly import PhillyReader
from shockwave.traces.production.records import SourceJob, SourceReader, SourceSchema
from shockwave.traces.production.tiresias import TiresiasReader
from shockwave.workload import Job, Workload

#: The sources ``trace convert --from`` reads.
SOURCES: tuple[str, ...] = ("philly", "helios", "pai", "tiresias")
#: Shortest run time that counts as having run, seconds (the traces record whole seconds, PAI
#: fractions of one): a job that held its GPUs for less never ran.
MIN_RUN_SECONDS = 1e-3


def open_source(source: str, path: str | PathLike[str]) -> SourceReader:
    """The reader of a production trace: ``source`` one of :data:`SOURCES`, ``path`` the
    directory as unpacked from the release or the table file itself.

    Raises:
        ConversionOptionError: for an unknown source.
        TraceError: if the files are not there.
    """
    readers: dict[str, type[PhillyReader | HeliosReader | PaiReader | TiresiasReader]] = {
        "philly": PhillyReader,
        "helios": HeliosReader,
        "pai": PaiReader,
        "tiresias": TiresiasReader,
    }
    if source not in readers:
        raise ConversionOptionError(
            "--from", f"must be one of {', '.join(SOURCES)}, got {source!r}"
        )
    return readers[source](path)


@dataclass(frozen=True)
class ConversionReport:
    """What a conversion read, kept and dropped (the native header's ``conversion`` object).

    Attributes:
        source: ``philly``, ``helios``, ``pai`` or ``tiresias``.
        input: the path given.
        files: the files read.
        read: jobs in the input.
        kept: jobs written.
        dropped: jobs not written, per reason (:data:`DROP_REASONS`, every reason listed).
        origin: the submission time that is arrival 0, as the trace writes times.
        seed, mode, throughputs: the assignment's settings (``throughputs``: the table's source).
        filters: the filters given.
        time_unit: ``--time-unit`` when given (``None``: seconds; written only when given).
    """

    source: str
    input: str
    files: tuple[str, ...]
    read: int
    kept: int
    dropped: dict[str, int]
    origin: str | float
    seed: int
    mode: str
    throughputs: str
    filters: dict[str, Any] = field(default_factory=dict)
    time_unit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as written in the native header."""
        unit = {} if self.time_unit is None else {"time_unit": self.time_unit}
        return {
            "from": self.source,
            "input": self.input,
            "files": list(self.files),
            "read": self.read,
            "kept": self.kept,
            "dropped": dict(self.dropped),
            "origin": self.origin,
            "seed": self.seed,
            "mode": self.mode,
            "throughputs": self.throughputs,
            "filters": dict(self.filters),
            **unit,
        }

    def render(self) -> str:
        """A few lines for the command line."""
        return render_conversion(self.to_dict())


def render_conversion(conversion: Mapping[str, Any]) -> str:
    """Human-readable lines of a native header's ``conversion`` object (also ``trace
    inspect``'s)."""
    dropped = conversion.get("dropped", {})
    reasons = [f"{DROP_REASONS.get(r, r)}: {n:,}" for r, n in dropped.items() if n]
    total = sum(dropped.values())
    lines = [
        f"source:               {conversion.get('from', '?')} trace {conversion.get('input', '?')}"
        f" (seed {conversion.get('seed', '?')}, mode {conversion.get('mode', '?')}, "
        f"throughputs {conversion.get('throughputs', '?')})",
        f"jobs read:            {conversion.get('read', 0):,}; kept {conversion.get('kept', 0):,},"
        f" dropped {total:,}",
    ]
    if reasons:
        lines.append(f"dropped:              {'; '.join(reasons)}")
    if conversion.get("filters"):
        given = ", ".join(f"{k}={v}" for k, v in conversion["filters"].items())
        lines.append(f"filters:              {given}")
    lines.append(f"arrival 0:            submission at {conversion.get('origin', '?')}")
    return "\n".join(lines)


class _Filter:
    """Decides whether a job is kept, and else why not (all but ``--max-jobs``)."""

    def __init__(self, options: ConversionOptions, schema: SourceSchema) -> None:
        low, high = options.window(schema)  # in the trace's unit; jobs are read in seconds
        self.low, self.high = low / options.units_per_second, high / options.units_per_second
        self.statuses = {s.strip().casefold() for s in options.statuses}
        self.vcs = set(options.vcs)
        self.min_gpus = options.min_gpus if options.min_gpus is not None else 1
        self.max_gpus = options.max_gpus if options.max_gpus is not None else math.inf
        self.sample = options.sample
        self.seed = options.seed
        self.gpus_need_a_run = schema.gpus_need_a_run

    def in_window(self, job: SourceJob) -> bool:
        return self.low <= job.submit < self.high

    def reason(self, job: SourceJob) -> str | None:
        """The first reason (in :data:`DROP_REASONS` order) to drop ``job``, or ``None``."""
        ran = job.duration >= MIN_RUN_SECONDS
        if job.gpus < 1 and (ran or not self.gpus_need_a_run):
            return "cpu_only"
        if not ran:
            return "never_ran"
        if not self.in_window(job):
            return "window"
        if self.statuses and (job.status is None or job.status.casefold() not in self.statuses):
            return "status"
        if self.vcs and job.vc not in self.vcs:
            return "vc"
        if not self.min_gpus <= job.gpus <= self.max_gpus:
            return "gpus"
        if (
            self.sample is not None
            and job_uniforms(self.seed, job.source_id, "sample")[0] >= self.sample
        ):
            return "sample"
        return None


@dataclass
class _Plan:
    """What the first pass found."""

    read: int = 0
    kept: int = 0
    origin: float = math.inf
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    #: with --max-jobs: the latest submission kept, and how many jobs submitted then are kept
    last_submit: float = math.inf
    ties: int = 0
    #: jobs written to the spool (all that passed the filters but --max-jobs)
    spooled: int = 0
    #: whether a kept job has GPU-type constraints (the output is then format version 3)
    typed: bool = False


def _in_seconds(jobs: Iterator[SourceJob], units_per_second: int) -> Iterator[SourceJob]:
    """The jobs with their submission and run times converted to seconds."""
    if units_per_second == 1:
        return jobs
    return (
        job._replace(submit=job.submit / units_per_second, duration=job.duration / units_per_second)
        for job in jobs
    )


def _looks_like_milliseconds(where: Where, field: str, what: str) -> TraceError:
    return where.error(
        field,
        f"{what}, more than a year ({PLAUSIBLE_SECONDS:g} s): the times look like "
        "milliseconds; pass --time-unit ms (or --time-unit s to convert them as seconds)",
    )


def _survey(
    reader: SourceReader,
    keep: _Filter,
    assigner: JobAssigner,
    options: ConversionOptions,
    spool: BinaryIO,
) -> _Plan:
    """The first pass: counts, the origin, the ``--max-jobs`` cut; the jobs that pass the
    filters go to ``spool``. Without ``time_unit``, a numeric-clock trace whose run times or
    submissions span more than :data:`PLAUSIBLE_SECONDS` is refused (milliseconds, probably)."""
    max_jobs = options.max_jobs
    plan = _Plan()
    schema = reader.schema
    check_unit = schema.clock == "seconds" and options.time_unit is None
    submits = array("d")
    typed = array("b")
    latest, latest_where = -math.inf, None
    dump = marshal.dump
    batch: list[tuple[Any, ...]] = []
    for job in _in_seconds(reader.jobs(), options.units_per_second):
        plan.read += 1
        if check_unit and PLAUSIBLE_SECONDS < job.duration <= _MAX_RUN_SECONDS:
            years = job.duration / (365.25 * 86_400)
            raise _looks_like_milliseconds(
                job.where,
                schema.duration_field,
                f"a run time of {job.duration:g} s ({years:.3g} years)",
            )
        if keep.in_window(job) and job.submit < plan.origin:
            plan.origin = job.submit
        reason = keep.reason(job)
        if reason is not None:
            plan.dropped[reason] += 1
            continue
        _check_limits(job, schema)
        try:
            assigner.candidates(job.gpus)
        except NoJobTypeError as exc:
            raise ConversionOptionError("--throughputs", str(exc)) from None
        if max_jobs is not None:
            submits.append(job.submit)
            typed.append(job.gpu_types is not None)
        elif job.gpu_types is not None:
            plan.typed = True
        if job.submit > latest:
            latest, latest_where = job.submit, job.where
        where = job.where
        batch.append((*job[:8], where.line, where.element, job.gpu_types))
        if len(batch) == _SPOOL_BATCH:
            dump(batch, spool)
            batch.clear()
        plan.kept += 1
    dump(batch, spool)
    plan.spooled = plan.kept
    if latest_where is not None and not latest - plan.origin <= MAX_SECONDS:
        raise latest_where.error(
            schema.submit_field,
            f"submitted {latest - plan.origin:g} s after the first submission; at most "
            f"{MAX_SECONDS:g}",
        )
    if check_unit and latest_where is not None and latest - plan.origin > PLAUSIBLE_SECONDS:
        raise _looks_like_milliseconds(
            latest_where, schema.submit_field,
            f"submitted {latest - plan.origin:g} s after the first submission",
        )  # fmt: skip
    if max_jobs is not None and plan.kept > max_jobs:
        values = np.frombuffer(submits, dtype=np.float64)
        plan.last_submit = float(np.partition(values, max_jobs - 1)[max_jobs - 1])
        plan.ties = max_jobs - int(np.count_nonzero(values < plan.last_submit))
        plan.dropped["max_jobs"] = plan.kept - max_jobs
        plan.kept = max_jobs
    if max_jobs is not None:
        plan.typed = _keeps_typed(submits, typed, plan)
    return plan


def _keeps_typed(submits: array[float], typed: array[int], plan: _Plan) -> bool:
    """Whether a job within the ``--max-jobs`` cut (as :func:`_spooled` takes it) is typed."""
    ties = plan.ties
    for submit, flag in zip(submits, typed, strict=True):
        if submit >= plan.last_submit:
            if submit > plan.last_submit or ties == 0:
                continue
            ties -= 1
        if flag:
            return True
    return False


def _spooled(reader: SourceReader, plan: _Plan, spool: BinaryIO) -> Iterator[SourceJob]:
    """The second pass: the spooled jobs within the ``--max-jobs`` cut, in input order."""
    path = reader.inputs[0]
    ties = plan.ties
    spool.seek(0)
    for (
        source_id,
        submit,
        gpus,
        duration,
        user,
        vc,
        status,
        requested,
        line,
        element,
        gpu_types,
    ) in _spool_records(spool, plan.spooled):
        if submit >= plan.last_submit:
            if submit > plan.last_submit or ties == 0:
                continue
            ties -= 1
        yield SourceJob(
            source_id, submit, gpus, duration, user, vc, status, requested,
            Where(path, line, element), gpu_types,
        )  # fmt: skip


def _spool_records(spool: BinaryIO, count: int) -> Iterator[tuple[Any, ...]]:
    """The ``count`` records :func:`_survey` wrote, in order."""
    while count > 0:
        batch = marshal.load(spool)
        count -= len(batch)
        yield from batch


#: Jobs per ``marshal`` record of the spool.
_SPOOL_BATCH = 1024
#: Longest run time converted: a job's limit, less room for the rounding of its epochs' sum.
_MAX_RUN_SECONDS = MAX_SECONDS * (1 - 1e-9)


def _check_limits(job: SourceJob, schema: SourceSchema) -> None:
    """Refuse a job beyond the package's limits (:mod:`shockwave.limits`), naming its field."""
    if not job.duration <= _MAX_RUN_SECONDS:
        raise job.where.error(
            schema.duration_field, f"a run time of {job.duration:g} s; at most {MAX_SECONDS:g}"
        )
    if job.gpus > INT64_MAX:
        raise job.where.error(schema.gpus_field, f"{job.gpus} GPUs do not fit in 64 bits")


def _to_job(
    index: int, job: SourceJob, origin: float, assigner: JobAssigner, schema: SourceSchema
) -> Job:
    """The native job of a kept trace job (checked by :class:`~shockwave.workload.Job`)."""
    profile = assigner.profile(job.source_id, job.gpus, job.duration)
    try:
        return Job(
            job_id=index,
            arrival_time=job.submit - origin,
            gang_size=job.gpus,
            model=profile.model,
            dataset=profile.dataset,
            mode=profile.mode,
            batch_sizes=profile.batch_sizes,
            epoch_seconds=profile.epoch_seconds,
            samples_per_epoch=profile.samples_per_epoch,
            trace_duration=job.duration,
            source_id=job.source_id,
            user=job.user,
            vc=job.vc,
            status=job.status,
            requested_gpus=job.requested_gpus,
            gpu_types=job.gpu_types,
        )
    except JobFieldError as exc:
        field = {
            "arrival_time": schema.submit_field,
            "gang_size": schema.gpus_field,
            "requested_gpus": schema.gpus_field,
        }.get(exc.field, schema.duration_field)
        raise job.where.error(field, exc.reason) from None


def _to_record(index: int, job: SourceJob, origin: float, assigner: JobAssigner) -> dict[str, Any]:
    """``job_to_record(_to_job(...))`` made directly, for speed: the first pass checked what
    :class:`~shockwave.workload.Job` checks and the profile rule cannot break (the tests compare
    the two paths byte for byte; reading the file checks every job again)."""
    profile = assigner.profile(job.source_id, job.gpus, job.duration)
    record: dict[str, Any] = {
        "id": index,
        "arrival_time": job.submit - origin,
        "gang_size": job.gpus,
        "model": profile.model,
        "dataset": profile.dataset,
        "mode": profile.mode,
        "epochs": len(profile.batch_sizes),
        "batch_sizes": encode_epochs(profile.batch_sizes),
        "epoch_seconds": encode_epochs(profile.epoch_seconds),
        "weight": 1.0,
        "samples_per_epoch": profile.samples_per_epoch,
        "trace_duration": job.duration,
    }
    for key, text in (
        ("source_id", job.source_id), ("user", job.user), ("vc", job.vc), ("status", job.status),
    ):  # fmt: skip
        if text is not None:
            record[key] = text
    if job.requested_gpus is not None:
        record["requested_gpus"] = job.requested_gpus
    if job.gpu_types is not None:
        record["gpu_types"] = list(job.gpu_types)
    return record


def _prepare(
    source: str, path: str | PathLike[str], options: ConversionOptions
) -> tuple[SourceReader, _Filter, JobAssigner, ThroughputTable]:
    reader = open_source(source, path)
    options.check_for(reader.schema)
    table = load_throughputs(options.throughputs)
    assigner = JobAssigner(table, seed=options.seed, mode=options.mode)
    return reader, _Filter(options, reader.schema), assigner, table


def _report(
    source: str,
    path: str | PathLike[str],
    reader: SourceReader,
    plan: _Plan,
    options: ConversionOptions,
    table: ThroughputTable,
) -> ConversionReport:
    if plan.kept == 0:
        reasons = ", ".join(f"{DROP_REASONS[r]}: {n}" for r, n in plan.dropped.items() if n)
        raise TraceError(
            f"no job to convert: {plan.read} read" + (f" ({reasons})" if reasons else ""),
            path=path,
        )
    origin: str | float = plan.origin * options.units_per_second  # as the trace writes it
    if reader.schema.clock == "datetime":
        origin = format_datetime(plan.origin)
    return ConversionReport(
        source=source,
        input=str(path),
        files=reader.inputs,
        read=plan.read,
        kept=plan.kept,
        dropped=plan.dropped,
        origin=origin,
        seed=options.seed,
        mode=options.mode,
        throughputs=table.source,
        filters=options.filters(),
        time_unit=options.time_unit,
    )


def convert_production(
    source: str,
    path: str | PathLike[str],
    output: str | PathLike[str],
    options: ConversionOptions | None = None,
) -> ConversionReport:
    """Convert a production trace into a native workload file, streaming (see the module notes).

    Args:
        source: ``"philly"``, ``"helios"``, ``"pai"`` or ``"tiresias"``.
        path: the directory as unpacked from the release, or the table file itself.
        output: the native ``.jsonl`` to write (replaced atomically; nothing is left there if
            the conversion fails).
        options: settings and filters (:class:`ConversionOptions`).

    Raises:
        TraceError: naming the file, line (or JSON element) and field of malformed input, or
            when no job is left to convert.
        ConversionOptionError: for an option the source cannot apply.
    """
    options = options or ConversionOptions()
    reader, keep, assigner, table = _prepare(source, path, options)
    directory = Path(output).parent
    with tempfile.TemporaryFile(dir=directory if str(directory) else ".") as spool:
        plan = _survey(reader, keep, assigner, options, spool)
        report = _report(source, path, reader, plan, options, table)
        origin = plan.origin
        records = (
            _to_record(index, job, origin, assigner)
            for index, job in enumerate(_spooled(reader, plan, spool))
        )
        write_native_records(
            records,
            output,
            count=plan.kept,
            source=_source_text(source, reader),
            throughputs=None,
            conversion=report.to_dict(),
            version=TYPED_FORMAT_VERSION if plan.typed else FORMAT_VERSION,
        )
    return report


def read_production(
    source: str, path: str | PathLike[str], options: ConversionOptions | None = None
) -> Workload:
    """The workload :func:`convert_production` would write, in memory (for small traces)."""
    options = options or ConversionOptions()
    reader, keep, assigner, table = _prepare(source, path, options)
    with tempfile.TemporaryFile() as spool:
        plan = _survey(reader, keep, assigner, options, spool)
        report = _report(source, path, reader, plan, options, table)
        jobs = tuple(
            _to_job(index, job, plan.origin, assigner, reader.schema)
            for index, job in enumerate(_spooled(reader, plan, spool))
        )
    return Workload(jobs, None, source=_source_text(source, reader), conversion=report.to_dict())


def _source_text(source: str, reader: SourceReader) -> str:
    return f"{source} trace {', '.join(reader.inputs)}"
