"""Regression tests: every case listed in issue 12 ("Reliability: no abort, no wrong answer, no lost
output") gives a clean error or a correct result.

Grouped as in the issue: aborts of the host process, a wrong answer labelled converged, the other
failures (tracebacks, memory errors, overflows), lost or misleading output, and messages that
named no field or file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shockwave import _core, atomic, market
from shockwave.adaptation import JobModels
from shockwave.cli import exit_codes, main
from shockwave.errors import JobFieldError, TraceError
from shockwave.policies.shockwave import Shockwave
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import GeneratorParameters, write_generated
from shockwave.traces import generate as generate_module
from shockwave.workload import Job

from .conftest import CANONICAL_TRACE, TACC

SIMULATE = ["simulate", "--trace", str(CANONICAL_TRACE), "--throughputs", str(TACC), "--gpus", "32"]


def one_line_error(captured: Any) -> str:
    """The CLI's stderr: one line, no traceback."""
    err: str = captured.err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def held_models() -> JobModels:
    models = JobModels()
    models.add(1, [32, 32, 64], [10.0, 10.0, 6.0])
    return models


# ------------------------------------------------------------------ aborts of the host process
def test_predict_with_a_window_of_1e12_rounds_is_refused_naming_num_rounds() -> None:
    with pytest.raises(ValueError, match=r"^num_rounds: 1000000000000 rounds; .* at most"):
        held_models().predict(10**12)
    models = held_models()
    models.add(2, [32], [1.0])
    models.add(3, [32], [1.0])
    # within the window limit, but not within the machine's memory (100 GB)
    with pytest.raises(ValueError, match=r"^num_rounds: .*GB, more than the .* available"):
        models.predict(2**32)


def test_predict_with_2_to_the_62_rounds_is_a_value_error_not_a_panic() -> None:
    with pytest.raises(ValueError, match="^num_rounds: "):
        held_models().predict(2**62)
    with pytest.raises(ValueError, match="^num_rounds: "):  # past 64 bits: named, not Overflow
        held_models().predict(2**64)


@pytest.mark.parametrize("rounds", [1_000_000_000_000, 100_000])
def test_huge_planning_rounds_in_a_config_file_are_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rounds: int
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f"[shockwave]\nplanning_rounds = {rounds}\n")
    assert main([*SIMULATE, "--policy", "shockwave", "--config", str(config)]) == 3
    line = one_line_error(capsys.readouterr())
    assert str(config) in line and "planning_rounds" in line and "2048" in line
    with pytest.raises(ValueError, match="planning_rounds: must be >= 1 and at most 2048"):
        Shockwave(planning_rounds=rounds)


def test_a_window_of_100000_rounds_is_refused_by_the_interior_point_method() -> None:
    valuations = np.full((20, 100_000), 1e-6)
    with pytest.raises(ValueError, match=r"^valuations: 100000 rounds: .* at most 2048 rounds"):
        market.solve(valuations, np.ones(20, dtype=np.int64), 2.0)
    assert market.MAX_INTERIOR_POINT_ROUNDS == 2048
    with pytest.raises(ValueError, match="^valuations: 2049 rounds"):
        market.solve(np.full((2, 2049), 1e-3), [1, 1], 1.0)
    # proportional response has no limit on T (O(N T) memory)
    plan = market.solve(
        np.full((2, 3000), 1e-4), [1, 1], 1.0, method="proportional_response", max_iter=20
    )
    assert plan.shares.shape == (2, 3000)


def test_a_panic_that_escapes_becomes_an_exception_not_a_base_exception() -> None:
    with pytest.raises(Exception, match="internal error in shockwave's Rust core") as info:
        _core._panic_probe()
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value, _core.InternalError)


# -------------------------------------------------------------- a wrong answer labelled converged
def test_budgets_whose_sum_overflows_are_refused_naming_budgets() -> None:
    with pytest.raises(ValueError, match=r"^budgets: their sum \(inf\) overflows"):
        market.solve(np.full((3, 4), 0.1), [1, 2, 1], 2.0, budgets=[1e308] * 3)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_huge_and_tiny_budgets_give_the_equilibrium(scale: float) -> None:
    plan = market.solve(np.full((3, 4), 0.1), [1, 2, 1], 2.0, budgets=[scale] * 3)
    assert plan.converged
    assert np.isfinite(plan.objective) and np.isfinite(plan.gap)
    assert plan.utilities == pytest.approx([0.8 / 3, 0.4 / 3, 0.8 / 3], rel=1e-5)


def test_a_non_finite_objective_is_never_reported_converged() -> None:
    # budgets near the largest double: the objective in budget units overflows
    plan = market.solve(np.full((3, 4), 1e-300), [1, 2, 1], 2.0, budgets=[5e307] * 3)
    assert not np.isfinite(plan.objective)
    assert not plan.converged


