"""The job API against a fake scheduler: the lease protocol, bookkeeping and checkpoints."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, Listener
from pathlib import Path

import numpy as np
import pytest

from shockwave.job import context as context_module
from shockwave.job.checkpoint import load_checkpoint
from shockwave.job.context import BOOKKEEPING_KEY, JobContext, connect
from shockwave.job.protocol import JobMessage, Lease, SchedulerMessage
from shockwave.job.spec import ENV_AUTHKEY, ENV_CHANNEL, ENV_JOB, JobLaunch
from shockwave.run_spec import RunSpec

STOP = SchedulerMessage(None)
DROP = "drop"  # a handler's answer: close the connection
Answer = SchedulerMessage | str | None


def lease(max_steps: int | None = None, seconds: float = 1e6, checkpoint: bool = False) -> Answer:
    return SchedulerMessage(Lease(0, seconds, max_steps, checkpoint))


class FakeScheduler:
    """A Listener on a Unix socket served by a thread; ``handler`` answers each message."""

    def __init__(self, handler: Callable[[JobMessage], Answer]) -> None:
        self.handler = handler
        self.directory = tempfile.mkdtemp(prefix="swtest-")
        self.address = os.path.join(self.directory, "s")
        self.authkey = os.urandom(8)
        self.listener = Listener(self.address, family="AF_UNIX", authkey=self.authkey)
        self.messages: list[JobMessage] = []
        self.drop_requested = threading.Event()
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.connection: Connection | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection = self.listener.accept()
        self.connection = connection
        try:
            while not self.drop_requested.is_set():
                if not connection.poll(0.02):
                    continue
                try:
                    raw = connection.recv_bytes()
                except EOFError:
                    return
                message = JobMessage.decode(raw)
                self.messages.append(message)
                answer = self.handler(message)
                if answer == DROP:
                    return
                if isinstance(answer, SchedulerMessage):
                    self.send(answer)
        finally:
            connection.close()
            self.closed.set()

    def send(self, message: SchedulerMessage) -> None:
        assert self.connection is not None
        with self.lock:
            self.connection.send_bytes(message.encode())

    def drop(self) -> None:
        self.drop_requested.set()
        assert self.closed.wait(5)

    def kinds(self) -> list[str]:
        return [m.kind for m in self.messages]

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 5
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.005)

    def close(self) -> None:
        self.drop_requested.set()
        self.thread.join(5)
        self.listener.close()


def scripted(*answers: Answer) -> Callable[[JobMessage], Answer]:
    """Answers ``hello`` and ``boundary`` messages in order; nothing else."""
    queue = list(answers)

    def handler(message: JobMessage) -> Answer:
        if message.kind in ("hello", "boundary"):
            return queue.pop(0)
        return None

    return handler


def make_launch(tmp_path: Path, **changes: object) -> JobLaunch:
    fields: dict[str, object] = {
        "job_id": 7,
        "incarnation": 0,
        "model": "test",
        "mode": "static",
        "epochs": 3,
        "batch_sizes": (10, 20, 40),
        "initial_batch_size": 10,
        "samples_per_epoch": 100,
        "gang_size": 1,
        "gpus": (0,),
        "slot_kind": "cpu",
        "threads": 1,
        "checkpoint_path": str(tmp_path / "job.ckpt"),
        "run": RunSpec(command=("python", "train.py"), seed=1),
    }
    fields.update(changes)
    return JobLaunch(**fields)  # type: ignore[arg-type]


@pytest.fixture
def fast_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report sends ``progress``."""
    monkeypatch.setattr(context_module, "PROGRESS_INTERVAL_SECONDS", 0.0)


@pytest.fixture
def fakes() -> Iterator[list[FakeScheduler]]:
    made: list[FakeScheduler] = []
    yield made
    for fake in made:
        fake.close()


def attach(
    fakes: list[FakeScheduler], launch: JobLaunch, handler: Callable[[JobMessage], Answer]
) -> tuple[FakeScheduler, JobContext]:
    fake = FakeScheduler(handler)
    fakes.append(fake)
    return fake, JobContext.attach(launch, fake.address, fake.authkey)


def train_until_stopped(ctx: JobContext, limit: int = 1000) -> int:
    """Steps of ``ctx.batch_size`` until ``should_stop``; the steps done."""
    done = 0
    while not ctx.should_stop():
        ctx.report(samples=ctx.batch_size)
        done += 1
        assert done < limit
    return done


