"""The results of a sweep: two Parquet datasets that an interruption cannot corrupt.

A sweep's output directory holds

* ``results.parquet/``: one row per cell (:data:`RESULTS_SCHEMA`): the cell's inputs, its
  status and error, every metric of :meth:`SimulationResult.to_dict
  <shockwave.metrics.SimulationResult.to_dict>` under the same names (per-job lists included),
  and, apart, the measurements (``timing_*`` columns, ``host``, ``finished_at``);
* ``jobs.parquet/``: one row per job of every successful cell (:data:`JOBS_SCHEMA`): the cell's
  input columns and :meth:`SimulationResult.jobs_frame
  <shockwave.metrics.SimulationResult.jobs_frame>`.

A batch that holds typed cells (a cluster of several GPU types) is written with
:data:`TYPED_RESULTS_SCHEMA` and :data:`TYPED_JOBS_SCHEMA`: the same columns, in the same order,
and the typed ones (``cluster`` after ``gpus``, then :data:`TYPED_METRICS` and the per-job
``isolated_seconds`` and ``gpu_hours_by_type``); a column the heterogeneous simulator does not
report (``median_jct``, ``p99_jct``, ``ftf_themis``, ...) is null there. A batch of homogeneous
cells is written exactly as before typed clusters existed (:data:`RESULTS_SCHEMA`, not a column
more). Readers that gather the parts (:func:`read_results`, :func:`load_jobs`) fill the typed
columns of homogeneous rows with nulls.

Each is a directory of part files, ``part-<batch>.parquet``, one per batch of cells, each written
whole through :func:`shockwave.atomic.atomic_write_bytes` (a temporary file renamed into place):
a reader sees a part entirely or not at all. A batch writes its per-job part first and its
results part last; a results row is what marks a cell done, and a per-job part whose results
part is missing (a kill between the two writes) is ignored and removed by the next run. Any
Parquet reader reads the directories as datasets (``pandas.read_parquet(DIR /
"results.parquet")``, ``pyarrow.dataset.dataset(...)``); :func:`load_results` and
:func:`load_jobs` also keep only the latest row of a cell that ran twice (a failed cell rerun
with ``--retry-failed``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from shockwave.atomic import atomic_write_bytes
from shockwave.metrics import SimulationResult
from shockwave.sweep.worker import CellOutcome

if TYPE_CHECKING:
    import pandas as pd

RESULTS = "results.parquet"
JOBS = "jobs.parquet"

#: The input columns of a cell (both datasets start with them).
INPUT_FIELDS = [
    pa.field("key", pa.string(), nullable=False),
    pa.field("trace", pa.string()),
    pa.field("trace_family", pa.string()),
    pa.field("trace_seed", pa.int64()),
    pa.field("gpus", pa.int64()),
    pa.field("policy", pa.string()),
    pa.field("parameters", pa.string()),
    pa.field("mechanics", pa.string()),
    pa.field("simulation", pa.string()),
    pa.field("seed", pa.int64()),
]

_LIST_TYPES = {
    "job_ids": pa.list_(pa.int64()),
    "dropped_jobs": pa.list_(pa.int64()),
    "jct": pa.list_(pa.float64()),
    "ftf": pa.list_(pa.float64()),
    "ftf_themis": pa.list_(pa.float64()),
    "completion_time": pa.list_(pa.float64()),
}
_INTEGER_METRICS = ("gpus", "seed", "jobs", "rounds")
_INPUT_NAMES = {f.name for f in INPUT_FIELDS}

#: The metrics: every key of ``SimulationResult.to_dict()``, in its order (inputs excepted).
METRICS = tuple(f.name for f in fields(SimulationResult) if f.name not in ("record", "timing"))


def _metric_field(name: str) -> pa.Field:
    if name in _LIST_TYPES:
        return pa.field(name, _LIST_TYPES[name])
    return pa.field(name, pa.int64() if name in _INTEGER_METRICS else pa.float64())


#: One row per cell (module notes). Metrics are null for a failed cell.
RESULTS_SCHEMA = pa.schema(
    [
        *INPUT_FIELDS,
        pa.field("trace_source", pa.string()),
        pa.field("status", pa.string()),
        pa.field("error", pa.string()),
        pa.field("error_detail", pa.string()),
        pa.field("version", pa.string()),
        *(_metric_field(n) for n in METRICS if n not in _INPUT_NAMES),
        pa.field("timing_cell_seconds", pa.float64()),
        pa.field("timing_wall_seconds", pa.float64()),
        pa.field("timing_policy_seconds_total", pa.float64()),
        pa.field("timing_policy_seconds_max_round", pa.float64()),
        pa.field("host", pa.string()),
        pa.field("finished_at", pa.timestamp("us", tz="UTC")),
    ]
)

_JOB_TIMES = (
    "arrival_time", "admission_time", "completion_time", "jct", "exclusive_seconds", "ftf",
    "ftf_themis", "service_seconds",
)  # fmt: skip

_JOB_TIMES = (
    "arrival_time", "admission_time", "completion_time", "jct", "exclusive_seconds", "ftf",
    "ftf_themis", "service_seconds",
)  # fmt: skip

#: One row per job of a successful cell (module notes).
JOBS_SCHEMA = pa.schema(
    [
        *INPUT_FIELDS,
        pa.field("job_id", pa.int64()),
        *(pa.field(n, pa.float64()) for n in _JOB_TIMES),
        *(pa.field(n, pa.int64()) for n in ("rounds_run", "rounds_queued", "last_round_run")),
        pa.field("dropped", pa.bool_()),
    ]
)

#: The typed cluster's column (``v100:12,p100:12,k80:12``), after ``gpus`` in typed parts.
CLUSTER_FIELD = pa.field("cluster", pa.string())

#: The metrics only a typed cell reports (keys of ``HeterogeneousResult.to_dict()``): Gavel's
#: name of the policy, its lease-extension share (0..1), the utilisation of each type (0..1),
#: each job's isolated runtime on Gavel's equal share (s, the denominator of its rho) and the
#: GPU-seconds of each job on each type (lists in ``job_ids`` order).
TYPED_METRICS = (
    pa.field("gavel_policy", pa.string()),
    pa.field("lease_extension_share", pa.float64()),
    pa.field("utilization_by_type", pa.map_(pa.string(), pa.float64())),
    pa.field("isolated_seconds", pa.list_(pa.float64())),
    pa.field("gpu_seconds_by_type", pa.map_(pa.string(), pa.list_(pa.float64()))),
)


def _with_cluster(schema: pa.Schema, extra: Sequence[pa.Field]) -> pa.Schema:
    """``schema`` with ``cluster`` after ``gpus`` and ``extra`` after the metrics (before the
    measurements of a results schema, at the end of a per-job one)."""
    given = list(schema)
    at = schema.names.index("gpus") + 1
    fields = [*given[:at], CLUSTER_FIELD, *given[at:]]
    names = [f.name for f in fields]
    cut = names.index("timing_cell_seconds") if "timing_cell_seconds" in names else len(fields)
    return pa.schema([*fields[:cut], *extra, *fields[cut:]])


#: One row per typed cell (module notes): :data:`RESULTS_SCHEMA`, ``cluster``, the typed metrics.
TYPED_RESULTS_SCHEMA = _with_cluster(RESULTS_SCHEMA, TYPED_METRICS)
#: One row per job of a typed cell: :data:`JOBS_SCHEMA`, ``cluster``, the job's isolated
#: runtime (s) and its GPU-hours on each type.
TYPED_JOBS_SCHEMA = _with_cluster(
    JOBS_SCHEMA,
    (
        pa.field("isolated_seconds", pa.float64()),
        pa.field("gpu_hours_by_type", pa.map_(pa.string(), pa.float64())),
    ),
)


class ResultStore:
    """The two datasets of a sweep's output directory (module notes).

    Use as a context manager: it holds an exclusive lock on ``DIR/.lock`` so that two sweeps
    cannot write into one directory at once.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.results = self.directory / RESULTS
        self.jobs = self.directory / JOBS
        self._lock: IO[bytes] | None = None
        self._sequence = 0

    def __enter__(self) -> ResultStore:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.results.mkdir(exist_ok=True)
        self.jobs.mkdir(exist_ok=True)
        self._lock = open(self.directory / ".lock", "wb")  # held until __exit__
        try:
            import fcntl

            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise BlockingIOError(
                11, "another sweep is writing into this directory", str(self.directory)
            ) from None
        except ImportError:  # pragma: no cover - not POSIX: no lock
            pass
        self._remove_orphans()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def recorded(self) -> dict[str, str]:
        """The status (``"ok"`` or ``"failed"``) of every cell recorded, by key (the latest)."""
        status: dict[str, str] = {}
        for _, table in _parts(self.results, columns=["key", "status"]):
            status.update(zip(table["key"].to_pylist(), table["status"].to_pylist(), strict=True))
        return status

    def append(self, outcomes: Sequence[CellOutcome]) -> None:
        """Record a batch of finished cells: its per-job part, then its results part."""
        if not outcomes:
            return
        self._sequence += 1
        batch = f"{time.time_ns():020d}-{os.getpid()}-{self._sequence:06d}"
        typed = any(o.row.get("cluster") is not None for o in outcomes)
        results_schema = TYPED_RESULTS_SCHEMA if typed else RESULTS_SCHEMA
        jobs_schema = TYPED_JOBS_SCHEMA if typed else JOBS_SCHEMA
        jobs = [o.jobs for o in outcomes if o.jobs is not None]
        if jobs:
            columns = {f.name: [v for j in jobs for v in _column(j, f.name)] for f in jobs_schema}
            _write(self.jobs / f"part-{batch}.parquet", pa.table(columns, schema=jobs_schema))
        rows = [o.row for o in outcomes]
        columns = {f.name: [row.get(f.name) for row in rows] for f in results_schema}
        _write(self.results / f"part-{batch}.parquet", pa.table(columns, schema=results_schema))

    def _remove_orphans(self) -> None:
        """Delete per-job parts without their results part, and temporary files of a kill."""
        done = {p.name for p in self.results.glob("part-*.parquet")}
        for part in self.jobs.glob("part-*.parquet"):
            if part.name not in done:
                part.unlink()
        for directory in (self.results, self.jobs):
            for temporary in directory.glob(".part-*.tmp"):
                with contextlib.suppress(OSError):
                    temporary.unlink()


