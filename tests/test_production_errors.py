"""Malformed production traces: a ``TraceError`` naming the file, the line (or JSON element) and
the field; on the command line one line on standard error, exit status 3, no traceback, and
nothing left at the output (a previous file intact); Ctrl-C exits 130 and leaves nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shockwave.cli import main
from shockwave.errors import TraceError
from shockwave.traces.production import convert, json_array, read_production

from .conftest import PRODUCTION
from .fuzzing import fuzz

HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
)
HELIOS_ROW = "h1,u1,vcA,1,4,1,COMPLETED,2020-04-01 00:00:10,,,3600,10"


def helios(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "cluster_log.csv"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("lines", "line", "field", "message"),
    [
        ([], None, None, "empty file"),
        ([HELIOS_HEADER.replace("gpu_num", "gpus"), HELIOS_ROW], 1, "gpu_num", "missing column"),
        ([HELIOS_HEADER + ",vc", HELIOS_ROW + ",x"], 1, "vc", "twice"),
        ([HELIOS_HEADER, HELIOS_ROW, "h2,u1,vcA,1"], 3, None, "has 4 fields, expected 12"),
        ([HELIOS_HEADER, HELIOS_ROW.replace(",1,4,", ",two,4,")], 2, "gpu_num", "number"),
        ([HELIOS_HEADER, HELIOS_ROW.replace(",1,4,", ",1.5,4,")], 2, "gpu_num", "whole"),
        ([HELIOS_HEADER, HELIOS_ROW.replace(",1,4,", ",-1,4,")], 2, "gpu_num", ">= 0"),
        ([HELIOS_HEADER, HELIOS_ROW.replace("2020-04-01", "2020-13-01")], 2, "submit_time",
         "no such date"),
        ([HELIOS_HEADER, HELIOS_ROW.replace("00:00:10", "24:00:10")], 2, "submit_time",
         "no such time"),
        ([HELIOS_HEADER, HELIOS_ROW.replace("2020-04-01 00:00:10", "")], 2, "submit_time",
         "must be a time"),
        ([HELIOS_HEADER, HELIOS_ROW.replace("2020-04-01 00:00:10", "1585699210")], 2,
         "submit_time", "must be a time"),
        ([HELIOS_HEADER, HELIOS_ROW.replace(",3600,", ",-5,")], 2, "duration", ">= 0"),
        ([HELIOS_HEADER, HELIOS_ROW.replace(",3600,", ",inf,")], 2, "duration", "finite"),
        ([HELIOS_HEADER, HELIOS_ROW.replace(",3600,", ",2e12,")], 2, "duration", "at most 1e"),
        ([HELIOS_HEADER, HELIOS_ROW.replace("h1,", ",")], 2, "job_id", "missing"),
        ([HELIOS_HEADER, HELIOS_ROW, 'h2,"u1'], 3, None, "malformed CSV"),
    ],
)  # fmt: skip
def test_malformed_helios_rows(
    tmp_path: Path, lines: list[str], line: int | None, field: str | None, message: str
) -> None:
    path = helios(tmp_path, *lines)
    with pytest.raises(TraceError, match=message) as info:
        read_production("helios", path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)


def test_bytes_that_are_not_text(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_bytes((HELIOS_HEADER + "\n" + HELIOS_ROW + "\n").encode() + b"h2,\xff\xfe\n")
    with pytest.raises(TraceError, match="not UTF-8") as info:
        read_production("helios", path)
    assert info.value.path == str(path)
    path.write_bytes((HELIOS_HEADER + "\n").encode() + b"h2,u\x00,vcA\n")
    with pytest.raises(TraceError, match="malformed CSV|fields"):
        read_production("helios", path)


PHILLY_JOB: dict[str, Any] = {
    "status": "Pass", "vc": "vcA", "jobid": "app_1", "user": "alice",
    "submitted_time": "2017-10-03 02:00:00",
    "attempts": [{"start_time": "2017-10-03 02:00:10", "end_time": "2017-10-03 03:00:10",
                  "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}],
}  # fmt: skip


def philly(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster_job_log"
    path.write_text(text)
    return path


def with_attempt(**changes: Any) -> dict[str, Any]:
    return {**PHILLY_JOB, "attempts": [{**PHILLY_JOB["attempts"][0], **changes}]}


@pytest.mark.parametrize(
    ("elements", "element", "field", "message"),
    [
        ([PHILLY_JOB, 7], 1, None, "must be a JSON object"),
        ([PHILLY_JOB, {**PHILLY_JOB, "jobid": None}], 1, "jobid", "job id"),
        ([{k: v for k, v in PHILLY_JOB.items() if k != "submitted_time"}], 0, "submitted_time",
         "must be a time"),
        ([{**PHILLY_JOB, "submitted_time": "2017/10/03 02:00:00"}], 0, "submitted_time",
         "must be a time"),
        ([{**PHILLY_JOB, "attempts": {}}], 0, "attempts", "must be a list"),
        ([{**PHILLY_JOB, "attempts": [None]}], 0, "attempts[0]", "must be an object"),
        ([with_attempt(end_time="yesterday")], 0, "attempts[0].end_time", "must be a time"),
        ([with_attempt(end_time=12)], 0, "attempts[0].end_time", "or null"),
        ([with_attempt(end_time="2017-10-03 01:00:00")], 0, "attempts[0].end_time", "before"),
        ([with_attempt(detail={"ip": "m1"})], 0, "attempts[0].detail", "list of machines"),
        ([with_attempt(detail=["m1"])], 0, "attempts[0].detail[0]", "must be an object"),
        ([with_attempt(detail=[{"ip": "m1", "gpus": 2}])], 0, "attempts[0].detail[0].gpus",
         "list of GPU names"),
        ([{**PHILLY_JOB, "user": ["a"]}], 0, "user", "must be text"),
    ],
)  # fmt: skip
def test_malformed_philly_jobs(
    tmp_path: Path, elements: list[Any], element: int, field: str | None, message: str
) -> None:
    path = philly(tmp_path, json.dumps(elements, indent=1))
    with pytest.raises(TraceError, match=message) as info:
        read_production("philly", path)
    assert (info.value.path, info.value.element, info.value.field) == (str(path), element, field)
    assert f"JSON element {element}" in str(info.value)


@pytest.mark.parametrize(
    ("text", "element", "message"),
    [
        ("", None, "one JSON array"),
        ('{"jobs": []}', None, "one JSON array"),
        ("[" + json.dumps(PHILLY_JOB) + ", {oops}]", 1, "not valid JSON"),
        ("[" + json.dumps(PHILLY_JOB) + " " + json.dumps(PHILLY_JOB) + "]", 0, "',' or ']'"),
        ("[" + json.dumps(PHILLY_JOB) + ",", 1, "ends without"),
        ("[" + json.dumps(PHILLY_JOB), 0, "the end of the file"),
        ("[" + json.dumps(PHILLY_JOB) + "] []", None, "text after"),
        ("[" + "[" * 100_000 + "]" * 100_000 + "]", 0, "nested too deeply|must be a JSON object"),
    ],
)
@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_files_that_are_not_one_array(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    element: int | None,
    message: str,
    chunk: int,
) -> None:
    if chunk < 100 and len(text) > 10_000:
        return  # the deep nesting, character by character: slow and no different
    monkeypatch.setattr(json_array, "CHUNK_CHARS", chunk)
    path = philly(tmp_path, text)
    with pytest.raises(TraceError, match=message) as info:
        read_production("philly", path)
    assert (info.value.path, info.value.element) == (str(path), element)


def pai(tmp_path: Path, jobs: str, tasks: str) -> Path:
    (tmp_path / "pai_job_table.csv").write_text(jobs)
    (tmp_path / "pai_task_table.csv").write_text(tasks)
    return tmp_path


PAI_JOB = "j1,i1,u,Terminated,10,20\n"
PAI_TASK = "j1,worker,1,Terminated,10,20,600,29,100,V100\n"


@pytest.mark.parametrize(
    ("jobs", "tasks", "table", "line", "field", "message"),
    [
        ("j1,i1,u,Terminated,10\n", PAI_TASK, "job", 1, None, "has 5 fields, expected 6"),
        (PAI_JOB, PAI_TASK + "j2,w,1\n", "task", 2, None, "expected 10"),
        (PAI_JOB, PAI_TASK.replace(",100,", ",x,"), "task", 1, "plan_gpu", "number"),
        (PAI_JOB, PAI_TASK.replace(",100,", ",-50,"), "task", 1, "plan_gpu", ">= 0"),
        (PAI_JOB, PAI_TASK.replace(",1,", ",-2,"), "task", 1, "inst_num", ">= 0"),
        (PAI_JOB, PAI_TASK.replace(",1,", ",0.5,"), "task", 1, "inst_num", "whole"),
        (PAI_JOB, PAI_TASK.replace(",10,20,", ",30,20,"), "task", 1, "end_time", "before"),
        (PAI_JOB, PAI_TASK.replace(",10,20,", ",x,20,"), "task", 1, "start_time", "number"),
        (PAI_JOB.replace(",10,20", ",,20"), PAI_TASK, "job", 1, "start_time", "submission"),
        (PAI_JOB.replace(",10,20", ",1e400,20"), PAI_TASK, "job", 1, "start_time", "finite"),
        (PAI_JOB + PAI_JOB, PAI_TASK, "job", 2, "job_name", "appears twice .first on line 1"),
    ],
)
def test_malformed_pai_tables(
    tmp_path: Path,
    jobs: str,
    tasks: str,
    table: str,
    line: int,
    field: str | None,
    message: str,
) -> None:
    directory = pai(tmp_path, jobs, tasks)
    with pytest.raises(TraceError, match=message) as info:
        read_production("pai", directory)
    assert (info.value.path, info.value.line, info.value.field) == (
        str(directory / f"pai_{table}_table.csv"), line, field
    )  # fmt: skip


TIRESIAS_HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"


@pytest.mark.parametrize(
    ("lines", "line", "field", "message"),
    [
        ([TIRESIAS_HEADER.replace(",duration", ",length"), "1,1,0,1,m,5,0"], 1, "duration",
         "missing column"),
        ([TIRESIAS_HEADER, "1,x,0,1,m,5,0"], 2, "num_gpu", "number"),
        ([TIRESIAS_HEADER, "1,1,0,1,m,5,0", "2,1,2e12,1,m,5,0"], 3, "submit_time", "at most 1e"),
        ([TIRESIAS_HEADER, "1,1,nan,1,m,5,0"], 2, "submit_time", "finite"),
    ],
)  # fmt: skip
def test_malformed_tiresias_rows(
    tmp_path: Path, lines: list[str], line: int, field: str, message: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=message) as info:
        read_production("tiresias", path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)


def test_a_directory_with_several_csv_files_is_ambiguous(tmp_path: Path) -> None:
    for name in ("a.csv", "b.csv"):
        shutil.copy(PRODUCTION / "tiresias" / "trace.csv", tmp_path / name)
    with pytest.raises(TraceError, match="2 .csv files"):
        read_production("tiresias", tmp_path)
    with pytest.raises(TraceError, match="no such file"):
        read_production("tiresias", tmp_path / "missing.csv")


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_cli_reports_bad_input_in_one_line_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in").mkdir()
    source = helios(
        tmp_path / "in", HELIOS_HEADER, HELIOS_ROW, HELIOS_ROW.replace(",1,4,", ",x,4,")
    )
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "w.jsonl"
    assert main(["trace", "convert", "--from", "helios", str(source), "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert err == f"shockwave: error: {source}:3: field 'gpu_num': must be a number, got 'x'\n"
    assert leftovers(out_dir) == []
    out.write_text("previous")
    assert main(["trace", "convert", "--from", "helios", str(source), "-o", str(out)]) == 3
    assert out.read_text() == "previous" and leftovers(out_dir) == ["w.jsonl"]
    capsys.readouterr()
    missing = tmp_path / "nowhere"
    assert main(["trace", "convert", "--from", "philly", str(missing), "-o", str(out)]) == 3
    assert "no such file or directory" in capsys.readouterr().err
    bad_out = tmp_path / "no-such-dir" / "w.jsonl"
    assert main(["trace", "convert", "--from", "helios", str(source), "-o", str(bad_out)]) == 4


def test_a_failure_while_writing_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = convert._to_record
    calls = {"n": 0}

    def interrupted(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(*args)

    monkeypatch.setattr(convert, "_to_record", interrupted)
    out = tmp_path / "w.jsonl"
    argv = ["trace", "convert", "--from", "helios", str(PRODUCTION / "helios"), "-o", str(out)]
    assert main(argv) == 130
    assert leftovers(tmp_path) == []
    assert "interrupted" in capsys.readouterr().err


def check_names_the_place(error: TraceError, where: Path) -> None:
    """A fuzzed input's error names the file (under ``where``) and its line or element."""
    assert error.path is not None and error.path.startswith(str(where))
    assert (
        (error.line is not None) != (error.element is not None)
        or error.line == 1
        or ("no job to convert" in error.reason)
    )


