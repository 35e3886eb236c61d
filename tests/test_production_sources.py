"""The four production-trace readers on hand-written fixtures in the published schemas: exactly
the jobs, arrivals, gang sizes, run times and provenance the rules describe
(docs/production_traces.md), and the drop counts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shockwave.errors import TraceError
from shockwave.traces.production import ConversionOptions, json_array, open_source, read_production
from shockwave.workload import Workload

from .conftest import PRODUCTION

#: source id -> (arrival s, gang, run time s, status, vc, user, requested GPUs), by hand from
#: the fixtures and the rules.
EXPECTED: dict[
    str, dict[str, tuple[float, int, float, str | None, str | None, str | None, float | None]]
] = {
    # origin: job 0002 (never ran) at 2017-10-03 01:00:00
    "philly": {
        "application_1_0001": (3600, 8, 3600, "Pass", "vcA", "alice", None),  # 2 machines x 4
        # attempts of 2 and 4 GPUs, then one with none: the last that recorded GPUs has 4;
        # 600 + 1200 + 300 s
        "application_1_0003": (5400, 4, 2100, "Killed", "vcA", "carol", None),
        # the last attempt is still running (end null): its 2 GPUs count, its time does not
        "application_1_0004": (14400, 2, 1800, "Killed", "vcC", "dave", None),
        "application_1_0008": (86400, 16, 86400, "Pass", "vcC", "frank", None),  # a whole day
        "application_1_0010": (36000, 1, 7, "Pass", "vcB", "carol", None),
    },
    # origin: h2 (CPU-only) at 2020-04-01 00:00:00
    "helios": {
        "h1": (10, 1, 3600, "COMPLETED", "vcA", "u1", None),
        "h4": (360, 8, 600, "CANCELLED", "vcA", "u3", None),  # cancelled after it ran
        "h5": (3600, 4, 45, "FAILED", "vcB", "u3", None),
        "h6": (7200, 16, 86400, "TIMEOUT", "vcC", "u4", None),
        "h7": (10800, 2, 7200, "NODE_FAIL", "vcC", "u4", None),
        "h8": (86400, 3, 120, "COMPLETED", "vcA", "u5", None),
        "h10": (216000, 64, 1_000_000, "COMPLETED", "vcA", "u6", None),
    },
    # origin: jC (CPU-only) at 100 s
    "pai": {
        "jA": (
            900,
            2,
            3000,
            "Terminated",
            None,
            "userA",
            None,
        ),  # the ps task's span is not GPU time
        "jB": (400, 3, 1000, "Terminated", None, "userB", 1.5),  # 3 x 50 %: 3 GPUs, 1.5 asked
        "jD": (1900, 4, 1500, "Terminated", None, "userA", 2.5),  # 1 x 200 % + 2 x 25 %
        "jG": (4900, 8, 4000, "Running", None, "userD", None),
        "jH": (5900, 1, 10.25, "Terminated", None, "userE", None),  # "1.0" instances, float times
    },
    # origin: job 3 (CPU-only) at 10 s
    "tiresias": {
        "1": (90, 2, 3000, None, None, None, None),
        "2": (40, 1, 60, None, None, None, None),
        "5": (290, 8, 86400, None, None, None, None),
        "6": (390, 16, 5000, None, None, None, None),
    },
}
#: source -> (jobs read, dropped CPU-only, dropped never ran)
COUNTS = {"philly": (10, 1, 4), "helios": (10, 2, 1), "pai": (8, 2, 1), "tiresias": (6, 1, 1)}
ORIGINS = {
    "philly": "2017-10-03 01:00:00",
    "helios": "2020-04-01 00:00:00",
    "pai": 100.0,
    "tiresias": 10.0,
}


def described(workload: Workload) -> dict[str, tuple[object, ...]]:
    return {
        str(job.source_id): (
            job.arrival_time, job.gang_size, job.trace_duration, job.status, job.vc, job.user,
            job.requested_gpus,
        )
        for job in workload
    }  # fmt: skip


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_each_source_keeps_exactly_the_described_jobs(source: str) -> None:
    workload = read_production(source, PRODUCTION / source)
    assert described(workload) == EXPECTED[source]
    assert [job.job_id for job in workload] == list(range(len(workload)))  # input order
    read, cpu_only, never_ran = COUNTS[source]
    conversion = workload.conversion
    assert conversion is not None
    assert (conversion["from"], conversion["read"], conversion["kept"]) == (
        source, read, len(EXPECTED[source])
    )  # fmt: skip
    assert conversion["dropped"]["cpu_only"] == cpu_only
    assert conversion["dropped"]["never_ran"] == never_ran
    assert sum(conversion["dropped"].values()) == read - len(workload)
    assert conversion["origin"] == ORIGINS[source]


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_exclusive_runtime_is_the_trace_run_time(source: str) -> None:
    for job in read_production(source, PRODUCTION / source):
        assert job.trace_duration is not None
        assert job.exclusive_seconds == pytest.approx(job.trace_duration, rel=1e-12)
        assert abs(job.exclusive_seconds - job.trace_duration) < job.epoch_seconds.min()


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("philly", "cluster_job_log"),
        ("helios", "cluster_log.csv"),
        ("pai", "pai_job_table.csv"),
        ("pai", "pai_task_table.csv"),
        ("tiresias", "trace.csv"),
    ],
)
def test_the_directory_or_the_table_file_itself(source: str, name: str) -> None:
    by_directory = read_production(source, PRODUCTION / source)
    by_file = read_production(source, PRODUCTION / source / name)
    assert list(by_file) == list(by_directory)


def test_a_table_under_another_name(tmp_path: Path) -> None:
    copy = tmp_path / "venus.csv"
    shutil.copy(PRODUCTION / "helios" / "cluster_log.csv", copy)
    assert described(read_production("helios", copy)) == EXPECTED["helios"]
    with pytest.raises(TraceError, match="holds no cluster_log.csv") as info:
        read_production("helios", tmp_path)
    assert info.value.path == str(tmp_path)
    with pytest.raises(TraceError, match="two tables"):
        read_production("pai", copy)


def test_pai_needs_both_tables(tmp_path: Path) -> None:
    shutil.copy(PRODUCTION / "pai" / "pai_job_table.csv", tmp_path)
    with pytest.raises(TraceError, match="pai_task_table.csv"):
        read_production("pai", tmp_path / "pai_job_table.csv")


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_philly_streams_in_any_chunk_size(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(json_array, "CHUNK_CHARS", chunk)
    assert described(read_production("philly", PRODUCTION / "philly")) == EXPECTED["philly"]


def test_philly_numbers_cut_at_a_chunk_end_are_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "numbers.json"
    path.write_text("[123456, 7, -0.5e3 , true]")
    monkeypatch.setattr(json_array, "CHUNK_CHARS", 3)
    assert list(json_array.json_array_elements(path)) == [(0, 123456), (1, 7), (2, -500.0),
                                                          (3, True)]  # fmt: skip
    (tmp_path / "empty.json").write_text(" [ ] ")
    assert list(json_array.json_array_elements(tmp_path / "empty.json")) == []


def test_readers_yield_every_job_of_the_input() -> None:
    for source, (read, _, _) in COUNTS.items():
        jobs = list(open_source(source, PRODUCTION / source).jobs())
        assert len(jobs) == read
        assert all(job.where.path for job in jobs)


def test_a_job_that_ran_without_recorded_gpus_is_cpu_only_and_one_without_attempts_never_ran() -> (
    None
):
    jobs = {j.source_id: j for j in open_source("philly", PRODUCTION / "philly").jobs()}
    assert (jobs["application_1_0006"].gpus, jobs["application_1_0006"].duration) == (0, 30)
    assert (jobs["application_1_0009"].gpus, jobs["application_1_0009"].duration) == (0, 0)
    assert (jobs["application_1_0005"].gpus, jobs["application_1_0005"].duration) == (1, 0)
    assert (jobs["application_1_0007"].gpus, jobs["application_1_0007"].duration) == (4, 0)
    options = ConversionOptions(mode="static")
    assert "application_1_0006" not in described(read_production("philly", PRODUCTION / "philly",
                                                                  options))  # fmt: skip
