"""The local executor: every job incarnation is a child process of the scheduler.

No service and no extra dependency. Slots are GPUs (``CUDA_VISIBLE_DEVICES`` set to the job's
slots) or, on a machine without GPUs, CPU cores: a job on ``k`` slots is pinned to those ``k``
cores and its BLAS/OpenMP threads are capped at ``k``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from multiprocessing.connection import wait
from pathlib import Path

from shockwave.job.protocol import SchedulerMessage
from shockwave.job.spec import JobLaunch
from shockwave.runtime.config import usable_cores
from shockwave.runtime.executor import Executor, ExecutorEvent
from shockwave.runtime.job_process import JobProcess


class LocalExecutor(Executor):
    """Runs job processes on this machine (see the module notes)."""

    name = "local"

    def __init__(self) -> None:
        self._authkey = os.urandom(32)
        self._socket_dir = Path(tempfile.mkdtemp(prefix="shockwave-"))
        self._processes: dict[int, JobProcess] = {}
        self._finished: list[JobProcess] = []
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if not self._cores:  # pragma: no cover - not Linux
            self._cores = list(range(usable_cores()))

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")

    def start(self, launch: JobLaunch, workdir: Path, log_path: Path) -> None:
        previous = self._processes.get(launch.job_id)
        if previous is not None and previous.popen.poll() is None:
            raise RuntimeError(f"job {launch.job_id} is still running (internal error)")
        cores = None
        if launch.slot_kind == "cpu":
            cores = [self._cores[g % len(self._cores)] for g in launch.gpus]
        process = JobProcess(
            launch,
            self._socket_dir / f"{launch.job_id}-{launch.incarnation}.sock",
            self._authkey,
            workdir,
            log_path,
            cores=cores,
            on_connect=self._wake,
        )
        if previous is not None:
            self._finished.append(previous)
        self._processes[launch.job_id] = process

    def send(self, job_id: int, incarnation: int, message: SchedulerMessage) -> bool:
        process = self._processes.get(job_id)
        if process is None or process.incarnation != incarnation:
            return False
        return process.send(message)

    def poll(self, timeout: float) -> list[ExecutorEvent]:
        events = self._collect()
        if events:
            return events
        waitables: list[object] = [self._wake_read]
        waitables += [
            p.conn for p in self._processes.values() if p.conn is not None and not p.messages_done
        ]
        wait(waitables, timeout=max(0.0, min(timeout, 0.05)))  # type: ignore[arg-type]
        with contextlib.suppress(BlockingIOError, OSError):
            while self._wake_read.recv(4096):
                pass
        return self._collect()

    def _collect(self) -> list[ExecutorEvent]:
        events: list[ExecutorEvent] = []
        for process in list(self._processes.values()):
            ended = process.popen.poll() is not None
            events.extend(process.receive())
            if ended:
                exit_event = process.exited()
                if exit_event is not None:
                    events.append(exit_event)
                    process.close()
        return events

    def kill(self, job_id: int) -> None:
        process = self._processes.get(job_id)
        if process is not None:
            process.kill()

    def close(self) -> None:
        for process in [*self._processes.values(), *self._finished]:
            if process.popen.poll() is None:
                process.kill()
            process.close()
        self._processes.clear()
        self._finished.clear()
        self._wake_read.close()
        self._wake_write.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)