# ------------------------------------------------------------------------------- other failures
def write_trace_line(path: Path, job_type: str, total_steps: str) -> Path:
    path.write_text(f"{job_type}\tcmd\tdir\tx\t0\t{total_steps}\t1\tstatic\t1\t-1\t100\t0\n")
    return path


def test_a_trace_batch_size_of_1e23_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_trace_line(tmp_path / "t.trace", "ResNet-18 (batch size " + "1" + "0" * 23 + ")",
                             "1000")  # fmt: skip
    assert main(["trace", "inspect", str(trace), "--throughputs", "tacc"]) == 3
    line = one_line_error(capsys.readouterr())
    assert f"{trace}:1: field 'job_type'" in line


@pytest.mark.parametrize("steps", ["1" + "0" * 20, "1" + "0" * 15])
def test_total_steps_past_64_bits_or_past_the_epoch_limit_are_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], steps: str
) -> None:
    trace = write_trace_line(tmp_path / "t.trace", "ResNet-18 (batch size 32)", steps)
    assert main(["trace", "inspect", str(trace), "--throughputs", "tacc"]) == 3
    assert f"{trace}:1: field 'total_steps'" in one_line_error(capsys.readouterr())


def native(path: Path, job: dict[str, Any], header: dict[str, Any] | None = None) -> Path:
    head = header or {"format": "shockwave-workload", "version": 1, "jobs": 1}
    path.write_text(json.dumps(head) + "\n" + json.dumps(job) + "\n")
    return path


def test_a_native_run_count_of_1e12_is_refused_before_expanding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {"runs": [[32, 10**12]]}
    job = {"id": 0, "arrival_time": 0, "gang_size": 1, "model": "m", "epochs": 5,
           "batch_sizes": runs, "epoch_seconds": {"runs": [[1.0, 10**12]]}}  # fmt: skip
    path = native(tmp_path / "w.jsonl", job)
    assert main(["trace", "inspect", str(path)]) == 3
    assert f"{path}:2: field 'batch_sizes'" in one_line_error(capsys.readouterr())
    job["epochs"] = 10**12
    native(path, job)
    assert main(["trace", "inspect", str(path)]) == 3
    assert f"{path}:2: field 'epochs'" in one_line_error(capsys.readouterr())


