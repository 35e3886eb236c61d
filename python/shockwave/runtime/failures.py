"""The failure policy of a real run: every restart and kill decision, in one place.

* **A crash** (a process that exits without being told to, or is killed): the job is restarted
  from its last checkpoint, within the round if it holds a lease, up to
  ``RuntimeConfig.max_restarts`` times; then, or at once when its latest error is permanent (a
  family that does not exist, a report that breaks its spec, a command that cannot start), it
  fails for good.
* **A timeout**: a started process that has not said hello within
  ``start_timeout_seconds``, or one that has not reached its round boundary
  ``boundary_timeout_seconds`` after it was due, is killed (and its exit is then a crash).
* **A report that breaks the job's spec** (a batch size its profile does not list, more epochs
  than it has): the error is permanent and the process is killed.
* **A process that cannot start** (the executor refuses it): the job fails at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from shockwave.runtime.config import RuntimeConfig
from shockwave.runtime.lifecycle import LiveJob, Starting, Training


@dataclass(frozen=True)
class Restart:
    """Restart the job from its checkpoint within its round."""


@dataclass(frozen=True)
class Wait:
    """Leave the job waiting: the next round that dispatches it starts it again."""


@dataclass(frozen=True)
class Fail:
    """Fail the job for good, for ``reason``."""

    reason: str


Verdict = Restart | Wait | Fail


class FailurePolicy:
    """The decisions of the module notes, with the limits of ``config``."""

    def __init__(self, config: RuntimeConfig) -> None:
        self.max_restarts = config.max_restarts
        self.start_timeout_seconds = config.start_timeout_seconds
        self.boundary_timeout_seconds = config.boundary_timeout_seconds

    def after_crash(self, job: LiveJob, reason: str, *, in_round: bool) -> Verdict:
        """What to do with ``job`` after its process crashed (its crashes counted already)."""
        crashes = job.history.crashes
        if job.permanent or crashes > self.max_restarts:
            return Fail(reason if job.permanent else f"{crashes} crashes, the last: {reason}")
        return Restart() if in_round else Wait()

    def overdue(self, job: LiveJob, now: float) -> str | None:
        """Why ``job``'s process must be killed at wall-clock time ``now`` (``None``: it may
        go on)."""
        phase = job.phase
        if not isinstance(phase, (Starting, Training)) or phase.process.killed:
            return None
        if isinstance(phase, Starting):
            if now - phase.process.launched_at > self.start_timeout_seconds:
                return f"no hello within {self.start_timeout_seconds:g} s"
        elif phase.due_at > 0.0 and now - phase.due_at > self.boundary_timeout_seconds:
            return f"not at its boundary {self.boundary_timeout_seconds:g} s late"
        return None

    @staticmethod
    def bad_report(job: LiveJob) -> None:
        """A report broke the job's spec: the error is permanent (the caller kills it)."""
        job.permanent = True

    @staticmethod
    def cannot_start(job: LiveJob, error: OSError) -> Fail:
        """The executor could not start the job's process: it never will."""
        job.permanent = True
        return Fail(f"cannot start its process: {error}")
