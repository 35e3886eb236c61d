"""``shockwave simulate`` and ``shockwave compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRACE = ["--trace", str(ROOT / "traces/canonical_120jobs.trace")]
THROUGHPUTS = ["--throughputs", str(ROOT / "traces/tacc_throughputs.json")]


def test_simulate_prints_a_summary_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    argv = ["simulate", *TRACE, *THROUGHPUTS, "--gpus", "32", "--policy", "gandiva-fair"]
    assert main([*argv, "--mechanics", "gavel", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "makespan" in printed
    assert "32,367.4 s" in printed  # the original's makespan for gandiva_fair
    data = json.loads(out.read_text())
    assert data["policy"] == "gandiva-fair"
    assert data["gpus"] == 32
    assert len(data["jct"]) == 120


def test_compare_prints_ratios_and_writes_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plots = tmp_path / "plots"
    argv = ["compare", *TRACE, *THROUGHPUTS, "--gpus", "32", "--policies", "fifo,gandiva-fair"]
    assert main([*argv, "--plots", str(plots), "--output", str(tmp_path / "all.json")]) == 0
    printed = capsys.readouterr().out
    assert "ratios to fifo" in printed
    assert "x)" in printed
    for name in ("jct_cdf.png", "ftf_cdf.png", "utilization.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [r["policy"] for r in json.loads((tmp_path / "all.json").read_text())] == [
        "fifo",
        "gandiva-fair",
    ]


def test_config_passes_parameters_and_rejects_unknown_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"allox": {"alpha": 0.5}, "simulation": {"throughput_noise": 0.05}}))
    argv = ["simulate", *TRACE, *THROUGHPUTS, "--gpus", "32", "--policy", "allox"]
    assert main([*argv, "--config", str(good)]) == 0
    toml = tmp_path / "good.toml"
    toml.write_text("[max_min_fairness]\n[simulation]\nrestart_penalty_seconds = 10.0\n")
    assert main([*argv[:-1], "gavel", "--config", str(toml)]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"allox": {"beta": 0.5}}))
    assert main([*argv, "--config", str(bad)]) == 3  # an input file's content
    assert "has no parameter 'beta'" in capsys.readouterr().err
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"simulation": {"gpus": 4}}))
    assert main([*argv, "--config", str(unknown)]) == 3
    assert (
        f"{unknown}:1: simulation.gpus: unknown simulation setting 'gpus' (set by the command "
        "line's --gpus; allowed here: round_seconds, "
    ) in capsys.readouterr().err


def test_bad_arguments_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", *TRACE, *THROUGHPUTS, "--gpus", "32", "--policy", "nope"]
    assert main(argv) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err
    argv = ["simulate", *TRACE, "--gpus", "32", "--policy", "fifo"]
    assert main(argv) == 3
    assert "needs a throughput table" in capsys.readouterr().err


def test_restart_penalty_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", *TRACE, *THROUGHPUTS, "--gpus", "32", "--policy", "fifo"]
    # the default penalty (20 s) does not fit in 10 s rounds: the message names the flag
    assert main([*argv, "--round-seconds", "10"]) == 2
    assert "--restart-penalty-seconds" in capsys.readouterr().err
    outputs = []
    for penalty in ("0.5", "5"):
        out = tmp_path / f"r{penalty}.json"
        argv_p = [*argv, "--round-seconds", "10", "--restart-penalty-seconds", penalty]
        assert main([*argv_p, "--output", str(out)]) == 0
        outputs.append(json.loads(out.read_text())["avg_jct"])
    assert outputs[0] < outputs[1]  # a costlier restart delays jobs
    config = tmp_path / "c.toml"
    config.write_text("[simulation]\nrestart_penalty_seconds = 1.0\n")
    both = [*argv, "--config", str(config), "--restart-penalty-seconds", "2"]
    assert main(both) == 2
    assert "keep one" in capsys.readouterr().err
