"""The native workload format: versioned JSON Lines that needs no throughput table.

Schema, version 2 (``.jsonl``, UTF-8, one JSON object per line):

* **Line 1, the header**::

      {"format": "shockwave-workload", "version": 2, "jobs": <number of job lines>,
       "source": "<free text, optional>",
       "throughputs": {<model>: {<batch size>: {<gang size>: <iterations/s>}}}  (optional),
       "conversion": {<what a production-trace conversion did>}  (optional),
       "costs": {"restart_seconds": S, "round_overhead_seconds": S, "machine": "<id>"}
                (optional)}

  ``throughputs`` holds isolated throughputs (iterations per second for the whole gang); it is
  needed only by the ``gavel`` simulator mechanics and written when converting a ``.trace``.
  ``conversion`` is written by ``shockwave trace convert --from ...``
  (:mod:`shockwave.traces.production`): ``{"from": <philly|helios|pai|tiresias>, "input":
  <path>, "read": <jobs in the input>, "kept": <jobs written>, "dropped": {<reason>: <count>},
  ...}``; ``shockwave trace inspect`` prints it.
  ``costs`` is written by ``shockwave cluster generate``: what a real run costs on the machine
  whose throughputs planned the jobs (a restarted job's lost seconds and every running job's
  lost seconds per round, measured by ``shockwave cluster profile``); ``shockwave simulate``
  takes them as its restart penalty and round overhead unless told otherwise.

* **Every further line, one job**:

  ====================  ========  =========================================================
  key                   required  meaning
  ====================  ========  =========================================================
  ``id``                yes       integer, unique in the file
  ``arrival_time``      yes       seconds since the start of the trace, >= 0
  ``gang_size``         yes       GPUs, integer >= 1
  ``model``             yes       model label (free text)
  ``dataset``           no        dataset label (default ``""``)
  ``mode``              no        ``static`` (default), ``accordion`` or ``gns``
  ``epochs``            yes       number of epochs E >= 1
  ``batch_sizes``       yes       E integers >= 1, the batch size of every epoch (*)
  ``epoch_seconds``     yes       E numbers > 0, every epoch's duration alone on the gang (s) (*)
  ``weight``            no        priority weight > 0 (default 1)
  ``total_steps``       no        iterations at the initial batch size (``gavel`` mechanics)
  ``samples_per_epoch`` no        samples per epoch (``gavel`` mechanics)
  ``trace_duration``    no        nominal exclusive runtime from a ``.trace`` (s), informational
  ``run``               no        how to run the job for real (:mod:`shockwave.runtime`):
                                  ``{"family": "<bundled family>", "seed": S}`` or
                                  ``{"command": ["python", "train.py"], "seed": S}``, optional
                                  ``"options": {...}``; needs ``samples_per_epoch``
  ``source_id``         no (v2)   the production trace's job id, as a string
  ``user``              no (v2)   the submitting user in the production trace
  ``vc``                no (v2)   the virtual cluster in the production trace
  ``status``            no (v2)   the job's final status in the production trace
  ``requested_gpus``    no (v2)   GPUs requested, when fractional (Alibaba PAI), a number in
                                  ``(0, gang_size]``; informational
  ====================  ========  =========================================================

(*) A per-epoch array is either a plain list of E values or, run-length encoded,
``{"runs": [[value, count], ...]}`` with counts summing to E (the writer uses whichever is
shorter; readers accept both).

For a runnable job (with ``run``) the per-epoch arrays are its planning profile: every batch size
the job may reach must appear in ``batch_sizes``, and ``epoch_seconds`` are expected durations
(:func:`shockwave.traces.load_workload` recomputes them from a throughput table when one is
given).

Version 1 is version 2 without the keys marked (v2) and without ``conversion``: version-1 files
are still read (a v2 key in a version-1 file is an error, like any unknown key), and the writer
writes version 2.

Unknown keys are errors (a misspelt optional key must not be silently ignored). Floats are
written with Python's shortest round-trip representation, so write-then-read is the identity.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.arguments import is_integer
from shockwave.atomic import atomic_writer
from shockwave.epoch_profile import EpochColumn
from shockwave.errors import JobFieldError, TraceError
from shockwave.limits import INT64_MAX, MAX_EPOCHS_PER_JOB
from shockwave.run_spec import RunSpec
from shockwave.throughputs import RuntimeCosts, ThroughputTable
from shockwave.workload import Job, Workload

FORMAT_NAME = "shockwave-workload"
FORMAT_VERSION = 2
#: Versions the reader accepts.
READABLE_VERSIONS = (1, 2)

_REQUIRED = ("id", "arrival_time", "gang_size", "model", "epochs", "batch_sizes", "epoch_seconds")
_OPTIONAL = (
    "dataset",
    "mode",
    "weight",
    "total_steps",
    "samples_per_epoch",
    "trace_duration",
    "run",
    "source_id",
    "user",
    "vc",
    "status",
    "requested_gpus",
)
#: Job keys that version 1 does not know.
_SINCE_VERSION_2 = frozenset(("source_id", "user", "vc", "status", "requested_gpus"))
_HEADER_KEYS = {
    1: frozenset(("format", "version", "jobs", "source", "throughputs")),
    2: frozenset(("format", "version", "jobs", "source", "throughputs", "conversion", "costs")),
}


def job_to_record(job: Job) -> dict[str, Any]:
    """The JSON object of one job line (per-epoch arrays run-length encoded when shorter)."""
    record: dict[str, Any] = {
        "id": int(job.job_id),
        "arrival_time": float(job.arrival_time),
        "gang_size": int(job.gang_size),
        "model": job.model,
        "dataset": job.dataset,
        "mode": job.mode,
        "epochs": job.num_epochs,
        "batch_sizes": encode_epochs(job.batch_sizes),
        "epoch_seconds": encode_epochs(job.epoch_seconds),
        "weight": float(job.weight),
    }
    for key in ("total_steps", "samples_per_epoch"):
        value = getattr(job, key)
        if value is not None:
            record[key] = int(value)
    if job.trace_duration is not None:
        record["trace_duration"] = float(job.trace_duration)
    if job.run is not None:
        record["run"] = job.run.to_dict()
    for key in ("source_id", "user", "vc", "status"):
        text = getattr(job, key)
        if text is not None:
            record[key] = text
    if job.requested_gpus is not None:
        record["requested_gpus"] = float(job.requested_gpus)
    return record


def encode_epochs(values: npt.NDArray[Any]) -> list[Any] | dict[str, list[list[Any]]]:
    """A per-epoch array as a plain list, or as ``{"runs": [[value, count], ...]}`` if shorter.

    Profiles are piecewise constant (a regime lasts many epochs; one job of a generated 20,000-job
    trace has thousands of epochs at one batch size), so the run-length form is usually far
    smaller. Both forms read back to the same array.
    """
    if values.size <= 2:  # one or two runs: the list is never longer
        return list(values.tolist())
    if values.min() == values.max():  # one run (the usual static profile)
        return {"runs": [[values[:1].tolist()[0], int(values.size)]]}
    starts = np.flatnonzero(values[1:] != values[:-1]) + 1
    if 2 * (starts.size + 1) >= values.size:
        return list(values.tolist())
    firsts = values[:1].tolist() + values[starts].tolist()
    bounds = [0, *starts.tolist(), int(values.size)]
    counts = [end - start for start, end in itertools.pairwise(bounds)]
    return {"runs": [[value, count] for value, count in zip(firsts, counts, strict=True)]}


def decode_epochs(value: Any, name: str) -> list[Any] | npt.NDArray[Any]:
    """Inverse of :func:`encode_epochs`; raises ``ValueError`` naming the problem."""
    column = decode_epoch_column(value, name)
    return column.expand() if isinstance(column, EpochColumn) else column


def decode_epoch_column(value: Any, name: str) -> list[Any] | EpochColumn:
    """:func:`decode_epochs` without expanding the run-length form: a plain list as is, runs as
    an :class:`~shockwave.epoch_profile.EpochColumn` (what :class:`~shockwave.workload.Job`
    takes without expanding it). Raises ``ValueError`` naming the problem."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict) or set(value) != {"runs"} or not isinstance(value["runs"], list):
        raise ValueError(f"{name} must be a list or {{'runs': [[value, count], ...]}}")
    runs = value["runs"]
    if not all(isinstance(run, list) and len(run) == 2 for run in runs):
        raise ValueError("every run must be a [value, count] pair")
    counts = [run[1] for run in runs]
    if any(not is_integer(c, numpy=False) or c < 1 for c in counts):
        raise ValueError("run counts must be integers >= 1")
    total = sum(counts)
    if total > MAX_EPOCHS_PER_JOB:
        raise ValueError(
            f"run counts sum to {total} epochs; a job may have at most {MAX_EPOCHS_PER_JOB}"
        )
    values = [run[0] for run in runs]
    if any(isinstance(v, int) and not isinstance(v, bool) and abs(v) > INT64_MAX for v in values):
        raise ValueError("run values must fit in a signed 64-bit integer")
    return EpochColumn(np.asarray(values), np.asarray(counts, dtype=np.int64), total)


