"""What a worker does with a cell: load the workload, simulate, return the rows.

:func:`execute` runs in a worker process of the pool or in a Ray task. It calls
:func:`shockwave.sim.simulate` exactly as ``shockwave simulate`` does (the same workload reader,
policy factory and configuration), so a cell's metrics are those of ``shockwave simulate`` for the
same inputs, bit for bit; a typed cell (a cluster of several GPU types) calls
:func:`shockwave.heterogeneous.simulate_heterogeneous` as ``shockwave simulate --cluster`` does.
An exception in the cell does not escape: the outcome records it
(``status = "failed"``, the error in one line, the traceback apart) and the sweep goes on.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shockwave.heterogeneous import HeterogeneousResult, make_typed_policy, simulate_heterogeneous
from shockwave.metrics import SimulationResult
from shockwave.sim import simulate
from shockwave.sweep.cells import Cell, labels
from shockwave.sweep.sources import load_source, load_typed_source


@dataclass(frozen=True)
class CellOutcome:
    """A finished cell: its row of results and its per-job rows (``None`` if it failed).

    ``row`` holds every column of :data:`shockwave.sweep.dataset.RESULTS_SCHEMA`; ``jobs`` the
    columns of :data:`shockwave.sweep.dataset.JOBS_SCHEMA` as lists.
    """

    key: str
    row: dict[str, Any]
    jobs: dict[str, list[Any]] | None

    @property
    def failed(self) -> bool:
        """Whether the cell failed (``row["error"]`` says why)."""
        return bool(self.row["status"] != "ok")


def execute(cell: Cell, shipped: Mapping[str, bytes] | None = None) -> CellOutcome:
    """Run one cell (module notes); ``shipped`` carries file bytes on a Ray cluster."""
    if cell.cluster is not None:
        return _execute_typed(cell, cell.cluster, shipped)
    started = time.perf_counter()
    try:
        workload = load_source(cell.source, shipped)
        result = simulate(workload, cell.policy, cell.config(), policy_parameters=cell.parameters)
    except Exception as exc:  # recorded: one cell's failure does not stop the sweep
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return failed_outcome(cell, f"{type(exc).__name__}: {exc}", detail)
    row = _row(cell, "ok", None, None, time.perf_counter() - started)
    row.update(result.to_dict())
    row.update(
        timing_wall_seconds=result.timing.wall_seconds,
        timing_policy_seconds_total=result.timing.policy_seconds_total,
        timing_policy_seconds_max_round=result.timing.policy_seconds_max_round,
    )
    return CellOutcome(cell.key, row, _jobs(cell, result))


def _execute_typed(cell: Cell, cluster: str, shipped: Mapping[str, bytes] | None) -> CellOutcome:
    """Run a typed cell: the heterogeneous simulator on ``cluster``."""
    started = time.perf_counter()
    try:
        jobs = load_typed_source(cell.source, cluster, shipped)
        policy = make_typed_policy(cell.policy, cell.seed, cell.parameters)
        result = simulate_heterogeneous(jobs, policy, cell.typed_config())
    except Exception as exc:  # recorded: one cell's failure does not stop the sweep
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return failed_outcome(cell, f"{type(exc).__name__}: {exc}", detail)
    row = _row(cell, "ok", None, None, time.perf_counter() - started)
    row.update(result.to_dict())
    row.update(
        timing_wall_seconds=result.wall_seconds,
        timing_policy_seconds_total=result.policy_seconds,
    )
    return CellOutcome(cell.key, row, _typed_jobs(cell, result))


def failed_outcome(cell: Cell, error: str, detail: str | None = None) -> CellOutcome:
    """The outcome of a cell that failed with ``error`` (one line; ``detail``: a traceback)."""
    return CellOutcome(cell.key, _row(cell, "failed", _one_line(error), detail, None), None)


def _row(
    cell: Cell, status: str, error: str | None, detail: str | None, seconds: float | None
) -> dict[str, Any]:
    return {
        **labels(cell),
        "trace_source": cell.source.describe(),
        "status": status,
        "error": error,
        "error_detail": detail,
        "version": cell.version,
        "timing_cell_seconds": seconds,
        "host": f"{socket.gethostname()}:{os.getpid()}",
        "finished_at": datetime.datetime.now(datetime.timezone.utc),
    }


def _jobs(cell: Cell, result: SimulationResult) -> dict[str, list[Any]]:
    frame = result.jobs_frame()
    columns: dict[str, list[Any]] = {
        name: [value] * len(frame) for name, value in labels(cell).items()
    }
    for name in frame.columns:
        columns[str(name)] = frame[name].tolist()
    return columns


def _typed_jobs(cell: Cell, result: HeterogeneousResult) -> dict[str, list[Any]]:
    """The per-job rows of a typed cell: ``jobs_frame()``, its ``gpu_hours_<type>`` columns
    gathered in one map column, ``gpu_hours_by_type`` (the schema is the same on every
    cluster)."""
    frame = result.jobs_frame()
    columns: dict[str, list[Any]] = {
        name: [value] * len(frame) for name, value in labels(cell).items()
    }
    hours = [f"gpu_hours_{name}" for name in result.types]
    for name in frame.columns:
        if name not in hours:
            columns[str(name)] = frame[name].tolist()
    per_type = [frame[h].tolist() for h in hours]
    columns["gpu_hours_by_type"] = [
        dict(zip(result.types, values, strict=True)) for values in zip(*per_type, strict=True)
    ]
    return columns


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines) if lines else "unknown error"
