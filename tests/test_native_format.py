"""The native JSON Lines workload format: round trips, conversion, and malformed files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.errors import JobFieldError, TraceError
from shockwave.traces import convert_trace, load_workload, read_native, write_native
from shockwave.traces.native import FORMAT_NAME, FORMAT_VERSION
from shockwave.workload import Job, Workload

from .conftest import CANONICAL_TRACE, TACC

finite_positive = st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False)


@st.composite
def piecewise_constant(draw: st.DrawFn, values: st.SearchStrategy[Any], epochs: int) -> list[Any]:
    """Per-epoch values in runs (as profiles are), so both encodings get exercised."""
    out: list[Any] = []
    while len(out) < epochs:
        out += [draw(values)] * draw(st.integers(1, epochs - len(out)))
    return out


@st.composite
def jobs(draw: st.DrawFn, job_id: int) -> Job:
    epochs = draw(st.integers(min_value=1, max_value=60))
    optional_int = st.one_of(st.none(), st.integers(min_value=1, max_value=10**12))
    return Job(
        job_id=job_id,
        arrival_time=draw(st.floats(min_value=0, max_value=1e9, allow_nan=False)),
        gang_size=draw(st.integers(min_value=1, max_value=64)),
        model=draw(st.text(min_size=1, max_size=12)),
        dataset=draw(st.text(max_size=12)),
        mode=draw(st.sampled_from(["static", "accordion", "gns"])),
        batch_sizes=draw(piecewise_constant(st.integers(1, 2**40), epochs)),
        epoch_seconds=draw(piecewise_constant(finite_positive, epochs)),
        weight=draw(finite_positive),
        total_steps=draw(optional_int),
        samples_per_epoch=draw(optional_int),
        trace_duration=draw(st.one_of(st.none(), st.floats(0, 1e9, allow_nan=False))),
        source_id=draw(st.one_of(st.none(), st.text(max_size=12))),
        user=draw(st.one_of(st.none(), st.text(max_size=12))),
        vc=draw(st.one_of(st.none(), st.text(max_size=12))),
        status=draw(st.one_of(st.none(), st.text(max_size=12))),
        requested_gpus=draw(st.one_of(st.none(), st.floats(1e-3, 1.0))),
    )


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    ids = draw(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=6, unique=True))
    return Workload(tuple(draw(jobs(job_id)) for job_id in ids), source=draw(st.text(max_size=20)))


@settings(max_examples=60, deadline=None)
@given(workload=workloads())
def test_write_then_read_is_the_identity(
    tmp_path_factory: pytest.TempPathFactory, workload: Workload
) -> None:
    path = tmp_path_factory.mktemp("native") / "w.jsonl"
    write_native(workload, path)
    again = read_native(path)
    assert list(again) == list(workload)
    assert again.throughputs is None


def test_converting_the_canonical_trace_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "canonical.jsonl"
    converted = convert_trace(CANONICAL_TRACE, TACC, out)
    again = load_workload(out)
    assert list(again) == list(converted)
    assert again.throughputs is not None and converted.throughputs is not None
    assert dict(again.throughputs.entries) == dict(converted.throughputs.entries)
    header = json.loads(out.read_text().splitlines()[0])
    assert header["format"] == FORMAT_NAME and header["version"] == FORMAT_VERSION
    assert header["jobs"] == 120


def write_lines(tmp_path: Path, *objects: Any) -> Path:
    path = tmp_path / "w.jsonl"
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objects))
    return path


HEADER = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "jobs": 1}
JOB = {
    "id": 7,
    "arrival_time": 0,
    "gang_size": 2,
    "model": "BERT",
    "epochs": 2,
    "batch_sizes": [32, 64],
    "epoch_seconds": [100.0, 60.5],
}


def test_long_profiles_are_written_as_runs(tmp_path: Path) -> None:
    out = tmp_path / "canonical.jsonl"
    converted = convert_trace(CANONICAL_TRACE, TACC, out)
    longest = max(converted, key=lambda job: job.num_epochs)
    line = json.loads(out.read_text().splitlines()[1 + longest.job_id])
    assert line["epochs"] == longest.num_epochs == 8583
    runs = line["batch_sizes"]["runs"]
    assert sum(count for _, count in runs) == 8583
    assert out.stat().st_size < 200_000  # per-epoch lists would take about 3 MB


def test_hand_written_runs_and_lists_mix(tmp_path: Path) -> None:
    job = {**JOB, "epochs": 5, "batch_sizes": {"runs": [[32, 2], [64, 3]]},
           "epoch_seconds": [1.0, 1.0, 0.5, 0.5, 0.5]}  # fmt: skip
    (read,) = read_native(write_lines(tmp_path, HEADER, job))
    assert read.batch_sizes.tolist() == [32, 32, 64, 64, 64]
    assert read.exclusive_seconds == 3.5


def test_minimal_job_uses_defaults(tmp_path: Path) -> None:
    (job,) = read_native(write_lines(tmp_path, HEADER, JOB))
    assert job.mode == "static" and job.weight == 1.0 and job.dataset == ""
    assert job.total_steps is None and job.exclusive_seconds == 160.5
    assert job.batch_sizes.dtype == np.int64 and job.epoch_seconds.dtype == np.float64


@pytest.mark.parametrize(
    ("header", "job", "line", "field", "message"),
    [
        ({**HEADER, "format": "csv"}, JOB, 1, "format", "header with format"),
        ({**HEADER, "version": 4}, JOB, 1, "version", "unsupported version 4"),
        ({**HEADER, "jobs": 3}, JOB, 1, "jobs", "announces 3 jobs but the file holds 1"),
        ({**HEADER, "extra": 1}, JOB, 1, None, "unknown header keys"),
        (HEADER, {k: v for k, v in JOB.items() if k != "gang_size"}, 2, "gang_size", "missing"),
        (HEADER, {**JOB, "gang": 2}, 2, None, "unknown keys \\['gang'\\]"),
        (HEADER, {**JOB, "gang_size": 0}, 2, "gang_size", "must be >= 1 GPU"),
        (HEADER, {**JOB, "arrival_time": -1}, 2, "arrival_time", "finite and >= 0"),
        (HEADER, {**JOB, "epochs": 3}, 2, "batch_sizes", "has 2 entries but 'epochs' is 3"),
        (
            HEADER,
            {**JOB, "epochs": 0, "batch_sizes": [], "epoch_seconds": []},
            2,
            "epochs",
            "integer >= 1",
        ),
        (HEADER, {**JOB, "batch_sizes": [32, 1.5]}, 2, "batch_sizes", "entries must be integers"),
        (
            HEADER,
            {**JOB, "batch_sizes": {"runs": [[32, 1], [64, 2]]}},
            2,
            "batch_sizes",
            "has 3 entries but 'epochs' is 2",
        ),
        (
            HEADER,
            {**JOB, "batch_sizes": {"runs": [[32, 0], [64, 2]]}},
            2,
            "batch_sizes",
            "counts must be integers >= 1",
        ),
        (HEADER, {**JOB, "batch_sizes": {"runs": [[32, 1, 1]]}}, 2, "batch_sizes", "pair"),
        (HEADER, {**JOB, "batch_sizes": {"rle": []}}, 2, "batch_sizes", "must be a list or"),
        (
            HEADER,
            {**JOB, "batch_sizes": {"runs": [[32.5, 2]]}},
            2,
            "batch_sizes",
            "entries must be integers",
        ),
        (HEADER, {**JOB, "batch_sizes": [32, 0]}, 2, "batch_sizes", "must be >= 1"),
        (HEADER, {**JOB, "epoch_seconds": [1.0, 0.0]}, 2, "epoch_seconds", "finite and > 0"),
        (HEADER, {**JOB, "epoch_seconds": [1.0, "x"]}, 2, "epoch_seconds", "must be numbers"),
        (HEADER, {**JOB, "mode": "elastic"}, 2, "mode", "must be one of"),
        (HEADER, {**JOB, "weight": 0}, 2, "weight", "finite and > 0"),
        (HEADER, {**JOB, "total_steps": 0}, 2, "total_steps", "integer >= 1"),
        (HEADER, {**JOB, "id": "seven"}, 2, "id", "must be an integer"),
        (HEADER, "[1, 2]", 2, None, "must be a JSON object"),
        (HEADER, "{not json", 2, None, "not valid JSON"),
    ],
)
def test_malformed_lines_name_the_line_and_field(
    tmp_path: Path, header: Any, job: Any, line: int, field: str | None, message: str
) -> None:
    path = write_lines(tmp_path, header, job)
    with pytest.raises(TraceError, match=message) as info:
        read_native(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)


def test_nan_in_a_line_is_rejected(tmp_path: Path) -> None:
    path = write_lines(tmp_path, HEADER, json.dumps(JOB).replace("60.5", "NaN"))
    with pytest.raises(TraceError, match="finite and > 0") as info:
        read_native(path)
    assert info.value.field == "epoch_seconds"


def test_duplicate_ids_blank_lines_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="duplicate job id 7 \\(first on line 2\\)"):
        read_native(write_lines(tmp_path, {**HEADER, "jobs": 2}, JOB, JOB))
    with pytest.raises(TraceError, match="blank line") as info:
        read_native(write_lines(tmp_path, HEADER, "", JOB))
    assert info.value.line == 2
    with pytest.raises(TraceError, match="no header line"):
        read_native(write_lines(tmp_path))
    with pytest.raises(TraceError, match="holds no jobs"):
        read_native(write_lines(tmp_path, {**HEADER, "jobs": 0}))


def test_malformed_embedded_throughputs(tmp_path: Path) -> None:
    header = {**HEADER, "throughputs": {"LM": {"ten": {"1": 2.0}}}}
    with pytest.raises(TraceError, match="malformed throughput table"):
        read_native(write_lines(tmp_path, header, JOB))


def test_job_constructor_validates_directly() -> None:
    with pytest.raises(JobFieldError, match="field 'epoch_seconds'") as info:
        Job(0, 0.0, 1, "m", "d", "static", [1, 2], [1.0])  # type: ignore[arg-type]
    assert info.value.field == "epoch_seconds"
    job = Job(0, 0.0, 1, "m", "d", "static", [1, 2], [1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="read-only"):
        job.batch_sizes[0] = 5


def test_version_1_files_still_read_and_refuse_version_2_keys(tmp_path: Path) -> None:
    version_1 = {**HEADER, "version": 1}
    (job,) = read_native(write_lines(tmp_path, version_1, JOB))
    assert job.source_id is None and job.status is None
    for key, value in (("source_id", "x"), ("status", "Pass"), ("requested_gpus", 0.5)):
        with pytest.raises(TraceError, match=f"unknown keys \\['{key}'\\] .format version 1"):
            read_native(write_lines(tmp_path, version_1, {**JOB, key: value}))
    with pytest.raises(TraceError, match="unknown header keys \\['conversion'\\]"):
        read_native(write_lines(tmp_path, {**version_1, "conversion": {}}, JOB))


def test_provenance_and_conversion_round_trip(tmp_path: Path) -> None:
    job = {**JOB, "source_id": "application_1", "user": "alice", "vc": "vcA", "status": "Pass",
           "requested_gpus": 1.5}  # fmt: skip
    conversion = {"from": "pai", "input": "x", "read": 3, "kept": 1, "dropped": {"cpu_only": 2}}
    workload = read_native(write_lines(tmp_path, {**HEADER, "conversion": conversion}, job))
    (read,) = workload
    assert (read.source_id, read.user, read.vc, read.status, read.requested_gpus) == (
        "application_1", "alice", "vcA", "Pass", 1.5
    )  # fmt: skip
    assert workload.conversion == conversion
    out = tmp_path / "again.jsonl"
    write_native(workload, out)
    again = read_native(out)
    assert list(again) == list(workload) and again.conversion == conversion
    other = Job(**{**vars(read), "status": "Killed"})
    assert other != read


@pytest.mark.parametrize(
    ("job", "header", "field", "message"),
    [
        ({**JOB, "user": 7}, HEADER, "user", "must be a string"),
        ({**JOB, "requested_gpus": 3}, HEADER, "requested_gpus", "at most the gang size 2"),
        ({**JOB, "requested_gpus": 0}, HEADER, "requested_gpus", "> 0"),
        (JOB, {**HEADER, "conversion": []}, "conversion", "must be an object"),
        (JOB, {**HEADER, "conversion": {"kept": "7"}}, "conversion.kept", "integer"),
        (JOB, {**HEADER, "conversion": {"dropped": {"x": 1.5}}}, "conversion.dropped", "counts"),
        (JOB, {**HEADER, "conversion": {"from": 1}}, "conversion.from", "string"),
    ],
)
def test_malformed_provenance(
    tmp_path: Path, job: Any, header: Any, field: str, message: str
) -> None:
    path = write_lines(tmp_path, header, job)
    with pytest.raises(TraceError, match=message) as info:
        read_native(path)
    assert info.value.field == field