def _column(jobs: dict[str, list[Any]], name: str) -> list[Any]:
    """A per-job column of a cell, nulls where its simulator does not report it."""
    if name in jobs:
        return jobs[name]
    return [None] * len(jobs["job_id"])


def _write(path: Path, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    atomic_write_bytes(path, sink.getvalue().to_pybytes())


def _parts(
    directory: Path, columns: Sequence[str] | None = None, *, only: Iterable[str] | None = None
) -> Iterator[tuple[str, pa.Table]]:
    """``(part name, table)`` of each part file of a dataset, oldest first."""
    allowed = None if only is None else set(only)
    for part in sorted(directory.glob("part-*.parquet")):
        if allowed is None or part.name in allowed:
            yield part.name, pq.read_table(part, columns=columns)


def read_results(directory: str | os.PathLike[str]) -> pa.Table:
    """Every cell's row, the latest of a cell recorded twice (:data:`RESULTS_SCHEMA`).

    Raises:
        FileNotFoundError: when ``directory`` holds no results.
    """
    tables = _latest(Path(directory) / RESULTS)
    if not tables:
        raise FileNotFoundError(2, "no sweep results here", str(Path(directory) / RESULTS))
    return pa.concat_tables([t for _, t in tables], promote_options="default")


def load_results(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """:func:`read_results` as a pandas frame (lists as Python lists)."""
    frame: pd.DataFrame = read_results(directory).to_pandas()
    return frame


def load_jobs(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """Every job of every successful cell (:data:`JOBS_SCHEMA`), latest run of a cell."""
    root = Path(directory)
    latest = _latest(root / RESULTS)
    keep = {k: name for name, t in latest for k in t["key"].to_pylist()}
    tables = []
    for name, table in _parts(root / JOBS, only=set(keep.values())):
        mask = [keep.get(k) == name for k in table["key"].to_pylist()]
        tables.append(table.filter(pa.array(mask, pa.bool_())))
    if not tables:
        frame: pd.DataFrame = JOBS_SCHEMA.empty_table().to_pandas()
        return frame
    frame = pa.concat_tables(tables, promote_options="default").to_pandas()
    return frame


def _latest(directory: Path) -> list[tuple[str, pa.Table]]:
    """Each part's rows that are the latest of their cell (a later part supersedes)."""
    parts = list(_parts(directory))
    newest: dict[str, tuple[int, int]] = {}
    for index, (_, table) in enumerate(parts):
        for row, key in enumerate(table["key"].to_pylist()):
            newest[key] = (index, row)
    kept = []
    for index, (name, table) in enumerate(parts):
        mask = [newest[k] == (index, row) for row, k in enumerate(table["key"].to_pylist())]
        if any(mask):
            kept.append((name, table.filter(pa.array(mask, pa.bool_()))))
    return kept
