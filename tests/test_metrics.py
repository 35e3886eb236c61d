"""Metrics, defined as the original computes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shockwave.metrics import (
    contention_factor,
    finish_time_fairness,
    themis_finish_time_fairness,
    unfair_fraction,
)
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import load_workload

ROOT = Path(__file__).resolve().parents[1]


def test_static_contention_factor_and_rounding() -> None:
    assert contention_factor(120, 32) == 3.75
    assert contention_factor(10, 32) == 1.0
    rho = finish_time_fairness(np.array([3750.0, 1.0]), np.array([1000.0, 3.0]), 120, 32)
    assert rho == [1.0, round(1.0 / (3.0 * 3.75), 5)]
    assert rho[1] == 0.08889


def test_themis_variant_averages_active_jobs_over_the_jobs_rounds() -> None:
    active = np.array([10, 40, 80, 20], dtype=np.int64)
    rho = themis_finish_time_fairness(
        np.array([100.0, 100.0, 100.0]),
        np.array([10.0, 10.0, 10.0]),
        np.array([0, 1, 2], dtype=np.int64),
        np.array([2, 3, 2], dtype=np.int64),
        active,
        gpus=10,
    )
    # job 0: mean(10, 40) / 10 = 2.5; job 1: mean(40, 80) / 10 = 6; job 2: empty range -> 1
    assert rho == [4.0, round(10 / 6, 5), 10.0]


def test_unfair_means_strictly_above_the_threshold() -> None:
    assert unfair_fraction([1.05, 1.05001, 0.2, 3.0]) == 0.5
    assert unfair_fraction([]) == 0.0


def test_result_json_has_the_documented_keys_and_a_job_frame() -> None:
    workload = load_workload(
        ROOT / "traces/canonical_120jobs.trace", ROOT / "traces/tacc_throughputs.json"
    )
    result = simulate(workload, "gandiva-fair", SimulationConfig(gpus=32, mechanics="gavel"))
    data = json.loads(result.to_json())
    for key in (
        "policy", "gpus", "mechanics", "makespan", "avg_jct", "median_jct", "p99_jct", "jct",
        "ftf", "worst_ftf", "unfair_fraction", "utilization",
    ):  # fmt: skip
        assert key in data
    # timing is a measurement, not a result: apart from the metrics, still readable
    assert not {"wall_seconds", "policy_seconds", "policy_seconds_total"} & set(data)
    assert set(result.timing.to_dict()) == {
        "wall_seconds", "policy_seconds_total", "policy_seconds_max_round", "policy_seconds",
    }  # fmt: skip
    assert result.wall_seconds == result.timing.wall_seconds > 0
    assert len(result.policy_seconds) == data["rounds"]
    assert data["policy"] == "gandiva-fair"
    assert data["mechanics"] == "gavel"
    assert len(data["jct"]) == len(data["ftf"]) == 120
    assert 0.0 <= data["unfair_fraction"] <= 1.0
    assert data["worst_ftf"] == max(data["ftf"])
    assert data["avg_jct"] == pytest.approx(np.mean(data["jct"]))
    frame = result.jobs_frame()
    assert list(frame["job_id"]) == list(range(120))
    assert frame["jct"].tolist() == data["jct"]
    assert bool(frame.loc[35, "dropped"])
    # per-GPU utilisation, each rounded to 5 decimals, then averaged (as the original)
    busy = result.record.gpu_busy_seconds
    assert busy is not None
    expected = float(np.mean([round(b / result.makespan, 5) for b in busy.tolist()]))
    assert result.utilization == expected
