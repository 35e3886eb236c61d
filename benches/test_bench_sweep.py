"""Smoke run of the sweep speed-up benchmark (``benches/sweep_speedup.py``) on a small
experiment: both pool modes give the same metrics and the table has their ratios. The numbers
of ``benches/README.md`` come from the full run (``reproduce scale``, Ray included)."""

from __future__ import annotations

from sweep_speedup import main


def test_the_speedup_benchmark_runs_and_checks_its_modes_agree() -> None:
    text = main(["--experiment", "canonical", "--modes", "pool1,pool2"])
    lines = [line for line in text.splitlines() if line.startswith("| `--workers")]
    assert len(lines) == 2 and lines[0].split(" | ")[2] == "1.00x"
    assert "Every mode gave every cell the same metrics" in text
