"""A scripted scheduler for one job: check a training script under preemption, without the runtime.

:class:`ScriptedScheduler` serves the lease protocol of :mod:`shockwave.job.protocol` to one job,
one incarnation at a time, answering every message with a function of it (a *responder*).
:class:`PreemptionPlan` is the usual responder: leases that end at chosen cumulative step counts,
where the job is stopped (it checkpoints and exits) or its lease is extended (it keeps training),
optionally asking for a periodic checkpoint. :meth:`ScriptedScheduler.run_to_completion` launches
the job again and again, as the runtime would, until it says ``finished``.

A job runs either in this process (a callable given the incarnation's
:class:`~shockwave.job.spec.JobLaunch`, which builds its context with
:meth:`JobContext.attach <shockwave.job.context.JobContext.attach>` from :attr:`address` and
:attr:`authkey`) or as a child process (:meth:`ScriptedScheduler.environment` gives the variables
it needs)::

    with ScriptedScheduler(PreemptionPlan(stops=range(7, 400, 7))) as scheduler:
        finished = scheduler.run_to_completion(
            launch,
            lambda launch: subprocess.run(
                ["python", "train.py"], env=scheduler.environment(launch), check=True
            ),
        )
    assert finished.digest == reference_digest

The server runs in a thread of the calling process; the job side runs in the caller's thread.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import functools
import math
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from shockwave.job.protocol import JobMessage, Lease, ProtocolError, SchedulerMessage
from shockwave.job.spec import ENV_AUTHKEY, ENV_CHANNEL, ENV_GPUS, ENV_JOB, JobLaunch

#: ``respond(message)``: the scheduler's answer to a job's message, or ``None`` for none.
Responder = Callable[[JobMessage], "SchedulerMessage | None"]

T = TypeVar("T")

# How long a finished job's connection may take to show up at the server, seconds.
_CONNECT_GRACE_SECONDS = 1.0

#: What the scheduler says: stop.
STOP = SchedulerMessage(None)


class PreemptionPlan:
    """Leases that end at chosen cumulative step counts (a :data:`Responder`).

    ``hello`` and ``boundary`` get a lease without a time limit that ends at the next step
    count of ``stops`` or ``extensions`` above the job's steps; a ``boundary`` at a count of
    ``stops`` gets ``stop`` instead. A lease given at a count of ``checkpoints`` asks for a
    checkpoint. Other messages get no answer.

    Args:
        stops: step counts where the job is preempted.
        extensions: step counts where the lease ends and is extended (no restart).
        checkpoints: step counts (of either kind) whose next lease asks for a checkpoint.
    """

    def __init__(
        self,
        stops: Iterable[int] = (),
        extensions: Iterable[int] = (),
        checkpoints: Iterable[int] = (),
    ) -> None:
        self.stops = frozenset(stops)
        self.checkpoints = frozenset(checkpoints)
        self.ends = sorted(self.stops | frozenset(extensions))
        if self.ends and self.ends[0] < 1:
            raise ValueError(f"stops and extensions must be step counts >= 1, got {self.ends[0]}")
        self.leases = 0

    def __call__(self, message: JobMessage) -> SchedulerMessage | None:
        if message.kind not in ("hello", "boundary") or message.report is None:
            return None
        steps = message.report.steps
        if message.kind == "boundary" and steps in self.stops:
            return STOP
        after = bisect.bisect_right(self.ends, steps)
        self.leases += 1
        return SchedulerMessage(
            Lease(
                round_index=self.leases,
                seconds=math.inf,
                max_steps=self.ends[after] if after < len(self.ends) else None,
                checkpoint=steps in self.checkpoints and message.kind == "boundary",
            )
        )


class ScriptedScheduler:
    """Serves one job's lease protocol, answering with ``respond`` (see the module notes).

    Attributes:
        address: the Unix socket the job connects to.
        authkey: the channel's key.
        incarnations: the messages of every incarnation served so far, in order.
    """

    def __init__(self, respond: Responder) -> None:
        self._respond = respond
        self._directory = tempfile.mkdtemp(prefix="swjob-")
        self.address = os.path.join(self._directory, "channel")
        self.authkey = secrets.token_bytes(16)
        self._listener = Listener(address=self.address, family="AF_UNIX", authkey=self.authkey)
        self.incarnations: list[list[JobMessage]] = []
        self._error: BaseException | None = None
        self._woken = False

    def environment(self, launch: JobLaunch) -> dict[str, str]:
        """The environment of a child job process (this process's, plus the job's variables)."""
        env = dict(os.environ)
        env[ENV_JOB] = launch.to_json()
        env[ENV_CHANNEL] = self.address
        env[ENV_AUTHKEY] = self.authkey.hex()
        env[ENV_GPUS] = ",".join(str(gpu) for gpu in launch.gpus)
        return env

    def serve(self, job: Callable[[], T], *, timeout_seconds: float = 120.0) -> T:
        """Run one incarnation: serve the channel while ``job()`` runs; its return value.

        An exception of ``job()`` propagates (without waiting for a connection it left open).

        Raises:
            ProtocolError: if the job sent a malformed message.
            TimeoutError: if the conversation did not end within ``timeout_seconds`` after
                ``job()`` returned.
        """
        record: list[JobMessage] = []
        self.incarnations.append(record)
        connected = threading.Event()
        server = threading.Thread(target=self._converse, args=(record, connected), daemon=True)
        server.start()
        try:
            result = job()
        except BaseException:
            self._end_conversation(server, connected, _CONNECT_GRACE_SECONDS)
            raise
        self._end_conversation(server, connected, timeout_seconds)
        if server.is_alive():
            raise TimeoutError(f"the job's conversation did not end within {timeout_seconds} s")
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return result

    def _end_conversation(
        self, server: threading.Thread, connected: threading.Event, timeout_seconds: float
    ) -> None:
        # a job that never connected leaves the server in accept(): wake it up
        if not connected.wait(_CONNECT_GRACE_SECONDS) and server.is_alive():
            self._wake()
        server.join(timeout_seconds)

    def run_to_completion(
        self,
        launch: JobLaunch,
        job: Callable[[JobLaunch], object],
        *,
        max_incarnations: int = 10_000,
    ) -> JobMessage:
        """Launch ``job`` (incarnation 0, 1, ...) until it says ``finished``; that message.

        Raises:
            RuntimeError: if an incarnation ended without ``checkpointed`` or ``finished``
                (the job failed or crashed), or after ``max_incarnations``.
        """
        for incarnation in range(max_incarnations):
            current = dataclasses.replace(launch, incarnation=incarnation)
            self.serve(functools.partial(job, current))
            kinds = [message.kind for message in self.incarnations[-1]]
            last = self.incarnations[-1][-1] if kinds else None
            if last is not None and last.kind == "finished":
                return last
            if last is None or last.kind != "checkpointed":
                detail = "" if last is None or last.text is None else f": {last.text}"
                raise RuntimeError(
                    f"incarnation {incarnation} ended after {kinds or 'no messages'}{detail}"
                )
        raise RuntimeError(f"the job did not finish in {max_incarnations} incarnations")

    def close(self) -> None:
        """Stop listening and remove the socket."""
        self._listener.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def __enter__(self) -> ScriptedScheduler:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _converse(self, record: list[JobMessage], connected: threading.Event) -> None:
        try:
            connection = self._listener.accept()
        except Exception as exc:  # a refused key, the wake-up call, or the listener closed
            if not self._woken:
                self._error = exc
            self._woken = False
            return
        connected.set()
        with connection:
            try:
                self._answer_all(connection, record)
            except ProtocolError as exc:
                self._error = exc

    def _answer_all(self, connection: Connection, record: list[JobMessage]) -> None:
        while True:
            try:
                raw = connection.recv_bytes()
            except (EOFError, OSError):
                return
            message = JobMessage.decode(raw)
            record.append(message)
            answer = self._respond(message)
            if answer is not None:
                try:
                    connection.send_bytes(answer.encode())
                except OSError:
                    return

    def _wake(self) -> None:
        """Connect without the handshake: accept() fails, and the server thread ends."""
        self._woken = True
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
            probe.connect(self.address)

    @property
    def directory(self) -> Path:
        """The temporary directory holding the socket (removed by :meth:`close`)."""
        return Path(self._directory)
