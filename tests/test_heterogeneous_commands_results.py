"""``shockwave bench heterogeneous`` and ``shockwave reproduce heterogeneous``: small runs and
their refusals."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from shockwave.cli import main
from shockwave.heterogeneous import TYPED_POLICIES, ClusterSpec, TypedJobs
from shockwave.sweep import heterogeneous as reproduce

PACKED = Path(__file__).parent / "data" / "gavel" / "simulation_throughputs.json.gz"


@pytest.fixture(scope="module")
def throughputs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Gavel's throughput file, uncompressed (the trace generator reads plain JSON)."""
    path = tmp_path_factory.mktemp("gavel") / "simulation_throughputs.json"
    path.write_bytes(gzip.decompress(PACKED.read_bytes()))
    return str(path)


def test_bench_heterogeneous_times_the_same_jobs_on_both_clusters(
    tmp_path: Path, throughputs: str
) -> None:
    output = tmp_path / "bench.json"
    argv = ["bench", "heterogeneous", "--throughputs", throughputs, "--jobs", "40",
            "--cluster", "v100:4,p100:4,k80:4", "--policies", "fifo,max_min_fairness_perf",
            "--repeats", "3", "-o", str(output),
            "--markdown", str(tmp_path / "bench.md")]  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(output.read_text())["rows"]
    assert [r["policy"] for r in rows] == ["fifo", "gavel"]
    for row in rows:
        assert row["one_type"] == "v100:12" and row["cluster"] == "v100:4,p100:4,k80:4"
        typed, one = row["typed_runs"], row["one_type_runs"]
        assert len(typed) == len(one) == 3
        assert row["typed_seconds"] == sorted(typed)[1]
        assert row["one_type_seconds"] == sorted(one)[1]
        assert row["ratio"] == sorted(t / o for t, o in zip(typed, one, strict=True))[1]
        assert set(row["typed"]["utilization_by_type"]) == {"v100", "p100", "k80"}
        assert set(row["one"]["utilization_by_type"]) == {"v100"}
    assert "| 40 | v100:4,p100:4,k80:4 | gavel |" in (tmp_path / "bench.md").read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cluster", "v100:4,x"], "--cluster v100:4,x"),
        (["--policies", "nope"], "--policies"),
        (["--one-type", "a100", "--cluster", "v100:4,k80:4"], "--one-type a100"),
        (["--jobs", "0"], "--jobs must be >= 1"),
        (["--repeats", "0"], "--repeats must be >= 1"),
    ],
)
def test_bench_heterogeneous_refuses_bad_options(
    argv: list[str], message: str, throughputs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "heterogeneous", "--throughputs", throughputs, *argv]) == 2
    assert message in capsys.readouterr().err


def test_reproduce_heterogeneous_refuses_sweep_options_and_needs_throughputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", "heterogeneous", "--out", str(tmp_path)]) == 2
    assert "takes no --out" in capsys.readouterr().err
    assert main(["reproduce", "heterogeneous"]) == 2
    assert "needs --throughputs" in capsys.readouterr().err
    assert main(["reproduce", "canonical", "--out", str(tmp_path), "--full"]) == 2
    assert "--full: only for 'reproduce heterogeneous'" in capsys.readouterr().err
    assert main(["reproduce", "heterogeneous", "--throughputs", str(tmp_path / "none")]) == 3


def test_reproduce_table_lists_every_policy_and_a_refusal(tmp_path: Path) -> None:
    jobs = TypedJobs(
        job_ids=np.array([0, 1], dtype=np.int64),
        job_types=("a", "b"),
        arrival=np.zeros(2),
        gang=np.array([1, 2], dtype=np.int64),
        weight=np.ones(2),
        total_steps=np.array([2160, 2160], dtype=np.int64),
        throughput=np.array([[3.0, 1.0], [4.0, 2.0]]),
        cluster=ClusterSpec.parse("v100:2,k80:2"),
    )
    every = tuple(TYPED_POLICIES)
    rows = reproduce.run({"tiny": reproduce.TypedSet(jobs, reproduce.STATIC_CONFIG, every)})
    assert [r.policy for r in rows] == list(TYPED_POLICIES)
    refused = [r for r in rows if r.result is None]
    assert [r.policy for r in refused] == ["allox"] and "2 GPUs" in str(refused[0].refused)
    text = reproduce.render(rows, full=False, seconds=1.0, command="test")
    assert text.count("| tiny | 2 |") == len(TYPED_POLICIES)
    fifo = next(r.result for r in rows if r.policy == "fifo")
    assert fifo is not None
    assert f"| {fifo.worst_ftf:.2f} |" in reproduce.format_row(rows[0])


def test_reproduce_adds_adapting_sets_on_unseen_seeds_under_the_exact_mechanics(
    throughputs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sets' construction, on small sizes (the real sizes take half a minute to draw)
    monkeypatch.setattr(reproduce, "QUICK_JOBS", {"static-12": 12, "static-36": 12})
    monkeypatch.setattr(reproduce, "QUICK_ADAPTING", {"adapting-12": 12})
    sets = reproduce.workloads(throughputs, None, full=False)
    adapting = {name: s for name, s in sets.items() if name.startswith("adapting-12")}
    assert sorted(adapting) == [f"adapting-12 s{seed}" for seed in reproduce.ADAPTING_SEEDS]
    for typed_set in adapting.values():
        assert typed_set.config.mechanics == "exact"
        assert typed_set.jobs.profiles is not None  # adapting jobs follow their profiles
        assert "shockwave" in typed_set.policies and "gavel" in typed_set.policies
    assert sets["static-12"].policies == tuple(TYPED_POLICIES)
