"""Real runs: real training processes under the scheduler, on this machine's cores.

Small jobs of the bundled families (two to four seconds of training each) in rounds of a
second, so that they are preempted, resumed and extended many times. Every job must end with
the digest of the same job trained alone without interruption, whatever happened to it:
preemptions, a SIGKILL, a killed scheduler, Ctrl-C. Both executors run (Ray when installed).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import shockwave.runtime
from shockwave.job.families import FAMILIES
from shockwave.run_spec import RunSpec
from shockwave.runtime import RunStatus, RuntimeConfig, make_executor, run_workload
from shockwave.runtime.config import usable_cores
from shockwave.runtime.executor import Executor
from shockwave.runtime.generate import job_regimes, planned_schedule
from shockwave.runtime.reference import reference_digest
from shockwave.traces import write_native
from shockwave.workload import Job, Workload

pytestmark = pytest.mark.skipif(usable_cores() < 2, reason="needs two cores (two CPU slots)")

#: (family, mode, initial batch size, epochs, gang size, arrival seconds)
TINY = [
    ("softmax-digits", "gns", 16, 30, 1, 0.0),
    ("mlp-digits", "static", 32, 6, 1, 0.0),
    ("rnn-sines", "accordion", 16, 8, 1, 0.5),
    ("softmax-digits", "accordion", 32, 25, 2, 1.0),
    ("mlp-digits", "gns", 16, 5, 1, 1.5),
]


def tiny_workload() -> Workload:
    jobs = []
    for i, (name, mode, initial, epochs, gang, arrival) in enumerate(TINY):
        family = FAMILIES[name]
        regimes = job_regimes(family, mode, initial)  # type: ignore[arg-type]
        jobs.append(
            Job(
                job_id=i,
                arrival_time=arrival,
                gang_size=gang,
                model=name,
                dataset=family.dataset,
                mode=mode,  # type: ignore[arg-type]
                batch_sizes=planned_schedule(mode, regimes, epochs),  # type: ignore[arg-type]
                epoch_seconds=np.full(epochs, 0.6),
                samples_per_epoch=family.samples_per_epoch,
                run=RunSpec(family=name, seed=100 + i),
            )
        )
    return Workload(tuple(jobs), source="tiny")


@pytest.fixture(scope="module")
def workload() -> Workload:
    return tiny_workload()


@pytest.fixture(scope="module")
def references(workload: Workload) -> list[str]:
    """Each job's digest when it trains alone, uninterrupted."""
    return [reference_digest(job, timeout=300) for job in workload.jobs]


def check_against_references(result_digests: list[str | None], references: list[str]) -> None:
    assert result_digests == references


def test_local_run_preempts_and_ends_with_the_uninterrupted_digests(
    workload: Workload, references: list[str], tmp_path: Path
) -> None:
    config = RuntimeConfig(gpus=2, round_seconds=1.0, run_dir=tmp_path / "run")
    result = run_workload(workload, "gandiva-fair", config)
    facts = (result.errors, result.preemptions, result.launches, result.measured_throughput)
    assert not result.incomplete, facts
    assert not result.failed_jobs, facts
    assert result.mechanics == "physical"
    assert sum(result.preemptions) >= 3, facts  # time-sharing 5 jobs on 2 slots, 1 s rounds
    assert max(result.launches) >= 2, facts
    check_against_references(result.final_digest, references)
    for job, runs in zip(workload.jobs, result.epoch_batch_sizes, strict=True):
        assert sum(count for _, count in runs) == job.num_epochs, runs
        assert {size for size, _ in runs} <= set(job.batch_sizes.tolist()), runs
    for runs, rates in zip(result.epoch_batch_sizes, result.measured_throughput, strict=True):
        # timed at every size it ran at
        assert {str(size) for size, _ in runs} <= set(rates), (runs, rates)
        assert all(rate > 0 for rate in rates.values()), rates
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["final_digest"] == references
    # the job processes ran as this process's children: their CPU time is the run's own
    load = saved["machine_load"]
    assert load is not None and load["own_cores"] > 0.2, load
    assert load["other_cores"] == pytest.approx(
        max(0.0, load["busy_cores"] - load["own_cores"]), abs=2e-3
    )