def mutated_csv(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    row = draw(st.integers(0, len(lines) - 1))
    fields = lines[row].split(",")
    column = draw(st.integers(0, len(fields) - 1))
    fields[column] = draw(
        st.one_of(
            st.text(max_size=12),
            st.sampled_from(
                ["", "nan", "-1", "1e308", "1e400", "2020-02-30 00:00:00", "0", "None"]
            ),
            st.integers(-(2**70), 2**70).map(str),
            st.floats().map(repr),
        )
    )
    lines[row] = ",".join(fields)
    return "\n".join(lines) + "\n"


@fuzz(60)
@given(data=st.data(), source=st.sampled_from(["helios", "tiresias", "pai-jobs", "pai-tasks"]))
def test_mutated_csv_fields_give_a_workload_or_a_trace_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, source: str
) -> None:
    directory = tmp_path_factory.mktemp("mutated")
    kind = source.split("-")[0]
    for original in (PRODUCTION / kind).iterdir():
        text = original.read_text()
        table = {"pai-jobs": "pai_job_table.csv", "pai-tasks": "pai_task_table.csv"}
        if kind != "pai" or table[source] == original.name:
            text = mutated_csv(data.draw, text)
        (directory / original.name).write_text(text)
    try:
        workload = read_production(kind, directory)
    except TraceError as exc:
        check_names_the_place(exc, directory)
        return
    for job in workload:
        assert job.trace_duration is not None
        assert job.exclusive_seconds == pytest.approx(job.trace_duration, rel=1e-9)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8,
)  # fmt: skip


@fuzz(60)
@given(data=st.data())
def test_mutated_philly_jobs_give_a_workload_or_a_trace_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    jobs = json.loads((PRODUCTION / "philly" / "cluster_job_log").read_text())
    job = jobs[data.draw(st.integers(0, len(jobs) - 1))]
    target = job
    if job.get("attempts") and data.draw(st.booleans()):
        target = job["attempts"][data.draw(st.integers(0, len(job["attempts"]) - 1))]
    key = data.draw(st.sampled_from([*sorted(target), "extra"]))
    target[key] = data.draw(json_values)
    path = tmp_path_factory.mktemp("philly") / "cluster_job_log"
    path.write_text(json.dumps(jobs))
    try:
        workload = read_production("philly", path)
    except TraceError as exc:
        check_names_the_place(exc, path)
        return
    assert all(job.gang_size >= 1 for job in workload)
