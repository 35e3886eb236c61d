"""The job API: what a training script calls to run under the shockwave scheduler.

A script gets a :class:`JobContext` from :func:`connect` and follows one loop::

    def main() -> None:
        ctx = shockwave.job.connect(samples_per_epoch=N, batch_sizes=(16, 32, 64))
        with ctx:
            checkpoint = ctx.restore()            # None on a fresh start
            ... initialise, or take the state from checkpoint.arrays / checkpoint.meta ...
            while ctx.epochs_completed < ctx.launch.epochs:
                if ctx.should_stop():             # preempted: save and exit 0
                    ctx.stop(arrays, meta)
                    return
                ... one step at ctx.batch_size over n samples ...
                ctx.report(samples=n)             # increments since the last call
                if ctx.checkpoint_due:            # the scheduler asked for a periodic checkpoint
                    ctx.save(arrays, meta)
            ctx.finish(shockwave.job.digest(params))

**Under the scheduler** (the variables :data:`~shockwave.job.spec.ENV_JOB` and
:data:`~shockwave.job.spec.ENV_CHANNEL` are set) the context talks the lease protocol of
:mod:`shockwave.job.protocol`: :meth:`JobContext.restore` (or the first
:meth:`~JobContext.should_stop` / :meth:`~JobContext.report`) says ``hello`` and waits for a
lease; :meth:`~JobContext.report` sends ``progress`` at most every
:data:`PROGRESS_INTERVAL_SECONDS`; when the lease is over (its seconds have passed since it was
received, or the job's cumulative steps reached its ``max_steps``) :meth:`~JobContext.should_stop`
sends ``boundary`` and blocks for the answer: a new lease (keep training, no restart) or
``stop``. It also returns ``True`` when the scheduler sent ``stop`` on its own, when the process
received ``SIGTERM``, or when the connection broke. :meth:`~JobContext.stop` saves the checkpoint
and says ``checkpointed``; :meth:`~JobContext.finish` says ``finished`` with the digest of the
final parameters; an exception escaping ``with ctx:`` says ``failed`` and propagates.

**Standalone** (no scheduler: the variables are unset) the same script runs alone: the lease never
ends, :meth:`~JobContext.should_stop` never blocks and always returns ``False``,
``samples_per_epoch`` and ``batch_sizes`` come from :func:`connect`'s arguments, checkpoints go to
its ``checkpoint_path`` (or nowhere), and :meth:`~JobContext.finish` records the digest in
:attr:`JobContext.final_digest`. :meth:`JobContext.standalone` builds such a context from a
:class:`~shockwave.job.spec.JobLaunch` (reference runs, tests).

**Bookkeeping.** The context counts the job's cumulative steps and samples over all its
incarnations, the batch size it trains at, and the batch size of every completed epoch (epoch
``e`` spans cumulative samples ``[e*S, (e+1)*S)`` with ``S = samples_per_epoch``; it is logged, at
the batch size of the step that completes it, when the count reaches ``(e+1)*S``). This state
travels in every checkpoint saved with :meth:`~JobContext.save` (under the reserved meta key
:data:`BOOKKEEPING_KEY`) and comes back with :meth:`~JobContext.restore`, so the counts reported
to the scheduler continue across preemptions.

**Busy time.** ``busy_seconds`` in reports is the time this process has spent training since its
first lease arrived, by ``time.monotonic``, without the time blocked at lease boundaries.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Client, Connection
from types import FrameType, TracebackType
from typing import Any

import numpy.typing as npt

from shockwave.arguments import is_integer
from shockwave.job.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from shockwave.job.protocol import JobMessage, JobMessageKind, Lease, Report, SchedulerMessage
from shockwave.job.spec import ENV_AUTHKEY, ENV_CHANNEL, ENV_JOB, JobLaunch
from shockwave.run_spec import RunSpec

#: Meta key under which a checkpoint holds the context's own bookkeeping.
BOOKKEEPING_KEY = "__shockwave__"
#: Least time between two ``progress`` messages, seconds.
PROGRESS_INTERVAL_SECONDS = 0.5
#: The lease of a standalone context: no time limit, no step limit.
ENDLESS_LEASE = Lease(round_index=0, seconds=math.inf)

# While blocked for the scheduler's answer, how often to look at the SIGTERM flag, seconds.
_WAIT_POLL_SECONDS = 0.1


class JobContext:
    """A job's side of the lease protocol, and its progress bookkeeping (see the module notes).

    Build one with :func:`connect` (from the environment), :meth:`attach` (to a scheduler's
    address) or :meth:`standalone` (no scheduler).
    """

    def __init__(self, launch: JobLaunch, connection: Connection | None) -> None:
        """Use :func:`connect`, :meth:`attach` or :meth:`standalone` instead."""
        self._launch = launch
        self._connection = connection
        self._standalone = connection is None
        self._allowed = frozenset(launch.batch_sizes)
        self._steps = 0
        self._samples = 0
        self._batch_size = launch.initial_batch_size
        self._epoch_log: list[list[int]] = []
        self._lease: Lease | None = ENDLESS_LEASE if connection is None else None
        self._lease_received = time.monotonic()
        self._begun = False
        self._closed = False
        self._stop_received = False
        self._signalled = False
        self._broken = False
        self._checkpoint_requested = False
        self._busy_total = 0.0
        self._busy_since: float | None = None
        # steps and seconds per batch size in this incarnation; seconds run from the previous
        # report (or the end of a wait or a save) to this one
        self._batch_stats: dict[int, list[float]] = {}
        self._stats_mark: float | None = None
        self._last_progress = time.monotonic()
        self._final_digest: str | None = None
        self._previous_handler: Any = None
        self._handler_installed = False
        if connection is not None:
            self._install_signal_handler()

    # ----------------------------------------------------------------- construction

    @classmethod
    def attach(cls, launch: JobLaunch, address: str, authkey: bytes) -> JobContext:
        """Connect to the scheduler's channel at ``address`` (a Unix socket path).

        Raises:
            ConnectionError: if the scheduler cannot be reached or the key is refused.
        """
        try:
            connection = Client(address=address, family="AF_UNIX", authkey=authkey)
        except (OSError, EOFError) as exc:
            raise ConnectionError(f"cannot reach the scheduler at {address!r}: {exc}") from None
        except Exception as exc:  # multiprocessing.AuthenticationError
            raise ConnectionError(f"the scheduler at {address!r} refused the job: {exc}") from None
        return cls(launch, connection)

    @classmethod
    def standalone(cls, launch: JobLaunch, *, seconds: float | None = None) -> JobContext:
        """A context without a scheduler for ``launch``: an endless lease, never stopped, or,
        with ``seconds``, a lease of that many seconds from now, after which
        :meth:`should_stop` says ``True`` (a time-limited run: the throughput profile measures
        the real training loop this way).

        Checkpoints go to ``launch.checkpoint_path`` (nowhere if it is empty).

        Raises:
            ValueError: for ``seconds`` that is not a finite number > 0.
        """
        ctx = cls(launch, None)
        if seconds is not None:
            if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
                raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
            ctx._lease = Lease(round_index=0, seconds=float(seconds))
            ctx._lease_received = time.monotonic()
        return ctx

    # ----------------------------------------------------------------- state

    @property
    def launch(self) -> JobLaunch:
        """What the job was told at launch (standalone: built from :func:`connect`'s arguments)."""
        return self._launch

    @property
    def is_standalone(self) -> bool:
        """Whether the job runs without a scheduler."""
        return self._standalone

    @property
    def lease(self) -> Lease | None:
        """The current lease (``None`` until the scheduler answered ``hello``)."""
        return self._lease

    @property
    def steps(self) -> int:
        """Optimiser steps reported so far, over all incarnations."""
        return self._steps

    @property
    def samples(self) -> int:
        """Training samples reported so far, over all incarnations."""
        return self._samples

    @property
    def batch_size(self) -> int:
        """The batch size the job trains at (set by :meth:`set_batch_size` or :meth:`report`)."""
        return self._batch_size

    @property
    def epochs_completed(self) -> int:
        """Whole epochs done: ``samples // samples_per_epoch``."""
        return self._samples // self._launch.samples_per_epoch

    @property
    def epoch_progress(self) -> float:
        """Epochs done, fractional: ``samples / samples_per_epoch``."""
        return self._samples / self._launch.samples_per_epoch

    @property
    def epoch_batch_sizes(self) -> tuple[tuple[int, int], ...]:
        """Batch size of every completed epoch, run-length encoded ``(batch size, epochs)``."""
        return tuple((b, count) for b, count in self._epoch_log)

    @property
    def busy_seconds(self) -> float:
        """Seconds spent training since the first lease, without waits at boundaries."""
        busy = self._busy_total
        if self._busy_since is not None:
            busy += time.monotonic() - self._busy_since
        return busy

    @property
    def checkpoint_due(self) -> bool:
        """Whether the latest lease asked for a checkpoint and none was saved since."""
        return self._checkpoint_requested

    @property
    def final_digest(self) -> str | None:
        """The digest given to :meth:`finish`, once it was called."""
        return self._final_digest

    @property
    def closed(self) -> bool:
        """Whether :meth:`stop`, :meth:`finish`, :meth:`fail` or :meth:`close` was called."""
        return self._closed

    def snapshot(self) -> Report:
        """The job's progress now, as sent to the scheduler."""
        return Report(
            steps=self._steps,
            samples=self._samples,
            batch_size=self._batch_size,
            epoch_batch_sizes=self.epoch_batch_sizes,
            busy_seconds=self.busy_seconds,
            batch_stats=tuple(
                (size, int(steps), seconds)
                for size, (steps, seconds) in sorted(self._batch_stats.items())
            ),
        )

    # ----------------------------------------------------------------- the training loop

    def restore(self) -> Checkpoint | None:
        """Load the job's checkpoint, if any, then start (``hello``, wait for the first lease).

        The context's bookkeeping (steps, samples, batch size, epoch log) comes back from the
        checkpoint; the return value holds the script's own part: the arrays and meta it passed
        to :meth:`save` or :meth:`stop`. Call it once, before training.

        Returns:
            The saved arrays and meta, or ``None`` on a fresh start (no checkpoint file, or no
            ``checkpoint_path`` when standalone).

        Raises:
            ValueError: naming the file if the checkpoint is corrupt or is not this job's.
            RuntimeError: if the job has already started.
        """
        self._check_open()
        if self._begun:
            raise RuntimeError("restore() must be called once, before should_stop() and report()")
        path = self._launch.checkpoint_path
        loaded = load_checkpoint(path) if path else None
        user: Checkpoint | None = None
        if loaded is not None:
            meta = dict(loaded.meta)
            self._restore_bookkeeping(meta.pop(BOOKKEEPING_KEY, None), path)
            user = Checkpoint(arrays=loaded.arrays, meta=meta)
        self._begin("restored" if loaded is not None else "fresh")
        return user

    def should_stop(self) -> bool:
        """Whether to checkpoint and exit now; call once per step, before the step.

        ``True`` when the scheduler said ``stop`` (now or earlier), the process got ``SIGTERM``,
        or the connection broke. When the lease is over, sends ``boundary`` and blocks for the
        answer: a new lease gives ``False`` (keep training), ``stop`` gives ``True``. Standalone:
        ``False``, or with a time-limited lease, whether it is over.
        """
        self._check_open()
        if not self._begun:
            self._begin("fresh")
        if self._connection is None:
            return self._lease is not ENDLESS_LEASE and self._lease_over()
        if self._must_stop():
            return True
        self._poll_unsolicited()
        while not self._must_stop() and self._lease_over():
            self._send("boundary")
            if not self._must_stop():
                self._await_answer()
        return self._must_stop()

    def report(
        self, steps: int = 1, samples: int | None = None, batch_size: int | None = None
    ) -> None:
        """Record progress since the last call (cheap: call it every step).

        Args:
            steps: optimiser steps done since the last call (>= 0).
            samples: training samples processed in them (default ``steps * batch_size``; at
                most that, since the last batch of an epoch may be partial).
            batch_size: the batch size they ran at (default :attr:`batch_size`); it becomes the
                current batch size.

        Raises:
            ValueError: naming the argument: a negative count, more samples than
                ``steps * batch_size``, or a batch size not in ``launch.batch_sizes``.
        """
        self._check_open()
        if not self._begun:
            self._begin("fresh")
        size = self._batch_size if batch_size is None else self._checked_batch_size(batch_size)
        if not is_integer(steps, numpy=False) or steps < 0:
            raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
        if samples is None:
            samples = steps * size
        elif not is_integer(samples, numpy=False) or samples < 0:
            raise ValueError(f"samples must be an integer >= 0, got {samples!r}")
        elif samples > steps * size:
            raise ValueError(f"samples = {samples} exceeds steps * batch_size = {steps} * {size}")
        self._batch_size = size
        now = time.monotonic()
        if self._stats_mark is not None and steps:
            tally = self._batch_stats.setdefault(size, [0.0, 0.0])
            tally[0] += steps
            tally[1] += now - self._stats_mark
        self._stats_mark = now
        per_epoch = self._launch.samples_per_epoch
        epochs_before = self._samples // per_epoch
        self._steps += steps
        self._samples += samples
        completed = self._samples // per_epoch - epochs_before
        if completed:
            if self._epoch_log and self._epoch_log[-1][0] == size:
                self._epoch_log[-1][1] += completed
            else:
                self._epoch_log.append([size, completed])
        if self._connection is not None and now - self._last_progress >= PROGRESS_INTERVAL_SECONDS:
            self._last_progress = now
            self._send("progress")

    def set_batch_size(self, batch_size: int) -> None:
        """Train at ``batch_size`` from now on (must be in ``launch.batch_sizes``).

        Raises:
            ValueError: naming the batch size if it is not allowed.
        """
        self._check_open()
        self._batch_size = self._checked_batch_size(batch_size)

    def save(
        self, arrays: Mapping[str, npt.ArrayLike], meta: Mapping[str, Any] | None = None
    ) -> None:
        """Write a checkpoint atomically: ``arrays``, ``meta`` and the context's bookkeeping.

        Standalone without a ``checkpoint_path`` it writes nothing. Clears
        :attr:`checkpoint_due`.

        Args:
            arrays: the script's state (parameters, optimiser state, RNG state, ...) by name;
                names must not start with ``__``.
            meta: a JSON object (finite numbers); keys must not start with ``__``.

        Raises:
            ValueError: naming the offending array name or meta key.
            OSError: if the file cannot be written (the previous checkpoint is then intact).
        """
        self._check_open()
        full: dict[str, Any] = {}
        for key, value in (meta or {}).items():
            if not isinstance(key, str) or key.startswith("__"):
                raise ValueError(f"meta key {key!r}: must be a string not starting with '__'")
            full[key] = value
        full[BOOKKEEPING_KEY] = self._bookkeeping()
        path = self._launch.checkpoint_path
        if path:
            save_checkpoint(path, arrays, full)
            self._stats_mark = time.monotonic()  # writing is not training
        self._checkpoint_requested = False

    def stop(
        self, arrays: Mapping[str, npt.ArrayLike], meta: Mapping[str, Any] | None = None
    ) -> None:
        """Save the checkpoint (as :meth:`save`), tell the scheduler ``checkpointed``, close."""
        self.save(arrays, meta)
        self._send("checkpointed")
        self.close()

    def finish(self, digest: str) -> None:
        """The job is done: tell the scheduler ``finished`` with ``digest``, close.

        Args:
            digest: hex digest of the final parameters (:func:`shockwave.job.digest`).
        """
        self._check_open()
        if not isinstance(digest, str) or not digest:
            raise ValueError(f"digest must be a non-empty string, got {digest!r}")
        self._final_digest = digest
        self._send("finished", digest=digest)
        self.close()

    def fail(self, text: str, *, permanent: bool = False) -> None:
        """Tell the scheduler ``failed`` with ``text`` (best effort) and close.

        Args:
            text: the error.
            permanent: the error cannot go away by a restart (the job's input, options or
                checkpoint are not valid): the scheduler then fails the job at once instead of
                restarting it from its checkpoint.
        """
        if self._closed:
            return
        self._send("failed", text=text, permanent=permanent)
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent); later calls of the loop methods raise."""
        if self._closed:
            return
        self._closed = True
        self._pause_busy()
        if self._connection is not None:
            with contextlib.suppress(OSError):
                self._connection.close()
        self._restore_signal_handler()

    def __enter__(self) -> JobContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None and not isinstance(exc, SystemExit):
            # a ValueError is about the job's input (its launch, options, data or checkpoint):
            # the same input fails the same way again, so a restart cannot help
            self.fail(f"{type(exc).__name__}: {exc}", permanent=isinstance(exc, ValueError))
        else:
            self.close()

    # ----------------------------------------------------------------- internals

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the job context is closed (after stop, finish, fail or close)")

    def _checked_batch_size(self, batch_size: int) -> int:
        if not is_integer(batch_size, numpy=False):
            raise ValueError(f"batch_size must be an integer, got {batch_size!r}")
        if batch_size not in self._allowed:
            raise ValueError(
                f"batch_size {batch_size} is not one of the job's batch sizes "
                f"{list(self._launch.batch_sizes)}"
            )
        return batch_size

    def _must_stop(self) -> bool:
        return self._stop_received or self._signalled or self._broken

    def _lease_over(self) -> bool:
        lease = self._lease
        if lease is None:
            return True
        if lease.max_steps is not None and self._steps >= lease.max_steps:
            return True
        return time.monotonic() - self._lease_received >= lease.seconds

    def _begin(self, how: str) -> None:
        """Start training: ``hello`` and the first lease (standalone: start the busy clock)."""
        self._begun = True
        if self._connection is None:
            self._resume_busy()
            return
        self._send("hello", text=how)
        if not self._must_stop():
            self._await_answer()

    def _accept(self, message: SchedulerMessage) -> None:
        if message.lease is None:
            self._stop_received = True
            return
        self._lease = message.lease
        self._lease_received = time.monotonic()
        if message.lease.checkpoint:
            self._checkpoint_requested = True

    def _await_answer(self) -> None:
        """Block until the scheduler answers (a lease or stop), SIGTERM, or a broken channel."""
        connection = self._connection
        assert connection is not None
        self._pause_busy()
        try:
            while not self._signalled:
                try:
                    if not connection.poll(_WAIT_POLL_SECONDS):
                        continue
                    raw = connection.recv_bytes()
                except (EOFError, OSError):
                    self._broken = True
                    return
                self._accept(SchedulerMessage.decode(raw))
                return
        finally:
            self._resume_busy()

    def _poll_unsolicited(self) -> None:
        """Take the messages the scheduler sent on its own (``stop``, or a new lease)."""
        connection = self._connection
        assert connection is not None
        try:
            while not self._stop_received and connection.poll(0):
                self._accept(SchedulerMessage.decode(connection.recv_bytes()))
        except (EOFError, OSError):
            self._broken = True

    def _send(
        self,
        kind: JobMessageKind,
        *,
        digest: str | None = None,
        text: str | None = None,
        permanent: bool = False,
    ) -> None:
        connection = self._connection
        if connection is None or self._broken:
            return
        report = None if kind == "failed" and not self._begun else self.snapshot()
        message = JobMessage(
            kind,
            self._launch.job_id,
            self._launch.incarnation,
            report=report,
            digest=digest,
            text=text,
            permanent=permanent,
        )
        try:
            connection.send_bytes(message.encode())
        except OSError:
            self._broken = True

    def _pause_busy(self) -> None:
        if self._busy_since is not None:
            self._busy_total += time.monotonic() - self._busy_since
            self._busy_since = None

    def _resume_busy(self) -> None:
        self._busy_since = time.monotonic()
        self._stats_mark = self._busy_since  # a wait is not training

    def _bookkeeping(self) -> dict[str, Any]:
        return {
            "steps": self._steps,
            "samples": self._samples,
            "batch_size": self._batch_size,
            "epoch_batch_sizes": [list(run) for run in self._epoch_log],
            "samples_per_epoch": self._launch.samples_per_epoch,
        }

    def _restore_bookkeeping(self, data: Any, path: str) -> None:
        where = f"checkpoint {path!r}"
        if not isinstance(data, dict):
            raise ValueError(f"{where}: meta key {BOOKKEEPING_KEY!r} is missing")
        counts = {}
        for key in ("steps", "samples", "batch_size", "samples_per_epoch"):
            value = data.get(key)
            if not is_integer(value, numpy=False) or value < 0:
                raise ValueError(f"{where}: {BOOKKEEPING_KEY}.{key} must be an integer >= 0")
            counts[key] = value
        if counts["samples_per_epoch"] != self._launch.samples_per_epoch:
            raise ValueError(
                f"{where}: saved with samples_per_epoch = {counts['samples_per_epoch']}, "
                f"but the job has {self._launch.samples_per_epoch} (another job's checkpoint?)"
            )
        if counts["batch_size"] not in self._allowed:
            raise ValueError(
                f"{where}: batch size {counts['batch_size']} is not one of the job's batch sizes "
                f"{list(self._launch.batch_sizes)}"
            )
        segments = data.get("epoch_batch_sizes")
        if not isinstance(segments, list) or not all(
            isinstance(segment, list)
            and len(segment) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in segment)
            for segment in segments
        ):
            raise ValueError(f"{where}: {BOOKKEEPING_KEY}.epoch_batch_sizes is malformed")
        if (
            sum(segment[1] for segment in segments)
            != counts["samples"] // self._launch.samples_per_epoch
        ):
            raise ValueError(f"{where}: the epoch log does not match the sample count")
        self._steps = counts["steps"]
        self._samples = counts["samples"]
        self._batch_size = counts["batch_size"]
        self._epoch_log = [list(segment) for segment in segments]

    def _install_signal_handler(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        self._handler_installed = True

    def _restore_signal_handler(self) -> None:
        if not self._handler_installed or threading.current_thread() is not threading.main_thread():
            return
        previous = self._previous_handler
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        self._handler_installed = False

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self._signalled = True


def connect(
    *,
    samples_per_epoch: int | None = None,
    batch_sizes: Sequence[int] | None = None,
    checkpoint_path: str | None = None,
    initial_batch_size: int | None = None,
    epochs: int | None = None,
) -> JobContext:
    """The job's context: under the scheduler if the environment says so, else standalone.

    Under the scheduler (:data:`~shockwave.job.spec.ENV_JOB` and
    :data:`~shockwave.job.spec.ENV_CHANNEL` set) everything comes from the launch; the arguments
    only check that the script and the workload agree: ``samples_per_epoch``, if given, must
    equal the launch's, and every batch size of the launch must be in ``batch_sizes``, if given.
    With :data:`~shockwave.job.spec.ENV_JOB` set but no channel, the launch runs standalone.

    Standalone (neither variable set), the arguments describe the job:

    Args:
        samples_per_epoch: training samples in one epoch (required standalone).
        batch_sizes: the batch sizes the script may train at, ascending (required standalone).
        checkpoint_path: where to keep the checkpoint (standalone; default: nowhere).
        initial_batch_size: the first epoch's batch size (standalone; default the smallest).
        epochs: epochs to train, as :attr:`JobContext.launch` ``.epochs`` (standalone;
            default 1).

    Raises:
        ValueError: naming the argument or environment variable that is missing or wrong.
        ConnectionError: if the scheduler cannot be reached.
    """
    text = os.environ.get(ENV_JOB)
    if text is None:
        if samples_per_epoch is None:
            raise ValueError("samples_per_epoch: required when running without the scheduler")
        if batch_sizes is None:
            raise ValueError("batch_sizes: required when running without the scheduler")
        launch = standalone_launch(
            samples_per_epoch=samples_per_epoch,
            batch_sizes=batch_sizes,
            initial_batch_size=initial_batch_size,
            epochs=1 if epochs is None else epochs,
            checkpoint_path=checkpoint_path or "",
        )
        return JobContext.standalone(launch)
    launch = JobLaunch.from_json(text)
    if samples_per_epoch is not None and samples_per_epoch != launch.samples_per_epoch:
        raise ValueError(
            f"samples_per_epoch: the script has {samples_per_epoch}, the workload says "
            f"{launch.samples_per_epoch}"
        )
    if batch_sizes is not None:
        unknown = sorted(set(launch.batch_sizes) - set(batch_sizes))
        if unknown:
            raise ValueError(
                f"batch_sizes: the workload allows {unknown[0]}, which the script does not "
                f"support ({list(batch_sizes)})"
            )
    address = os.environ.get(ENV_CHANNEL)
    if not address:
        return JobContext.standalone(launch)
    try:
        authkey = bytes.fromhex(os.environ.get(ENV_AUTHKEY, ""))
    except ValueError:
        raise ValueError(f"{ENV_AUTHKEY}: must be a hex string") from None
    return JobContext.attach(launch, address, authkey)


def standalone_launch(
    *,
    samples_per_epoch: int,
    batch_sizes: Sequence[int],
    initial_batch_size: int | None = None,
    epochs: int = 1,
    checkpoint_path: str = "",
    model: str = "standalone",
    mode: str = "static",
) -> JobLaunch:
    """The launch description of a script run without the scheduler.

    Raises:
        ValueError: naming the argument that is not valid.
    """
    if not is_integer(samples_per_epoch, numpy=False):
        raise ValueError(f"samples_per_epoch must be an integer, got {samples_per_epoch!r}")
    if samples_per_epoch < 1:
        raise ValueError(f"samples_per_epoch must be >= 1, got {samples_per_epoch}")
    sizes = tuple(batch_sizes)
    if (
        not sizes
        or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in sizes)
        or list(sizes) != sorted(set(sizes))
    ):
        raise ValueError(f"batch_sizes must be ascending distinct integers >= 1, got {sizes!r}")
    first = sizes[0] if initial_batch_size is None else initial_batch_size
    if first not in sizes:
        raise ValueError(f"initial_batch_size {first!r} is not one of batch_sizes {list(sizes)}")
    if not is_integer(epochs, numpy=False) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    command = tuple(arg for arg in ("python", *sys.argv) if arg)
    return JobLaunch(
        job_id=0,
        incarnation=0,
        model=model,
        mode=mode,
        epochs=epochs,
        batch_sizes=sizes,
        initial_batch_size=first,
        samples_per_epoch=samples_per_epoch,
        gang_size=1,
        gpus=(0,),
        slot_kind="cpu",
        threads=1,
        checkpoint_path=checkpoint_path,
        run=RunSpec(command=command),
    )
