"""``shockwave sweep report``: a table per trace with ratios to the baseline, tables over seeds,
figures, failed cells; its errors."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.sweep import load_spec, run_sweep
from shockwave.sweep.pool import ProcessPool

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two seeds of a generated trace, three policies, one shockwave setting more, and a
    simulation setting under which every cell fails."""
    directory = tmp_path_factory.mktemp("report")
    spec = directory / "spec.toml"
    spec.write_text(
        'name = "small"\npolicies = ["shockwave", "gavel", "fifo"]\n'
        "[simulation]\nmax_rounds = [2, 100000]\n"
        '[[traces]]\nname = "tiny"\ngenerate = { jobs = 12, gpus = 8, seed = [1, 2] }\n'
        "[params.shockwave]\nplanning_rounds = [10, 20]\n",
        encoding="utf-8",
    )
    out = directory / "out"
    summary = run_sweep(load_spec(spec), out, ProcessPool(2), stream=io.StringIO())
    assert summary.ran == 16 and len(summary.failed) == 8
    return out


def _tables(text: str) -> dict[str, list[list[str]]]:
    """Each section's table rows (cells split), by heading."""
    tables: dict[str, list[list[str]]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            tables[heading] = []
        elif line.startswith("| ") and heading:
            tables[heading].append([c.strip() for c in line.strip("|").split(" | ")])
    return tables


def test_a_table_per_trace_with_ratios_to_the_baseline(
    swept: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", "report", str(swept)]) == 0
    assert "wrote" in capsys.readouterr().out
    text = (swept / "report" / "report.md").read_text()
    assert text.startswith("# Sweep 'small'\n\n16 of 16 cells recorded (8 failed)")
    tables = _tables(text)
    title = "tiny (seed 1), 8 GPUs, exact mechanics, max_rounds=100000"
    rows = tables[title]
    assert [r[0] for r in rows[1:]] == [
        "shockwave planning_rounds=10",
        "shockwave",
        "gavel",
        "fifo",
    ]
    gavel = next(r for r in rows if r[0] == "gavel")
    assert all("x)" not in c for c in gavel[1:])  # the baseline has no ratio
    for row in rows[1:]:
        if row[0] != "gavel":
            makespan = float(row[1].split()[0].replace(",", ""))
            ratio = float(re.search(r"\(([\d.]+)x\)", row[1]).group(1))  # type: ignore[union-attr]
            assert ratio == pytest.approx(makespan / float(gavel[1].replace(",", "")), abs=0.006)
    assert "tiny, 8 GPUs, exact mechanics, over seeds 1, 2, max_rounds=100000" in tables
    failed = tables["Failed cells"]
    assert len(failed) == 1 + 8 and all("SimulationStalledError" in r[-1] for r in failed[1:])
    images = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert len(images) == 2 * 3 + 1  # two tables of three figures, one over seeds
    for image in images:
        assert (swept / "report" / image).read_bytes().startswith(PNG)


def test_another_baseline_and_no_figures(swept: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(swept, copy, ignore=shutil.ignore_patterns("report", ".lock"))
    assert main(["sweep", "report", str(copy), "--baseline", "fifo", "--no-figures"]) == 0
    text = (copy / "report" / "report.md").read_text()
    assert "Ratios are to `fifo`" in text and "![" not in text
    assert sorted(p.name for p in (copy / "report").iterdir()) == ["report.md"]
    fifo = next(r for r in _tables(text)[next(iter(_tables(text)))] if r[0] == "fifo")
    assert all("x)" not in c for c in fifo[1:])


def test_without_a_manifest_every_recorded_cell_is_reported(swept: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(swept, copy, ignore=shutil.ignore_patterns("report", "sweep.json"))
    assert main(["sweep", "report", str(copy), "--no-figures"]) == 0
    assert "16 of 16 cells recorded" in (copy / "report" / "report.md").read_text()


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["sweep", "report"], 2, "sweep report needs the sweep's directory"),
        (["sweep", "report", "DIR", "--workers", "2"], 2, "sweep report takes no --workers"),
        (["sweep", "report", "DIR", "--baseline", "themis"], 2, "--baseline themis: no succ"),
        (["sweep", "report", "EMPTY"], 3, "no sweep results"),
    ],
)
def test_report_errors(
    swept: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    message: str,
) -> None:
    argv = [str(swept) if a == "DIR" else str(tmp_path) if a == "EMPTY" else a for a in argv]
    assert main(argv) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
