"""Sweeps on typed clusters (``cluster = "v100:2,p100:2,k80:2"`` in a spec): every row equals
``simulate_heterogeneous`` run directly; bad specs are refused naming the key and the type; an
interrupted typed sweep resumes; homogeneous parts keep their schema, typed ones add columns."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from shockwave.cli import main
from shockwave.heterogeneous import (
    HeterogeneousConfig,
    load_typed_trace,
    make_typed_policy,
    simulate_heterogeneous,
)
from shockwave.heterogeneous.checkpoint import TypedInputs
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.sweep import Cell, CellOutcome, execute, load_jobs, load_spec, run_sweep
from shockwave.sweep.dataset import RESULTS_SCHEMA, TYPED_JOBS_SCHEMA, TYPED_RESULTS_SCHEMA
from shockwave.sweep.report import write_report
from shockwave.sweep.spec import SpecError, grid_axes, parse_spec
from tests.sweep.cases import count_rows, part_files, result_rows

GAVEL = Path(__file__).resolve().parents[1] / "data" / "gavel"
THROUGHPUTS = GAVEL / "simulation_throughputs.json.gz"
CLUSTERS = ("v100:2,p100:2,k80:2", "v100:3,k80:3")
POLICIES = ("gavel", "fifo-agnostic")


def _spec(directory: Path, jobs: int = 12) -> Path:
    """A 2-policy x 2-cluster spec on the first ``jobs`` single-GPU jobs of Gavel's H4."""
    lines = (GAVEL / "H4.trace").read_text(encoding="utf-8").splitlines()[:jobs]
    (directory / "small.trace").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = directory / "typed.toml"
    spec.write_text(
        f'policies = ["{POLICIES[0]}", "{POLICIES[1]}"]\n'
        "[[traces]]\n"
        'path = "small.trace"\n'
        f'throughputs = "{THROUGHPUTS}"\n'
        f'cluster = ["{CLUSTERS[0]}", "{CLUSTERS[1]}"]\n',
        encoding="utf-8",
    )
    return spec


