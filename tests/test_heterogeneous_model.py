"""The heterogeneous cluster model: cluster specs, typed throughput tables, typed traces, the
policy names, the mechanism's scan and the command line's errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shockwave.cli import main
from shockwave.errors import TraceError
from shockwave.heterogeneous import (
    ClusterSpec,
    HeterogeneousConfig,
    TypedThroughputTable,
    load_typed_trace,
    make_typed_policy,
    read_typed_trace,
    resolve_typed_policy,
    simulate_heterogeneous,
)
from shockwave.heterogeneous.mechanism import TypedRoundMechanism

DATA = Path(__file__).parent / "data" / "gavel"
THROUGHPUTS = DATA / "simulation_throughputs.json.gz"
CLUSTER = "v100:12,p100:12,k80:12"


def test_a_cluster_spec_reads_types_counts_and_server_sizes() -> None:
    spec = ClusterSpec.parse("v100:36/4, p100:12,k80:6")
    assert spec.types == ("v100", "p100", "k80")
    assert spec.counts == (36, 12, 6)
    assert spec.server_sizes == (4, 1, 1)
    assert spec.total_gpus == 54
    assert str(spec) == "v100:36/4,p100:12,k80:6"
    assert ClusterSpec.parse(str(spec)) == spec
    assert ClusterSpec.homogeneous(8).is_homogeneous


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("v100", "not 'TYPE:COUNT'"),
        ("v100:0", "count must be in"),
        ("v100:x", "count must be a positive integer"),
        ("v100:4,v100:4", "listed twice"),
        ("v100:6/4", "do not fill servers"),
        ("v100:4/8", "server size"),
        ("v 100:4", "a name of letters"),
    ],
)
def test_a_bad_cluster_spec_is_named(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClusterSpec.parse(text)


def test_the_table_keeps_every_worker_type_and_jobs_without_a_batch_size() -> None:
    table = TypedThroughputTable.from_file(THROUGHPUTS)
    assert {"v100", "p100", "k80", "v100_unconsolidated"} <= set(table.worker_types)
    assert table.isolated("k80", "A3C", 1) > 0.0
    assert table.isolated("v100", "ResNet-18 (batch size 32)", 1) > table.isolated(
        "k80", "ResNet-18 (batch size 32)", 1
    )
    assert table.isolated("v100", "no such job", 1) == 0.0


def test_an_unknown_type_and_a_job_no_type_can_run_are_named(tmp_path: Path) -> None:
    table = TypedThroughputTable.from_file(THROUGHPUTS)
    with pytest.raises(ValueError, match="GPU type 'a100' of the cluster is not in"):
        read_typed_trace(DATA / "T2.trace", table, ClusterSpec.parse("v100:4,a100:4"))
    trace = tmp_path / "one.trace"
    trace.write_text("Mystery (batch size 3)\tcmd\tdir\t--num_steps\t1\t100\t1\t1\t-1\t0\n")
    with pytest.raises(ValueError, match=r"job 0 \('Mystery \(batch size 3\)'.*no throughput"):
        read_typed_trace(trace, table, ClusterSpec.parse(CLUSTER))
    big = tmp_path / "big.trace"
    big.write_text("ResNet-18 (batch size 32)\tc\td\t--n\t1\t100\t4\t1\t-1\t0\n")
    with pytest.raises(ValueError, match="job 0 .* needs 4 GPUs of one type"):
        read_typed_trace(big, table, ClusterSpec.parse("v100:2,p100:2"))


def test_a_malformed_trace_line_is_named(tmp_path: Path) -> None:
    table = TypedThroughputTable.from_file(THROUGHPUTS)
    bad = tmp_path / "bad.trace"
    bad.write_text("ResNet-18 (batch size 32)\tc\td\t--n\t1\tmany\t1\t1\t-1\t0\n")
    with pytest.raises(TraceError, match=r"bad.trace:1: field 'total_steps'"):
        read_typed_trace(bad, table, ClusterSpec.parse(CLUSTER))


def test_policy_names_ours_and_gavels() -> None:
    assert resolve_typed_policy("gavel") == "gavel"
    assert resolve_typed_policy("max_min_fairness_perf") == "gavel"
    assert resolve_typed_policy("max_min_fairness") == "gavel-agnostic"
    assert resolve_typed_policy("fifo") == "fifo"  # ours: the fastest free type
    assert resolve_typed_policy("fifo_perf") == "fifo"
    assert resolve_typed_policy("min_total_duration") == "ossp-agnostic"
    assert make_typed_policy("themis_agnostic").gavel_name == "finish_time_fairness"
    with pytest.raises(ValueError, match="not available on a heterogeneous cluster yet"):
        resolve_typed_policy("allox-agnostic")
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        resolve_typed_policy("nope")


def test_the_scan_fills_each_type_in_order_by_priority() -> None:
    mechanism = TypedRoundMechanism(3, 2, 360.0)
    active = np.arange(3, dtype=np.int64)
    mechanism.reset(active, 0.0)
    mechanism.set_allocation(active, np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]))
    thr = np.ones((3, 2))
    chosen = mechanism.select(
        active, np.array([1, 1, 1]), thr, np.array([1, 2]), [0, 1], run_zero_priority=True
    )
    # type 0 takes the job with the highest share there; type 1 the two others in its order
    assert chosen == [((0,), 0), ((1,), 1), ((2,), 1)]
    # a job with no throughput on a type never runs there
    thr[1, 1] = 0.0
    chosen = mechanism.select(
        active, np.array([1, 1, 1]), thr, np.array([1, 2]), [0, 1], run_zero_priority=True
    )
    assert ((1,), 1) not in chosen


def test_results_are_deterministic_and_json_ready() -> None:
    jobs = load_typed_trace(DATA / "H4.trace", THROUGHPUTS, "v100:6,p100:6,k80:6")
    first = simulate_heterogeneous(jobs, "fifo-agnostic", HeterogeneousConfig(seed=3))
    second = simulate_heterogeneous(jobs, "fifo-agnostic", HeterogeneousConfig(seed=3))
    assert first.to_json() == second.to_json()
    data = json.loads(first.to_json())
    assert data["cluster"] == "v100:6,p100:6,k80:6"
    assert data["gavel_policy"] == "fifo"
    assert len(data["jct"]) == len(jobs)
    busy = sum(sum(v) for v in data["gpu_seconds_by_type"].values())
    assert busy == pytest.approx(data["utilization"] * 18 * data["makespan"])


def test_the_command_line_runs_a_typed_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code = main([
        "simulate", "--trace", str(DATA / "H4.trace"), "--throughputs", str(THROUGHPUTS),
        "--cluster", "v100:6,p100:6,k80:6", "--mechanics", "gavel", "--round-seconds", "360",
        "--seed", "0", "--policy", "fifo", "--output", str(out),
    ])  # fmt: skip
    assert code == 0
    assert "fifo (Gavel: fifo_perf) on v100:6,p100:6,k80:6" in capsys.readouterr().out
    assert json.loads(out.read_text())["policy"] == "fifo"


def test_the_command_line_runs_the_exact_mechanics_on_a_typed_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code = main([
        "simulate", "--trace", str(DATA / "H4.trace"), "--throughputs", str(THROUGHPUTS),
        "--cluster", "v100:6,p100:6,k80:6", "--mechanics", "exact", "--restart-penalty-seconds",
        "10", "--policy", "gavel", "--output", str(out),
    ])  # fmt: skip
    assert code == 0
    assert "gavel (Gavel: max_min_fairness_perf) on v100:6,p100:6,k80:6, exact mechanics" in (
        capsys.readouterr().out
    )
    result = json.loads(out.read_text())
    assert result["mechanics"] == "exact" and result["lease_extension_share"] == 0.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--cluster", "v100:4,a100:4", "--policy", "gavel"], "GPU type 'a100'"),
        (["--cluster", "v100:4", "--gpus", "4", "--policy", "gavel"], "either --gpus"),
        (["--cluster", "v100:4", "--policy", "allox-agnostic"], "not available on a heterogeneous"),
        (["--cluster", "v100:4", "--mechanics", "exact", "--policy", "gandiva"], "mechanics only"),
        (["--cluster", "v100:4", "--restart-penalty-seconds", "5", "--policy", "gavel"], "exact"),
        (["--cluster", "v100:x", "--policy", "gavel"], "count must be a positive integer"),
    ],
)
def test_command_line_errors_name_the_problem(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["simulate", "--trace", str(DATA / "H4.trace"), "--throughputs",
                 str(THROUGHPUTS), *extra])  # fmt: skip
    assert code != 0
    assert message in capsys.readouterr().err
