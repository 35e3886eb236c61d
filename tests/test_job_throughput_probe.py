"""Throughput measurement of the bundled families (no timing assertions: see benches)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from shockwave.job.throughput_probe import measure_throughput


def test_measures_a_positive_finite_rate_in_a_fresh_process() -> None:
    rate = measure_throughput("softmax-digits", 32, 1, seconds=0.1, seed=3)
    assert math.isfinite(rate) and rate > 0


def test_the_child_runs_with_the_gangs_threads() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    arguments = ["--family", "rnn-sines", "--batch-size", "16", "--seconds", "0.05"]
    done = subprocess.run(
        [sys.executable, "-m", "shockwave.job.throughput_probe", *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["threads"] == "2" and result["batch_size"] == 16
    assert result["steps"] >= 3 and result["steps_per_second"] > 0
    assert result["samples_per_second"] == pytest.approx(16 * result["steps_per_second"])


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (("resnet", 32, 1), "family: unknown family 'resnet'"),
        (("mlp-digits", 1, 1), "batch_size"),
        (("mlp-digits", 10**6, 1), "batch_size"),
        (("mlp-digits", 32.0, 1), "batch_size"),
        (("mlp-digits", 32, 0), "threads"),
        (("mlp-digits", 32, True), "threads"),
    ],
)
def test_bad_arguments_are_refused(arguments: tuple[object, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        measure_throughput(*arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"seconds": 0.0}, "seconds"),
        ({"seconds": float("nan")}, "seconds"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_options_are_refused(options: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        measure_throughput("mlp-digits", 32, 1, **options)  # type: ignore[arg-type]


def test_the_measuring_process_refuses_bad_arguments_in_one_line() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shockwave.job.throughput_probe",
            "--family",
            "x",
            "--batch-size",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "unknown family 'x'" in done.stderr
