"""The runtime's scheduler on a simulated clock with ideal jobs (tests/runtime_fakes.py).

With jobs that follow their profiles exactly and start instantly, a real run must reproduce the
``exact`` simulator (restart penalty 0): the same rounds, decisions and completion times. Faults
(crashes, hangs, jobs that never start, bad reports), interruption and resume are scripted.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from shockwave.policies import make_policy
from shockwave.run_spec import RunSpec
from shockwave.runtime.config import RuntimeConfig
from shockwave.runtime.journal import Journal
from shockwave.runtime.result import RunResult, run_result
from shockwave.runtime.scheduler import RuntimeScheduler
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.workload import Job, Workload
from tests.runtime_fakes import FakeClock, FakeExecutor, Fault


def make_workload(seed: int = 0, jobs: int = 8) -> Workload:
    """Runnable jobs with static and adapting profiles, gangs of 1 and 2, staggered arrivals."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(jobs):
        epochs = int(rng.integers(3, 9))
        mode = ["static", "gns", "accordion"][i % 3]
        sizes = np.full(epochs, 32)
        if mode == "gns":
            sizes[epochs // 2 :] = 64
        elif mode == "accordion":
            sizes[1::2] = 128
        seconds = 4.0 + 60.0 / sizes * rng.uniform(0.5, 2.0)
        out.append(
            Job(
                job_id=i,
                arrival_time=float(np.round(rng.uniform(0, 40), 1)) if i else 0.0,
                gang_size=1 + int(i % 4 == 3),
                model="fake",
                dataset="",
                mode=mode,
                batch_sizes=sizes,
                epoch_seconds=seconds,
                samples_per_epoch=1000,
                run=RunSpec(family="fake", seed=i),
            )
        )
    return Workload(tuple(out))


def run_fake(
    workload: Workload,
    policy: str,
    run_dir: Path,
    *,
    gpus: int = 2,
    tau: float = 10.0,
    resume: bool = False,
    clock: FakeClock | None = None,
    config_overrides: dict[str, object] | None = None,
    executor_workload: Workload | None = None,
    **executor_options: object,
) -> tuple[RunResult, RuntimeScheduler, FakeExecutor]:
    """Run ``workload`` on the fake executor; its jobs follow ``executor_workload``'s profiles
    (default: their own)."""
    clock = clock or FakeClock()
    run_dir.mkdir(parents=True, exist_ok=True)
    executor = FakeExecutor(executor_workload or workload, clock, **executor_options)  # type: ignore[arg-type]
    config = RuntimeConfig(
        gpus=gpus,
        round_seconds=tau,
        run_dir=run_dir,
        **(config_overrides or {}),  # type: ignore[arg-type]
    )
    journal = Journal(run_dir / "journal.sqlite", create=not resume)
    policy_instance = make_policy(policy)
    scheduler = RuntimeScheduler(
        workload, policy_instance, config, executor, journal, "cpu", clock=clock
    )
    if resume:
        snapshot = journal.snapshot()
        assert snapshot is not None
        scheduler.restore(journal.rounds(), snapshot[1])
    scheduler.execute()
    result = run_result(scheduler, 0.0, executor.name)
    journal.close()
    return result, scheduler, executor


@pytest.mark.parametrize("policy", ["fifo", "gavel", "themis", "allox", "gandiva-fair"])
def test_ideal_jobs_reproduce_the_exact_simulator(policy: str, tmp_path: Path) -> None:
    workload = make_workload()
    result, _, _ = run_fake(workload, policy, tmp_path)
    expected = simulate(
        workload,
        policy,
        SimulationConfig(gpus=2, round_seconds=10.0, restart_penalty_seconds=0.0),
    )
    assert not result.incomplete
    assert result.mechanics == "physical"
    assert result.rounds == expected.rounds
    np.testing.assert_allclose(result.completion_time, expected.completion_time, rtol=1e-9)
    np.testing.assert_allclose(result.record.service_seconds, expected.record.service_seconds)
    np.testing.assert_array_equal(result.record.rounds_run, expected.record.rounds_run)
    assert result.makespan == pytest.approx(expected.makespan)
    assert result.ftf == pytest.approx(expected.ftf)


def test_shockwave_runs_ideal_jobs_like_the_simulator(tmp_path: Path) -> None:
    workload = make_workload(seed=3, jobs=10)
    result, _, _ = run_fake(workload, "shockwave", tmp_path)
    expected = simulate(
        workload,
        "shockwave",
        SimulationConfig(gpus=2, round_seconds=10.0, restart_penalty_seconds=0.0),
    )
    # reported progress is whole samples (the simulator's is exact): decisions may differ at
    # ties, but not the outcome
    assert result.makespan == pytest.approx(expected.makespan, rel=0.02)
    assert result.avg_jct == pytest.approx(expected.avg_jct, rel=0.05)


def test_leases_are_extended_not_restarted(tmp_path: Path) -> None:
    workload = make_workload()
    result, _, executor = run_fake(workload, "fifo", tmp_path)
    # a job chosen again keeps its process: it is launched once, plus once after each preemption
    assert result.launches == [1 + p for p in result.preemptions]
    assert sum(result.launches) < int(np.sum(result.record.rounds_run))
    assert result.final_digest == [f"digest-{j.job_id}" for j in workload.jobs]
    assert len(executor.launches) == sum(result.launches)


def test_preempted_jobs_resume_from_their_checkpoints(tmp_path: Path) -> None:
    workload = make_workload()
    result, _, executor = run_fake(workload, "gandiva-fair", tmp_path, tau=3.0)
    assert sum(result.preemptions) > 0
    assert sum(result.launches) == len(workload) + sum(result.preemptions)
    restored = [launch for launch in executor.launches if launch.incarnation > 0]
    assert restored
    assert all(result.final_digest)
    # every job did its whole profile exactly once
    np.testing.assert_allclose(
        result.record.service_seconds, result.record.exclusive_seconds, rtol=1e-9
    )


def test_realised_batch_sizes_are_recorded_per_epoch(tmp_path: Path) -> None:
    workload = make_workload()
    result, _, _ = run_fake(workload, "gavel", tmp_path)
    for job, runs in zip(workload.jobs, result.epoch_batch_sizes, strict=True):
        expanded = [b for b, c in runs for _ in range(c)]
        assert expanded == job.batch_sizes.tolist()


def test_a_crashed_job_restarts_from_its_checkpoint_and_completes(tmp_path: Path) -> None:
    workload = make_workload()
    faults = {(2, 0): Fault("crash", after=5.0)}
    result, _, _ = run_fake(workload, "fifo", tmp_path, faults=faults)
    position = [int(j.job_id) for j in workload.jobs].index(2)
    assert result.restarts[position] == 1
    assert result.launches[position] == 2
    assert result.final_digest[position] == "digest-2"
    assert not result.failed_jobs
    # the crash lost the work since the start (no checkpoint yet): it ran longer than alone
    clean, _, _ = run_fake(workload, "fifo", tmp_path / "clean")
    assert result.jct[position] > clean.jct[position]


def test_a_job_that_keeps_crashing_is_reported_failed(tmp_path: Path) -> None:
    workload = make_workload()
    faults = {(1, i): Fault("crash", after=2.0) for i in range(5)}
    result, _, _ = run_fake(
        workload, "fifo", tmp_path, faults=faults, config_overrides={"max_restarts": 2}
    )
    position = [int(j.job_id) for j in workload.jobs].index(1)
    assert result.failed_jobs == [1]
    assert result.dropped_jobs == [1]
    assert result.restarts[position] == 3
    assert result.final_digest[position] is None
    assert "3 crashes" in (result.errors[position] or "")
    others = [d for i, d in enumerate(result.final_digest) if i != position]
    assert all(others)


def test_a_hung_job_is_killed_at_its_boundary_and_restarted(tmp_path: Path) -> None:
    workload = make_workload()
    faults = {(0, 0): Fault("hang")}
    result, _, _ = run_fake(
        workload, "fifo", tmp_path, faults=faults,
        config_overrides={"boundary_timeout_seconds": 5.0},
    )  # fmt: skip
    assert result.restarts[0] == 1
    assert "late" in (result.errors[0] or "")
    assert all(result.final_digest)


def test_a_job_that_never_says_hello_is_killed(tmp_path: Path) -> None:
    workload = make_workload()
    faults = {(0, 0): Fault("no-hello")}
    result, _, _ = run_fake(
        workload, "fifo", tmp_path, faults=faults,
        config_overrides={"start_timeout_seconds": 3.0},
    )  # fmt: skip
    assert result.restarts[0] == 1
    assert "no hello" in (result.errors[0] or "")
    assert all(result.final_digest)


def test_a_report_outside_the_jobs_regimes_fails_it_without_retries(tmp_path: Path) -> None:
    workload = make_workload()
    result, _, _ = run_fake(workload, "fifo", tmp_path, faults={(0, 0): Fault("bad-batch")})
    assert result.failed_jobs == [0]
    assert result.launches[0] == 1
    assert "7919" in (result.errors[0] or "")


def test_interrupt_stops_every_job_and_resume_finishes_the_run(tmp_path: Path) -> None:
    workload = make_workload()
    clock = FakeClock()
    checkpoints: dict[int, float] = {}
    interrupted, _, _ = run_fake(
        workload, "gavel", tmp_path, clock=clock, checkpoints=checkpoints,
        interrupt_at=clock.now + 35.0,
    )  # fmt: skip
    assert interrupted.incomplete
    assert math.isnan(interrupted.makespan) or interrupted.makespan > 0
    stopped = [j for j in workload.jobs if int(j.job_id) in checkpoints]
    assert stopped  # running jobs checkpointed when interrupted
    assert "interrupted" in [
        row[3] for row in Journal(tmp_path / "journal.sqlite", create=False).events()
    ]
    resumed, _, _ = run_fake(
        workload, "gavel", tmp_path, clock=clock, checkpoints=checkpoints, resume=True
    )
    assert not resumed.incomplete
    assert all(resumed.final_digest)
    assert resumed.replay_divergence == []
    assert resumed.rounds > interrupted.rounds


def test_resume_replays_a_stateful_policy_without_divergence(tmp_path: Path) -> None:
    workload = make_workload(seed=5, jobs=10)
    clock = FakeClock()
    checkpoints: dict[int, float] = {}
    first, _, _ = run_fake(
        workload, "shockwave", tmp_path, clock=clock, checkpoints=checkpoints,
        interrupt_at=clock.now + 60.0,
    )  # fmt: skip
    assert first.incomplete
    resumed, _, _ = run_fake(
        workload, "shockwave", tmp_path, clock=clock, checkpoints=checkpoints, resume=True
    )
    assert resumed.replay_divergence == []
    assert not resumed.incomplete


def test_realized_workload_replays_what_the_jobs_did(tmp_path: Path) -> None:
    from shockwave.runtime.realized import realized_workload
    from shockwave.throughputs import ThroughputTable

    workload = make_workload()
    # a table that agrees with the profiles: fake jobs run at exactly these rates
    entries = {}
    for job in workload.jobs:
        for size, seconds in zip(job.batch_sizes.tolist(), job.epoch_seconds.tolist(), strict=True):
            entries[(job.model, int(size), job.gang_size)] = (1000 / size) / seconds
    result, _, _ = run_fake(workload, "gavel", tmp_path)
    table = ThroughputTable(entries)
    # fake jobs of one model share the table entry of their batch size: only its last value counts
    for durations in ("table", "measured"):
        replay = realized_workload(workload, result, durations=durations, table=table)
        for job, real in zip(workload.jobs, replay.jobs, strict=True):
            np.testing.assert_array_equal(real.batch_sizes, job.batch_sizes)
            assert real.run == job.run
    measured = realized_workload(workload, result.to_dict(), durations="measured", table=table)
    for job, real in zip(workload.jobs, measured.jobs, strict=True):
        # the jobs time their steps per batch size: the measured rates are the profile's, up to
        # whole steps (a fake job reports the whole steps of its few epochs at each size; the
        # table's formula counts a partial last step as a fraction)
        np.testing.assert_allclose(real.epoch_seconds, job.epoch_seconds, rtol=0.08)
    with pytest.raises(ValueError, match="not a run of this workload"):
        realized_workload(make_workload(jobs=3), result, table=table)


def test_a_policy_error_stops_every_job_with_a_checkpoint_and_is_raised(tmp_path: Path) -> None:
    from shockwave.scheduling import PolicyOutputError, RoundPolicy

    class Broken(RoundPolicy):
        name = "broken"

        def __init__(self) -> None:
            self.calls = 0

        def schedule(self, state):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls == 4:
                return [987654]  # not an active job
            return state.job_ids[:1]

    workload = make_workload()
    clock = FakeClock()
    checkpoints: dict[int, float] = {}
    executor = FakeExecutor(workload, clock, checkpoints=checkpoints)
    config = RuntimeConfig(gpus=2, round_seconds=10.0, run_dir=tmp_path)
    journal = Journal(tmp_path / "journal.sqlite", create=True)
    scheduler = RuntimeScheduler(workload, Broken(), config, executor, journal, "cpu", clock=clock)
    with pytest.raises(PolicyOutputError, match="987654"):
        scheduler.execute()
    assert checkpoints  # the job that was training saved its work before the run ended
    assert executor.closed
    kinds = [row[3] for row in journal.events()]
    assert "error" in kinds


def test_start_delays_are_measured_per_launch(tmp_path: Path) -> None:
    workload = make_workload()
    faults = {(2, 0): Fault("crash", after=5.0)}
    result, _, _ = run_fake(workload, "gandiva-fair", tmp_path, startup=0.7, faults=faults)
    entries = [entry for job in result.start_seconds for entry in job]
    assert len(entries) == sum(result.launches)
    for _, delay, startup, _, crash in entries:
        assert startup == pytest.approx(0.7)
        # a launch for the round's dispatch waits for its process only (the fake's stopped
        # jobs free their slots at once); a crash restart is not a start delay
        assert delay == (0.0 if crash else pytest.approx(0.7))
    position = [int(j.job_id) for j in workload.jobs].index(2)
    assert [entry[4] for entry in result.start_seconds[position]].count(1.0) == 1
    assert any(entry[3] == 1.0 for entry in entries)  # resumed from checkpoints
