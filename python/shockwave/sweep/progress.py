"""The progress display of a sweep: cells done, failures, elapsed time and ETA.

On a terminal, one line redrawn in place (at most ten times a second); elsewhere (a log file, CI),
a line every ``log_interval`` seconds and one at the end.
"""

from __future__ import annotations

import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` or ``m:ss``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class SweepProgress:
    """Progress of ``total`` cells written to ``stream`` (module notes)."""

    def __init__(self, total: int, stream: TextIO, *, log_interval: float = 30.0) -> None:
        self.total = total
        self.stream = stream
        self.tty = stream.isatty()
        self.log_interval = log_interval
        self.done = 0
        self.failed = 0
        self._started = time.monotonic()
        self._last = self._started if not self.tty else 0.0
        self._shown = False

    def update(self, *, failed: bool) -> None:
        """Count one finished cell and redraw when due."""
        self.done += 1
        self.failed += int(failed)
        now = time.monotonic()
        due = (now - self._last) >= (0.1 if self.tty else self.log_interval)
        if due or (self.tty and self.done == self.total):
            self._last = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The progress text: bar, counts, elapsed time and the estimated time left."""
        now = time.monotonic() if now is None else now
        elapsed = now - self._started
        width = 24
        filled = width * self.done // max(self.total, 1)
        failed = f", {self.failed} failed" if self.failed else ""
        eta = ""
        if 0 < self.done < self.total:
            eta = f", ETA {format_duration(elapsed / self.done * (self.total - self.done))}"
        return (
            f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} cells{failed}, "
            f"{format_duration(elapsed)} elapsed{eta}"
        )

    def _draw(self, now: float) -> None:
        if self.tty:
            self.stream.write("\r" + self.line(now) + "\033[K")
            self._shown = True
        else:
            self.stream.write(self.line(now) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the display (a final line when not on a terminal)."""
        if self.tty and self._shown:
            self.stream.write("\n")
        elif not self.tty and self.done:
            self.stream.write(self.line() + "\n")
        self.stream.flush()