def test_a_job_killed_mid_round_resumes_from_its_checkpoint(
    workload: Workload, references: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed: list[int] = []
    executors: list[Executor] = []

    def recording(config: RuntimeConfig) -> Executor:
        executors.append(make_executor(config))
        return executors[-1]

    monkeypatch.setattr(shockwave.runtime, "make_executor", recording)

    def kill_once(status: RunStatus) -> None:
        if killed or status.round_index < 3:
            return
        for job in status.jobs:
            if job.phase == "running":
                process = executors[-1]._processes[job.job_id]  # type: ignore[attr-defined]
                os.kill(process.popen.pid, signal.SIGKILL)
                killed.append(job.job_id)
                return

    config = RuntimeConfig(gpus=2, round_seconds=1.0, run_dir=tmp_path / "run")
    result = run_workload(workload, "shockwave", config, progress=kill_once)
    assert killed
    position = [int(j.job_id) for j in workload.jobs].index(killed[0])
    assert result.restarts[position] == 1
    assert not result.failed_jobs
    check_against_references(result.final_digest, references)


# ------------------------------------------------------------------------- command line
def _cli(*args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from shockwave.cli import main; sys.exit(main())",
        *args,
    ]


def _rounds(journal: Path) -> int:
    try:  # read-only: connecting read-write would create the journal before the scheduler does
        with sqlite3.connect(f"file:{journal}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM rounds").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.fixture
def workload_file(workload: Workload, tmp_path: Path) -> Path:
    path = tmp_path / "tiny.jsonl"
    write_native(workload, path)
    return path


def _start(workload_file: Path, run_dir: Path, policy: str = "shockwave") -> subprocess.Popen[str]:
    return subprocess.Popen(
        _cli(
            "cluster", "run", "--workload", str(workload_file), "--gpus", "2", "--policy",
            policy, "--round-seconds", "1", "--run-dir", str(run_dir),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _wait_for_rounds(run_dir: Path, rounds: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while _rounds(run_dir / "journal.sqlite") < rounds:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)


def _resume(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _cli("cluster", "run", "--resume", str(run_dir)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_killed_scheduler_resumes_from_its_journal(
    workload_file: Path, references: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    process = _start(workload_file, run_dir)
    _wait_for_rounds(run_dir, 4, process)
    process.kill()  # SIGKILL: no clean-up at all
    process.communicate()
    time.sleep(1.0)  # its jobs see the lost connection, checkpoint and exit
    done = _resume(run_dir)
    assert done.returncode == 0, done.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["incomplete"] is False
    assert result["replay_divergence"] == []
    check_against_references(result["final_digest"], references)
    with sqlite3.connect(run_dir / "journal.sqlite") as db:
        kinds = [row[0] for row in db.execute("SELECT kind FROM events")]
    assert "resumed" in kinds


def test_ctrl_c_checkpoints_writes_an_incomplete_result_and_exits_130(
    workload_file: Path, references: list[str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    process = _start(workload_file, run_dir, policy="gavel")
    _wait_for_rounds(run_dir, 3, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "--resume" in err
    partial = json.loads((run_dir / "result.json").read_text())
    assert partial["incomplete"] is True
    assert list((run_dir / "checkpoints").glob("job-*.ckpt"))
    done = _resume(run_dir)
    assert done.returncode == 0, done.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["incomplete"] is False
    check_against_references(result["final_digest"], references)


def test_more_slots_than_cores_is_refused_with_a_clear_message(
    workload_file: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        _cli(
            "cluster", "run", "--workload", str(workload_file), "--gpus",
            str(usable_cores() + 1), "--policy", "fifo", "--run-dir", str(tmp_path / "r"),
        ),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "cores" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_workload_that_cannot_run_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sim-only.jsonl"
    job = Job(0, 0.0, 1, "ResNet-18", "CIFAR-10", "static", [32], [10.0])
    write_native(Workload((job,)), path)
    done = subprocess.run(
        _cli("cluster", "run", "--workload", str(path), "--gpus", "1", "--policy", "fifo",
             "--run-dir", str(tmp_path / "r")),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 3  # an input error: the workload file names the job
    assert "cannot run for real" in done.stderr and str(path) in done.stderr


# -------------------------------------------------------------------------------- Ray
def test_ray_executor_runs_the_same_jobs_to_the_same_digests(
    workload: Workload, references: list[str], tmp_path: Path
) -> None:
    pytest.importorskip("ray")
    config = RuntimeConfig(gpus=2, round_seconds=1.0, executor="ray", run_dir=tmp_path / "run")
    result = run_workload(workload, "gandiva-fair", config)
    assert result.executor == "ray"
    assert not result.failed_jobs
    assert sum(result.preemptions) >= 3
    check_against_references(result.final_digest, references)
