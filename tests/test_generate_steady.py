"""A long, steady arrival process: ``trace generate --days D --load L``."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest

from shockwave.cli import main
from shockwave.traces import GeneratorParameters, generate_records, load_workload
from shockwave.traces.generator_parameters import SECONDS_PER_DAY, GeneratorParameterError


def test_days_spread_the_arrivals_over_that_many_days() -> None:
    parameters = GeneratorParameters(jobs=4000, gpus=512, seed=3, days=2.0)
    assert parameters.effective_mean_interarrival == 2.0 * SECONDS_PER_DAY / 4000
    arrivals = np.array([r.arrival_time for r in generate_records(parameters)])
    assert abs(arrivals[-1] / SECONDS_PER_DAY - 2.0) < 0.1  # Poisson: close to D days
    assert np.all(np.diff(arrivals) >= 0)


def test_load_sets_the_arrival_rate_of_that_offered_load() -> None:
    parameters = GeneratorParameters(jobs=20000, gpus=512, seed=4, load=0.7)
    assert parameters.offered_load == pytest.approx(0.7, rel=1e-12)
    records = generate_records(parameters)
    # the expected nominal GPU-seconds per job is that of the draws
    work = np.mean([r.duration * r.scale_factor for r in records])
    assert work == pytest.approx(parameters.expected_job_gpu_seconds(), rel=0.05)
    span = records[-1].arrival_time
    assert work * len(records) / (span * 512) == pytest.approx(0.7, rel=0.05)


def test_days_and_load_give_the_number_of_jobs() -> None:
    probe = GeneratorParameters(jobs=1, gpus=6500)
    jobs = probe.jobs_for(60, 0.2)
    expected = 0.2 * 6500 * 60 * SECONDS_PER_DAY / probe.expected_job_gpu_seconds()
    assert jobs == round(expected) and jobs > 10**6
    parameters = GeneratorParameters(jobs=jobs, gpus=6500, days=60, load=0.2)
    assert parameters.offered_load == pytest.approx(0.2, rel=1e-5)
    with pytest.raises(GeneratorParameterError, match=r"--jobs .*give \d+") as error:
        GeneratorParameters(jobs=jobs + 1, gpus=6500, days=60, load=0.2)
    assert error.value.parameter == "jobs"


def test_the_defaults_are_unchanged() -> None:
    default = GeneratorParameters(jobs=50, gpus=64, seed=2)
    assert default.effective_mean_interarrival == 1280.0 / 64
    assert "--days" not in default.command_line() and "--load" not in default.command_line()


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"days": 0.0}, "days"),
        ({"days": -1.0}, "days"),
        ({"days": float("inf")}, "days"),
        ({"days": 1e12}, "days"),
        ({"load": 0.0}, "load"),
        ({"load": float("nan")}, "load"),
        ({"load": "high"}, "load"),
        ({"days": 1.0, "mean_interarrival": 5.0}, "mean_interarrival"),
        ({"load": 1.0, "mean_interarrival": 5.0}, "mean_interarrival"),
    ],
)
def test_bad_values_name_the_option(fields: dict[str, object], parameter: str) -> None:
    with pytest.raises(GeneratorParameterError) as error:
        GeneratorParameters(jobs=10, gpus=64, **fields)  # type: ignore[arg-type]
    assert error.value.parameter == parameter
    assert f"--{parameter.replace('_', '-')}" in str(error.value)


def test_the_command_line_derives_the_jobs_and_regenerates_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "steady.jsonl"
    argv = ["trace", "generate", "--gpus", "64", "--days", "0.5", "--load", "0.8", "--seed", "5"]
    assert main([*argv, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    workload = load_workload(out)
    jobs = GeneratorParameters(jobs=1, gpus=64).jobs_for(0.5, 0.8)
    assert len(workload) == jobs
    assert f"wrote {jobs} jobs" in printed and "nominal offered load 0.79" in printed  # rounded N
    # the header's command line (with the derived --jobs) makes the same file
    again = tmp_path / "again.jsonl"
    words = shlex.split(workload.source)[1:]
    assert "--days" in words and "--load" in words and "--jobs" in words
    assert main([*words, "-o", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--days", "1"], "--jobs"),
        (["--load", "0.5"], "--jobs"),
        (["--days", "-1", "--load", "0.5"], "--days"),
        (["--days", "1", "--load", "-2"], "--load"),
        (["--days", "1", "--load", "1e-9"], "--load"),
        (["--days", "1", "--load", "0.5", "--jobs", "3"], "--jobs"),
        (["--jobs", "10", "--days", "1", "--mean-interarrival", "3"], "--mean-interarrival"),
    ],
)
def test_the_command_line_refuses_bad_options_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    out = tmp_path / "x.jsonl"
    assert main(["trace", "generate", "--gpus", "64", *options, "-o", str(out)]) == 2
    assert named in capsys.readouterr().err
    assert not out.exists()
