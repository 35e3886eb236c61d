"""Sweep specs and helpers shared by the sweep tests (``tests/sweep/``).

:func:`write_equality_spec` writes a small spec that touches every axis (all eight policies, both
mechanics, a ``.trace`` file, a native file and a generated trace, a parameter grid, a
simulation setting) with its files; :func:`simulate_alone` runs one of its cells through
``shockwave simulate --output`` for comparison.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from shockwave.cli import main
from shockwave.sweep.dataset import METRICS, read_results

ALL_POLICIES = ["shockwave", "gavel", "themis", "allox", "mst", "ossp", "gandiva-fair", "fifo"]

EQUALITY_SPEC = """\
name = "equality"
policies = ["shockwave", "gavel", "themis", "allox", "mst", "ossp", "gandiva-fair", "fifo"]
mechanics = ["exact", "gavel"]

[simulation]
restart_penalty_seconds = 4.0

[[traces]]
path = "small.trace"
throughputs = "tacc"
gpus = 8

[[traces]]
name = "native"
path = "data/small.jsonl"
gpus = 8

[[traces]]
generate = { jobs = 24, gpus = 8, seed = 3 }

[params.shockwave]
planning_rounds = [10, 20]
"""

#: (jobs, GPUs, seed, file) of the workload files the spec reads, and the generated trace's
#: file for ``shockwave simulate``.
FILES = {
    "small.trace": (16, 8, 5),
    "data/small.jsonl": (20, 8, 6),
    "gen-3.jsonl": (24, 8, 3),
}


def write_equality_spec(directory: Path) -> Path:
    """Write the spec and its workload files into ``directory``; return the spec's path."""
    (directory / "data").mkdir(parents=True, exist_ok=True)
    for name, (jobs, gpus, seed) in FILES.items():
        argv = ["trace", "generate", "--jobs", str(jobs), "--gpus", str(gpus), "--seed", str(seed)]
        assert main([*argv, "-o", str(directory / name)]) == 0
    spec = directory / "spec.toml"
    spec.write_text(EQUALITY_SPEC, encoding="utf-8")
    return spec


def simulate_alone(row: dict[str, Any], directory: Path) -> dict[str, Any]:
    """The metrics of the cell of ``row`` (of the equality spec) run by ``shockwave simulate``."""
    trace = {"small.trace": "small.trace", "native": "data/small.jsonl"}.get(
        row["trace"], "gen-3.jsonl"
    )
    simulation = json.loads(row["simulation"])
    output = directory / f"alone-{row['key']}.json"
    argv = [
        "simulate",
        "--trace", str(directory / trace),
        "--gpus", str(row["gpus"]),
        "--policy", row["policy"],
        "--mechanics", row["mechanics"],
        "--seed", str(row["seed"]),
        "--round-seconds", repr(simulation["round_seconds"]),
        "--restart-penalty-seconds", repr(simulation["restart_penalty_seconds"]),
        "--output", str(output),
    ]  # fmt: skip
    if trace.endswith(".trace"):
        argv += ["--throughputs", "tacc"]
    parameters = json.loads(row["parameters"])
    if parameters:
        config = directory / f"config-{row['key']}.json"
        config.write_text(json.dumps({row["policy"]: parameters}), encoding="utf-8")
        argv += ["--config", str(config)]
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        assert main(argv) == 0
    result: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    output.unlink()
    return result


def result_rows(directory: Path) -> list[dict[str, Any]]:
    """The sweep's results rows (latest per cell) as dictionaries."""
    rows: list[dict[str, Any]] = read_results(directory).to_pylist()
    return rows


def metrics_of(row: dict[str, Any]) -> dict[str, Any]:
    """The ``SimulationResult.to_dict()`` part of a results row."""
    return {name: row[name] for name in METRICS}


def part_files(directory: Path) -> list[Path]:
    """The results part files written so far."""
    return sorted((directory / "results.parquet").glob("part-*.parquet"))


def count_rows(directory: Path) -> int:
    """Rows in the results parts (duplicates included)."""
    return sum(pq.read_metadata(p).num_rows for p in part_files(directory))


class AloneResults:
    """``shockwave simulate``'s metrics per cell key, each computed once per session."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[str, dict[str, Any]] = {}

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        if row["key"] not in self._cache:
            self._cache[row["key"]] = simulate_alone(row, self.directory)
        return self._cache[row["key"]]
