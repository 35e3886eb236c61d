"""The bundled trainer: preemption never changes what a job computes."""

from __future__ import annotations

import dataclasses
import itertools
import math
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shockwave.job.checkpoint import load_checkpoint, save_checkpoint
from shockwave.job.context import JobContext
from shockwave.job.families import FAMILIES
from shockwave.job.harness import PreemptionPlan, ScriptedScheduler
from shockwave.job.spec import JobLaunch
from shockwave.job.trainer import TrainingSettings, run_standalone, train
from shockwave.run_spec import RunSpec

MODES = ("static", "gns", "accordion")
#: the regimes the runtime's generator gives a job of each mode (initial size first)
REGIMES = {"static": (32,), "gns": (16, 32, 64, 128), "accordion": (16, 256)}
#: options that make the short jobs adapt within a few tiny epochs
OPTIONS: dict[str, dict[str, bool | int | float | str]] = {
    "static": {},
    "gns": {"gns_threshold": 0.02},
    "accordion": {"accordion_eta": 0.6},
}
SAMPLES_PER_EPOCH = 300


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread() -> Iterator[None]:
    """One BLAS thread, as a one-slot job has (and much faster on a busy 2-core machine)."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # the tests still run, only slower
        yield
        return
    with threadpool_limits(limits=1):
        yield


def make_launch(tmp_path: Path, family: str, regime: str, **changes: object) -> JobLaunch:
    """A short job of ``family`` in mode ``regime`` (its regimes and options as in the tests)."""
    mode = regime
    regimes = REGIMES[mode]
    fields: dict[str, object] = {
        "job_id": 4,
        "incarnation": 0,
        "model": family,
        "mode": mode,
        "epochs": 5,
        "batch_sizes": regimes,
        "initial_batch_size": regimes[0],
        "samples_per_epoch": SAMPLES_PER_EPOCH,
        "gang_size": 1,
        "gpus": (0,),
        "slot_kind": "cpu",
        "threads": 1,
        "checkpoint_path": str(tmp_path / f"{family}-{mode}.ckpt"),
        "run": RunSpec(family=family, seed=11, options=OPTIONS[mode]),
    }
    fields.update(changes)
    return JobLaunch(**fields)  # type: ignore[arg-type]


def reference(launch: JobLaunch) -> JobContext:
    """An uninterrupted standalone run (its context holds the log and the digest)."""
    ctx = JobContext.standalone(dataclasses.replace(launch, checkpoint_path=""))
    assert train(ctx) == ctx.final_digest
    return ctx


def epoch_end_steps(ctx: JobContext) -> list[int]:
    per_epoch = ctx.launch.samples_per_epoch
    sizes = [b for b, count in ctx.epoch_batch_sizes for _ in range(count)]
    return list(itertools.accumulate(math.ceil(per_epoch / b) for b in sizes))


def run_in_process(scheduler: ScriptedScheduler, launch: JobLaunch) -> object:
    return train(JobContext.attach(launch, scheduler.address, scheduler.authkey))


@pytest.mark.parametrize(("family", "mode"), list(itertools.product(sorted(FAMILIES), MODES)))
def test_preempted_job_computes_what_the_uninterrupted_one_does(
    tmp_path: Path, family: str, mode: str
) -> None:
    launch = make_launch(tmp_path, family, mode)
    expected = reference(launch)
    if mode != "static":  # the job really changed its batch size
        assert len(expected.epoch_batch_sizes) > 1, expected.epoch_batch_sizes
    ends = epoch_end_steps(expected)
    total = ends[-1]
    assert expected.steps == total and expected.samples == 5 * SAMPLES_PER_EPOCH
    # preempted every few steps, mid-epoch and exactly at every epoch's end
    stops = set(range(2, total, 3)) | set(ends[:-1])
    plan = PreemptionPlan(stops=stops, extensions=range(1, total, 5), checkpoints={6, 13, 20})
    with ScriptedScheduler(plan) as scheduler:
        finished = scheduler.run_to_completion(launch, lambda job: run_in_process(scheduler, job))
    assert finished.digest == expected.final_digest
    assert finished.report is not None
    assert finished.report.epoch_batch_sizes == expected.epoch_batch_sizes
    assert (finished.report.steps, finished.report.samples) == (expected.steps, expected.samples)
    hellos = [messages[0].text for messages in scheduler.incarnations]
    assert len(hellos) == len(stops) + 1
    assert hellos[0] == "fresh" and set(hellos[1:]) == {"restored"}
    assert sum(m.kind == "boundary" for inc in scheduler.incarnations for m in inc) > len(stops)


def test_a_crashed_job_resumes_from_its_periodic_checkpoint(tmp_path: Path) -> None:
    launch = make_launch(tmp_path, "mlp-digits", "gns")
    expected = reference(launch)
    plan = PreemptionPlan(extensions=[9], checkpoints=[9])  # one periodic checkpoint, no stop
    with ScriptedScheduler(plan) as scheduler:
        finished = scheduler.run_to_completion(launch, lambda job: run_in_process(scheduler, job))
    assert len(scheduler.incarnations) == 1 and finished.digest == expected.final_digest
    saved = load_checkpoint(launch.checkpoint_path)
    assert saved is not None and saved.meta["__shockwave__"]["steps"] == 10
    # the process died after that checkpoint: the next incarnation redoes the lost steps
    crashed = dataclasses.replace(launch, incarnation=1)
    resumed = JobContext.standalone(crashed)
    assert train(resumed) == expected.final_digest
    assert resumed.epoch_batch_sizes == expected.epoch_batch_sizes


def test_a_whole_epoch_of_the_real_data_set_with_a_partial_last_batch(tmp_path: Path) -> None:
    family = FAMILIES["softmax-digits"]
    launch = make_launch(
        tmp_path,
        "softmax-digits",
        "static",
        epochs=1,
        batch_sizes=(256,),
        initial_batch_size=256,
        samples_per_epoch=family.samples_per_epoch,
    )
    expected = reference(launch)
    assert expected.steps == math.ceil(family.samples_per_epoch / 256)
    assert expected.epoch_batch_sizes == ((256, 1),)
    plan = PreemptionPlan(stops=[expected.steps - 1])  # stopped before the partial batch
    with ScriptedScheduler(plan) as scheduler:
        finished = scheduler.run_to_completion(launch, lambda job: run_in_process(scheduler, job))
    assert finished.digest == expected.final_digest


def test_same_seed_same_digest_other_seed_other_digest(tmp_path: Path) -> None:
    launch = make_launch(tmp_path, "rnn-sines", "gns", epochs=2)
    first = run_standalone(launch)
    assert run_standalone(launch) == first
    other = dataclasses.replace(launch, run=dataclasses.replace(launch.run, seed=12))
    assert run_standalone(other) != first


def test_run_standalone_ignores_the_checkpoint_path(tmp_path: Path) -> None:
    launch = make_launch(tmp_path, "softmax-digits", "static", epochs=1)
    save_checkpoint(launch.checkpoint_path, {"junk": [1]}, {})
    assert run_standalone(launch) == reference(launch).final_digest


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"run": RunSpec(command=("python", "x.py"))}, "command job"),
        ({"run": RunSpec(family="lstm")}, "run.family: unknown family 'lstm'"),
        ({"batch_sizes": (32, 48), "initial_batch_size": 32}, "batch_sizes: 48"),
        ({"samples_per_epoch": 10**6}, "samples_per_epoch: 1000000 exceeds"),
        ({"run": RunSpec(family="mlp-digits", options={"lr": 0.1})}, "run.options.lr: unknown"),
        ({"run": RunSpec(family="mlp-digits", options={"momentum": 1.0})}, "momentum"),
        ({"run": RunSpec(family="mlp-digits", options={"learning_rate": "x"})}, "number"),
        ({"mode": "adaptive"}, "mode must be one of"),
    ],
)
def test_invalid_launches_are_refused(
    tmp_path: Path, changes: dict[str, object], match: str
) -> None:
    launch = make_launch(tmp_path, "mlp-digits", "static", **changes)
    with pytest.raises(ValueError, match=match):
        run_standalone(launch)


def test_checkpoint_of_another_family_is_refused(tmp_path: Path) -> None:
    softmax = make_launch(tmp_path, "softmax-digits", "static", epochs=1)
    plan = PreemptionPlan(stops=[2])
    with ScriptedScheduler(plan) as scheduler:
        scheduler.serve(lambda: run_in_process(scheduler, softmax))
    mlp = make_launch(tmp_path, "mlp-digits", "static", checkpoint_path=softmax.checkpoint_path)
    with pytest.raises(ValueError, match="made by family 'softmax-digits'"):
        train(JobContext.standalone(mlp))


def test_settings_scale_the_learning_rate_with_the_square_root_of_the_batch_size() -> None:
    settings = TrainingSettings.for_run(FAMILIES["mlp-digits"], {"learning_rate": 0.04})
    assert settings.learning_rate_at(16, 16) == 0.04
    assert settings.learning_rate_at(64, 16) == pytest.approx(0.08)
    assert settings.momentum == FAMILIES["mlp-digits"].momentum


def test_the_job_process_under_the_scheduler(tmp_path: Path) -> None:
    """``python -m shockwave.job`` in child processes, preempted twice: the same digest."""
    launch = make_launch(tmp_path, "softmax-digits", "gns", epochs=3)
    expected = reference(launch)
    plan = PreemptionPlan(stops=[5, epoch_end_steps(expected)[1]])
    with ScriptedScheduler(plan) as scheduler:

        def child(job: JobLaunch) -> None:
            env = scheduler.environment(job)
            env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
            done = subprocess.run(
                [sys.executable, "-m", "shockwave.job"], env=env, capture_output=True, timeout=120
            )
            assert done.returncode == 0, done.stderr.decode()

        finished = scheduler.run_to_completion(launch, child)
    assert len(scheduler.incarnations) == 3
    assert finished.digest == expected.final_digest
    assert finished.report is not None
    assert finished.report.epoch_batch_sizes == expected.epoch_batch_sizes


def test_the_job_process_reports_errors_in_one_line(tmp_path: Path) -> None:
    command_job = make_launch(tmp_path, "softmax-digits", "static")
    command_job = dataclasses.replace(command_job, run=RunSpec(command=("python", "mine.py")))
    with ScriptedScheduler(PreemptionPlan()) as scheduler:

        def child(job: JobLaunch) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "shockwave.job"],
                env=scheduler.environment(job),
                capture_output=True,
                text=True,
                timeout=120,
            )

        done = scheduler.serve(lambda: child(command_job))
    assert done.returncode == 1
    # the process's first line says what it was given (its slots, GPU type, cores); the error
    # is the one line after it, without a traceback
    first, *error = done.stderr.strip().splitlines()
    assert first.startswith("shockwave.job: job ") and ": slots " in first, first
    assert len(error) == 1 and "command job" in error[0], error
    assert [m.kind for m in scheduler.incarnations[0]] == ["failed"]
    no_env = subprocess.run(
        [sys.executable, "-m", "shockwave.job"],
        env={k: v for k, v in scheduler.environment(command_job).items() if "SHOCKWAVE" not in k},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert no_env.returncode == 2 and "SHOCKWAVE_JOB is not set" in no_env.stderr


def test_standalone_job_process_prints_its_digest(tmp_path: Path) -> None:
    launch = make_launch(tmp_path, "softmax-digits", "static", epochs=1)
    shutil.rmtree(tmp_path, ignore_errors=True)
    tmp_path.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "shockwave.job"],
        env={"SHOCKWAVE_JOB": launch.to_json(), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == reference(launch).final_digest