def write_native(workload: Workload, path: str | PathLike[str]) -> None:
    """Write ``workload`` to ``path`` in the native JSON Lines format (see the module docs).

    The file is replaced atomically (:mod:`shockwave.atomic`): an interrupted or failed write
    leaves the previous file intact.
    """
    write_native_jobs(
        workload.jobs,
        path,
        count=len(workload),
        source=workload.source,
        throughputs=workload.throughputs,
        conversion=workload.conversion,
        costs=workload.costs,
    )


def write_native_jobs(
    jobs: Iterable[Job],
    path: str | PathLike[str],
    *,
    count: int,
    source: str,
    throughputs: ThroughputTable | None,
    conversion: Mapping[str, Any] | None = None,
    costs: RuntimeCosts | None = None,
) -> None:
    """Stream ``count`` jobs to ``path`` in the native format, one line at a time (bounded
    memory), replacing ``path`` atomically when all are written.

    Raises:
        ValueError: if ``jobs`` does not yield exactly ``count`` jobs (nothing is written).
    """
    write_native_records(
        (job_to_record(job) for job in jobs),
        path,
        count=count,
        source=source,
        throughputs=throughputs,
        conversion=conversion,
        costs=costs,
    )


def write_native_records(
    records: Iterable[Mapping[str, Any]],
    path: str | PathLike[str],
    *,
    count: int,
    source: str,
    throughputs: ThroughputTable | None,
    conversion: Mapping[str, Any] | None = None,
    costs: RuntimeCosts | None = None,
) -> None:
    """:func:`write_native_jobs` for job records already in the form of :func:`job_to_record`
    (for writers that make many jobs and check them as they make them; a reader checks every
    job again).

    Raises:
        ValueError: if ``records`` does not yield exactly ``count`` records (nothing is written).
    """
    lines = native_lines(
        records,
        count=count,
        source=source,
        throughputs=throughputs,
        conversion=conversion,
        costs=costs,
    )
    with atomic_writer(path) as out:
        for line in lines:
            out.write(line)


