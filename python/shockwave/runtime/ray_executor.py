"""The Ray executor: every job incarnation runs in a Ray task that holds the job's GPUs.

Needs ``pip install 'shockwave[ray]'``. Placement is Ray's: a job's task requests
``num_gpus = gang size`` and ``num_cpus = 0`` (so that logical GPUs, not a machine's CPU count,
limit how many jobs run at once), and Ray picks the node and the GPUs (``CUDA_VISIBLE_DEVICES``
on real GPUs). On its node the task starts the same job process as the local executor (same
environment, same lease protocol over a node-local Unix socket) and relays its messages to the
scheduler through a broker actor pinned to the scheduler's node; scheduler messages travel back
the same way. Nothing but Ray crosses machines.

**Typed slots.** On a heterogeneous cluster (``RuntimeConfig.cluster``) a job's task also asks
Ray for its GPU type as one custom resource per type, ``{"gpu_type:v100": gang size}``
(:func:`type_resource`), so Ray places it on a node that has GPUs of that type; the task checks
that Ray assigned it that resource before the job starts. The nodes of a joined cluster declare
their GPUs' type with that resource (``ray start --num-gpus 8 --resources
'{"gpu_type:v100": 8}'``). A local Ray instance started by the executor gets, for every type of
the cluster, as many logical GPUs and as much of that type's resource as the spec says; there
the job keeps the slots the scheduler chose for it (of its type), since Ray's logical GPU ids on
one node are not tied to a type.

With ``ray_address`` the executor joins that cluster (every node needs this package installed,
and the run directory must be on a file system all nodes share: jobs write their checkpoints and
logs there). Without it, a local Ray instance is started with ``gpus`` logical GPUs and shut down
at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import tempfile
import threading
import time
from collections import deque
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from shockwave.job.protocol import JobMessage, ProtocolError, SchedulerMessage
from shockwave.job.spec import JobLaunch, SlotKind
from shockwave.runtime.config import RuntimeConfig, machine_gpus
from shockwave.runtime.executor import Executor, ExecutorEvent, JobExited
from shockwave.runtime.job_process import JobProcess

try:
    import ray
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("the ray executor needs Ray: pip install 'shockwave[ray]'") from exc

#: A relay-level order (never forwarded to the job): SIGKILL the job's process.
_KILL = b"__kill__"
#: Seconds :meth:`RayExecutor.close` waits for the job tasks it asked to end before it cancels
#: the ones still running.
CLOSE_GRACE_SECONDS = 10.0


def type_resource(gpu_type: str) -> str:
    """The Ray custom resource that stands for one GPU of ``gpu_type``."""
    return f"gpu_type:{gpu_type}"


class _Outbox:
    """One job incarnation's scheduler messages, handed out in the order the scheduler numbered
    them, whatever order their calls reached the broker in."""

    def __init__(self) -> None:
        self.ready: asyncio.Queue[bytes] = asyncio.Queue()
        self._held: dict[int, bytes] = {}
        self._next = 0

    def put(self, number: int, raw: bytes) -> None:
        self._held[number] = raw
        while self._next in self._held:
            self.ready.put_nowait(self._held.pop(self._next))
            self._next += 1


@ray.remote(num_cpus=0)
class LeaseBroker:
    """Mailboxes between the scheduler and the job tasks (an async actor).

    Ray runs an async actor's calls in no guaranteed order, even those of one caller. The
    scheduler numbers its messages to each job incarnation and the broker reorders them; a job's
    task waits for each of its calls to return before it makes the next one (its messages, then
    its exit), so a job's messages always come before its exit, as the scheduler needs.
    """

    def __init__(self) -> None:
        self._inbox: list[tuple[str, int, int, Any]] = []
        self._arrived = asyncio.Event()
        self._outboxes: dict[tuple[int, int], _Outbox] = {}

    def _outbox(self, job: int, incarnation: int) -> _Outbox:
        return self._outboxes.setdefault((job, incarnation), _Outbox())

    async def post(self, job: int, incarnation: int, raws: list[bytes]) -> None:
        """A job's messages, in the order its process sent them, from its task."""
        self._inbox.extend(("message", job, incarnation, raw) for raw in raws)
        self._arrived.set()

    async def post_exit(
        self, job: int, incarnation: int, returncode: int | None, error: str | None
    ) -> None:
        """A job process ended, from its task (after all its messages)."""
        self._inbox.append(("exit", job, incarnation, (returncode, error)))
        self._arrived.set()
        self._outboxes.pop((job, incarnation), None)

    async def drain(self, timeout: float) -> list[tuple[str, int, int, Any]]:
        """Everything posted since the last call (waiting up to ``timeout`` s for something)."""
        if not self._inbox:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), timeout)
        items, self._inbox = self._inbox, []
        self._arrived.clear()
        return items

    async def send(self, job: int, incarnation: int, number: int, raw: bytes) -> None:
        """The scheduler's message ``number`` (0, 1, ...) to a job incarnation (or the relay's
        kill order)."""
        self._outbox(job, incarnation).put(number, raw)

    async def next_reply(self, job: int, incarnation: int, timeout: float) -> bytes | None:
        """The next scheduler message for a job, waiting up to ``timeout`` s (for its task)."""
        try:
            return await asyncio.wait_for(self._outbox(job, incarnation).ready.get(), timeout)
        except asyncio.TimeoutError:
            return None