@pytest.mark.usefixtures("fast_progress")
def test_hello_lease_progress_extension_stop_and_resume(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    launch = make_launch(tmp_path)
    fake, ctx = attach(fakes, launch, scripted(lease(5), lease(8), STOP))
    assert ctx.restore() is None
    assert ctx.lease is not None and ctx.lease.max_steps == 5
    assert train_until_stopped(ctx) == 8  # extended at 5 without a restart, stopped at 8
    ctx.stop({"w": np.arange(3.0)}, {"note": "mine"})
    assert ctx.closed
    fake.wait_for(12)
    assert fake.kinds() == ["hello"] + ["progress"] * 5 + ["boundary"] + ["progress"] * 3 + [
        "boundary",
        "checkpointed",
    ]
    hello, boundaries = fake.messages[0], [m for m in fake.messages if m.kind == "boundary"]
    assert hello.text == "fresh" and hello.job_id == 7 and hello.incarnation == 0
    assert hello.report is not None and hello.report.steps == 0
    assert [m.report.steps for m in boundaries if m.report] == [5, 8]
    last = fake.messages[-1].report
    assert last is not None and (last.steps, last.samples, last.batch_size) == (8, 80, 10)
    assert last.busy_seconds > 0

    # the next incarnation continues the counts and gets the script's own state back
    fake2, ctx2 = attach(fakes, make_launch(tmp_path, incarnation=1), scripted(lease(9), STOP))
    restored = ctx2.restore()
    assert restored is not None
    assert restored.meta == {"note": "mine"}
    np.testing.assert_array_equal(restored.arrays["w"], np.arange(3.0))
    assert (ctx2.steps, ctx2.samples, ctx2.batch_size) == (8, 80, 10)
    assert train_until_stopped(ctx2) == 1
    ctx2.stop({"w": np.arange(3.0)})
    fake2.wait_for(4)
    assert fake2.messages[0].text == "restored" and fake2.messages[0].incarnation == 1
    assert fake2.messages[0].report is not None and fake2.messages[0].report.steps == 8


def test_time_limited_lease_ends_at_its_seconds(tmp_path: Path, fakes: list[FakeScheduler]) -> None:
    fake, ctx = attach(fakes, make_launch(tmp_path), scripted(lease(seconds=0.15), STOP))
    start = time.monotonic()
    steps = 0
    while not ctx.should_stop():
        time.sleep(0.01)
        ctx.report()
        steps += 1
    assert time.monotonic() - start >= 0.15
    assert steps >= 5
    assert fake.kinds()[-1] == "boundary"


def test_scheduler_stop_without_being_asked(tmp_path: Path, fakes: list[FakeScheduler]) -> None:
    fake, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))
    for _ in range(3):
        assert not ctx.should_stop()
        ctx.report()
    fake.send(STOP)
    assert ctx.should_stop()
    assert ctx.should_stop()  # and it stays stopped
    ctx.stop({"w": np.ones(1)})
    fake.wait_for(2)
    assert fake.kinds() == ["hello", "checkpointed"]
    assert fake.messages[-1].report is not None and fake.messages[-1].report.steps == 3


def test_a_lost_connection_stops_the_job_and_it_still_checkpoints(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    fake, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))
    assert not ctx.should_stop()
    ctx.report()
    fake.drop()
    assert ctx.should_stop()
    ctx.report()  # reporting into a broken channel is harmless
    ctx.stop({"w": np.ones(2)})
    saved = load_checkpoint(tmp_path / "job.ckpt")
    assert saved is not None and saved.meta[BOOKKEEPING_KEY]["steps"] == 2


def test_a_connection_lost_at_the_boundary_stops_the_job(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    _, ctx = attach(fakes, make_launch(tmp_path), scripted(lease(2), DROP))
    assert train_until_stopped(ctx) == 2


def test_sigterm_stops_the_job_and_the_handler_is_restored(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    _, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))
    assert not ctx.should_stop()
    os.kill(os.getpid(), signal.SIGTERM)
    assert ctx.should_stop()
    ctx.stop({"w": np.ones(1)})
    assert signal.getsignal(signal.SIGTERM) == before


