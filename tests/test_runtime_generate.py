"""Runnable workloads (`shockwave cluster generate`) and throughput tables (`cluster profile`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shockwave.cli import main
from shockwave.job.families import FAMILIES
from shockwave.runtime.generate import (
    ACCORDION_PLANNED_CRITICAL,
    GNS_PLANNED_FIRST_EPOCHS,
    generate_real_workload,
    job_regimes,
    planned_schedule,
)
from shockwave.runtime.throughput_measurement import (
    measure_family_throughputs,
    write_throughput_file,
)
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_workload

TABLE = ThroughputTable.bundled("cluster")


def test_the_workload_is_sized_and_runnable() -> None:
    workload = generate_real_workload(16, 2, TABLE, minutes=20, seed=3)
    assert len(workload) == 16
    work = sum(job.exclusive_gpu_seconds for job in workload.jobs)
    assert work == pytest.approx(0.8 * 20 * 60 * 2, rel=0.05)  # load 0.8 of 20 minutes
    assert workload.jobs[0].arrival_time == 0.0
    assert max(j.arrival_time for j in workload.jobs) <= 0.4 * 20 * 60 * 1.5
    for job in workload.jobs:
        family = FAMILIES[job.model]
        assert job.run is not None and job.run.family == job.model
        assert job.samples_per_epoch == family.samples_per_epoch
        assert job.gang_size in (1, 2)
        regimes = job_regimes(family, job.mode, job.initial_batch_size)
        assert sorted(set(job.batch_sizes.tolist())) == regimes  # every regime is planned
        expected = (family.samples_per_epoch / job.batch_sizes) / np.array(
            [TABLE.isolated(job.model, int(b), job.gang_size) for b in job.batch_sizes]
        )
        np.testing.assert_allclose(job.epoch_seconds, expected)
    assert {job.mode for job in workload.jobs} == {"static", "gns", "accordion"}


def test_the_same_arguments_give_the_same_workload() -> None:
    first = generate_real_workload(8, 2, TABLE, minutes=5, seed=7)
    assert first == generate_real_workload(8, 2, TABLE, minutes=5, seed=7)
    assert first != generate_real_workload(8, 2, TABLE, minutes=5, seed=8)


def test_gang_sizes_stay_within_the_cluster() -> None:
    assert {j.gang_size for j in generate_real_workload(20, 1, TABLE, seed=1).jobs} == {1}
    with pytest.raises(ValueError, match="throughputs"):  # the table has gangs of 1 and 2 only
        generate_real_workload(40, 8, TABLE, seed=1)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_planned_schedules(family: str) -> None:
    regimes = job_regimes(FAMILIES[family], "gns", 16)
    for epochs in (len(regimes), 7, 40, 500):
        plan = planned_schedule("gns", regimes, epochs, family).tolist()
        assert plan == sorted(plan)  # climbs, never comes down
        assert sorted(set(plan)) == regimes  # every regime appears
    firsts = GNS_PLANNED_FIRST_EPOCHS[(family, 16)]
    long = planned_schedule("gns", regimes, 500, family).tolist()
    assert [long.index(regime) for regime in regimes[1:]] == list(firsts)
    short = planned_schedule("gns", regimes, 7, family).tolist()  # starts as calibrated,
    assert short[:2] == [16, 16 if firsts[0] >= 2 else regimes[1]]
    assert short[-3:] == regimes[-3:]  # climbs through the regimes it would not reach
    small, large = job_regimes(FAMILIES[family], "accordion", 32)
    plan = planned_schedule("accordion", [small, large], 50).tolist()
    assert plan[:ACCORDION_PLANNED_CRITICAL] == [small] * ACCORDION_PLANNED_CRITICAL
    assert set(plan[ACCORDION_PLANNED_CRITICAL:]) == {large}
    assert planned_schedule("accordion", [small, large], 2).tolist() == [small, large]
    assert planned_schedule("static", [32], 5).tolist() == [32] * 5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"jobs": 0}, "jobs"),
        ({"gpus": 0}, "gpus"),
        ({"minutes": 0.0}, "minutes"),
        ({"load": 0.0}, "load"),
        ({"families": ["resnet"]}, "unknown family"),
        ({"modes": ["sometimes"]}, "modes"),
    ],
)
def test_bad_arguments_are_named(arguments: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"jobs": 4, "gpus": 2, "minutes": 1.0}
    values.update(arguments)
    jobs, gpus = values.pop("jobs"), values.pop("gpus")
    with pytest.raises(ValueError, match=message):
        generate_real_workload(jobs, gpus, TABLE, **values)  # type: ignore[arg-type]


def test_generate_command_writes_a_runnable_workload(tmp_path: Path) -> None:
    out = tmp_path / "w.jsonl"
    args = ["cluster", "generate", "--jobs", "5", "--gpus", "2", "--minutes", "2", "-o", str(out)]
    assert main(args) == 0
    workload = load_workload(out)
    assert len(workload) == 5
    assert workload.throughputs is not None  # the file carries its table
    assert all(job.run is not None for job in workload.jobs)
    assert main([*args[:-2], "-o", str(tmp_path / "w.trace")]) == 2  # only .jsonl can run
    assert main([*args[:-2], "-o", str(tmp_path)]) != 0  # a directory


def test_profile_measures_and_writes_the_originals_layout(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int, float]] = []
    table = measure_family_throughputs(
        ["softmax-digits"], [1], seconds=0.2, progress=lambda *a: seen.append(a)
    )
    sizes = FAMILIES["softmax-digits"].batch_sizes
    assert sorted(table.entries) == [("softmax-digits", b, 1) for b in sizes]
    assert all(rate > 0 for rate in table.entries.values())
    assert len(seen) == len(sizes)
    path = tmp_path / "t.json"
    write_throughput_file(table, path)
    raw = json.loads(path.read_text())
    assert list(raw) == ["cpu"]
    assert "('softmax-digits (batch size 16)', 1)" in raw["cpu"]
    assert ThroughputTable.from_file(path).entries == table.entries
    with pytest.raises(ValueError, match="gang sizes"):
        measure_family_throughputs(["softmax-digits"], [64])
    with pytest.raises(ValueError, match="unknown family"):
        measure_family_throughputs(["resnet"])
