"""Running cells on a local process pool (:mod:`concurrent.futures`).

Each worker is a process of its own (started with ``spawn``: nothing of the parent's threads is
inherited) that runs one cell at a time; at most one cell per worker is in flight, in the order
given (the runner gives the largest workloads first), so the pool stays busy to the end and an
interruption has little to throw away. Workers ignore
Ctrl-C: the parent handles it (records what is done, then terminates the workers).

A worker that dies (killed, out of memory) breaks the pool. The cells that were in flight are
then run again one at a time in a fresh pool: one that kills its worker again alone is recorded
as failed ("its worker process died") and the sweep goes on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from shockwave.sweep.cells import Cell
from shockwave.sweep.worker import CellOutcome, execute, failed_outcome

#: The error recorded for a cell whose worker process died while it ran alone.
WORKER_DIED = "its worker process died (killed, or out of memory?)"


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class ProcessPool:
    """Runs cells on ``workers`` local processes (module notes)."""

    def __init__(self, workers: int, function: Callable[[Cell], CellOutcome] = execute) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        #: what a worker calls with each cell (a module-level function: it is pickled by name)
        self.function = function

    def describe(self) -> str:
        """How the cells run, for messages."""
        plural = "s" if self.workers != 1 else ""
        return f"a local process pool of {self.workers} worker{plural}"

    def run(self, cells: Sequence[Cell]) -> Generator[CellOutcome, None, None]:
        """Run ``cells``; yield each outcome as it finishes (not in order).

        Closing the iterator early (or an exception, such as ``KeyboardInterrupt``, while it
        waits) terminates the workers.
        """
        queue = deque(cells)
        isolate: deque[Cell] = deque()  # cells in flight when a worker died: run one at a time
        while queue or isolate:
            pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_ignore_sigint,
            )
            in_flight: dict[Future[CellOutcome], tuple[Cell, bool]] = {}
            clean = False
            try:
                while queue or isolate or in_flight:
                    source, limit = (isolate, 1) if isolate else (queue, self.workers)
                    while source and len(in_flight) < limit:
                        cell = source.popleft()
                        in_flight[pool.submit(self.function, cell)] = (cell, source is isolate)
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    broken = False
                    for future in done:
                        cell, _alone = in_flight[future]
                        try:
                            outcome = future.result()
                        except BrokenProcessPool:
                            broken = True
                            continue
                        except Exception as exc:  # the cell could not be sent or returned
                            outcome = failed_outcome(cell, f"{type(exc).__name__}: {exc}")
                        del in_flight[future]
                        yield outcome
                    if broken:
                        lost = list(in_flight.values())
                        in_flight.clear()
                        for cell, alone in lost:
                            if alone:
                                yield failed_outcome(cell, WORKER_DIED)
                            else:
                                isolate.append(cell)
                        break
                else:
                    clean = True
            finally:
                _stop(pool, terminate=not clean)


def _stop(pool: ProcessPoolExecutor, *, terminate: bool) -> None:
    """Shut the pool down; with ``terminate``, kill its workers first (a cell may be running)."""
    if not terminate:
        pool.shutdown(wait=True)
        return
    # ProcessPoolExecutor has no public way to stop running workers before Python 3.14
    # (terminate_workers); its process table is the documented-by-source alternative.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    stop_all = getattr(pool, "terminate_workers", None)
    if stop_all is not None:  # pragma: no cover - Python >= 3.14
        stop_all()
    else:
        for process in processes:
            if process.is_alive():
                process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=10)
