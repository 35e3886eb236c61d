"""The documented user script (examples/custom_job.py) alone and under preemption."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shockwave.job.harness import PreemptionPlan, ScriptedScheduler
from shockwave.job.protocol import JobMessage
from shockwave.job.spec import JobLaunch
from shockwave.run_spec import RunSpec

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "examples" / "custom_job.py"
STEPS_PER_EPOCH_AT_32 = 4096 // 32


def _launch(tmp_path: Path, name: str) -> JobLaunch:
    return JobLaunch(
        job_id=2,
        incarnation=0,
        model="linear regression",
        mode="static",
        epochs=5,
        batch_sizes=(32, 64, 128),
        initial_batch_size=32,
        samples_per_epoch=4096,
        gang_size=1,
        gpus=(0,),
        slot_kind="cpu",
        threads=1,
        checkpoint_path=str(tmp_path / f"{name}.ckpt"),
        run=RunSpec(command=("python", str(SCRIPT)), seed=1),
    )


def _run(launch: JobLaunch, plan: PreemptionPlan) -> tuple[JobMessage, int]:
    with ScriptedScheduler(plan) as scheduler:

        def child(job: JobLaunch) -> None:
            env = {**scheduler.environment(job), "OMP_NUM_THREADS": "1"}
            env["OPENBLAS_NUM_THREADS"] = "1"
            done = subprocess.run(
                [sys.executable, str(SCRIPT)], env=env, capture_output=True, timeout=120
            )
            assert done.returncode == 0, done.stderr.decode()

        finished = scheduler.run_to_completion(launch, child)
        return finished, len(scheduler.incarnations)


def test_the_example_runs_alone(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOCKWAVE_")}
    outputs = [
        subprocess.run(
            [sys.executable, str(SCRIPT), "--epochs", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1] and "digest" in outputs[0]


def test_the_example_is_preemption_safe(tmp_path: Path) -> None:
    uninterrupted, incarnations = _run(_launch(tmp_path, "whole"), PreemptionPlan())
    assert incarnations == 1
    assert uninterrupted.report is not None
    log = uninterrupted.report.epoch_batch_sizes
    assert len(log) > 1, log  # it changed its batch size on the way
    # stopped mid-epoch, exactly at the first epoch's end, after a periodic checkpoint
    stops = [50, STEPS_PER_EPOCH_AT_32, 200, 333]
    preempted, incarnations = _run(
        _launch(tmp_path, "preempted"),
        PreemptionPlan(stops=stops, extensions=[260], checkpoints=[260]),
    )
    assert incarnations == len(stops) + 1
    assert preempted.digest == uninterrupted.digest
    assert preempted.report is not None
    assert preempted.report.epoch_batch_sizes == log
    assert preempted.report.steps == uninterrupted.report.steps
    assert preempted.report.samples == 5 * 4096
