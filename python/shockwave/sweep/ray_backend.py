"""Running cells as Ray tasks (``shockwave sweep --ray``; needs ``pip install 'shockwave[ray]'``).

Each cell is one task (``num_cpus=1``: a simulation is one thread of Python and numpy) that calls
the same :func:`shockwave.sweep.worker.execute` as the process pool. With an address the sweep
joins that cluster (every node needs this package installed, the same version); without one it
starts a local Ray instance with ``workers`` CPUs (all cores by default) and stops it at the end.
If Ray is already initialised in this process, that instance is used as it is.

Nodes need not see the spec's files: the driver puts each trace file's bytes in Ray's object
store once and every task of that trace receives them (:mod:`shockwave.sweep.sources`). At most
two tasks per CPU of the cluster are submitted at a time. A task whose worker dies is retried
once by Ray; if it fails again the cell is recorded as failed with Ray's error, and the sweep goes
on. An interruption cancels the tasks in flight.
"""

from __future__ import annotations

import socket
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from shockwave.errors import UsageError
from shockwave.sweep.cells import Cell
from shockwave.sweep.sources import read_shipment
from shockwave.sweep.worker import CellOutcome, execute, failed_outcome

try:
    import ray
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("--ray needs Ray: pip install 'shockwave[ray]'") from exc


class RayUnavailableError(UsageError, RuntimeError):
    """Ray could not be started, or the cluster at the address could not be joined."""


#: Tasks in flight per CPU of the cluster.
TASKS_PER_CPU = 2


@ray.remote(num_cpus=1, max_retries=1)
def _run_cell(cell: Cell, shipped: Mapping[str, bytes]) -> CellOutcome:
    return execute(cell, shipped)


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """Refuse a ``host:port`` address nothing listens at (Ray itself would retry for minutes,
    deaf to Ctrl-C); other forms (``auto``, ``ray://...``) are left to Ray."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or "/" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RayUnavailableError(f"cannot reach the Ray cluster at {address} ({reason})") from None


class RayCluster:
    """Runs cells as Ray tasks (module notes)."""

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.address = address
        self.workers = workers

    def describe(self) -> str:
        """How the cells run, for messages."""
        if self.address is not None:
            return f"the Ray cluster at {self.address}"
        if ray.is_initialized():
            return "the running Ray instance"
        return "a local Ray instance" + (f" of {self.workers} CPUs" if self.workers else "")

    def run(self, cells: Sequence[Cell]) -> Generator[CellOutcome, None, None]:
        """Run ``cells``; yield each outcome as it finishes (not in order).

        Closing the iterator early (or an exception while it waits) cancels the tasks in
        flight.

        Raises:
            RayUnavailableError: when Ray cannot start or the cluster cannot be joined.
        """
        started = False
        if not ray.is_initialized():
            if self.address is not None:
                _check_reachable(self.address)
            try:
                if self.address is not None:
                    ray.init(address=self.address, log_to_driver=False)
                else:
                    ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
                first = (str(exc).strip().splitlines() or [""])[0]
                where = f"join the Ray cluster at {self.address}" if self.address else "start Ray"
                raise RayUnavailableError(
                    f"cannot {where} ({type(exc).__name__}: {first})"
                ) from None
            started = True
        in_flight: dict[Any, Cell] = {}
        try:
            resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
            capacity = TASKS_PER_CPU * max(1, int(resources.get("CPU", 1)))
            shipments: dict[str, Any] = {}
            task: Any = _run_cell  # Ray's remote function (its typing does not know the decorator)
            pending = list(reversed(cells))
            while pending or in_flight:
                while pending and len(in_flight) < capacity:
                    cell = pending.pop()
                    ident = repr(cell.source.identity())
                    if ident not in shipments:
                        shipments[ident] = ray.put(read_shipment(cell.source))
                    in_flight[task.remote(cell, shipments[ident])] = cell
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    cell = in_flight.pop(ref)
                    try:
                        outcome: CellOutcome = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        text = str(exc).strip()
                        first = text.splitlines()[0] if text else ""
                        error = f"Ray: {type(exc).__name__}: {first}"
                        outcome = failed_outcome(cell, error, text)
                    yield outcome
        finally:
            # cancel only the cells still running: cancelling a task as it completes can abort
            # the driver (ray-project/ray#54527)
            running = list(in_flight)
            if running:
                _, running = ray.wait(running, num_returns=len(running), timeout=0)
            for ref in running:
                ray.cancel(ref, force=True)
            if started:
                ray.shutdown()
