"""Running a sweep: the cells not yet recorded, on a backend, results appended as they finish.

:func:`run_sweep` lists the spec's cells, skips those already recorded in the output directory
(by key: an interrupted sweep resumes where it stopped), runs the others, largest workloads
first, on a backend
(:class:`~shockwave.sweep.pool.ProcessPool` or :class:`~shockwave.sweep.ray_backend.RayCluster`)
and appends the outcomes in batches (every ``flush_seconds`` or ``flush_cells``, and at the end)
to the datasets of :mod:`shockwave.sweep.dataset`. On Ctrl-C it records what has finished, stops
the workers and returns with ``interrupted`` set; a hard kill loses at most the last batch's
cells, never a written one. While a batch is being written, Ctrl-C waits for the write to end
(:class:`DeferredInterrupt`), so that a batch is recorded whole and once: an interruption between
the write and the batch being marked written would otherwise write its rows twice.

It also writes ``DIR/sweep.json`` (the manifest: the spec's name, axes, baseline and the keys of
its cells, for ``sweep report``) and ``DIR/spec.toml`` (a copy of the spec), both atomically.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Protocol, TextIO

from shockwave import __version__
from shockwave.atomic import atomic_write_text
from shockwave.sweep.cells import Cell
from shockwave.sweep.dataset import ResultStore
from shockwave.sweep.progress import SweepProgress, format_duration
from shockwave.sweep.spec import SweepSpec
from shockwave.sweep.worker import CellOutcome

MANIFEST = "sweep.json"
MANIFEST_FORMAT = 1


class Backend(Protocol):
    """Where cells run: yields each cell's outcome as it finishes."""

    def describe(self) -> str:
        """How the cells run, for messages."""
        ...

    def run(self, cells: Sequence[Cell]) -> Generator[CellOutcome, None, None]:
        """Run ``cells``; closing the iterator stops the work in flight."""
        ...


@dataclass
class SweepSummary:
    """What a sweep did.

    Attributes:
        total: cells in the spec.
        skipped: those already recorded (not run again).
        ran: cells run now.
        failed: the failed ones among them (description, error).
        interrupted: whether Ctrl-C stopped it (what finished is recorded).
        seconds: wall time.
    """

    total: int
    skipped: int
    ran: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def missing(self) -> int:
        """Cells neither recorded before nor run now (after an interruption)."""
        return self.total - self.skipped - self.ran


class DeferredInterrupt:
    """A block during which SIGINT (Ctrl-C) is noted instead of raising.

    ``received`` tells whether one came; the caller acts on it after the block. Only the main
    thread can change signal handlers: elsewhere, or where the handler in place was not set from
    Python (and so could not be put back), the block changes nothing.
    """

    def __init__(self) -> None:
        self.received = False
        self._previous: Callable[[int, FrameType | None], object] | int | None = None
        self._installed = False

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.received = True

    def __enter__(self) -> DeferredInterrupt:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not None
        ):
            self._previous = signal.signal(signal.SIGINT, self._note)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    backend: Backend,
    *,
    retry_failed: bool = False,
    stream: TextIO | None = None,
    flush_seconds: float = 10.0,
    flush_cells: int = 100,
) -> SweepSummary:
    """Run the cells of ``spec`` not yet recorded in ``out`` (module notes).

    Args:
        spec: the checked spec (:func:`shockwave.sweep.load_spec`).
        out: the output directory (created if missing).
        backend: where the cells run.
        retry_failed: also run again the cells recorded as failed.
        stream: where the announcement and the progress go (standard error by default).
        flush_seconds: a batch of rows is written at least this often (seconds) ...
        flush_cells: ... or when this many cells have finished, whichever comes first.

    Raises:
        OSError: when ``out`` cannot be written, or another sweep is writing into it.
    """
    stream = sys.stderr if stream is None else stream
    started = time.monotonic()
    cells = spec.cells()
    with ResultStore(out) as store:
        recorded = store.recorded()
        todo = [
            c for c in cells if c.key not in recorded or (retry_failed and recorded[c.key] != "ok")
        ]
        summary = SweepSummary(total=len(cells), skipped=len(cells) - len(todo))
        write_manifest(Path(out), spec, cells)
        stream.write(
            f"sweep {spec.name!r}: {len(cells)} cells, {summary.skipped} already recorded in "
            f"{out}, {len(todo)} to run on {backend.describe()}\n"
        )
        stream.flush()
        if not todo:
            return summary
        progress = SweepProgress(len(todo), stream)
        pending: list[CellOutcome] = []
        last_flush = time.monotonic()
        outcomes = backend.run(todo)
        by_key = {c.key: c for c in todo}
        try:
            for outcome in outcomes:
                pending.append(outcome)
                summary.ran += 1
                if outcome.failed:
                    cell = by_key[outcome.key]
                    summary.failed.append((cell.describe(), str(outcome.row["error"])))
                progress.update(failed=outcome.failed)
                if len(pending) >= flush_cells or time.monotonic() - last_flush >= flush_seconds:
                    with DeferredInterrupt() as held:
                        store.append(pending)
                        pending, last_flush = [], time.monotonic()
                    if held.received:
                        raise KeyboardInterrupt
        except KeyboardInterrupt:
            summary.interrupted = True
        finally:
            try:
                with DeferredInterrupt() as held:
                    store.append(pending)
                summary.interrupted |= held.received
            finally:
                outcomes.close()  # stops the workers
                progress.close()
    summary.seconds = time.monotonic() - started
    return summary


def write_manifest(out: Path, spec: SweepSpec, cells: Sequence[Cell]) -> None:
    """Write ``sweep.json`` and ``spec.toml`` into ``out`` (module notes)."""
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": spec.name,
        "spec": str(spec.path),
        "version": __version__,
        "policies": list(spec.policies),
        "mechanics": list(spec.mechanics),
        "baseline": spec.baseline,
        "keys": [c.key for c in cells],
    }
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    atomic_write_text(out / "spec.toml", spec.text)


def read_manifest(out: str | Path) -> dict[str, object] | None:
    """The manifest of the sweep last run into ``out`` (``None`` if there is none)."""
    path = Path(out) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a sweep manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{path}: not a sweep manifest of this version")
    return data


def render_summary(summary: SweepSummary, out: str | Path) -> str:
    """The lines printed at the end of a sweep."""
    lines = [
        f"{summary.ran} cells ran ({len(summary.failed)} failed) in "
        f"{format_duration(summary.seconds)}; {summary.skipped} were already recorded"
    ]
    if summary.interrupted:
        lines.append(
            f"interrupted: {summary.skipped + summary.ran} of {summary.total} cells are "
            f"recorded; run the same command again to run the {summary.missing} missing"
        )
    for description, error in summary.failed[:5]:
        lines.append(f"failed: {description}: {error}")
    if len(summary.failed) > 5:
        lines.append(f"... and {len(summary.failed) - 5} more failed cells (status column)")
    lines.append(f"results: {Path(out) / 'results.parquet'}, per job: {Path(out) / 'jobs.parquet'}")
    return "\n".join(lines)