def native_text(workload: Workload) -> str:
    """``workload`` in the native format, as text (what :func:`write_native` writes)."""
    return "".join(
        native_lines(
            (job_to_record(job) for job in workload.jobs),
            count=len(workload),
            source=workload.source,
            throughputs=workload.throughputs,
            conversion=workload.conversion,
            costs=workload.costs,
        )
    )


def native_lines(
    records: Iterable[Mapping[str, Any]],
    *,
    count: int,
    source: str,
    throughputs: ThroughputTable | None,
    conversion: Mapping[str, Any] | None = None,
    costs: RuntimeCosts | None = None,
) -> Iterator[str]:
    """The lines of a native file (each with its newline): the header, then one per record.

    Raises:
        ValueError: (after the last line) if ``records`` did not yield exactly ``count``.
    """
    header: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "jobs": count,
        "source": source,
    }
    if throughputs is not None:
        header["throughputs"] = throughputs.to_dict()
    if conversion is not None:
        header["conversion"] = dict(conversion)
    if costs is not None:
        header["costs"] = costs.to_dict()
    yield json.dumps(header, allow_nan=False) + "\n"
    written = 0
    for record in records:
        yield json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n"
        written += 1
    if written != count:
        raise ValueError(f"count: {count} jobs announced, {written} given")


