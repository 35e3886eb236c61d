"""``shockwave bench``: the installed package's benchmarks print a table and write JSON (tiny
sizes here; the timings themselves are the suites' business)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave.bench.markets import ORACLE_ATTEMPTS
from shockwave.cli import main


def test_bench_scale_prints_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, table = tmp_path / "scale.json", tmp_path / "scale.md"
    argv = ["bench", "scale", "--sizes", "30:8,60:8", "--policies", "fifo"]
    assert main([*argv, "-o", str(out), "--markdown", str(table)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| jobs | GPUs | policy |")
    assert "| 30 | 8 | fifo |" in printed and "fitted exponent fifo:" in printed
    document = json.loads(out.read_text())
    assert document["suite"] == "scale" and document["mechanics"] == "exact"
    assert [(r["jobs"], r["policy"]) for r in document["rows"]] == [(30, "fifo"), (60, "fifo")]
    assert all(r["makespan"] > 0 and r["peak_rss_mb"] > 0 for r in document["rows"])
    assert "fifo" in document["fitted_exponents"]
    assert "| 60 | 8 | fifo |" in table.read_text()


def test_bench_market_prints_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "market.json"
    argv = ["bench", "market", "--sizes", "40:5", "--repeats", "1", "--no-policy"]
    assert main([*argv, "-o", str(out)]) == 0
    assert "| 40 | 5 | interior point |" in capsys.readouterr().out
    document = json.loads(out.read_text())
    assert document["suite"] == "market" and "policy_warm_starts" not in document
    methods = [r["method"] for r in document["solver"]]
    assert methods == ["interior_point", "proportional_response"]
    for record in document["solver"]:
        for tol in ("1e-04", "1e-06"):
            assert record[tol]["cold"]["converged"] and record[tol]["warm"]["iterations"] >= 1


def test_bench_market_with_gpu_types_times_both_and_clarabel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "types.json"
    argv = ["bench", "market", "--types", "3", "--sizes", "40:5", "--repeats", "1"]
    assert main([*argv, "-o", str(out)]) == 0
    assert "| 40 | 5 | 3 | 1e-06 |" in capsys.readouterr().out
    document = json.loads(out.read_text())
    (record,) = document["types"]
    assert (record["jobs"], record["rounds"], record["types"]) == (40, 5, 3)
    assert record["one"]["converged"] and record["typed"]["converged"]
    assert record["ratio"] > 0
    assert record["clarabel"]["solve_ratio"] > 0  # cvxpy and Clarabel are test dependencies
    assert record["clarabel"]["attempt"] in ORACLE_ATTEMPTS


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "market", "--types", "1", "--sizes", "5:2"],
        ["bench", "market", "--types", "9", "--sizes", "5:2"],
        ["bench", "market", "--types", "3", "--policy-only"],
        ["bench", "scale", "--quick", "--sizes", "10:2"],
        ["bench", "scale", "--sizes", "10"],
        ["bench", "market", "--sizes", "0:3"],
        ["bench", "market", "--repeats", "0", "--sizes", "5:2"],
    ],
)
def test_bad_bench_options_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("shockwave: error: ")


def test_bench_scale_takes_a_steady_arrival_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scale.json"
    argv = ["bench", "scale", "--sizes", "40:8:0.5", "--policies", "fifo", "-o", str(out)]
    assert main(argv) == 0
    assert "| 40 over 0.5 days | 8 | fifo |" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["rows"]
    assert row["days"] == 0.5 and row["offered_load"] > 0


@pytest.mark.parametrize("sizes", ["10:2:0", "10:2:x", "10:2:1:4", "10:2:inf"])
def test_bad_steady_sizes_are_usage_errors(sizes: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scale", "--sizes", sizes]) == 2
    assert "--sizes" in capsys.readouterr().err


def test_steady_sizes_are_left_out_of_the_fitted_exponent() -> None:
    from shockwave.bench.scale import fitted_exponents

    def row(jobs: int, seconds: float, days: float | None = None) -> dict[str, object]:
        return {
            "policy": "p",
            "jobs": jobs,
            "rounds": 10,
            "simulate_seconds": seconds,
            "days": days,
        }

    rows = [row(10, 1.0), row(100, 10.0), row(1000, 1.0, days=5.0)]
    assert abs(fitted_exponents(rows)["p"] - 1.0) < 1e-9