def test_deeply_nested_json_lines_and_configs_are_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.jsonl"
    header = {"format": "shockwave-workload", "version": 1, "jobs": 1}
    path.write_text(json.dumps(header) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    assert main(["trace", "inspect", str(path)]) == 3
    assert "nested too deeply" in one_line_error(capsys.readouterr())
    for name, text in (("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000),
                       ("deep.json", "[" * 100_000 + "]" * 100_000)):  # fmt: skip
        config = tmp_path / name
        config.write_text(text)
        assert main([*SIMULATE, "--policy", "fifo", "--config", str(config)]) == 3
        line = one_line_error(capsys.readouterr())
        assert str(config) in line and "nested too deeply" in line


def test_a_round_limit_that_stops_the_run_is_a_run_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[simulation]\nmax_rounds = 5\n")
    assert main([*SIMULATE, "--policy", "fifo", "--config", str(config)]) == 5
    assert "has not finished after 5 rounds" in one_line_error(capsys.readouterr())


def test_bad_output_paths_fail_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the trace does not even exist: the output is checked first (status 4, not 3)
    argv = ["simulate", "--trace", str(tmp_path / "missing.trace"), "--throughputs", "tacc",
            "--gpus", "4", "--policy", "fifo"]  # fmt: skip
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for output, reason in ((tmp_path, "is a directory"),
                           (tmp_path / "nowhere" / "r.json", "directory does not exist"),
                           (a_file / "r.json", "not a directory")):  # fmt: skip
        assert main([*argv, "--output", str(output)]) == exit_codes.OUTPUT
        line = one_line_error(capsys.readouterr())
        assert f"--output {output}" in line and reason in line
    assert main([*argv, "--checkpoint", str(tmp_path)]) == exit_codes.OUTPUT
    assert "--checkpoint" in one_line_error(capsys.readouterr())
    plots = ["compare", *argv[1:-2], "--policies", "fifo", "--plots", str(a_file)]
    assert main(plots) == exit_codes.OUTPUT
    assert "--plots" in one_line_error(capsys.readouterr())
    generate = [
        "trace",
        "generate",
        "--jobs",
        "5",
        "--gpus",
        "8",
        "-o",
        str(tmp_path / "x" / "t.trace"),
    ]
    assert main(generate) == exit_codes.OUTPUT
    assert "directory does not exist" in one_line_error(capsys.readouterr())


def test_integers_past_64_bits_are_named_value_errors() -> None:
    with pytest.raises(ValueError, match="^job_id: must fit in a signed 64-bit integer"):
        JobModels().add(2**64, [32], [1.0])
    with pytest.raises(ValueError, match="^batch_sizes: entries must fit"):
        JobModels().add(1, [2**64 - 1], [1.0])
    with pytest.raises(ValueError, match=r"^max_iter: expected a positive integer up to 2\*\*63"):
        market.solve(np.full((3, 4), 0.1), [1, 2, 1], 2.0, max_iter=2**70)
    # a shift past the window leaves nothing, whatever its size
    assert not market.shift_bids(np.ones((2, 3)), 2**64).any()


def test_a_warm_start_of_1e200_does_not_stall_the_solve() -> None:
    a = np.full((3, 4), 0.1)
    cold = market.solve(a, [1, 2, 1], 2.0)
    warm = market.solve(a, [1, 2, 1], 2.0, warm_start=np.full((3, 4), 1e200))
    assert warm.converged and warm.iterations <= cold.iterations + 5
    assert warm.utilities == pytest.approx(cold.utilities, rel=1e-5)


def test_epoch_seconds_of_1e308_are_refused_not_an_infinite_runtime(tmp_path: Path) -> None:
    with pytest.raises(JobFieldError, match="field 'epoch_seconds'"):
        Job(job_id=0, arrival_time=0.0, gang_size=1, model="m", dataset="", mode="static",
            batch_sizes=[32, 32], epoch_seconds=[1e308, 1e308])  # fmt: skip
    job = {"id": 0, "arrival_time": 0, "gang_size": 1, "model": "m", "epochs": 2,
           "batch_sizes": [32, 32], "epoch_seconds": [1e308, 1e308]}  # fmt: skip
    from shockwave.traces import read_native

    with pytest.raises(TraceError, match="field 'epoch_seconds'"):
        read_native(native(tmp_path / "w.jsonl", job))


def test_generating_1e12_jobs_is_refused_up_front(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "generate", "--jobs", str(10**12), "--gpus", "32", "-o", "x.trace"]) == 2
    assert "--jobs" in one_line_error(capsys.readouterr())


def test_a_trace_that_cannot_fit_on_disk_is_refused_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Usage:
        free = 10_000

    monkeypatch.setattr(generate_module.shutil, "disk_usage", lambda _path: Usage())
    with pytest.raises(ValueError, match=r"^--jobs \(jobs\): 1000 jobs need at least"):
        write_generated(GeneratorParameters(jobs=1000, gpus=8), tmp_path / "t.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_the_generator_streams_jobs_with_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer consumes the draws one at a time: the generator never builds the list."""
    seen: list[int] = []
    draw = generate_module._draw

    def counting(*args: Any) -> Any:
        for record in draw(*args):
            seen.append(record.line)
            yield record

    monkeypatch.setattr(generate_module, "_draw", counting)
    out = tmp_path / "t.trace"
    assert write_generated(GeneratorParameters(jobs=50, gpus=8), out) == 50
    assert seen == list(range(1, 51))
    assert len(out.read_text().splitlines()) == 50


# ------------------------------------------------------------------------ lost or misleading output
def test_an_interrupted_generation_leaves_the_previous_file_and_no_partial_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "keep.trace"
    write_generated(GeneratorParameters(jobs=5, gpus=8), out)
    before = out.read_bytes()
    draw = generate_module._draw

    def interrupted(*args: Any) -> Any:
        for record in draw(*args):
            if record.line == 20:
                raise KeyboardInterrupt
            yield record

    monkeypatch.setattr(generate_module, "_draw", interrupted)
    for suffix in (".trace", ".jsonl"):
        target = out.with_suffix(suffix)
        with pytest.raises(KeyboardInterrupt):
            write_generated(GeneratorParameters(jobs=100, gpus=8), target)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.trace"]


def test_ctrl_c_during_generate_exits_130_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupt(*args: Any, **kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("shockwave.cli.trace_commands.write_generated", interrupt)
    argv = ["trace", "generate", "--jobs", "5", "--gpus", "8", "-o", str(tmp_path / "t.trace")]
    assert main(argv) == 130
    assert one_line_error(capsys.readouterr()) == "shockwave: interrupted"


def test_a_disk_full_during_simulate_output_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "keep.json"
    keep.write_text('{"previous": "good"}\n')

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    assert main([*SIMULATE, "--policy", "fifo", "--output", str(keep)]) == exit_codes.OUTPUT
    captured = capsys.readouterr()
    assert "No space left on device" in one_line_error(captured)
    assert keep.read_text() == '{"previous": "good"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json"]


def test_ctrl_c_during_simulate_exits_130_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupt(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("shockwave.sim.simulation.Simulation.run", interrupt)
    assert main([*SIMULATE, "--policy", "fifo"]) == 130
    assert one_line_error(capsys.readouterr()) == "shockwave: interrupted"


# ------------------------------------------------------------------- messages naming the field/file
def test_a_non_numeric_supply_names_supply() -> None:
    with pytest.raises(ValueError, match="^supply: expected numbers, got 'two'"):
        market.solve(np.full((3, 4), 0.1), [1, 2, 1], "two")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^budgets: expected numbers"):
        market.solve(np.full((3, 4), 0.1), [1, 2, 1], 2.0, budgets=["x", 1, 1])
    with pytest.raises(ValueError, match="^tol: "):
        market.solve(np.full((3, 4), 0.1), [1, 2, 1], 2.0, tol="small")  # type: ignore[arg-type]


def test_a_job_weight_of_1e300_runs_every_policy(canonical_workload: Any) -> None:
    import dataclasses

    jobs = [dataclasses.replace(j, weight=1e300 if j.job_id % 3 == 0 else 1.0)
            for j in canonical_workload.jobs[:20]]  # fmt: skip
    workload = canonical_workload.with_jobs(jobs)
    for policy in ("shockwave", "gavel", "themis", "allox", "gandiva-fair"):
        result = simulate(workload, policy, SimulationConfig(gpus=8))
        assert np.isfinite(result.makespan)


def test_a_binary_config_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_bytes(bytes(range(256)))
    assert main([*SIMULATE, "--policy", "fifo", "--config", str(config)]) == 3
    assert f"{config}: not a text file" in one_line_error(capsys.readouterr())


def test_the_exit_statuses_are_documented_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for status in ("0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "130"):
        assert f"\n  {status}" in out
    assert os.environ.get("SHOCKWAVE_DEBUG") is None


def test_an_epoch_shorter_than_a_microsecond_or_a_subnormal_weight_is_refused() -> None:
    """Found by the fuzzing campaign: a 5e-324 s epoch made the throughput overflow, a weight of
    5e-324 made max-min fairness overflow."""
    with pytest.raises(JobFieldError, match="field 'epoch_seconds': .* at least 1e-06 s"):
        Job(job_id=0, arrival_time=0.0, gang_size=1, model="m", dataset="", mode="static",
            batch_sizes=[16], epoch_seconds=[5e-324])  # fmt: skip
    with pytest.raises(JobFieldError, match=r"field 'weight': .*\(in \[1e-300, 1e\+300\]"):
        Job(job_id=0, arrival_time=0.0, gang_size=1, model="m", dataset="", mode="static",
            batch_sizes=[16], epoch_seconds=[1.0], weight=5e-324)  # fmt: skip


def test_weights_1e300_apart_run_the_shockwave_policy(canonical_workload: Any) -> None:
    """Found by the fuzzing campaign: NaN warm-start bids when weights spanned 1e-300..1e300."""
    import dataclasses

    jobs = [dataclasses.replace(j, weight=(1e-300, 1.0, 1e300)[j.job_id % 3])
            for j in canonical_workload.jobs[:20]]  # fmt: skip
    result = simulate(canonical_workload.with_jobs(jobs), "shockwave", SimulationConfig(gpus=8))
    assert np.isfinite(result.makespan)


def test_windows_over_2_to_the_32_rounds_are_refused_even_without_jobs() -> None:
    """Found by the fuzzing campaign: an empty container asked for 2**63 - 1 rounds returned a
    (0, 2**63 - 1) array whose strides overflow, and the interpreter crashed (SIGSEGV)."""
    with pytest.raises(ValueError, match="^num_rounds: .* at most 4294967296"):
        JobModels().predict(2**63 - 1)
    empty = np.zeros((0, 2**40))
    with pytest.raises(ValueError, match="^bids: "):
        market.shift_bids(empty, 1)
    with pytest.raises(ValueError, match="^valuations: "):
        market.solve(empty, np.zeros(0, dtype=np.int64), 1.0)
    with pytest.raises(ValueError, match="^shares: "):
        market.round_schedule(empty, np.zeros(0, dtype=np.int64), 1.0)


def test_ctrl_c_stops_a_real_process_promptly_with_status_130(tmp_path: Path) -> None:
    """The console script, interrupted by SIGINT mid-run: one line, status 130, no partial
    file, within seconds."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    script = Path(sys.executable).parent / "shockwave"
    if not script.exists():
        script = Path(shutil.which("shockwave") or "shockwave")
    out = tmp_path / "big.jsonl"
    process = subprocess.Popen(
        [str(script), "trace", "generate", "--jobs", "2000000", "--gpus", "32", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.0)
    assert process.poll() is None, "finished before the interruption"
    process.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, err = process.communicate(timeout=60)
    assert time.monotonic() - started < 10.0
    assert process.returncode == 130
    assert err.strip() == "shockwave: interrupted"
    assert list(tmp_path.iterdir()) == []