def test_epoch_log_follows_batch_size_changes_and_partial_batches(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    fake, ctx = attach(fakes, make_launch(tmp_path), scripted(lease(14), STOP))
    assert not ctx.should_stop()
    for _ in range(10):  # epoch 0 at 10
        ctx.report(samples=10)
    assert ctx.epoch_batch_sizes == ((10, 1),)
    ctx.set_batch_size(40)
    ctx.report(samples=40)
    ctx.report(samples=40)
    assert ctx.epochs_completed == 1 and ctx.epoch_progress == pytest.approx(1.8)
    ctx.report(samples=20)  # the epoch's partial last batch
    assert ctx.epoch_batch_sizes == ((10, 1), (40, 1))
    ctx.report(steps=1, samples=20, batch_size=20)  # a report may say its batch size
    assert ctx.batch_size == 20
    assert ctx.should_stop()  # 14 steps: boundary, then stop
    boundary = fake.messages[-1]
    assert boundary.kind == "boundary" and boundary.report is not None
    assert boundary.report.epoch_batch_sizes == ((10, 1), (40, 1))
    assert (boundary.report.samples, boundary.report.batch_size) == (220, 20)
    ctx.stop({})

    # the log survives the checkpoint; several epochs in one report are logged together
    _, ctx2 = attach(fakes, make_launch(tmp_path, incarnation=1), scripted(lease()))
    ctx2.restore()
    assert ctx2.epoch_batch_sizes == ((10, 1), (40, 1)) and ctx2.batch_size == 20
    ctx2.report(steps=10, samples=180)
    assert ctx2.epoch_batch_sizes == ((10, 1), (40, 1), (20, 2))
    ctx2.report(steps=10, samples=200)
    assert ctx2.epoch_batch_sizes == ((10, 1), (40, 1), (20, 4))
    assert ctx2.snapshot().epochs_completed == ctx2.epochs_completed == 6


def test_invalid_reports_and_batch_sizes_are_refused(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    _, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))
    with pytest.raises(ValueError, match="batch_size 33 is not one of"):
        ctx.report(batch_size=33)
    with pytest.raises(ValueError, match="batch_size 7"):
        ctx.set_batch_size(7)
    with pytest.raises(ValueError, match="samples = 21 exceeds"):
        ctx.report(steps=1, samples=21, batch_size=20)
    with pytest.raises(ValueError, match="steps"):
        ctx.report(steps=-1)
    with pytest.raises(ValueError, match="samples"):
        ctx.report(samples=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="meta key '__x'"):
        ctx.save({}, {"__x": 1})
    assert (ctx.steps, ctx.samples, ctx.batch_size) == (0, 0, 10)


def test_periodic_checkpoint_requests(tmp_path: Path, fakes: list[FakeScheduler]) -> None:
    _, ctx = attach(fakes, make_launch(tmp_path), scripted(lease(2), lease(4, checkpoint=True)))
    assert not ctx.checkpoint_due
    for _ in range(3):
        assert not ctx.should_stop()
        ctx.report()
    assert ctx.checkpoint_due
    ctx.save({"w": np.full(2, 3.0)}, {"k": [1, 2]})
    assert not ctx.checkpoint_due
    saved = load_checkpoint(tmp_path / "job.ckpt")
    assert saved is not None and saved.meta["k"] == [1, 2]
    assert saved.meta[BOOKKEEPING_KEY]["steps"] == 3


def test_an_exception_in_the_with_block_says_failed(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    fake, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))

    def failing_script() -> None:
        with ctx:
            ctx.should_stop()
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        failing_script()
    fake.wait_for(2)
    assert fake.kinds() == ["hello", "failed"]
    assert fake.messages[-1].text == "RuntimeError: boom"
    with pytest.raises(RuntimeError, match="closed"):
        ctx.report()


def test_finish_sends_the_digest_and_the_final_report(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    fake, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))
    with ctx:
        while ctx.epochs_completed < ctx.launch.epochs:
            assert not ctx.should_stop()
            ctx.report(samples=ctx.batch_size)
        ctx.finish("ab" * 32)
    fake.wait_for(2)
    finished = fake.messages[-1]
    assert finished.kind == "finished" and finished.digest == "ab" * 32
    assert finished.report is not None and finished.report.epoch_batch_sizes == ((10, 3),)
    assert ctx.final_digest == "ab" * 32


