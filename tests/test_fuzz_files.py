"""Fuzzing the readers and writers of workload, throughput and config files.

Readers get mutated valid files (fields replaced by huge integers, tiny and huge floats, NaN,
text, nesting), random text and random bytes: each returns a workload or raises ``TraceError``
(the config reader, ``shockwave.config_file``: its ``ConfigError``) naming the file. Writers
get random valid jobs and records: what they write reads back unchanged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from shockwave.config_file import ConfigError, read_config
from shockwave.errors import TraceError
from shockwave.throughputs import ThroughputTable
from shockwave.traces import TraceRecord, parse_trace_lines, read_gavel_trace, read_native
from shockwave.traces.native import write_native
from shockwave.traces.trace_writer import format_trace_line, write_trace
from shockwave.workload import Job, Workload

from .conftest import CANONICAL_TRACE, TACC
from .fuzzing import fuzz

TABLE = ThroughputTable.from_file(TACC)
LINES = CANONICAL_TRACE.read_text().splitlines()

tokens = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "1",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e23",
            "1e308",
            "1e-300",
            "9" * 30,
            "2.5",
            "static",
            "gns",
            "accordion",
            "x",
            "\x00",
            "é",
        ]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)


@st.composite
def trace_texts(draw: Any) -> str:
    lines = [draw(st.sampled_from(LINES)) for _ in range(draw(st.integers(1, 4)))]
    for k in range(len(lines)):
        fields = lines[k].split("\t")
        for _ in range(draw(st.integers(0, 3))):
            action = draw(st.integers(0, 4))
            if action == 0 and fields:
                fields.pop(draw(st.integers(0, len(fields) - 1)))
            elif action == 1:
                fields.append(draw(tokens))
            elif fields:
                index = draw(st.integers(0, len(fields) - 1))
                if index == 0 and draw(st.booleans()):
                    fields[0] = f"ResNet-18 (batch size {draw(tokens)})"
                else:
                    fields[index] = draw(tokens)
        lines[k] = "\t".join(fields)
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n", "\r\n"]))


def check_trace_error(exc: TraceError, path: Path) -> None:
    assert str(exc).startswith(str(path)), str(exc)


@fuzz(60)
@given(text=trace_texts(), noise=st.binary(max_size=64), raw=st.booleans())
def test_trace_reader_returns_a_workload_or_names_the_file(
    tmp_path_factory: Any, text: str, noise: bytes, raw: bool
) -> None:
    path = tmp_path_factory.mktemp("trace") / "t.trace"
    if raw:
        path.write_bytes(noise)
    else:
        path.write_text(text, encoding="utf-8")
    try:
        workload = read_gavel_trace(path, TABLE)
    except TraceError as exc:
        check_trace_error(exc, path)
        return
    assert len(workload) >= 1
    for job in workload:
        assert np.isfinite(job.exclusive_seconds) and job.num_epochs >= 1


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)

VALID_JOB = {
    "id": 0,
    "arrival_time": 0.0,
    "gang_size": 1,
    "model": "m",
    "dataset": "d",
    "mode": "static",
    "epochs": 3,
    "batch_sizes": [32, 32, 64],
    "epoch_seconds": {"runs": [[1.5, 3]]},
    "weight": 1.0,
}


@st.composite
def native_texts(draw: Any) -> str:
    header: dict[str, Any] = {"format": "shockwave-workload", "version": 1, "jobs": 1}
    job = dict(VALID_JOB)
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from(["header", "job", "job", "job"]))
        obj = header if target == "header" else job
        key = draw(st.one_of(st.sampled_from(sorted(obj)), st.text(max_size=4)))
        value = draw(
            st.one_of(
                json_values,
                st.sampled_from(
                    [
                        10**12,
                        2**64,
                        -1,
                        1e308,
                        1e-300,
                        [],
                        {"runs": [[32, 10**12]]},
                        {"runs": [[1e308, 3]]},
                        {"runs": [[32, 2], [64, 0]]},
                        [1e308] * 3,
                        "nan",
                    ]
                ),
            )
        )
        if draw(st.integers(0, 5)) == 0:
            obj.pop(key, None)
        else:
            obj[key] = value
    lines = [json.dumps(header), json.dumps(job)]
    if draw(st.booleans()):
        lines.append(draw(st.text(max_size=20)))
    if draw(st.integers(0, 10)) == 0:
        lines.append("[" * 50_000 + "]" * 50_000)
    return "\n".join(lines) + "\n"


@fuzz(60)
@given(text=native_texts(), noise=st.binary(max_size=64), raw=st.booleans())
def test_native_reader_returns_a_workload_or_names_the_file(
    tmp_path_factory: Any, text: str, noise: bytes, raw: bool
) -> None:
    path = tmp_path_factory.mktemp("native") / "w.jsonl"
    if raw:
        path.write_bytes(noise)
    else:
        path.write_text(text, encoding="utf-8")
    try:
        workload = read_native(path)
    except TraceError as exc:
        check_trace_error(exc, path)
        return
    for job in workload:
        assert math.isfinite(job.exclusive_seconds) and job.num_epochs >= 1


@fuzz(40)
@given(
    content=st.one_of(json_values.map(json.dumps), st.binary(max_size=40).map(repr)),
    nested=st.booleans(),
)
def test_throughput_reader_returns_a_table_or_names_the_file(
    tmp_path_factory: Any, content: str, nested: bool
) -> None:
    path = tmp_path_factory.mktemp("thr") / "t.json"
    if nested:
        content = json.dumps(
            {
                "v100": {
                    "('ResNet-18 (batch size 32)', 1)": json.loads(content)
                    if content[:1] in "[{"
                    else {"null": content}
                }
            }
        )
    path.write_text(content)
    try:
        ThroughputTable.from_file(path)
    except TraceError as exc:
        check_trace_error(exc, path)


@fuzz(60)
@given(
    table=st.dictionaries(
        st.sampled_from(["simulation", "runtime", "shockwave", "allox", "gavel", "nope"]),
        json_values,
        max_size=3,
    ),
    suffix=st.sampled_from([".json", ".toml", ".yaml"]),
    noise=st.binary(max_size=40),
    raw=st.booleans(),
)
def test_config_reader_returns_settings_or_names_the_file(
    tmp_path_factory: Any, table: dict[str, Any], suffix: str, noise: bytes, raw: bool
) -> None:
    path = tmp_path_factory.mktemp("config") / f"c{suffix}"
    if raw:
        path.write_bytes(noise)
    elif suffix == ".toml":
        path.write_text("\n".join(f"[{k}]\nvalue = {json.dumps(v)}" for k, v in table.items()))
    else:
        path.write_text(json.dumps(table))
    try:
        read_config(path)
    except ConfigError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        assert exc.path == str(path)


# ---------------------------------------------------------------------------------- writers
finite_positive = st.floats(min_value=1e-6, max_value=1e6)


@st.composite
def jobs(draw: Any, job_id: int) -> Job:
    epochs = draw(st.integers(1, 30))
    sizes = draw(st.lists(st.sampled_from([1, 16, 32, 2**40]), min_size=epochs, max_size=epochs))
    seconds = draw(st.lists(finite_positive, min_size=epochs, max_size=epochs))
    return Job(
        job_id=job_id,
        arrival_time=draw(st.floats(0, 1e12)),
        gang_size=draw(st.integers(1, 2**40)),
        model=draw(st.text(min_size=1, max_size=8)),
        dataset=draw(st.text(max_size=4)),
        mode=draw(st.sampled_from(["static", "accordion", "gns"])),
        batch_sizes=sizes,
        epoch_seconds=seconds,
        weight=draw(st.floats(1e-300, 1e300)),
        total_steps=draw(st.one_of(st.none(), st.integers(1, 2**63 - 1))),
        samples_per_epoch=draw(st.one_of(st.none(), st.integers(1, 2**40))),
        trace_duration=draw(st.one_of(st.none(), st.floats(0, 1e12))),
    )


@fuzz(40)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(*[jobs(i) for i in range(n)])))
def test_native_writer_round_trips(tmp_path_factory: Any, drawn: tuple[Job, ...]) -> None:
    path = tmp_path_factory.mktemp("write") / "w.jsonl"
    write_native(Workload(drawn, None, source="fuzz"), path)
    back = read_native(path)
    assert back.jobs == drawn


records = st.builds(
    TraceRecord,
    line=st.just(1),
    job_type=st.just("ResNet-18 (batch size 32)"),
    model=st.just("ResNet-18"),
    initial_batch_size=st.just(32),
    command=st.text(
        alphabet=st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Cs",)),
        max_size=6,
    ),
    working_directory=st.text(alphabet="abc/", max_size=6),
    num_steps_arg=st.text(alphabet="-abc", max_size=6),
    needs_data_dir=st.booleans(),
    total_steps=st.integers(1, 2**63 - 1),
    scale_factor=st.integers(1, 2**40),
    mode=st.sampled_from(["static", "accordion", "gns"]),
    priority_weight=st.floats(1e-300, 1e300),
    slo=st.one_of(st.none(), st.floats(0, 1e300)),
    duration=st.floats(0, 1e12),
    arrival_time=st.floats(0, 1e12),
)


@fuzz(40)
@given(st.lists(records, min_size=1, max_size=5))
def test_trace_writer_round_trips(tmp_path_factory: Any, drawn: list[TraceRecord]) -> None:
    drawn.sort(key=lambda r: r.arrival_time)
    path = tmp_path_factory.mktemp("write") / "t.trace"
    write_trace(drawn, path)
    back = parse_trace_lines(path.read_text(), path=path)
    assert [format_trace_line(r) for r in back] == [format_trace_line(r) for r in drawn]
    assert [(r.total_steps, r.scale_factor, r.priority_weight, r.arrival_time) for r in back] == [
        (r.total_steps, r.scale_factor, r.priority_weight, r.arrival_time) for r in drawn
    ]
