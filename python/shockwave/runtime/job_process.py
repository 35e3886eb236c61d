"""One job process and its connection: spawn, accept, send, receive, reap, kill.

Used by the local executor (one per running job) and by the Ray executor's task on the job's
node. The process gets its own Unix socket (a listener in a private temporary directory,
authenticated with a per-run key); a thread accepts the job's connection so that the caller's
loop never blocks on it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from multiprocessing.connection import Connection, Listener
from pathlib import Path

from shockwave.job.protocol import JobMessage, ProtocolError, SchedulerMessage
from shockwave.job.spec import JobLaunch
from shockwave.runtime.executor import JobExited, job_argv, job_environment


class JobProcess:
    """A launched incarnation of a job.

    Args:
        launch: what the job is told.
        socket_path: where its listener goes (a short path: Unix sockets allow ~100 bytes).
        authkey: the connection's key.
        workdir: working directory of a user command.
        log_path: the job's log (standard output and error, appended).
        cores: CPU cores to pin the process to (CPU slots), or ``None``.
        on_connect: called from the accepting thread once the job has connected (to wake the
            caller's loop).
        base_env: the environment to extend (default: this process's).
    """

    def __init__(
        self,
        launch: JobLaunch,
        socket_path: Path,
        authkey: bytes,
        workdir: Path,
        log_path: Path,
        *,
        cores: list[int] | None = None,
        on_connect: object = None,
        base_env: dict[str, str] | None = None,
    ) -> None:
        self.launch = launch
        self.job_id = launch.job_id
        self.incarnation = launch.incarnation
        self.conn: Connection | None = None
        self.messages_done = False  # the connection is closed (EOF or error)
        self.exit_reported = False
        #: what went wrong on the executor's side (a protocol violation), for the exit event
        self.error: str | None = None
        self._socket_path = socket_path
        self._on_connect = on_connect
        self._lock = threading.Lock()
        self._listener = Listener(str(socket_path), family="AF_UNIX", authkey=authkey)
        env = job_environment(launch, str(socket_path), authkey, base_env)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            log.write(
                f"--- job {launch.job_id} incarnation {launch.incarnation} on slots "
                f"{list(launch.gpus)}\n".encode()
            )
            log.flush()
            try:
                self.popen = subprocess.Popen(
                    job_argv(launch),
                    env=env,
                    cwd=workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C reaches the scheduler only; kill the group
                )
            except OSError:
                self._listener.close()
                raise
        if cores:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self.popen.pid, cores)
        self._accepter = threading.Thread(
            target=self._accept, name=f"accept-job-{self.job_id}", daemon=True
        )
        self._accepter.start()

    def _accept(self) -> None:
        try:
            conn = self._listener.accept()
        except (OSError, EOFError, ValueError):  # closed, or a failed handshake
            return
        with self._lock:
            self.conn = conn
        if callable(self._on_connect):
            self._on_connect()

    def receive(self) -> list[JobMessage]:
        """Every message waiting on the connection.

        A message that breaks the protocol kills the process; its exit carries the error.
        """
        if self.conn is None and self.popen.poll() is not None:
            self._accepter.join(timeout=0.2)  # it may have connected just before it ended
        out: list[JobMessage] = []
        conn = self.conn
        if conn is None or self.messages_done:
            return out
        try:
            while conn.poll(0):
                raw = conn.recv_bytes()
                try:
                    out.append(JobMessage.decode(raw))
                except ProtocolError as exc:
                    self.error = f"protocol violation: {exc}"
                    self.kill()
                    self.messages_done = True
                    break
        except (EOFError, OSError):
            self.messages_done = True
        return out

    def send(self, message: SchedulerMessage) -> bool:
        """Send to the job; ``False`` if its connection is gone."""
        conn = self.conn
        if conn is None or self.messages_done:
            return False
        try:
            conn.send_bytes(message.encode())
        except (OSError, ValueError):
            self.messages_done = True
            return False
        return True

    def exited(self) -> JobExited | None:
        """The exit, once the process has ended and its messages have been read."""
        if self.exit_reported:
            return None
        returncode = self.popen.poll()
        if returncode is None:
            return None
        self.exit_reported = True
        return JobExited(self.job_id, self.incarnation, returncode, self.error)

    def kill(self) -> None:
        """SIGKILL the job's process group (a user command's children too)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def close(self) -> None:
        """Release the listener, the connection and the socket file (the process is reaped)."""
        self._listener.close()
        with contextlib.suppress(OSError):
            self._socket_path.unlink()
        if self.conn is not None:
            self.conn.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
