"""The .trace reader: field rules, both variants, and errors naming file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from shockwave.errors import TraceError
from shockwave.traces import load_workload, parse_trace_lines, read_gavel_trace

from .conftest import CANONICAL_TRACE, TACC

GOOD = (
    "LM (batch size 10)\tpython3 main.py --batch_size 10\tlanguage_modeling\t--steps\t1\t134583"
    "\t1\tgns\t1\t-1.000000\t1418\t0"
)
GAVEL = "ResNet-18 (batch size 32)\tpython3 main.py\tcifar10\t--num_steps\t1\t20000\t2\t1\t-1\t55"


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "t.trace"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_shockwave_line_fields() -> None:
    (record,) = parse_trace_lines(GOOD + "\n")
    assert record.model == "LM" and record.initial_batch_size == 10
    assert record.total_steps == 134_583 and record.scale_factor == 1
    assert record.mode == "gns" and record.priority_weight == 1.0
    assert record.slo is None  # negative SLO means none
    assert record.duration == 1418.0 and record.arrival_time == 0.0
    assert record.needs_data_dir is True and record.line == 1


def test_gavel_line_is_static_without_duration() -> None:
    (record,) = parse_trace_lines(GAVEL)
    assert record.mode == "static" and record.duration is None
    assert record.scale_factor == 2 and record.arrival_time == 55.0


def test_line_order_defines_job_ids_and_gavel_jobs_are_static(tmp_path: Path) -> None:
    workload = read_gavel_trace(write(tmp_path, GAVEL, GOOD.replace("\t0", "\t60")), TACC)
    assert [job.job_id for job in workload] == [0, 1]
    first = workload[0]
    assert first.mode == "static" and set(first.batch_sizes.tolist()) == {32}
    assert first.trace_duration is None
    assert workload.throughputs is not None
    assert {key[0] for key in workload.throughputs.entries} == {"LM", "ResNet-18"}


def test_canonical_trace_loads_with_a_bundled_table() -> None:
    from_file = load_workload(CANONICAL_TRACE, TACC)
    bundled = load_workload(CANONICAL_TRACE, "tacc")
    assert list(from_file) == list(bundled)


def test_a_trace_needs_throughputs() -> None:
    with pytest.raises(TraceError, match="needs a throughput table"):
        load_workload(CANONICAL_TRACE)


def replace_field(line: str, index: int, value: str) -> str:
    parts = line.split("\t")
    parts[index] = value
    return "\t".join(parts)


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        (replace_field(GOOD, 0, "LM batch 10"), "job_type", "not of the form"),
        (replace_field(GOOD, 0, "GPT (batch size 10)"), "job_type", "unknown model 'GPT'"),
        (replace_field(GOOD, 0, "LM (batch size 0)"), "job_type", "batch size must be >= 1"),
        (replace_field(GOOD, 4, "2"), "needs_data_dir", "must be 0 or 1"),
        (replace_field(GOOD, 5, "-5"), "total_steps", "must be >= 1"),
        (replace_field(GOOD, 5, "12.5"), "total_steps", "cannot read '12.5' as int"),
        (replace_field(GOOD, 6, "0"), "scale_factor", "must be >= 1 GPU"),
        (replace_field(GOOD, 7, "elastic"), "mode", "must be one of"),
        (replace_field(GOOD, 8, "0"), "priority_weight", "must be > 0"),
        (replace_field(GOOD, 8, "nan"), "priority_weight", "must be finite"),
        (replace_field(GOOD, 9, "nan"), "SLO", "must not be NaN"),
        (replace_field(GOOD, 10, "-1"), "duration", "must be >= 0"),
        (replace_field(GOOD, 11, "inf"), "arrival_time", "must be finite"),
        (replace_field(GOOD, 11, "-3"), "arrival_time", "must be >= 0"),
        (replace_field(GOOD, 11, "soon"), "arrival_time", "cannot read 'soon' as float"),
    ],
)
def test_bad_fields_name_file_line_and_field(
    tmp_path: Path, line: str, field: str, message: str
) -> None:
    path = write(tmp_path, GOOD, line)
    with pytest.raises(TraceError, match=message) as info:
        read_gavel_trace(path, TACC)
    error = info.value
    assert isinstance(error, ValueError)
    assert (error.path, error.line, error.field) == (str(path), 2, field)
    assert str(error).startswith(f"{path}:2: field '{field}': ")


def test_wrong_field_count(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD, "\t".join(GOOD.split("\t")[:11]))
    with pytest.raises(TraceError, match="expected 10 \\(Gavel\\) or 12 .* got 11") as info:
        read_gavel_trace(path, TACC)
    assert info.value.line == 2


def test_blank_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="got 1") as info:
        read_gavel_trace(write(tmp_path, GOOD, "", GOOD), TACC)
    assert info.value.line == 2


def test_decreasing_arrivals(tmp_path: Path) -> None:
    path = write(tmp_path, replace_field(GOOD, 11, "100"), GOOD)
    with pytest.raises(TraceError, match="non-decreasing .* on line 1") as info:
        read_gavel_trace(path, TACC)
    assert (info.value.line, info.value.field) == (2, "arrival_time")


def test_empty_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.trace"
    path.write_text("")
    with pytest.raises(TraceError, match="holds no jobs"):
        read_gavel_trace(path, TACC)


def test_unknown_batch_size_for_the_throughput_table(tmp_path: Path) -> None:
    path = write(tmp_path, replace_field(GOOD, 0, "LM (batch size 7)"))
    with pytest.raises(TraceError, match="no throughput for .*LM \\(batch size 7\\)") as info:
        read_gavel_trace(path, TACC)
    assert (info.value.line, info.value.field) == (1, "job_type")


def test_zero_throughput_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, replace_field(GOOD, 0, "Transformer (batch size 256)"))
    with pytest.raises(TraceError, match="is 0: the epoch never ends") as info:
        read_gavel_trace(path, TACC)
    assert info.value.line == 1


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read trace"):
        read_gavel_trace(tmp_path / "nope.trace", TACC)
    binary = tmp_path / "bin.trace"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match="not a text file"):
        read_gavel_trace(binary, TACC)


def test_crlf_line_endings_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "crlf.trace"
    path.write_bytes((GOOD + "\r\n").encode())
    (job,) = read_gavel_trace(path, TACC)
    assert job.arrival_time == 0.0
