"""Throughput of a bundled family's real training step, measured in a fresh process.

:func:`measure_throughput` starts ``python -m shockwave.job.throughput_probe`` with the BLAS and
OpenMP thread variables (:data:`~shockwave.job.spec.THREAD_VARIABLES`) set to the gang's threads
*before* numpy is imported (a gang of ``k`` CPU slots trains with ``k`` threads), lets it run the
bundled job's real training loop (:func:`shockwave.job.trainer.train`: augmentation, the two
half-batch gradients, the adaptation's statistics, the momentum update, and the per-step
bookkeeping and epoch ends of a real job, which cost 7 to 17 % of the step time of the small
models here) at one batch size, on a standalone context whose lease lasts first a warm-up of
:data:`WARMUP_FRACTION` of the measuring time (at most :data:`MAX_WARMUP_SECONDS`), then
``seconds``, and reads the rate it prints as JSON: the steps per second the job itself times,
as a real run's jobs do.

The child prints one JSON object: ``{"family", "batch_size", "threads", "steps", "seconds",
"steps_per_second", "samples_per_second"}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from shockwave.arguments import is_integer
from shockwave.job.context import JobContext
from shockwave.job.families import FAMILIES, get_family
from shockwave.job.spec import THREAD_VARIABLES, JobLaunch
from shockwave.job.trainer import train
from shockwave.run_spec import MAX_SEED, RunSpec

#: Share of the measuring time spent warming up first.
WARMUP_FRACTION = 0.25
#: Longest warm-up, seconds.
MAX_WARMUP_SECONDS = 1.0
#: Fewest steps in the warm-up and in the measurement.
MIN_STEPS = 3
#: Epochs of the measured job (more than any measurement reaches: its lease ends it).
MAX_EPOCHS = 10**6
#: Seconds allowed for the child's start-up and data loading, beyond its measuring time.
START_ALLOWANCE_SECONDS = 120.0


def measure_throughput(
    family: str,
    batch_size: int,
    threads: int,
    *,
    seconds: float = 2.0,
    seed: int = 0,
    copies: int = 1,
) -> float:
    """Iterations per second of ``family``'s training step at ``batch_size`` on ``threads``.

    Args:
        family: a bundled family's name.
        batch_size: samples per step, at least 2 (the step splits the batch in halves) and at
            most the family's samples per epoch.
        threads: CPU threads of BLAS and OpenMP (a gang's slots), >= 1.
        seconds: measuring time after the warm-up, seconds (> 0, at most 3600).
        seed: seed of the parameters, data order and augmentation.
        copies: how many copies measure at once, each pinned to its own ``threads`` cores
            (cores ``c * threads ... (c + 1) * threads - 1`` of those this process may use); the
            mean of their rates. ``copies`` filling the machine measures the speed of a job on a
            full cluster (its neighbours share the memory system and the clock boost), which is
            what a real run sees most of the time. With 1 (default) the process is not pinned.

    Raises:
        ValueError: naming the argument that is not valid.
        RuntimeError: if a measuring process fails (its last error line is quoted).
    """
    _check_arguments(family, batch_size, threads, seconds, seed)
    if not is_integer(copies, numpy=False) or copies < 1:
        raise ValueError(f"copies must be an integer >= 1, got {copies!r}")
    cores = sorted(os.sched_getaffinity(0)) if copies > 1 else []
    if copies > 1 and copies * threads > len(cores):
        raise ValueError(
            f"copies: {copies} copies of {threads} threads need {copies * threads} cores, "
            f"this process may use {len(cores)}"
        )
    env = dict(os.environ)
    for variable in THREAD_VARIABLES:
        env[variable] = str(threads)
    command = [  # not "-m shockwave.job.throughput_probe": the package imports this module first
        sys.executable,
        "-c",
        "import sys; from shockwave.job.throughput_probe import main; sys.exit(main())",
        "--family",
        family,
        "--batch-size",
        str(batch_size),
        "--seconds",
        repr(float(seconds)),
        "--seed",
        str(seed),
    ]
    what = f"measuring {family} at batch size {batch_size} on {threads} threads"
    children = []
    try:
        for copy in range(copies):
            pinned = cores[copy * threads : (copy + 1) * threads]
            children.append(
                subprocess.Popen(
                    command,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    preexec_fn=(lambda p=pinned: os.sched_setaffinity(0, p)) if pinned else None,
                )
            )
        rates = [_collect(child, 2 * seconds + START_ALLOWANCE_SECONDS, what) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    return sum(rates) / len(rates)


def _collect(child: subprocess.Popen[str], timeout: float, what: str) -> float:
    """The rate a measuring process printed."""
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} timed out") from None
    lines = stdout.strip().splitlines()
    if child.returncode != 0 or not lines:
        errors = stderr.strip().splitlines()
        last = errors[-1] if errors else f"exit status {child.returncode}"
        raise RuntimeError(f"{what} failed: {last}")
    rate = float(json.loads(lines[-1])["steps_per_second"])
    if not (math.isfinite(rate) and rate > 0):
        raise RuntimeError(f"{what}: bad rate {rate!r}")
    return rate


def measure_here(family: str, batch_size: int, seconds: float, seed: int) -> dict[str, Any]:
    """Measure in this process (the child's work; thread variables are whatever they are): the
    real training loop of a bundled job (:func:`~shockwave.job.trainer.train`, its per-step
    bookkeeping and epoch ends included) on a standalone context whose lease lasts the warm-up,
    then again for ``seconds``; the rate is what the job itself times for its steps (its
    reports' ``batch_stats``, as in a real run)."""
    chosen = get_family(family)
    threads = int(os.environ.get(THREAD_VARIABLES[0]) or 1)
    launch = JobLaunch(
        job_id=0,
        incarnation=0,
        model=family,
        mode="static",
        epochs=MAX_EPOCHS,
        batch_sizes=(batch_size,),
        initial_batch_size=batch_size,
        samples_per_epoch=chosen.samples_per_epoch,
        gang_size=threads,
        gpus=tuple(range(threads)),
        slot_kind="cpu",
        threads=threads,
        checkpoint_path="",
        run=RunSpec(family=family, seed=seed),
    )
    steps, elapsed = 0, 0.0
    for lease in (min(MAX_WARMUP_SECONDS, WARMUP_FRACTION * seconds), seconds):
        ctx = JobContext.standalone(launch, seconds=lease)
        with ctx:
            train(ctx)
        for size, count, spent in ctx.snapshot().batch_stats:
            if size == batch_size:
                steps, elapsed = int(count), float(spent)
    if steps < MIN_STEPS or elapsed <= 0:
        raise ValueError(f"seconds: {seconds} s ran only {steps} steps; measure longer")
    return {
        "family": family,
        "batch_size": batch_size,
        "threads": os.environ.get(THREAD_VARIABLES[0]),
        "steps": steps,
        "seconds": elapsed,
        "steps_per_second": steps / elapsed,
        "samples_per_second": steps * batch_size / elapsed,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The measuring process: prints one JSON line."""
    parser = argparse.ArgumentParser(
        prog="python -m shockwave.job.throughput_probe",
        description="Measure a bundled family's training step (iterations per second).",
    )
    parser.add_argument("--family", required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        _check_arguments(args.family, args.batch_size, 1, args.seconds, args.seed)
        result = measure_here(args.family, args.batch_size, args.seconds, args.seed)
    except (ValueError, OSError, ImportError) as exc:
        print(f"shockwave.job.throughput_probe: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


def _check_arguments(family: str, batch_size: int, threads: int, seconds: float, seed: int) -> None:
    chosen = FAMILIES.get(family) if isinstance(family, str) else None
    if chosen is None:
        raise ValueError(
            f"family: unknown family {family!r} (bundled: {', '.join(sorted(FAMILIES))})"
        )
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int)
        or not 2 <= batch_size <= chosen.samples_per_epoch
    ):
        raise ValueError(
            f"batch_size must be an integer in [2, {chosen.samples_per_epoch}], got {batch_size!r}"
        )
    if not is_integer(threads, numpy=False) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or not 0 < seconds <= 3600
    ):
        raise ValueError(f"seconds must be a number in (0, 3600], got {seconds!r}")
    if not is_integer(seed, numpy=False) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1], got {seed!r}")


if __name__ == "__main__":
    sys.exit(main())
