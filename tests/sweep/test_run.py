"""Sweeps on the local process pool: every cell equals ``shockwave simulate``; reruns skip what
is recorded; failures are recorded and the sweep goes on; Ctrl-C keeps what finished; a worker
that dies fails only its own cell."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from shockwave import __version__
from shockwave.cli import main
from shockwave.sweep import (
    Cell,
    CellOutcome,
    ProcessPool,
    dataset,
    execute,
    load_jobs,
    load_spec,
    run_sweep,
)
from shockwave.sweep.pool import WORKER_DIED
from tests.sweep.cases import (
    ALL_POLICIES,
    AloneResults,
    count_rows,
    metrics_of,
    part_files,
    result_rows,
)

REPO = Path(__file__).resolve().parents[2]
#: The command line in a child process (as the console script runs it).
CLI = "import sys; from shockwave.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def equality_sweep(
    equality_spec: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The equality spec swept once on a pool of two workers: (spec directory, output)."""
    out = tmp_path_factory.mktemp("pool") / "out"
    assert main(["sweep", str(equality_spec), "--out", str(out), "--workers", "2"]) == 0
    return equality_spec.parent, out


def test_every_cell_of_a_pool_sweep_equals_shockwave_simulate(
    equality_sweep: tuple[Path, Path], alone: AloneResults
) -> None:
    directory, out = equality_sweep
    rows = result_rows(out)
    spec = load_spec(directory / "spec.toml")
    # 3 traces x 2 mechanics x (7 policies + 2 shockwave settings)
    assert len(rows) == len(spec.cells()) == 54
    assert {r["policy"] for r in rows} == set(ALL_POLICIES)
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    for row in rows:
        assert metrics_of(row) == alone(row), row["key"]


def test_a_rerun_skips_every_recorded_cell(
    equality_sweep: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, out = equality_sweep
    before = count_rows(out)
    assert main(["sweep", str(directory / "spec.toml"), "--out", str(out), "--workers", "2"]) == 0
    assert "54 cells, 54 already recorded" in capsys.readouterr().err
    assert count_rows(out) == before


def test_the_rows_hold_inputs_metrics_and_timing_apart(equality_sweep: tuple[Path, Path]) -> None:
    _, out = equality_sweep
    rows = result_rows(out)
    row = next(r for r in rows if r["parameters"] != "{}" and r["trace_seed"] == 3)
    assert (row["policy"], row["parameters"]) == ("shockwave", '{"planning_rounds":10}')
    assert (row["trace"], row["trace_family"]) == ("gen-24j-8g (seed 3)", "gen-24j-8g")
    assert row["trace_source"] == "shockwave trace generate --jobs 24 --gpus 8 --seed 3"
    small = next(r for r in rows if r["trace"] == "small.trace")
    assert small["trace_source"].endswith("small.trace") and small["trace_seed"] is None
    assert row["version"] == __version__
    assert 0 < row["timing_wall_seconds"] <= row["timing_cell_seconds"]
    assert row["finished_at"].tzinfo is not None
    assert len(row["jct"]) == row["jobs"] == 24
    jobs = load_jobs(out)
    assert len(jobs) == sum(r["jobs"] for r in rows)
    mine = jobs[jobs.key == row["key"]]
    assert mine.jct.tolist() == row["jct"]


def test_a_failing_cell_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'policies = ["gavel", "fifo"]\n[simulation]\nmax_rounds = [2, 100000]\n'
        "[[traces]]\ngenerate = { jobs = 12, gpus = 8, seed = 1 }\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    err = io.StringIO()
    summary = run_sweep(load_spec(spec), out, ProcessPool(2), stream=err)
    assert (summary.ran, len(summary.failed)) == (4, 2)
    rows = result_rows(out)
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 2
    for row in failed:
        assert row["error"].startswith("SimulationStalledError: the simulation has not finished")
        assert "Traceback" in row["error_detail"]
        assert row["makespan"] is None
    # the command line reports them with status 5, and a rerun skips them unless asked
    assert main(["sweep", str(spec), "--out", str(out)]) == 0
    assert main(["sweep", str(spec), "--out", str(out), "--retry-failed"]) == 5
    assert len(result_rows(out)) == 4 and count_rows(out) == 6


def _dies_on_seed_one(cell: Cell) -> CellOutcome:
    if cell.seed == 1:
        os._exit(9)  # as a worker killed for memory would
    return execute(cell)


def test_a_cell_whose_worker_dies_fails_alone(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'policies = ["gavel"]\nseeds = [0, 1, 2, 3]\n'
        "[[traces]]\ngenerate = { jobs = 10, gpus = 8, seed = 2 }\n",
        encoding="utf-8",
    )
    outcomes = list(ProcessPool(2, _dies_on_seed_one).run(load_spec(spec).cells()))
    by_seed: dict[Any, CellOutcome] = {o.row["seed"]: o for o in outcomes}
    assert sorted(by_seed) == [0, 1, 2, 3] and len(outcomes) == 4
    assert by_seed[1].failed and by_seed[1].row["error"] == WORKER_DIED
    assert not any(by_seed[s].failed for s in (0, 2, 3))


def test_ctrl_c_keeps_the_finished_cells_and_a_rerun_runs_only_the_rest(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    trace = REPO / "traces" / "canonical_120jobs.trace"
    spec.write_text(
        'policies = ["shockwave"]\nseeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n'
        f'[[traces]]\npath = "{trace}"\nthroughputs = "tacc"\ngpus = 32\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    command = [sys.executable, "-c", CLI, "sweep", str(spec), "--out", str(out), "--workers", "1",
               "--flush-every", "0"]  # fmt: skip
    # a terminal's Ctrl-C: SIGINT to the whole process group, workers included
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while not part_files(out) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGINT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "Traceback" not in err and "interrupted:" in err
    done = len(result_rows(out))
    assert 1 <= done < 12
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert f"12 cells, {done} already recorded in {out}, {12 - done} to run" in rerun.stderr
    rows = result_rows(out)
    assert len(rows) == 12 == count_rows(out)  # every cell once: nothing ran twice
    assert sorted(r["seed"] for r in rows) == list(range(12))


class _InThisProcess:
    """A backend that runs the cells one after another in the test's own process."""

    def describe(self) -> str:
        return "this process"

    def run(self, cells: Sequence[Cell]) -> Generator[CellOutcome, None, None]:
        for cell in cells:
            yield execute(cell)


def test_ctrl_c_just_after_a_batch_is_written_records_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C that lands once a batch's results part is in place, before the runner has
    forgotten the batch, must not write the batch a second time on the way out."""
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'policies = ["gavel"]\nseeds = [0, 1, 2]\n'
        "[[traces]]\ngenerate = { jobs = 10, gpus = 8, seed = 2 }\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    write = dataset._write
    sent: list[Path] = []

    def write_then_ctrl_c(path: Path, table: Any) -> None:
        write(path, table)
        if path.parent.name == dataset.RESULTS and not sent:
            sent.append(path)
            os.kill(os.getpid(), signal.SIGINT)  # the part is in place

    monkeypatch.setattr(dataset, "_write", write_then_ctrl_c)
    summary = run_sweep(load_spec(spec), out, _InThisProcess(), flush_cells=1, stream=io.StringIO())
    assert sent and summary.interrupted and summary.ran == 1
    assert count_rows(out) == len(result_rows(out)) == 1
    rerun = run_sweep(load_spec(spec), out, _InThisProcess(), stream=io.StringIO())
    assert rerun.skipped == 1 and rerun.ran == 2 and not rerun.interrupted
    assert count_rows(out) == len(result_rows(out)) == 3
