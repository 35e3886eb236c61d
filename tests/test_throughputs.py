"""Throughput tables: the original files, the bundled copies, and malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave.errors import TraceError
from shockwave.throughputs import ThroughputTable, format_job_type, parse_job_type

from .conftest import TACC, TRACES


def test_reads_the_isolated_entries_of_the_original_file() -> None:
    table = ThroughputTable.from_file(TACC)
    assert table.isolated("LM", 10, 1) == pytest.approx(94.91094148)
    assert table.batch_sizes("Recommendation", 1) == [512, 1024, 2048, 4096, 8192]
    assert table.batch_sizes("Recommendation", 2) == []
    assert 256 not in table.batch_sizes("Transformer", 1)  # its throughput is 0
    with pytest.raises(KeyError, match="LM \\(batch size 7\\)"):
        table.isolated("LM", 7, 1)


@pytest.mark.parametrize("name", ["tacc", "wisr"])
def test_bundled_tables_equal_the_original_files(name: str) -> None:
    original = ThroughputTable.from_file(TRACES / f"{name}_throughputs.json")
    assert dict(ThroughputTable.bundled(name).entries) == dict(original.entries)


def test_dict_round_trip() -> None:
    table = ThroughputTable.bundled("wisr").restricted_to(["LM"])
    again = ThroughputTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert dict(again.entries) == dict(table.entries)
    assert {key[0] for key in again.entries} == {"LM"}


def test_job_type_text() -> None:
    assert parse_job_type("ResNet-18 (batch size 32)") == ("ResNet-18", 32)
    assert format_job_type("LM", 5) == "LM (batch size 5)"
    with pytest.raises(ValueError, match="not of the form"):
        parse_job_type("ResNet-18 32")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ('{"k80": {}, "p100": {}}', "no 'v100' worker type"),
        ('{"k80": {}}', "no throughputs under 'k80'"),
        ('{"v100": {"bad key": {"null": 1}}}', "malformed key"),
        ("""{"v100": {"('LM (batch size 10)', 1)": {}}}""", "no 'null'"),
        ("""{"v100": {"('LM (batch size 10)', 1)": {"null": -1}}}""", "finite and >= 0"),
        ("""{"v100": {"('LM (batch size 10)', 1)": {"null": "fast"}}}""", "must be a number"),
        ('{"v100": {}}', "no throughputs"),
    ],
)
def test_malformed_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "thr.json"
    path.write_text(content)
    with pytest.raises(TraceError, match=message):
        ThroughputTable.from_file(path)


def test_unknown_bundled_name() -> None:
    with pytest.raises(ValueError, match="unknown bundled throughputs"):
        ThroughputTable.bundled("k80")
