"""Converted production traces simulate under every policy, and a converted Helios-like month
runs through ``shockwave simulate`` and ``shockwave compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.policies import POLICIES
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import read_native, write_native
from shockwave.traces.production import ConversionOptions, read_production
from shockwave.traces.production.synthetic import write_helios_like

from .conftest import PRODUCTION


@pytest.mark.parametrize("source", ["philly", "helios", "pai", "tiresias"])
def test_every_policy_completes_every_converted_job(source: str) -> None:
    workload = read_production(source, PRODUCTION / source)
    config = SimulationConfig(gpus=64, round_seconds=3600.0)
    for policy in POLICIES:
        result = simulate(workload, policy, config)
        assert result.dropped_jobs == [], policy
        assert result.jobs == len(workload)
        for job, jct in zip(workload, result.jct, strict=True):
            # never faster than alone on its gang; exclusive runtime is the trace's run time
            assert jct >= job.exclusive_seconds - 1e-6 * job.exclusive_seconds, policy


def test_a_converted_helios_like_month_runs_through_simulate_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    month = tmp_path / "cluster_log.csv"
    write_helios_like(month, 150, seed=3, days=30)
    workload = tmp_path / "month.jsonl"
    argv = ["trace", "convert", "--from", "helios", str(tmp_path), "-o", str(workload)]
    assert main([*argv, "--max-gpus", "32"]) == 0
    converted = read_native(workload)
    standard = tmp_path / "standard.jsonl"
    write_native(read_production("helios", tmp_path, ConversionOptions(max_gpus=32)), standard)
    assert workload.read_bytes() == standard.read_bytes()  # direct records = validated jobs
    span = float(converted.arrival_times.max() - converted.arrival_times.min())
    assert span > 25 * 86_400 and len(converted) > 80
    capsys.readouterr()
    common = ["--trace", str(workload), "--gpus", "64"]
    result = tmp_path / "shockwave.json"
    assert main(["simulate", *common, "--policy", "shockwave", "--output", str(result)]) == 0
    assert json.loads(result.read_text())["jobs"] == len(converted)
    everything = tmp_path / "all.json"
    assert main(["compare", *common, "--policies", ",".join(POLICIES), "--output",
                 str(everything)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "ratios to shockwave" in printed
    results = json.loads(everything.read_text())
    assert [r["policy"] for r in results] == list(POLICIES)
    assert all(r["dropped_jobs"] == [] and r["jobs"] == len(converted) for r in results)