def test_busy_seconds_leave_out_the_wait_at_a_boundary(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    def slow_second_answer(message: JobMessage) -> Answer:
        if message.kind == "hello":
            return lease(1)
        if message.kind == "boundary":
            time.sleep(0.4)
            return lease()
        return None

    _, ctx = attach(fakes, make_launch(tmp_path), slow_second_answer)
    start = time.monotonic()
    for _ in range(2):
        assert not ctx.should_stop()
        time.sleep(0.15)  # a step
        ctx.report()
    elapsed = time.monotonic() - start
    assert elapsed >= 0.7
    assert 0.3 <= ctx.busy_seconds <= elapsed - 0.35


def test_restore_refuses_another_jobs_checkpoint(
    tmp_path: Path, fakes: list[FakeScheduler]
) -> None:
    other = JobContext.standalone(make_launch(tmp_path, samples_per_epoch=50))
    other.report(samples=10)
    other.save({"w": np.ones(1)})
    _, ctx = attach(fakes, make_launch(tmp_path), scripted(lease()))
    with pytest.raises(ValueError, match="samples_per_epoch = 50"):
        ctx.restore()


def test_standalone_context_never_blocks_or_stops(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="samples_per_epoch"):
        connect(batch_sizes=(8,))
    with pytest.raises(ValueError, match="batch_sizes"):
        connect(samples_per_epoch=64)
    with pytest.raises(ValueError, match="initial_batch_size"):
        connect(samples_per_epoch=64, batch_sizes=(8, 16), initial_batch_size=4)
    path = tmp_path / "alone.ckpt"
    ctx = connect(samples_per_epoch=64, batch_sizes=(8, 16), epochs=2, checkpoint_path=str(path))
    assert ctx.is_standalone and ctx.launch.epochs == 2 and ctx.batch_size == 8
    assert ctx.restore() is None
    assert ctx.lease is not None and ctx.lease.seconds == float("inf")
    for _ in range(20):
        assert not ctx.should_stop()
        ctx.report()
    assert not ctx.checkpoint_due
    ctx.save({"w": np.ones(1)})
    ctx.finish("cd" * 32)
    assert ctx.final_digest == "cd" * 32
    again = connect(samples_per_epoch=64, batch_sizes=(8, 16), checkpoint_path=str(path))
    assert again.restore() is not None and again.steps == 20
    nowhere = JobContext.standalone(make_launch(tmp_path, checkpoint_path=""))
    nowhere.save({"w": np.ones(1)})  # writes nothing
    assert nowhere.restore() is None


def test_steps_are_timed_per_batch_size_excluding_saves(tmp_path: Path) -> None:
    ctx = connect(samples_per_epoch=64, batch_sizes=(8, 16), checkpoint_path=str(tmp_path / "c"))
    ctx.restore()
    for _ in range(5):
        ctx.should_stop()
        time.sleep(0.002)
        ctx.report()
    ctx.set_batch_size(16)
    ctx.save({"w": np.ones(1)})
    time.sleep(0.05)  # between a save and the next step: not training
    ctx.save({"w": np.ones(1)})
    for _ in range(3):
        time.sleep(0.002)
        ctx.report()
    stats = {size: (steps, seconds) for size, steps, seconds in ctx.snapshot().batch_stats}
    assert set(stats) == {8, 16}
    assert stats[8][0] == 5 and stats[16][0] == 3
    assert 5 * 0.002 <= stats[8][1] < 0.05
    assert 3 * 0.002 <= stats[16][1] < 0.05


def test_connect_reads_the_environment(
    tmp_path: Path, fakes: list[FakeScheduler], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeScheduler(scripted(lease(1), STOP))
    fakes.append(fake)
    launch = make_launch(tmp_path)
    monkeypatch.setenv(ENV_JOB, launch.to_json())
    with pytest.raises(ValueError, match="samples_per_epoch: the script has 64"):
        connect(samples_per_epoch=64)
    with pytest.raises(ValueError, match="batch_sizes: the workload allows 40"):
        connect(batch_sizes=(10, 20))
    standalone = connect()  # the launch without a channel
    assert standalone.is_standalone and standalone.launch == launch
    monkeypatch.setenv(ENV_CHANNEL, fake.address)
    monkeypatch.setenv(ENV_AUTHKEY, "zz")
    with pytest.raises(ValueError, match=ENV_AUTHKEY):
        connect()
    monkeypatch.setenv(ENV_AUTHKEY, fake.authkey.hex())
    ctx = connect(samples_per_epoch=100, batch_sizes=(10, 20, 40, 80))
    assert not ctx.is_standalone and ctx.launch == launch
    assert train_until_stopped(ctx) == 1
    ctx.stop({})


def test_an_unreachable_scheduler_is_a_connection_error(tmp_path: Path) -> None:
    with pytest.raises(ConnectionError, match="cannot reach the scheduler"):
        JobContext.attach(make_launch(tmp_path), str(tmp_path / "nobody"), b"k")