@pytest.fixture(scope="module")
def typed_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The typed spec swept once on a pool of one worker: (spec, output)."""
    directory = tmp_path_factory.mktemp("typed")
    spec = _spec(directory)
    out = directory / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1"]) == 0
    return spec, out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def test_every_typed_row_equals_simulate_heterogeneous(typed_sweep: tuple[Path, Path]) -> None:
    spec, out = typed_sweep
    rows = result_rows(out)
    assert sorted((r["cluster"], r["policy"]) for r in rows) == sorted(
        (c, p) for c in CLUSTERS for p in POLICIES
    )
    jobs = load_jobs(out)
    for row in rows:
        assert row["status"] == "ok", row["error"]
        typed = load_typed_trace(spec.parent / "small.trace", THROUGHPUTS, row["cluster"])
        direct = simulate_heterogeneous(typed, row["policy"], HeterogeneousConfig()).to_dict()
        assert row["gpus"] == typed.cluster.total_gpus and row["mechanics"] == "gavel"
        for name, value in direct.items():
            got = row[name]
            if name in ("utilization_by_type", "gpu_seconds_by_type"):
                got = dict(got)
            assert got == value, name  # bit for bit (NaN-free: every job completes here)
        frame = jobs[jobs.key == row["key"]].sort_values("job_id")
        expected = simulate_heterogeneous(typed, row["policy"]).jobs_frame()
        assert frame.job_id.tolist() == expected.job_id.tolist()
        for column in ("arrival_time", "completion_time", "jct", "isolated_seconds", "ftf"):
            assert all(map(_same, frame[column].tolist(), expected[column].tolist())), column
        for name in typed.cluster.types:
            hours = [dict(m)[name] for m in frame.gpu_hours_by_type]
            assert hours == expected[f"gpu_hours_{name}"].tolist()
        assert frame.admission_time.isna().all()  # the homogeneous simulator's columns: null


def test_typed_parts_have_the_typed_schema_and_a_rerun_skips(
    typed_sweep: tuple[Path, Path],
) -> None:
    spec, out = typed_sweep
    for part in part_files(out):
        assert pq.read_schema(part).equals(TYPED_RESULTS_SCHEMA)
    for part in sorted((out / "jobs.parquet").glob("part-*.parquet")):
        assert pq.read_schema(part).equals(TYPED_JOBS_SCHEMA)
    stream = io.StringIO()
    summary = run_sweep(load_spec(spec), out, _Interrupting(None), stream=stream)
    assert summary.skipped == 4 and summary.ran == 0
    assert "4 cells, 4 already recorded" in stream.getvalue()


def test_the_report_groups_typed_cells_by_cluster(typed_sweep: tuple[Path, Path]) -> None:
    _, out = typed_sweep
    write_report(out, figures=False)
    text = (out / "report" / "report.md").read_text(encoding="utf-8")
    for cluster in CLUSTERS:
        assert f"## small.trace, {cluster}, gavel mechanics" in text
    assert "util % by type" in text and "| fifo-agnostic |" in text


class _Interrupting:
    """Runs cells in this process; Ctrl-C (KeyboardInterrupt) after ``after`` cells."""

    def __init__(self, after: int | None) -> None:
        self.after = after

    def describe(self) -> str:
        return "this process"

    def run(self, cells: Sequence[Cell]) -> Generator[CellOutcome, None, None]:
        for done, cell in enumerate(cells):
            if done == self.after:
                raise KeyboardInterrupt
            yield execute(cell)


def test_an_interrupted_typed_sweep_resumes_with_the_missing_cells(tmp_path: Path) -> None:
    spec = _spec(tmp_path, jobs=8)
    out = tmp_path / "out"
    first = run_sweep(load_spec(spec), out, _Interrupting(3), flush_cells=1, stream=io.StringIO())
    assert first.interrupted and first.ran == 3 and count_rows(out) == 3
    rerun = run_sweep(load_spec(spec), out, _Interrupting(None), stream=io.StringIO())
    assert rerun.skipped == 3 and rerun.ran == 1 and not rerun.interrupted
    rows = result_rows(out)
    assert count_rows(out) == len(rows) == 4 == len({r["key"] for r in rows})
    assert {r["key"] for r in rows} == {c.key for c in load_spec(spec).cells()}


def test_typed_cells_have_their_own_keys_and_settings(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    cells = spec.cells()
    assert spec.typed and len(cells) == 4 and len({c.key for c in cells}) == 4
    assert {c.cluster for c in cells} == set(CLUSTERS)
    assert all(c.typed_config() == HeterogeneousConfig() for c in cells)  # Gavel's defaults
    assert "v100:2,p100:2,k80:2, gavel" in cells[0].describe()
    text = _spec(tmp_path).read_text() + "[simulation]\nround_seconds = [360, 120]\n"
    swept = parse_spec(text, tmp_path / "s.toml").cells()
    assert len(swept) == 8  # 360 written out is the default: its cells' keys are the same
    assert {c.key for c in cells} < {c.key for c in swept}


def test_a_mixed_directory_reads_homogeneous_rows_with_null_typed_columns(tmp_path: Path) -> None:
    out = tmp_path / "out"
    homogeneous = tmp_path / "h.toml"
    homogeneous.write_text(
        'policies = ["fifo"]\n[[traces]]\ngenerate = { jobs = 6, gpus = 8, seed = 1 }\n',
        encoding="utf-8",
    )
    run_sweep(load_spec(homogeneous), out, _Interrupting(None), stream=io.StringIO())
    (part,) = part_files(out)
    assert pq.read_schema(part).equals(RESULTS_SCHEMA)  # not a column more than before
    run_sweep(load_spec(_spec(tmp_path, jobs=6)), out, _Interrupting(None), stream=io.StringIO())
    rows = result_rows(out)
    assert len(rows) == 5
    assert [r["cluster"] for r in rows if r["policy"] == "fifo"] == [None]
    assert all(r["cluster"] in CLUSTERS for r in rows if r["policy"] != "fifo")


# ------------------------------------------------------------------------------ bad specs
def _refused(tmp_path: Path, text: str) -> str:
    (tmp_path / "small.trace").write_text(
        (GAVEL / "T2.trace").read_text(encoding="utf-8").splitlines()[1] + "\n",  # 2 GPUs
        encoding="utf-8",
    )
    with pytest.raises(SpecError) as caught:
        parse_spec(text, tmp_path / "bad.toml")
    return str(caught.value)


_TRACE = f'[[traces]]\npath = "small.trace"\nthroughputs = "{THROUGHPUTS}"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # an unknown type: the key and the type
            f'policies = ["gavel"]\n{_TRACE}cluster = ["v100:2", "a100:4,k80:2"]\n',
            ["traces[0].cluster[1]", "'a100'", "worker types"],
        ),
        (  # a malformed cluster
            f'policies = ["gavel"]\n{_TRACE}cluster = "v100=2"\n',
            ["traces[0].cluster", "'v100=2'"],
        ),
        (  # gpus and cluster in one spec
            f'policies = ["gavel"]\n{_TRACE}cluster = "v100:2"\n'
            "[[traces]]\ngenerate = { jobs = 4, gpus = 4 }\ngpus = 4\n",
            ["traces[1].gpus", "traces[0].cluster", "two specs"],
        ),
        (  # a trace without a cluster in a typed spec
            f'policies = ["gavel"]\n{_TRACE}cluster = "v100:2"\n'
            "[[traces]]\ngenerate = { jobs = 4, gpus = 4 }\n",
            ["traces[1].cluster", "required"],
        ),
        (  # mechanics neither Gavel's nor the exact ones
            f'policies = ["gavel"]\nmechanics = ["fluid"]\n{_TRACE}cluster = "v100:2"\n',
            ["mechanics[0]", "'gavel' (its default) or 'exact'", "'fluid'"],
        ),
        (  # a packing policy under the exact mechanics
            f'policies = ["gandiva"]\nmechanics = ["exact"]\n{_TRACE}cluster = "v100:2"\n',
            ["policies[0]", "packs jobs onto shared GPUs"],
        ),
        (  # a policy the typed simulator does not have
            f'policies = ["gavel", "allox-agnostic"]\n{_TRACE}cluster = "v100:2"\n',
            ["policies[1]", "'allox-agnostic'", "not available on a heterogeneous cluster"],
        ),
        (  # a baseline has no parameters
            f'policies = ["gavel"]\n[params.gavel]\nx = 1\n{_TRACE}cluster = "v100:2"\n',
            ["params.gavel.x", "policy 'gavel' has no parameter 'x' (its parameters: none)"],
        ),
        (  # a parameter of the homogeneous shockwave only
            f'policies = ["shockwave"]\n[params.shockwave]\nbackend = ["milp"]\n{_TRACE}'
            'cluster = "v100:2"\n',
            ["params.shockwave.backend", "has no parameter 'backend'"],
        ),
        (  # a value the typed policy refuses
            f'policies = ["shockwave"]\n[params.shockwave]\ntime_discount = [0.5, 2.0]\n'
            f'{_TRACE}cluster = "v100:2"\n',
            ["params.shockwave", "time_discount"],
        ),
        (  # a homogeneous simulator's setting
            f'policies = ["gavel"]\n[simulation]\nthroughput_noise = 0.1\n{_TRACE}'
            'cluster = "v100:2"\n',
            ["simulation.throughput_noise", "not a setting of a typed cluster"],
        ),
        (  # the restart penalty under Gavel's mechanics, which have none
            f'policies = ["gavel"]\n[simulation]\nrestart_penalty_seconds = 5\n{_TRACE}'
            'cluster = "v100:2"\n',
            ["simulation.restart_penalty_seconds", "exact mechanics only"],
        ),
        (  # a bundled one-type table
            'policies = ["gavel"]\n[[traces]]\npath = "small.trace"\nthroughputs = "tacc"\n'
            'cluster = "v100:2"\n',
            ["traces[0].throughputs", "bundled table 'tacc' has one GPU type"],
        ),
        (  # a job no type of the cluster can hold (2 GPUs of one type)
            f'policies = ["gavel"]\n{_TRACE}cluster = "v100:1,k80:1"\n',
            ["traces[0].cluster", "job 0"],
        ),
    ],
)
def test_a_bad_typed_spec_is_refused_naming_the_key(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    message = _refused(tmp_path, text)
    for part in expected:
        assert part in message, message


def test_a_throughput_file_without_a_type_of_the_cluster_is_named(tmp_path: Path) -> None:
    (tmp_path / "v100.json").write_text(
        '{"v100": {"(\'ResNet-18 (batch size 32)\', 1)": {"null": 10.0}}}', encoding="utf-8"
    )
    text = (
        'policies = ["gavel"]\n[[traces]]\ngenerate = { jobs = 4, throughputs = "v100.json" }\n'
        'cluster = "v100:2,k80:2"\n'
    )
    message = _refused(tmp_path, text)
    assert "traces[0].cluster" in message and "'k80'" in message and "v100.json" in message


def test_the_grid_size_counts_each_cluster() -> None:
    data = {
        "policies": ["gavel", "mst"],
        "traces": [{"path": "x.trace", "cluster": ["v100:1", "k80:1", "p100:1"]}],
    }
    assert grid_axes(data)["traces x clusters"] == 3


def test_a_typed_spec_sweeps_the_typed_shockwave_parameters(tmp_path: Path) -> None:
    spec = _spec(tmp_path, jobs=8)
    text = spec.read_text(encoding="utf-8").replace(
        f'policies = ["{POLICIES[0]}", "{POLICIES[1]}"]',
        'policies = ["shockwave", "gavel"]\n'
        "[params.shockwave]\nmakespan_weight = [0.5, 0.0]\nfinish_fastest = [true, false]",
    )
    spec.write_text(text.replace(f'["{CLUSTERS[0]}", "{CLUSTERS[1]}"]', f'"{CLUSTERS[0]}"'))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1"]) == 0
    rows = result_rows(out)
    settings = sorted(r["parameters"] for r in rows if r["policy"] == "shockwave")
    expected = ['{"finish_fastest":false,"makespan_weight":0.0}', '{"finish_fastest":false}',
                '{"makespan_weight":0.0}', "{}"]  # fmt: skip
    assert settings == sorted(expected)
    typed = load_typed_trace(spec.parent / "small.trace", THROUGHPUTS, CLUSTERS[0])
    for row in rows:
        assert row["status"] == "ok", row["error"]
        parameters = json.loads(row["parameters"])
        policy = make_typed_policy(row["policy"], 0, parameters)
        direct = simulate_heterogeneous(typed, policy, HeterogeneousConfig()).to_dict()
        assert row["makespan"] == direct["makespan"] and row["avg_jct"] == direct["avg_jct"]


def _swept(directory: Path, spec_text: str) -> list[dict[str, Any]]:
    """The rows of the spec ``spec_text`` swept in ``directory`` on one worker."""
    spec = directory / "spec.toml"
    spec.write_text(spec_text, encoding="utf-8")
    out = directory / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1"]) == 0
    return result_rows(out)


def _adapting(directory: Path, cluster: str = "v100:2,p100:2,k80:2") -> Path:
    """An adapting native workload of ``trace generate --cluster`` (profiles on every type)."""
    path = directory / "adapting.jsonl"
    generate = ["trace", "generate", "--jobs", "8", "--cluster", cluster, "--seed", "4",
                "--gang-size-mix", "0.7,0.3,0,0", "-o", str(path)]  # fmt: skip
    assert main(generate) == 0
    return path


def test_a_typed_spec_runs_native_workloads_under_the_exact_mechanics(tmp_path: Path) -> None:
    workload = _adapting(tmp_path)
    cluster = "v100:2,p100:2,k80:2"
    rows = _swept(
        tmp_path,
        'policies = ["shockwave", "gavel"]\nmechanics = ["exact"]\n'
        "[simulation]\nrestart_penalty_seconds = [20, 40]\n"
        "[params.shockwave]\nfairness_exponent = [2, 0]\n"
        f'[[traces]]\npath = "adapting.jsonl"\ncluster = "{cluster}"\n',
    )
    assert len(rows) == 2 * 3  # penalties x (shockwave x 2 settings, gavel)
    jobs = TypedInputs.read(ClusterSpec.parse(cluster), workload).jobs()
    for row in rows:
        assert row["status"] == "ok", row["error"]
        assert row["mechanics"] == "exact"
        simulation = json.loads(row["simulation"])
        config = HeterogeneousConfig(
            mechanics="exact", restart_penalty_seconds=simulation["restart_penalty_seconds"]
        )
        policy = make_typed_policy(row["policy"], 0, json.loads(row["parameters"]))
        direct = simulate_heterogeneous(jobs, policy, config).to_dict()
        for name in ("makespan", "avg_jct", "worst_ftf", "unfair_fraction", "rounds"):
            assert row[name] == direct[name], name
    # the exact mechanics' restart penalty matters: the two penalties give two schedules
    gavel = sorted((r["simulation"], r["makespan"]) for r in rows if r["policy"] == "gavel")
    assert gavel[0][1] != gavel[1][1]


def test_a_native_workload_on_a_cluster_it_does_not_fit_is_refused(tmp_path: Path) -> None:
    _adapting(tmp_path)
    base = 'policies = ["gavel"]\n[[traces]]\npath = "adapting.jsonl"\n'
    with pytest.raises(SpecError) as caught:
        parse_spec(base + 'cluster = "v100:2,a100:2"\n', tmp_path / "s.toml")
    assert "traces[0].cluster" in str(caught.value) and "a100" in str(caught.value)
    with pytest.raises(SpecError) as caught:
        parse_spec(
            base + f'cluster = "v100:2"\nthroughputs = "{THROUGHPUTS}"\n', tmp_path / "s.toml"
        )
    assert "traces[0].throughputs" in str(caught.value)


def test_a_typed_spec_draws_adapting_traces_for_each_cluster(tmp_path: Path) -> None:
    clusters = ("v100:2,p100:2,k80:2", "v100:3,p100:3,k80:3")
    rows = _swept(
        tmp_path,
        'policies = ["shockwave", "gavel"]\nmechanics = ["exact"]\n[[traces]]\n'
        "generate = { jobs = 6, seed = [3, 4], gang_size_mix = [0.7, 0.3, 0, 0] }\n"
        f'cluster = ["{clusters[0]}", "{clusters[1]}"]\n',
    )
    assert len(rows) == 2 * 2 * 2  # clusters x seeds x policies
    # one workload per cluster and seed, named by its size (and a digest of the other settings)
    named = {(r["trace"].split("-")[2], r["trace"].split(" ", 1)[1]) for r in rows}
    assert named == {(f"{g}g", f"(seed {s})") for g in (6, 9) for s in (3, 4)}
    for row in rows:
        assert row["status"] == "ok", row["error"]
        # the jobs 'trace generate --cluster' writes, read back as 'simulate --cluster' reads them
        native = tmp_path / f"{row['key']}.jsonl"
        generate = ["trace", "generate", "--jobs", "6", "--cluster", row["cluster"],
                    "--seed", str(row["trace_seed"]), "--gang-size-mix", "0.7,0.3,0,0",
                    "-o", str(native)]  # fmt: skip
        assert main(generate) == 0
        jobs = TypedInputs.read(ClusterSpec.parse(row["cluster"]), native).jobs()
        config = HeterogeneousConfig(mechanics="exact")
        direct = simulate_heterogeneous(jobs, row["policy"], config).to_dict()
        for name in ("makespan", "avg_jct", "worst_ftf", "rounds"):
            assert row[name] == direct[name], name


@pytest.mark.parametrize(
    ("generate", "cluster", "expected"),
    [
        ("{ jobs = 6, gpus = 6 }", "v100:2,p100:2,k80:2", ["traces[0].generate.gpus", "sized"]),
        ("{ seed = 1 }", "v100:2,p100:2,k80:2", ["traces[0].generate.jobs", "required"]),
        ("{ jobs = 6 }", "v100:2,a100:2", ["traces[0].cluster", "a100"]),
    ],
)
def test_a_bad_drawn_typed_trace_is_refused_naming_the_key(
    tmp_path: Path, generate: str, cluster: str, expected: list[str]
) -> None:
    text = f'policies = ["gavel"]\n[[traces]]\ngenerate = {generate}\ncluster = "{cluster}"\n'
    with pytest.raises(SpecError) as caught:
        parse_spec(text, tmp_path / "s.toml")
    for part in expected:
        assert part in str(caught.value), str(caught.value)