def read_native(path: str | PathLike[str]) -> Workload:
    """Read a native workload file.

    Raises:
        TraceError: naming the file, the line and the field for malformed content, a wrong
            format name or an unsupported version, a job count that disagrees with the header, or
            an empty workload.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"cannot read workload ({exc.strerror})", path=path) from None
    except UnicodeDecodeError:
        raise TraceError("not UTF-8 text", path=path) from None
    return parse_native(text, path)


def parse_native(text: str, path: str | PathLike[str]) -> Workload:
    """The workload of a native file's ``text`` (``path`` names it in errors).

    Raises:
        TraceError: as :func:`read_native`.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    jobs: list[Job] = []
    throughputs: ThroughputTable | None = None
    header: dict[str, Any] | None = None
    seen_ids: dict[int, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise TraceError("blank line", path=path, line=number)
        obj = _decode(line, path, number)
        if header is None:
            header = _check_header(obj, path)
            if "throughputs" in header:
                throughputs = ThroughputTable.from_dict(header["throughputs"], source=f"{path}:1")
            continue
        job = _record_to_job(obj, path, number, header["version"])
        if job.job_id in seen_ids:
            raise TraceError(
                f"duplicate job id {job.job_id} (first on line {seen_ids[job.job_id]})",
                path=path, line=number, field="id",
            )  # fmt: skip
        seen_ids[job.job_id] = number
        jobs.append(job)
    if header is None:
        raise TraceError("empty file: no header line", path=path)
    if not jobs:
        raise TraceError("the workload holds no jobs", path=path)
    if header["jobs"] != len(jobs):
        raise TraceError(
            f"header announces {header['jobs']} jobs but the file holds {len(jobs)}",
            path=path, line=1, field="jobs",
        )  # fmt: skip
    costs = None
    if "costs" in header:
        costs = RuntimeCosts.from_dict(header["costs"], source=f"{path}:1")
    return Workload(
        tuple(jobs),
        throughputs,
        source=str(header.get("source") or path),
        conversion=header.get("conversion"),
        costs=costs,
    )


def _decode(line: str, path: str | PathLike[str], number: int) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TraceError(f"not valid JSON ({exc.msg})", path=path, line=number) from None
    except RecursionError:
        raise TraceError("JSON nested too deeply", path=path, line=number) from None
    if not isinstance(obj, dict):
        raise TraceError("each line must be a JSON object", path=path, line=number)
    return obj


def _check_header(obj: dict[str, Any], path: str | PathLike[str]) -> dict[str, Any]:
    if obj.get("format") != FORMAT_NAME:
        raise TraceError(
            f"first line must be a header with format {FORMAT_NAME!r}, got {obj.get('format')!r}",
            path=path, line=1, field="format",
        )  # fmt: skip
    version = obj.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        known = " and ".join(str(v) for v in READABLE_VERSIONS)
        raise TraceError(
            f"unsupported version {version!r} (this reader knows {known})",
            path=path, line=1, field="version",
        )  # fmt: skip
    count = obj.get("jobs")
    if not is_integer(count, numpy=False) or count < 0:
        raise TraceError(f"must be a job count, got {count!r}", path=path, line=1, field="jobs")
    unknown = set(obj) - _HEADER_KEYS[version]
    if unknown:
        raise TraceError(
            f"unknown header keys {sorted(unknown)} (format version {version})",
            path=path, line=1,
        )  # fmt: skip
    if "conversion" in obj:
        _check_conversion(obj["conversion"], path)
    return obj


def _check_conversion(conversion: Any, path: str | PathLike[str]) -> None:
    """Check the types of the header's ``conversion`` keys that ``trace inspect`` reads."""

    def bad(key: str, reason: str) -> TraceError:
        return TraceError(reason, path=path, line=1, field=f"conversion.{key}")

    if not isinstance(conversion, dict):
        raise TraceError("must be an object", path=path, line=1, field="conversion")
    for key in ("from", "input"):
        if key in conversion and not isinstance(conversion[key], str):
            raise bad(key, f"must be a string, got {conversion[key]!r}")
    for key in ("read", "kept"):
        value = conversion.get(key)
        if key in conversion and (isinstance(value, bool) or not isinstance(value, int)):
            raise bad(key, f"must be an integer, got {value!r}")
    dropped = conversion.get("dropped", {})
    if not isinstance(dropped, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in dropped.values()
    ):
        raise bad("dropped", f"must map reasons to job counts, got {dropped!r}")


def _record_to_job(
    obj: dict[str, Any], path: str | PathLike[str], number: int, version: int
) -> Job:
    for key in _REQUIRED:
        if key not in obj:
            raise TraceError("missing", path=path, line=number, field=key)
    unknown = set(obj) - set(_REQUIRED) - set(_OPTIONAL)
    if version < 2:
        unknown |= set(obj) & _SINCE_VERSION_2
    if unknown:
        raise TraceError(
            f"unknown keys {sorted(unknown)} (format version {version})", path=path, line=number
        )
    epochs = obj["epochs"]
    if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > MAX_EPOCHS_PER_JOB:
        raise TraceError(
            f"{epochs} epochs; a job may have at most {MAX_EPOCHS_PER_JOB}",
            path=path, line=number, field="epochs",
        )  # fmt: skip
    arrays: dict[str, Any] = {}
    for key in ("batch_sizes", "epoch_seconds"):
        try:
            value = arrays[key] = decode_epoch_column(obj[key], key)
        except ValueError as exc:
            raise TraceError(str(exc), path=path, line=number, field=key) from None
        length = value.num_epochs if isinstance(value, EpochColumn) else len(value)
        if isinstance(epochs, int) and length != epochs:
            raise TraceError(
                f"has {length} entries but 'epochs' is {epochs}",
                path=path, line=number, field=key,
            )  # fmt: skip
    if not is_integer(epochs, numpy=False) or epochs < 1:
        raise TraceError(
            f"must be an integer >= 1, got {epochs!r}", path=path, line=number, field="epochs"
        )
    run = None
    if "run" in obj:
        try:
            run = RunSpec.from_dict(obj["run"])
        except ValueError as exc:
            raise TraceError(str(exc), path=path, line=number, field="run") from None
    try:
        return Job(
            job_id=obj["id"],
            arrival_time=obj["arrival_time"],
            gang_size=obj["gang_size"],
            model=obj["model"],
            dataset=obj.get("dataset", ""),
            mode=obj.get("mode", "static"),
            batch_sizes=arrays["batch_sizes"],
            epoch_seconds=arrays["epoch_seconds"],
            weight=obj.get("weight", 1.0),
            total_steps=obj.get("total_steps"),
            samples_per_epoch=obj.get("samples_per_epoch"),
            trace_duration=obj.get("trace_duration"),
            run=run,
            source_id=obj.get("source_id"),
            user=obj.get("user"),
            vc=obj.get("vc"),
            status=obj.get("status"),
            requested_gpus=obj.get("requested_gpus"),
        )
    except JobFieldError as exc:
        raise TraceError(exc.reason, path=path, line=number, field=exc.field) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a string for a number
        raise TraceError(f"invalid value ({exc})", path=path, line=number) from None
