"""Workloads on every GPU type: throughput tables of several types, jobs with per-type profiles
and GPU-type constraints, native format version 3, the generator's ``--cluster``, PAI's
``gpu_type``, and the checks of a workload against a cluster before a run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shockwave.cli import main
from shockwave.errors import DataError, TraceError, UsageError
from shockwave.heterogeneous import ClusterSpec, check_workload_on_cluster
from shockwave.heterogeneous.cluster import ClusterSpecError
from shockwave.heterogeneous.workload_check import UnknownGpuTypeError, UnschedulableJobError
from shockwave.throughputs import ThroughputTable
from shockwave.traces import read_native, write_native
from shockwave.traces.generate import generate_workload, write_generated
from shockwave.traces.generator_parameters import GeneratorParameterError, GeneratorParameters
from shockwave.traces.native import native_text, parse_native
from shockwave.traces.production import read_production
from shockwave.workload import Job, WorkerTypeError, Workload

from .conftest import PRODUCTION

CLUSTER = "v100:12,p100:12,k80:12"


def job(**fields: object) -> Job:
    base: dict[str, object] = {
        "job_id": 0, "arrival_time": 0.0, "gang_size": 1, "model": "LM", "dataset": "d",
        "mode": "static", "batch_sizes": [5, 5, 10], "epoch_seconds": [1.0, 1.0, 0.5],
    }  # fmt: skip
    base.update(fields)
    return Job(**base)  # type: ignore[arg-type]


# ------------------------------------------------------------------ throughput tables


def test_a_table_keeps_every_worker_type() -> None:
    table = ThroughputTable.bundled("gavel")
    assert table.worker_type == "v100"
    assert set(table.worker_types) == {"v100", "p100", "k80"}  # placement variants aside
    assert "k80_unconsolidated" in table.other_types
    v100 = table.isolated("ResNet-18", 32, 1)
    k80 = table.isolated("ResNet-18", 32, 1, "k80")
    assert v100 == table.isolated("ResNet-18", 32, 1, "v100") and k80 < v100
    # one place for an epoch's duration on a type: (samples / batch size) / throughput
    assert table.epoch_seconds("ResNet-18", 32, 1, 50_000, "k80") == (50_000 / 32) / k80
    with pytest.raises(KeyError, match="'a100'"):
        table.isolated("ResNet-18", 32, 1, "a100")
    # a one-type table is as before; the homogeneous generator uses the primary type only
    assert not ThroughputTable.bundled("tacc").is_typed
    assert not table.primary_only().is_typed and table.primary_only() == table


# ----------------------------------------------------------------------- the job API


def test_a_job_answers_its_types_and_its_profile_on_each() -> None:
    typed = job(epoch_seconds_by_type={"v100": [1.0, 1.0, 0.5], "k80": [3.0, 3.0, 1.5]},
                gpu_types=("k80", "t4"))  # fmt: skip
    assert typed.worker_types == ("k80",)
    profile = typed.profile_on("k80")
    assert profile.expand_seconds().tolist() == [3.0, 3.0, 1.5]
    assert profile.expand_batch_sizes().tolist() == [5, 5, 10]
    with pytest.raises(WorkerTypeError, match="job 0.*'v100'"):
        typed.profile_on("v100")  # a profile, but the constraint excludes it
    plain = job()
    assert plain.worker_types is None and plain.profile_on("anything") == plain.profile
    constrained = job(gpu_types=["t4"])
    assert constrained.worker_types == ("t4",)
    with pytest.raises(UsageError):
        constrained.profile_on("v100")


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"epoch_seconds_by_type": {"k80": [1.0]}}, "epoch_seconds_by_type.k80", "3 epochs"),
        ({"epoch_seconds_by_type": {"k80": [1.0, -1, 1]}}, "epoch_seconds_by_type.k80", "> 0"),
        ({"epoch_seconds_by_type": {"bad type": [1.0] * 3}}, "epoch_seconds_by_type", "name"),
        ({"epoch_seconds_by_type": {}}, "epoch_seconds_by_type", "at least one"),
        ({"gpu_types": []}, "gpu_types", "at least one"),
        ({"gpu_types": ["t4", "t4"]}, "gpu_types", "twice"),
        ({"gpu_types": "t4"}, "gpu_types", "list"),
        ({"gpu_types": ["t4"], "epoch_seconds_by_type": {"k80": [1.0] * 3}}, "gpu_types",
         "never run"),
    ],
)  # fmt: skip
def test_invalid_typed_fields_are_named(
    fields: dict[str, object], field: str, message: str
) -> None:
    with pytest.raises(DataError, match=message) as info:
        job(**fields)
    assert info.value.field == field


# ------------------------------------------------------------------- native version 3


def test_version_3_round_trips_and_homogeneous_stays_version_2(tmp_path: Path) -> None:
    workload = generate_workload(GeneratorParameters.for_cluster(30, CLUSTER, seed=4))
    path = tmp_path / "typed.jsonl"
    write_native(workload, path)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["version"] == 3 and header["worker_type"] == "v100"
    assert set(header["other_worker_types"]) >= {"p100", "k80"}
    again = read_native(path)
    assert list(again) == list(workload)
    assert again.throughputs is not None and again.throughputs.worker_types == (
        "v100",
        "k80",
        "p100",
    )
    assert again.throughputs.other_types == workload.throughputs.other_types  # type: ignore[union-attr]
    assert native_text(again) == path.read_text()  # write(read(f)) is f, byte for byte
    # a homogeneous workload writes version 2, as always
    plain = Workload(tuple(job(job_id=i) for i in range(2)))
    text = native_text(plain)
    assert json.loads(text.splitlines()[0])["version"] == 2
    assert "epoch_seconds_by_type" not in text and "gpu_types" not in text


def test_versions_1_and_2_still_read(tmp_path: Path) -> None:
    line = {"id": 0, "arrival_time": 0, "gang_size": 1, "model": "LM", "epochs": 2,
            "batch_sizes": [5, 5], "epoch_seconds": [1.0, 2.0]}  # fmt: skip
    for version in (1, 2):
        header = {"format": "shockwave-workload", "version": version, "jobs": 1}
        text = json.dumps(header) + "\n" + json.dumps(line) + "\n"
        (read,) = parse_native(text, f"v{version}.jsonl")
        assert read.worker_types is None and read.epoch_seconds_by_type is None
        # the keys of version 3 are unknown to them
        typed = {**line, "gpu_types": ["v100"]}
        with pytest.raises(TraceError, match="unknown keys") as info:
            parse_native(json.dumps(header) + "\n" + json.dumps(typed) + "\n", "old.jsonl")
        assert info.value.line == 2


V3_HEADER = {"format": "shockwave-workload", "version": 3, "jobs": 1}
V3_JOB = {"id": 0, "arrival_time": 0, "gang_size": 1, "model": "LM", "epochs": 2,
          "batch_sizes": [5, 5], "epoch_seconds": [1.0, 2.0]}  # fmt: skip


@pytest.mark.parametrize(
    ("header", "extra", "line", "field", "message"),
    [
        ({}, {"epoch_seconds_by_type": {"k80": [1.0]}}, 2, "epoch_seconds_by_type.k80",
         "1 entries"),
        ({}, {"epoch_seconds_by_type": {"k80": {"runs": [[1.0, 0]]}}}, 2,
         "epoch_seconds_by_type.k80", "counts"),
        ({}, {"epoch_seconds_by_type": []}, 2, "epoch_seconds_by_type", "map GPU types"),
        ({}, {"epoch_seconds_by_type": {"k80": ["x", 1]}}, 2, "epoch_seconds_by_type.k80",
         "numbers"),
        ({}, {"gpu_types": "v100"}, 2, "gpu_types", "list"),
        ({}, {"gpu_types": ["v 100"]}, 2, "gpu_types", "not a GPU type name"),
        ({"worker_type": 3, "throughputs": {}}, {}, 1, "worker_type", "GPU type name"),
        ({"throughputs": {}, "other_worker_types": []}, {}, 1, "other_worker_types", "map worker"),
    ],
)  # fmt: skip
def test_bad_version_3_input_names_file_line_and_field(
    header: dict[str, object], extra: dict[str, object], line: int, field: str, message: str
) -> None:
    text = json.dumps({**V3_HEADER, **header}) + "\n" + json.dumps({**V3_JOB, **extra}) + "\n"
    with pytest.raises(TraceError, match=message) as info:
        parse_native(text, "bad.jsonl")
    assert info.value.path is not None and info.value.path.startswith("bad.jsonl")
    assert info.value.field == field
    assert info.value.line == line


# ------------------------------------------------------------------------- generator


def test_generated_jobs_have_a_profile_on_every_type(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    argv = ["trace", "generate", "--jobs", "40", "--cluster", CLUSTER, "--seed", "9", "-o"]
    assert main([*argv, str(first)]) == 0 and main([*argv, str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()  # same seed, same bytes
    workload = read_native(first)
    table = workload.throughputs
    assert table is not None
    for one in workload:
        assert one.worker_types == table.worker_types == ("v100", "k80", "p100")
        for name in table.worker_types:
            profile = one.profile_on(name)
            assert np.array_equal(profile.expand_batch_sizes(), one.batch_sizes)
        assert one.profile_on("v100") == one.profile  # epoch_seconds: the primary type's
    check_workload_on_cluster(workload, CLUSTER)
    # the draws are the homogeneous generator's; only the rate and the profiles differ
    plain = generate_workload(GeneratorParameters(jobs=40, gpus=36, seed=9, throughputs="gavel"))
    assert [j.model for j in plain] == [j.model for j in workload]
    assert [j.total_steps for j in plain] == [j.total_steps for j in workload]
    assert all(j.epoch_seconds_by_type is None for j in plain)


def test_the_arrival_rate_follows_the_clusters_capacity() -> None:
    # one type at the primary type's speed: the homogeneous rate exactly
    same = GeneratorParameters.for_cluster(10, "v100:32", throughputs="gavel")
    assert same.capacity_gpus() == 32.0
    assert (
        same.effective_mean_interarrival == GeneratorParameters(10, 32).effective_mean_interarrival
    )
    mixed = GeneratorParameters.for_cluster(10, CLUSTER)
    assert 12 < mixed.capacity_gpus() < 36  # p100 and k80 are slower than v100
    assert mixed.effective_mean_interarrival == pytest.approx(1280.0 / mixed.capacity_gpus())
    assert "--cluster v100:12,p100:12,k80:12" in mixed.command_line()


def test_without_a_cluster_the_output_is_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl"
    write_generated(GeneratorParameters(jobs=25, gpus=32, seed=2), out)
    header = json.loads(out.read_text().splitlines()[0])
    assert header["version"] == 2 and "worker_type" not in header
    assert "epoch_seconds_by_type" not in out.read_text()


@pytest.mark.parametrize(
    ("cluster", "parameter", "message"),
    [
        ("v100:12,a100:12", "cluster", "'a100' is not a worker type"),
        ("v100:0", "cluster", "count"),
        ("v100", "cluster", "TYPE:COUNT"),
    ],
)
def test_generator_cluster_errors(cluster: str, parameter: str, message: str) -> None:
    with pytest.raises(GeneratorParameterError, match=message) as info:
        generate_workload(GeneratorParameters.for_cluster(5, cluster))
    assert info.value.parameter == parameter


def test_gpus_and_cluster_must_agree() -> None:
    with pytest.raises(GeneratorParameterError, match="36 GPUs") as info:
        GeneratorParameters(jobs=5, gpus=10, cluster=CLUSTER)
    assert info.value.parameter == "gpus"


# ------------------------------------------------------------------------ PAI gpu_type


def test_pai_gpu_type_becomes_a_constraint(tmp_path: Path) -> None:
    workload = read_production("pai", PRODUCTION / "pai")
    types = {j.source_id: j.gpu_types for j in workload}
    assert types["jA"] == ("v100",)  # its ps task (no GPU, MISC) does not count
    assert types["jB"] == ("t4",)
    assert types["jD"] == ("v100m32", "t4")  # two GPU tasks of two types: either
    assert types["jH"] == ("p100",)
    out = tmp_path / "pai.jsonl"
    assert main(["trace", "convert", "--from", "pai", str(PRODUCTION / "pai"), "-o", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["version"] == 3
    assert {j.source_id: j.gpu_types for j in read_native(out)} == types
    # checked against a cluster before a run: an unknown type, then a gang too large
    with pytest.raises(UnknownGpuTypeError, match="'k80'"):
        check_workload_on_cluster(workload, "v100:8,p100:8,t4:8,v100m32:8,k80:4")
    with pytest.raises(UnschedulableJobError, match="gang of 8") as info:
        check_workload_on_cluster(workload, "v100:4,p100:8,t4:8,v100m32:8")
    assert info.value.field == "gang_size" and info.value.job_id == 3  # jG, on v100 only
    check_workload_on_cluster(workload, "v100:8,p100:8,t4:8,v100m32:8")


def test_pai_misc_or_untyped_tasks_leave_the_job_unconstrained(tmp_path: Path) -> None:
    (tmp_path / "pai_job_table.csv").write_text("j1,i,u,Terminated,0,10\nj2,i,u,Terminated,0,10\n")
    (tmp_path / "pai_task_table.csv").write_text(
        "j1,worker,1,Terminated,0,10,600,29,100,MISC\n"
        "j2,worker,1,Terminated,0,10,600,29,100,V100\nj2,eval,1,Terminated,0,10,600,29,50,\n"
    )
    workload = read_production("pai", tmp_path)
    assert [j.gpu_types for j in workload] == [None, None]
    out = tmp_path / "w.jsonl"
    assert main(["trace", "convert", "--from", "pai", str(tmp_path), "-o", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["version"] == 2  # nothing typed


# --------------------------------------------------------- checks against the cluster


def typed_workload() -> Workload:
    return Workload(
        (
            job(job_id=0, epoch_seconds_by_type={"v100": [1.0] * 3, "k80": [3.0] * 3}),
            job(job_id=1, gang_size=4, epoch_seconds_by_type={"v100": [1.0] * 3}),
            job(job_id=2, gpu_types=["k80"]),
        ),
        source="w.jsonl",
    )


def test_a_cluster_the_workload_fits() -> None:
    check_workload_on_cluster(typed_workload(), "v100:4,k80:2")


@pytest.mark.parametrize(
    ("cluster", "error", "job_id", "field", "message"),
    [
        ("v100:4,a100:4", UnknownGpuTypeError, None, "cluster", "GPU type 'a100'"),
        ("k80:8", UnschedulableJobError, 1, "epoch_seconds_by_type", "no throughput on any"),
        ("v100:4", UnschedulableJobError, 2, "gpu_types", "may run only on k80"),
        ("v100:2,k80:8", UnschedulableJobError, 1, "gang_size", "gang of 4"),
    ],
)
def test_errors_before_a_run_name_the_type_and_the_job(
    cluster: str, error: type[Exception], job_id: int | None, field: str, message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        check_workload_on_cluster(typed_workload(), ClusterSpec.parse(cluster))
    assert getattr(info.value, "field", None) == field
    if job_id is not None:
        assert f"job {job_id}" in str(info.value) and "w.jsonl" in str(info.value)
        assert isinstance(info.value, DataError)
    else:
        assert isinstance(info.value, UsageError) and "a100" in str(info.value)


def test_cluster_spec_errors_are_usage_errors() -> None:
    for text in ("v100:0", "v100", "v100:4,v100:4", "v100:6/4", ""):
        with pytest.raises(ClusterSpecError) as info:
            ClusterSpec.parse(text)
        assert isinstance(info.value, UsageError) and isinstance(info.value, ValueError)
    spec = ClusterSpec.parse("v100:36/4,p100:8")
    assert spec.server_sizes == (4, 1) and str(spec) == "v100:36/4,p100:8"
