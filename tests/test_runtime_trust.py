"""Real runs a user can trust (issue 20): any working directory, failures that look like
failures, checks before the run, this machine's own speeds, and a simulation that uses the
costs the workload carries.

The layouts put the workload, the run directory, ``--output`` and the current directory in four
different places, named by relative and by absolute paths; in each a scheduler is SIGKILLed
mid-run and resumed from yet another directory, and every job must end with the digest of the
same job trained alone without interruption.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from shockwave.job.families import FAMILIES
from shockwave.run_spec import RunSpec
from shockwave.runtime import RunDirectoryBusyError, RuntimeConfig, resume_run, run_workload
from shockwave.runtime.config import usable_cores
from shockwave.runtime.generate import generate_real_workload, planned_schedule
from shockwave.runtime.machine import ENV_CACHE_DIR, profile_cache_path
from shockwave.runtime.reference import reference_digest
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_workload, read_native, write_native
from shockwave.workload import Job, Workload

pytestmark = pytest.mark.skipif(usable_cores() < 2, reason="needs two cores (two CPU slots)")


def _job(i: int, name: str, mode: str, epochs: int, gang: int = 1, arrival: float = 0.0) -> Job:
    family = FAMILIES[name]
    regimes = [16] if mode == "static" else [16, family.max_batch_size]
    return Job(
        job_id=i,
        arrival_time=arrival,
        gang_size=gang,
        model=name,
        dataset=family.dataset,
        mode=mode,  # type: ignore[arg-type]
        batch_sizes=planned_schedule(mode, regimes, epochs, name),  # type: ignore[arg-type]
        epoch_seconds=np.full(epochs, 0.5),
        samples_per_epoch=family.samples_per_epoch,
        run=RunSpec(family=name, seed=300 + i),
    )


def small_workload() -> Workload:
    return Workload(
        (
            _job(0, "softmax-digits", "accordion", 20),
            _job(1, "mlp-digits", "static", 4, arrival=0.5),
            _job(2, "rnn-sines", "accordion", 6, arrival=1.0),
        ),
        source="trust",
    )


@pytest.fixture(scope="module")
def references() -> list[str]:
    return [reference_digest(job, timeout=300) for job in small_workload().jobs]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from shockwave.cli import main; sys.exit(main())",
            *args]  # fmt: skip


def _journal_rounds(run_dir: Path) -> int:
    import sqlite3

    try:  # read-only: connecting read-write would create the journal before the scheduler does
        with sqlite3.connect(f"file:{run_dir / 'journal.sqlite'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM rounds").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_rounds(run_dir: Path, rounds: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while _journal_rounds(run_dir) < rounds:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("executor", "absolute"),
    [("local", False), ("local", True), ("ray", False), ("ray", True)],
)
def test_every_layout_runs_killed_and_resumed_to_the_uninterrupted_digests(
    executor: str, absolute: bool, references: list[str], tmp_path: Path
) -> None:
    if executor == "ray":
        pytest.importorskip("ray")
    places = {name: tmp_path / name for name in ("data", "runs", "out", "cwd", "elsewhere")}
    for place in places.values():
        place.mkdir()
    write_native(small_workload(), places["data"] / "W.jsonl")
    cwd = places["cwd"]

    def named(path: Path) -> str:
        return str(path) if absolute else os.path.relpath(path, cwd)

    run_dir, output = places["runs"] / "r1", places["out"] / "R.json"
    process = subprocess.Popen(
        _cli("cluster", "run", "--workload", named(places["data"] / "W.jsonl"), "--gpus", "2",
             "--policy", "gavel", "--round-seconds", "1", "--executor", executor,
             "--run-dir", named(run_dir), "--output", named(output)),
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_rounds(run_dir, 3, process)
    finally:
        process.kill()  # SIGKILL: no clean-up at all
        process.communicate()
    time.sleep(1.0)  # its jobs see the lost connection, checkpoint and exit
    elsewhere = places["elsewhere"]
    resume_name = str(run_dir) if absolute else os.path.relpath(run_dir, elsewhere)
    done = subprocess.run(
        _cli("cluster", "run", "--resume", resume_name),
        cwd=elsewhere, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for path in (run_dir / "result.json", output):  # --resume writes the run's own --output
        result = json.loads(path.read_text())
        assert result["status"] == "completed", result["errors"]
        assert result["incomplete"] is False
        assert sum(result["restarts"]) == 0, result["errors"]
        assert result["final_digest"] == references
        assert result["run_dir"] == str(run_dir)
    # nothing was written relative to the working directories or beside the workload
    assert sorted(p.name for p in cwd.iterdir()) == []
    assert sorted(p.name for p in elsewhere.iterdir()) == []
    assert sorted(p.name for p in places["data"].iterdir()) == ["W.jsonl"]


def test_a_job_with_an_unknown_family_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    bad = small_workload()
    job = bad.jobs[1]
    bad = Workload((bad.jobs[0], dataclasses.replace(job, run=RunSpec(family="no-such-family"))))
    path = tmp_path / "W.jsonl"
    write_native(bad, path)
    run_dir = tmp_path / "run"
    started = time.monotonic()
    done = subprocess.run(
        _cli("cluster", "run", "--workload", str(path), "--gpus", "2", "--policy", "fifo",
             "--run-dir", str(run_dir)),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert (
        "job 1" in done.stderr and "run.family" in done.stderr and "no-such-family" in (done.stderr)
    )
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30
    assert not run_dir.exists()  # no journal left behind: the retry is not refused


def test_a_missing_program_and_a_gang_too_large_are_refused_before_the_journal(
    tmp_path: Path,
) -> None:
    job = small_workload().jobs[1]
    command = dataclasses.replace(job, run=RunSpec(command=("./no-such-script.py",)))
    config = RuntimeConfig(gpus=2, run_dir=tmp_path / "run", workdir=tmp_path)
    with pytest.raises(ValueError, match=r"job 1: run.command: program './no-such-script.py'"):
        run_workload(Workload((command,)), "fifo", config)
    assert not (tmp_path / "run").exists()
    wide = dataclasses.replace(job, gang_size=4)
    with pytest.raises(ValueError, match="job 1: gang_size: 4 GPUs, the cluster has 2"):
        run_workload(Workload((wide,)), "fifo", config)
    assert not (tmp_path / "run").exists()
    # the same directory then runs the good job
    result = run_workload(Workload((job,)), "fifo", config)
    assert result.status == "completed"


def test_an_output_in_a_read_only_directory_is_refused_up_front(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        locked = Path("/proc/self")  # not writable even for root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
    path = tmp_path / "W.jsonl"
    write_native(small_workload(), path)
    started = time.monotonic()
    done = subprocess.run(
        _cli("cluster", "run", "--workload", str(path), "--gpus", "2", "--policy", "fifo",
             "--run-dir", str(tmp_path / "run"), "--output", str(locked / "R.json")),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert time.monotonic() - started < 30
    assert not (tmp_path / "run").exists()


def test_a_truncated_checkpoint_fails_its_job_at_once_and_the_result_says_so(
    tmp_path: Path,
) -> None:
    workload = Workload(small_workload().jobs[:2])
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "job-1.ckpt").write_bytes(b"PK\x03\x04 truncated")
    config = RuntimeConfig(gpus=2, round_seconds=1.0, run_dir=run_dir, max_restarts=3)
    result = run_workload(workload, "fifo", config)
    assert result.failed_jobs == [1]
    assert result.restarts[1] <= 1  # failed at its first error, no crash loop
    assert "checkpoint" in (result.errors[1] or "")
    assert result.status == "failed"
    assert result.aggregates == "the 1 of 2 jobs that finished"
    assert math_isnan(result.jct[1]) and math_isnan(result.ftf[1])
    assert result.avg_jct == result.jct[0]
    data = json.loads((run_dir / "result.json").read_text())
    assert list(data)[:2] == ["status", "aggregates"]
    assert data["jct"][1] is None


def math_isnan(value: float) -> bool:
    return value != value


def test_a_live_run_directory_cannot_be_resumed_by_a_second_scheduler(tmp_path: Path) -> None:
    path = tmp_path / "W.jsonl"
    write_native(small_workload(), path)
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        _cli("cluster", "run", "--workload", str(path), "--gpus", "2", "--policy", "gavel",
             "--round-seconds", "1", "--run-dir", str(run_dir)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_rounds(run_dir, 2, process)
        second = subprocess.run(
            _cli("cluster", "run", "--resume", str(run_dir)),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert second.returncode == 4, second.stderr
        assert "another scheduler is running" in second.stderr
        with pytest.raises(RunDirectoryBusyError):
            resume_run(run_dir)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=120)
    assert process.returncode == 130


def test_a_run_uses_this_machines_profile_not_the_workloads_table(tmp_path: Path) -> None:
    """A workload planned with another machine's (3 times faster) table: the run re-plans it
    with this machine's profile, records which table it used, and its fairness rests on it."""
    here = ThroughputTable.from_file(profile_cache_path())
    fast = ThroughputTable({k: 3 * v for k, v in here.entries.items()}, source="elsewhere")
    workload = generate_real_workload(3, 2, fast, minutes=0.3, seed=5)
    path = tmp_path / "W.jsonl"
    write_native(workload, path)
    done = subprocess.run(
        _cli("cluster", "run", "--workload", str(path), "--gpus", "2", "--policy", "fifo",
             "--round-seconds", "2", "--run-dir", str(tmp_path / "run"),
             "--output", str(tmp_path / "R.json")),
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "R.json").read_text())
    assert result["throughputs"]["source"] == str(profile_cache_path())
    replanned = load_workload(path, here)
    plan = [float(job.epoch_seconds.sum()) for job in replanned.jobs]
    original = [float(job.epoch_seconds.sum()) for job in workload.jobs]
    assert all(abs(p - 3 * o) < 1e-6 * p for p, o in zip(plan, original, strict=True))
    copy = read_native(tmp_path / "run" / "workload.jsonl")  # the run's own copy: re-planned
    assert [float(j.epoch_seconds.sum()) for j in copy.jobs] == pytest.approx(plan)