@ray.remote(num_cpus=0, max_retries=0)
def run_job(
    launch_json: str, broker: Any, workdir: str, log_path: str, keep_slots: bool = False
) -> int | None:
    """A job's Ray task: start the job process on this node's GPUs and relay its messages
    (``keep_slots``: on the scheduler's own slots, see the module notes)."""
    launch = JobLaunch.from_json(launch_json)
    if launch.gpu_type is not None:
        name = type_resource(launch.gpu_type)
        assigned = ray.get_runtime_context().get_assigned_resources()  # type: ignore[no-untyped-call,unused-ignore]
        held = assigned.get(name, 0.0)
        if held < launch.gang_size:
            raise RuntimeError(
                f"job {launch.job_id}: Ray assigned {held} of {name}, not {launch.gang_size}"
            )
    if keep_slots:
        ids = list(launch.gpus)
    else:
        ids = [int(float(g)) for g in ray.get_gpu_ids()][: launch.gang_size]
    kind: SlotKind = "gpu" if machine_gpus() > 0 else "cpu"
    launch = dataclasses.replace(launch, gpus=tuple(ids), slot_kind=kind)
    cores = None
    if kind == "cpu" and hasattr(os, "sched_getaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        cores = [allowed[g % len(allowed)] for g in ids]
    socket_dir = Path(tempfile.mkdtemp(prefix="shockwave-ray-"))
    process = JobProcess(
        launch,
        socket_dir / "job.sock",
        os.urandom(32),
        Path(workdir),
        Path(log_path),
        cores=cores,
        base_env=dict(os.environ),
    )
    done = threading.Event()

    def relay_replies() -> None:
        while not done.is_set():
            raw = ray.get(broker.next_reply.remote(launch.job_id, launch.incarnation, 1.0))
            if raw is None:
                continue
            if raw == _KILL:
                process.kill()
            else:
                process.send(SchedulerMessage.decode(raw))

    replies = threading.Thread(target=relay_replies, daemon=True)
    replies.start()

    def relay_messages() -> None:
        # One call at a time, each awaited: see LeaseBroker.
        raws = [message.encode() for message in process.receive()]
        if raws:
            ray.get(broker.post.remote(launch.job_id, launch.incarnation, raws))

    try:
        while True:
            relay_messages()
            exit_event = process.exited()
            if exit_event is not None:
                relay_messages()
                ray.get(
                    broker.post_exit.remote(
                        launch.job_id, launch.incarnation, exit_event.returncode, exit_event.error
                    )
                )
                return exit_event.returncode
            conn = process.conn
            if conn is not None and not process.messages_done:
                wait([conn], timeout=0.05)
            else:
                time.sleep(0.02)
    finally:
        done.set()
        if process.popen.poll() is None:
            process.kill()
        process.close()
        with contextlib.suppress(OSError):
            socket_dir.rmdir()


class RayExecutor(Executor):
    """Runs job processes on a Ray cluster (see the module notes)."""

    name = "ray"

    def __init__(self, config: RuntimeConfig) -> None:
        self._started_ray = False
        if not ray.is_initialized():
            if config.ray_address is not None:
                ray.init(address=config.ray_address, log_to_driver=False)
            else:
                resources = None
                if config.cluster is not None:
                    resources = {
                        type_resource(name): float(count)
                        for name, count in zip(
                            config.cluster.types, config.cluster.counts, strict=True
                        )
                    }
                ray.init(
                    num_gpus=config.gpus,
                    resources=resources,
                    include_dashboard=False,
                    log_to_driver=False,
                )
                self._started_ray = True
        self._keep_slots = self._started_ray and config.cluster is not None
        node = ray.get_runtime_context().get_node_id()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node, soft=False)
        broker: Any = LeaseBroker  # Ray's actor class (its typing does not know the decorator)
        self._broker = broker.options(scheduling_strategy=strategy).remote()
        self._tasks: dict[int, tuple[int, Any]] = {}
        self._sent: dict[tuple[int, int], int] = {}  # messages sent to each job incarnation
        self._exited: set[tuple[int, int]] = set()
        self._pending: deque[ExecutorEvent] = deque()

    def start(self, launch: JobLaunch, workdir: Path, log_path: Path) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        options: dict[str, Any] = {"num_gpus": launch.gang_size, "num_cpus": 0}
        if launch.gpu_type is not None:
            options["resources"] = {type_resource(launch.gpu_type): float(launch.gang_size)}
        ref = run_job.options(**options).remote(
            launch.to_json(),
            self._broker,
            str(workdir.resolve()),
            str(log_path.resolve()),
            self._keep_slots,
        )
        self._tasks[launch.job_id] = (launch.incarnation, ref)

    def _post(self, job_id: int, incarnation: int, raw: bytes) -> None:
        """Send ``raw`` to a job incarnation's relay, numbered (see :class:`LeaseBroker`)."""
        number = self._sent.get((job_id, incarnation), 0)
        self._sent[job_id, incarnation] = number + 1
        self._broker.send.remote(job_id, incarnation, number, raw)

    def send(self, job_id: int, incarnation: int, message: SchedulerMessage) -> bool:
        current = self._tasks.get(job_id)
        if current is None or current[0] != incarnation:
            return False
        self._post(job_id, incarnation, message.encode())
        return True

    def poll(self, timeout: float) -> list[ExecutorEvent]:
        if self._pending:
            timeout = 0.0
        for kind, job, incarnation, payload in ray.get(self._broker.drain.remote(timeout)):
            if kind == "message":
                try:
                    self._pending.append(JobMessage.decode(payload))
                except ProtocolError as exc:
                    self._pending.append(JobExited(job, incarnation, None, f"protocol: {exc}"))
                    self._exited.add((job, incarnation))
                    self.kill(job)
            elif (job, incarnation) not in self._exited:
                self._exited.add((job, incarnation))
                returncode, error = payload
                self._pending.append(JobExited(job, incarnation, returncode, error))
        self._reap_dead_tasks()
        events = list(self._pending)
        self._pending.clear()
        return events

    def _reap_dead_tasks(self) -> None:
        """Report tasks that ended without reporting their process's exit (a lost worker)."""
        refs = {id(ref): (job, inc, ref) for job, (inc, ref) in self._tasks.items()}
        if not refs:
            return
        ready, _ = ray.wait([r for _, _, r in refs.values()], num_returns=len(refs), timeout=0)
        for ref in ready:
            job, incarnation, _ = refs[id(ref)]
            if (job, incarnation) in self._exited:
                continue
            try:
                ray.get(ref)
            except Exception as exc:  # any task failure is the job's crash
                self._exited.add((job, incarnation))
                self._pending.append(JobExited(job, incarnation, None, f"ray task: {exc}"))

    @staticmethod
    def _running(refs: list[Any], timeout: float) -> list[Any]:
        """The tasks of ``refs`` not finished after ``timeout`` seconds."""
        if not refs:
            return []
        _, running = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        return list(running)

    def kill(self, job_id: int) -> None:
        current = self._tasks.get(job_id)
        if current is not None:
            self._post(job_id, current[0], _KILL)

    def close(self) -> None:
        # Ends the tasks still running through their relays (which kill their job processes),
        # and cancels only those that do not end within the grace period: a task that is
        # completing must never be cancelled (Ray aborts the driver on that race: "Tried to
        # complete task that was not pending", ray-project/ray#54527).
        tasks = {
            id(ref): (job, incarnation, ref) for job, (incarnation, ref) in self._tasks.items()
        }
        running = self._running([ref for _, _, ref in tasks.values()], 0.0)
        for ref in running:
            job, incarnation, _ = tasks[id(ref)]
            self._post(job, incarnation, _KILL)
        for ref in self._running(running, CLOSE_GRACE_SECONDS):
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        self._tasks.clear()
        with contextlib.suppress(Exception):
            ray.kill(self._broker)
        if self._started_ray:
            ray.shutdown()
