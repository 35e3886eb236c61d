"""The round loop on its own: a world and a policy written against its protocols.

The loop knows no particular world (``rounds`` imports nothing of ``sim`` or ``runtime``:
``tests/test_boundary.py``); a world of a dozen lines runs under it. A policy of the user's own
keeps its state across a checkpoint through the protocol's ``snapshot``/``restore``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.persistence import StateReader
from shockwave.rounds import ClusterWorld, Decision, JobLedger, ProgressColumns, RoundLoop
from shockwave.scheduling import ClusterState, RoundPolicy, SimulationConfig
from shockwave.sim import Simulation, simulate
from shockwave.workload import Workload

IntArray = npt.NDArray[np.int64]


class WholeJobs(ClusterWorld):
    """A toy world: rounds of ``tau`` seconds on a fixed grid; a job that runs finishes its
    whole profile in that one round."""

    mechanics = "toy"

    def __init__(self, ledger: JobLedger, tau: float) -> None:
        self.ledger, self.tau = ledger, tau
        self.now = float(ledger.arrival[0])
        self.running = np.zeros(0, dtype=np.int64)

    def close_round(self, round_index: int) -> float:
        if self.running.shape[0]:
            self.ledger.complete(self.running, np.full(self.running.shape, self.now), round_index)
            self.running = np.zeros(0, dtype=np.int64)
        return self.now

    def idle_until(self, arrival: float, round_index: int) -> float:
        self.now = max(self.now, arrival)
        return self.now

    def progress_columns(self, active: IntArray) -> ProgressColumns:
        zeros = np.zeros(active.shape[0])
        left = self.ledger.exclusive[active]
        return {
            "epochs_done": np.zeros(active.shape[0], dtype=np.int64),
            "epoch_progress": zeros,
            "steps_run": zeros,
            "total_steps": zeros + 1.0,
            "remaining_steps": zeros + 1.0,
            "batch_size": np.ones(active.shape[0], dtype=np.int64),
            "throughput": 1.0 / left,
            "remaining_seconds": left,
        }

    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        self.running = decision.jobs.copy()
        self.now = now + self.tau

    def makespan(self) -> float:
        return float(np.nanmax(self.ledger.completion_time))

    def snapshot(self) -> dict[str, Any]:
        return {"now": self.now, "running": self.running.copy()}

    def restore(self, saved: StateReader) -> None:
        self.now = saved.number("now")
        self.running = saved.array("running", np.int64, (None,))
        saved.done()


class OldestFirst(RoundPolicy):
    """Runs the jobs it has seen longest first; remembers when it first saw each job (plain
    data: the protocol's default snapshot and restore hold it)."""

    name = "oldest-first"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.first_seen: dict[int, int] = {}
        self.calls = 0

    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        self.calls += 1
        for job_id in state.job_ids.tolist():
            self.first_seen.setdefault(job_id, state.round_index)
        order = np.argsort([self.first_seen[j] for j in state.job_ids.tolist()], kind="stable")
        fits = np.cumsum(state.gang_size[order]) <= state.gpus
        return state.job_ids[order[fits]]


@pytest.fixture(scope="module")
def small(canonical_workload: Workload) -> Workload:
    return canonical_workload.with_jobs(canonical_workload.jobs[:20])


def test_a_world_of_its_own_runs_under_the_round_loop(small: Workload) -> None:
    ledger = JobLedger(small, gpus=8)
    world = WholeJobs(ledger, tau=100.0)
    loop = RoundLoop(ledger, world, OldestFirst(), round_seconds=100.0, allocation=None)
    assert loop.run()
    assert ledger.done.all() and ledger.finished == len(small)
    record = ledger.record(
        policy_name="oldest-first", mechanics=world.mechanics, round_seconds=100.0, seed=0,
        makespan=world.makespan(), wall_seconds=0.0, gpu_busy_seconds=None,
    )  # fmt: skip
    assert record.mechanics == "toy" and record.num_rounds == loop.round_index
    # every job ran exactly one round, and no round used more GPUs than the cluster has
    assert (record.rounds_run == 1).all() and (record.round_gpus_used <= 8).all()


def test_a_policy_of_its_own_is_checkpointed_through_its_attributes(
    small: Workload, tmp_path: Path
) -> None:
    config = SimulationConfig(gpus=6)
    whole = simulate(small, OldestFirst(), config)
    path = tmp_path / "run.ckpt"
    first = Simulation(small, OldestFirst(), config)
    assert first.run(until_round=12) is None
    first.save(path)
    with pytest.raises(ValueError, match="not a built-in one: pass an equivalent instance"):
        Simulation.load(path)
    policy = OldestFirst()
    resumed = Simulation.load(path, policy=policy)
    assert policy.calls == 12 and len(policy.first_seen) > 0  # its state came back
    result = resumed.run()
    assert result is not None and result.to_json() == whole.to_json()


def test_a_policy_holding_more_than_data_says_what_to_define(
    small: Workload, tmp_path: Path
) -> None:
    class Opaque(OldestFirst):
        def reset(self) -> None:
            super().reset()
            self.handle = object()

    simulation = Simulation(small, Opaque(), SimulationConfig(gpus=6))
    assert simulation.run(until_round=3) is None
    with pytest.raises(TypeError, match="attribute 'handle' .* define snapshot\\(\\) and restore"):
        simulation.save(tmp_path / "run.ckpt")


def test_the_state_names_what_differs_between_worlds_not_the_mechanics(small: Workload) -> None:
    seen: dict[str, tuple[str, str, bool]] = {}

    class Spy(OldestFirst):
        def schedule(self, state: ClusterState) -> npt.ArrayLike:
            seen[mechanics] = (
                state.progress_counter,
                state.batch_size_changes,
                state.original_quirks,
            )
            return super().schedule(state)

    assert "mechanics" not in {f.name for f in dataclasses.fields(ClusterState)}
    for mechanics in ("exact", "gavel"):
        simulate(small, Spy(), SimulationConfig(gpus=6, mechanics=mechanics))  # type: ignore[arg-type]
    assert seen == {
        "exact": ("profile", "profile", False),
        "gavel": ("steps", "runtime-rules", True),
    }


_BOOK_BUSY = """
import numpy as np
from shockwave.rounds.ledger import JobBooks
n = 100_000
rng = np.random.default_rng(3)
books = JobBooks(job_ids=np.arange(n), arrival=np.zeros(n), gang=rng.integers(1, 9, n),
                 weight=np.ones(n), exclusive=np.ones(n), gpus=8 * n)
books.round_busy.append(0.0)
books.book_busy(1, rng.uniform(0.0, 120.0, n), books.gang)
print(books.round_busy[0].hex())
"""


def test_booked_gpu_seconds_do_not_depend_on_the_blas_threads() -> None:
    """A round's useful GPU-seconds are the same bits whatever the BLAS library's thread count
    (OpenBLAS splits a long dot product over its threads: measured different at 100,000 values,
    and this test fails with a plain ``run @ gang``)."""
    import os
    import subprocess
    import sys

    bits = set()
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        out = subprocess.run(
            [sys.executable, "-c", _BOOK_BUSY], env=env, capture_output=True, text=True, check=True
        )
        bits.add(out.stdout.strip())
    assert len(bits) == 1


def blas_threads() -> int:
    """The BLAS libraries' thread count now (the largest, if several are loaded)."""
    from threadpoolctl import threadpool_info

    return max(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


def test_policies_are_asked_on_one_blas_thread(small: Workload) -> None:
    """The loop asks a policy inside ``one_blas_thread``, so the BLAS dot products of a policy
    (the baselines' over the active jobs) are the same bits whatever the machine's cores, and
    the caller's BLAS threads are back after the run."""
    from threadpoolctl import threadpool_limits

    from shockwave.scheduling import AllocationPolicy

    seen: list[int] = []

    class Counting(OldestFirst):
        def schedule(self, state: ClusterState) -> npt.ArrayLike:
            seen.append(blas_threads())
            return super().schedule(state)

    class Halves(AllocationPolicy):
        name = "halves"

        def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
            seen.append(blas_threads())
            return np.full(state.num_active, 0.5)

    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == 2
        for policy in (Counting(), Halves()):
            for mechanics in ("exact", "gavel"):
                config = SimulationConfig(gpus=6, mechanics=mechanics)  # type: ignore[arg-type]
                simulate(small, policy, config)
        assert blas_threads() == 2
    assert len(seen) > 20 and set(seen) == {1}