def test_a_generated_workload_carries_its_costs_and_simulate_uses_them(tmp_path: Path) -> None:
    path = tmp_path / "W.jsonl"
    done = subprocess.run(
        _cli("cluster", "generate", "--jobs", "4", "--gpus", "2", "--minutes", "1", "-o",
             str(path)),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    workload = read_native(path)
    assert workload.costs is not None
    assert (workload.costs.restart_seconds, workload.costs.round_overhead_seconds) == (0.3, 0.01)
    # 5-second rounds: the original's 20 s restart penalty would refuse them
    done = subprocess.run(
        _cli("simulate", "--trace", str(path), "--gpus", "2", "--policy", "shockwave",
             "--round-seconds", "5", "--output", str(tmp_path / "S.json")),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "restart_penalty_seconds 0.3" in done.stderr
    expected = simulate(
        workload,
        "shockwave",
        SimulationConfig(
            gpus=2, round_seconds=5, restart_penalty_seconds=0.3, round_overhead_seconds=0.01
        ),
    )
    assert json.loads((tmp_path / "S.json").read_text())["makespan"] == expected.makespan


def test_round_overhead_costs_every_running_job_every_round() -> None:
    job = Job(0, 0.0, 1, "m", "d", "static", [32] * 10, [1.0] * 10)
    plain = simulate(Workload((job,)), "fifo", SimulationConfig(gpus=1, round_seconds=2.0,
                     restart_penalty_seconds=0.0))  # fmt: skip
    slower = simulate(Workload((job,)), "fifo", SimulationConfig(gpus=1, round_seconds=2.0,
                      restart_penalty_seconds=0.0, round_overhead_seconds=0.5))  # fmt: skip
    assert plain.makespan == 10.0
    # 1.5 s of work per 2 s round: 6 rounds and 1 s of the seventh
    assert slower.makespan == pytest.approx(6 * 2.0 + 0.5 + 1.0)
    with pytest.raises(ValueError, match="exact mechanics only"):
        SimulationConfig(gpus=1, mechanics="gavel", round_overhead_seconds=0.5)
    with pytest.raises(ValueError, match="shorter than round_seconds"):
        SimulationConfig(gpus=1, round_seconds=2, restart_penalty_seconds=1.5,
                         round_overhead_seconds=0.5)  # fmt: skip


def test_the_accordion_plan_holds_the_measured_returns_to_the_small_batch() -> None:
    schedule = planned_schedule("accordion", [16, 256], 23, "rnn-sines").tolist()
    assert schedule[:3] == [16, 16, 16] and schedule[3] == 256
    assert schedule[3:].count(16) == 5  # a quarter of the 20 later epochs
    assert planned_schedule("accordion", [16, 256], 23, "mlp-digits").tolist()[3:] == [256] * 20


def test_cluster_profile_measures_throughputs_on_a_full_machine_and_the_costs(
    tmp_path: Path,
) -> None:
    env = {**os.environ, ENV_CACHE_DIR: str(tmp_path / "cache")}
    out = tmp_path / "T.json"
    done = subprocess.run(
        _cli("cluster", "profile", "--families", "softmax-digits", "--gangs", "1",
             "--seconds", "0.05", "-o", str(out)),
        capture_output=True, text=True, check=False, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = ThroughputTable.from_file(out)
    assert set(table.entries) == {("softmax-digits", b, 1) for b in (16, 32, 64, 128, 256)}
    assert table.costs is not None and table.costs.restart_seconds > 0
    assert "runtime costs: restart" in done.stdout


def test_the_progress_line_names_the_error_of_a_job_that_keeps_failing() -> None:
    import io

    from shockwave.cli.cluster_commands import LiveDisplay
    from shockwave.runtime import RunStatus
    from shockwave.runtime.live_cluster import JobStatus

    error = "[Errno 2] No such file: 'ckpt.tmp'"

    def status(round_index: int, phase: str) -> RunStatus:
        jobs = (JobStatus(7, "running", 0, None), JobStatus(8, phase, 2, error))
        return RunStatus(round_index, 12.0, gpus=2, slots_busy=1, jobs=jobs)

    stream = io.StringIO()
    LiveDisplay(stream).update(status(3, "waiting"))
    assert "[job 8 crash 2: [Errno 2] No such file: 'ckpt.tmp']" in stream.getvalue()
    display = LiveDisplay(stream)
    display.update(status(4, "failed"))
    assert "job 8 FAILED" in stream.getvalue()
