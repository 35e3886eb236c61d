"""The sweep's Parquet datasets: what a row holds, latest rows win, orphans and temporary files
of a kill are ignored and cleaned, one writer at a time, any Parquet reader reads them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from shockwave.metrics import SimulationResult
from shockwave.sweep import Cell, execute, load_jobs, load_results, load_spec, read_results
from shockwave.sweep.dataset import JOBS, METRICS, RESULTS, RESULTS_SCHEMA, ResultStore
from shockwave.sweep.worker import failed_outcome


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> list[Cell]:
    spec = tmp_path_factory.mktemp("spec") / "spec.toml"
    spec.write_text(
        'policies = ["gavel", "fifo"]\n[[traces]]\ngenerate = { jobs = 10, gpus = 8, seed = 4 }\n',
        encoding="utf-8",
    )
    return load_spec(spec).cells()


def test_the_results_schema_holds_every_metric_of_a_simulation_result() -> None:
    to_dict_keys = [
        f for f in SimulationResult.__dataclass_fields__ if f not in ("record", "timing")
    ]
    assert list(METRICS) == to_dict_keys
    assert set(METRICS) <= set(RESULTS_SCHEMA.names)
    timing = [n for n in RESULTS_SCHEMA.names if n.startswith("timing_")]
    assert timing and not set(timing) & set(METRICS)


def test_rows_written_are_read_back_and_the_latest_row_of_a_cell_wins(
    tmp_path: Path, cells: list[Cell]
) -> None:
    gavel, fifo = cells
    with ResultStore(tmp_path) as store:
        store.append([failed_outcome(gavel, "RuntimeError: first try"), execute(fifo)])
        assert store.recorded() == {gavel.key: "failed", fifo.key: "ok"}
        store.append([execute(gavel)])
        assert store.recorded() == {gavel.key: "ok", fifo.key: "ok"}
    table = read_results(tmp_path)
    assert table.num_rows == 2 and table.schema.equals(RESULTS_SCHEMA)
    rows = {r["policy"]: r for r in table.to_pylist()}
    assert rows["gavel"]["status"] == "ok" and rows["gavel"]["error"] is None
    assert rows["fifo"]["makespan"] > 0
    # any Parquet reader reads the directories as datasets (with every row ever written)
    assert len(pd.read_parquet(tmp_path / RESULTS)) == 3
    assert len(load_jobs(tmp_path)) == 2 * 10 == len(pd.read_parquet(tmp_path / JOBS))
    assert len(load_results(tmp_path)) == 2


def test_a_kill_between_the_two_writes_leaves_an_orphan_that_is_ignored_then_removed(
    tmp_path: Path, cells: list[Cell]
) -> None:
    gavel, fifo = cells
    with ResultStore(tmp_path) as store:
        store.append([execute(gavel)])
    # what a kill leaves: a per-job part without its results part, and a temporary file
    parts = sorted((tmp_path / JOBS).glob("part-*.parquet"))
    orphan = parts[0].with_name("part-99999999999999999999-1-000001.parquet")
    orphan.write_bytes(parts[0].read_bytes())
    temporary = tmp_path / RESULTS / ".part-x.parquet.123.tmp"
    temporary.write_bytes(b"torn")
    assert len(load_jobs(tmp_path)) == 10 and len(read_results(tmp_path)) == 1
    with ResultStore(tmp_path) as store:
        assert not orphan.exists() and not temporary.exists()
        store.append([execute(fifo)])
    assert len(load_jobs(tmp_path)) == 20


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    with ResultStore(tmp_path), pytest.raises(BlockingIOError), ResultStore(tmp_path):
        pass  # pragma: no cover
    with ResultStore(tmp_path):  # released
        pass


def test_no_results_is_an_error_that_names_the_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no sweep results"):
        read_results(tmp_path)


def test_a_cell_of_another_version_is_another_row(tmp_path: Path, cells: list[Cell]) -> None:
    gavel = cells[0]
    newer = replace(gavel, version="9.9.9")
    assert newer.key != gavel.key
    with ResultStore(tmp_path) as store:
        store.append([execute(gavel), execute(newer)])
    versions = sorted(r["version"] for r in read_results(tmp_path).to_pylist())
    assert versions[1] == "9.9.9" and len(versions) == 2
