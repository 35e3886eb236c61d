"""Finish-time fairness, GPU-hours per type and the plots of heterogeneous runs, on cases small
enough to check by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from shockwave.heterogeneous import ClusterSpec, TypedJobs, simulate_heterogeneous
from shockwave.heterogeneous.fairness import (
    heterogeneous_ftf,
    isolated_shares,
    mean_active_jobs,
)


def test_isolated_shares_split_every_type_equally_and_cap_rows_at_one() -> None:
    # 4 v100 + 2 k80, 2 active jobs: a 2-GPU job gets (4/2)/2 = 1 of v100 and (2/2)/2 = 0.5 of
    # k80, 1.5 in all, scaled to 2/3 and 1/3; a 1-GPU job gets 2 and 1, scaled to 2/3, 1/3 too
    shares = isolated_shares(np.array([4, 2]), np.array([2, 1]), 2)
    np.testing.assert_allclose(shares, [[2 / 3, 1 / 3], [2 / 3, 1 / 3]])
    # 8 active jobs: (4/8)/2 = 0.25 and (2/8)/2 = 0.125 sum below 1: unscaled
    np.testing.assert_allclose(
        isolated_shares(np.array([4, 2]), np.array([2]), 8.0), [[0.25, 0.125]]
    )
    # one contention per job
    np.testing.assert_allclose(
        isolated_shares(np.array([1, 1]), np.array([1, 1]), np.array([4.0, 2.0])),
        [[0.25, 0.25], [0.5, 0.5]],
    )


def test_mean_active_jobs_is_the_time_average_over_each_jobs_life() -> None:
    # job 0 in [0, 100], job 1 in [0, 200], job 2 in [50, 150]; job 3 dropped
    arrival = np.array([0.0, 0.0, 50.0, 60.0])
    completion = np.array([100.0, 200.0, 150.0, np.nan])
    mean = mean_active_jobs(arrival, completion)
    # active: 2 in [0, 50), 3 in [50, 100), 2 in [100, 150), 1 in [150, 200]
    assert mean[0] == pytest.approx((2 * 50 + 3 * 50) / 100)
    assert mean[1] == pytest.approx((2 * 50 + 3 * 50 + 2 * 50 + 1 * 50) / 200)
    assert mean[2] == pytest.approx((3 * 50 + 2 * 50) / 100)
    assert math.isnan(mean[3])
    # a job with no duration: its own presence, 1
    assert mean_active_jobs(np.array([5.0]), np.array([5.0]))[0] == 1.0


def test_rho_of_two_jobs_on_two_types_by_hand() -> None:
    # v100:1, k80:1; both arrive at 0; job 0 ends at 100, job 1 at 200
    # job 0: 2 active all its life -> shares (1/2, 1/2), I = 0.5*3 + 0.5*1 = 2 it/s,
    #        400 steps -> 200 s isolated, rho = 100 / 200 = 0.5
    # job 1: active 2 for 100 s then 1 for 100 s -> m = 1.5, shares (2/3, 2/3) scaled to
    #        (1/2, 1/2), I = 0.5*4 + 0.5*2 = 3 it/s, 300 steps -> 100 s, rho = 200 / 100 = 2
    completion = np.array([100.0, 200.0])
    rho, isolated = heterogeneous_ftf(
        jct=completion,
        total_steps=np.array([400, 300]),
        throughput=np.array([[3.0, 1.0], [4.0, 2.0]]),
        gang=np.array([1, 1]),
        counts=np.array([1, 1]),
        arrival=np.zeros(2),
        completion=completion,
    )
    np.testing.assert_allclose(isolated, [200.0, 100.0])
    np.testing.assert_allclose(rho, [0.5, 2.0])


def _two_jobs() -> TypedJobs:
    return TypedJobs(
        job_ids=np.array([0, 1], dtype=np.int64),
        job_types=("a", "b"),
        arrival=np.zeros(2),
        gang=np.array([1, 1], dtype=np.int64),
        weight=np.ones(2),
        total_steps=np.array([2160, 2160], dtype=np.int64),
        throughput=np.array([[3.0, 1.0], [4.0, 2.0]]),
        cluster=ClusterSpec.parse("v100:1,k80:1"),
    )


def test_fifo_run_reports_rho_and_gpu_hours_per_type() -> None:
    # fifo (fastest free type, rebuilt at every recompute): job 0 takes the v100 and runs
    # 2160 / 3 = 720 s; job 1 runs on the k80 (2 it/s) until 720 s (1440 steps), then moves to
    # the free v100 for its last 720 steps at 4 it/s: done at 900 s
    result = simulate_heterogeneous(_two_jobs(), "fifo")
    np.testing.assert_allclose(result.jct, [720.0, 900.0])
    # job 0: 2 active -> I = 0.5*3 + 0.5*1 = 2, isolated 1080 s, rho 720/1080
    # job 1: m = (2*720 + 1*180)/900 = 1.8 -> shares scaled to (1/2, 1/2), I = 3, 720 s,
    #        rho 900/720 = 1.25
    np.testing.assert_allclose(result.isolated_seconds, [1080.0, 720.0])
    np.testing.assert_allclose(result.ftf, [0.66667, 1.25])
    assert result.worst_ftf == 1.25
    assert result.unfair_fraction == 0.5
    frame = result.jobs_frame()
    assert list(frame.columns) == [
        "job_id", "arrival_time", "completion_time", "jct", "isolated_seconds", "ftf",
        "gpu_hours_v100", "gpu_hours_k80", "dropped",
    ]  # fmt: skip
    np.testing.assert_allclose(frame["gpu_hours_v100"], [0.2, 0.05])
    np.testing.assert_allclose(frame["gpu_hours_k80"], [0.0, 0.2])
    assert result.gpu_hours_by_type == pytest.approx({"v100": 0.25, "k80": 0.2})
    # busy: v100 the whole 900 s, k80 720 of 900 s
    assert result.utilization_by_type == pytest.approx({"v100": 1.0, "k80": 0.8})
    data = json.loads(result.to_json())
    assert data["worst_ftf"] == 1.25 and data["unfair_fraction"] == 0.5
    assert data["ftf"] == [0.66667, 1.25]
    assert "worst rho 1.250, unfair 50.0 %" in result.summary()


def test_plots_of_utilization_and_gpu_hours_per_type(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from shockwave.heterogeneous.plots import write_heterogeneous_plots

    results = [simulate_heterogeneous(_two_jobs(), name) for name in ("fifo", "gavel")]
    written = write_heterogeneous_plots(results, tmp_path / "plots")
    assert [p.name for p in written] == ["utilization_by_type.png", "gpu_hours_by_type.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
