"""``shockwave reproduce``: the shipped specs, and the canonical experiment end to end (its cells
equal ``shockwave simulate`` on the bundled canonical trace, and the published table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.sweep.experiments import EXPERIMENTS, NOT_SPECS, spec_file
from shockwave.sweep.spec import load_spec
from tests.sweep.cases import metrics_of, result_rows

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "traces" / "canonical_120jobs.trace"

#: Cells of each experiment: traces x GPUs, mechanics, policy settings.
CELLS = {
    "canonical": 1 * 2 * 8,
    "scale": 9 * 2 * 8,
    "sensitivity": 2 * 1 * (1 + 16),
    "large": 5 * 1 * 8,
}


@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if n not in NOT_SPECS])
def test_each_experiment_is_a_valid_spec_shipped_in_the_package(name: str) -> None:
    with spec_file(name) as path:
        spec = load_spec(path)
    assert spec.name == name and len(spec.cells()) == CELLS[name]
    assert spec.baseline == "gavel"


def test_the_scale_experiment_uses_the_originals_generator_parameters() -> None:
    with spec_file("scale") as path:
        spec = load_spec(path)
    first = {t.family: t.source for t in reversed(spec.traces)}  # the first seed of each
    described = {family: source.describe() for family, source in first.items()}
    assert described == {
        "220 jobs": "shockwave trace generate --jobs 220 --gpus 64 --seed 4 --mean-interarrival 25",
        "460 jobs": "shockwave trace generate --jobs 460 --gpus 128 --seed 1",
        "900 jobs": "shockwave trace generate --jobs 900 --gpus 256 --seed 15 "
        "--duration-grid-points 1000",
    }


def test_reproduce_canonical_equals_simulate_on_the_bundled_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "canonical"
    assert main(["reproduce", "canonical", "--out", str(out), "--workers", "2"]) == 0
    assert (out / "report" / "report.md").is_file()
    rows = result_rows(out)
    assert len(rows) == 16
    for row in rows:
        output = tmp_path / "alone.json"
        argv = ["simulate", "--trace", str(TRACE), "--throughputs", "tacc", "--gpus", "32",
                "--policy", row["policy"], "--mechanics", row["mechanics"],
                "--output", str(output)]  # fmt: skip
        assert main(argv) == 0
        assert metrics_of(row) == json.loads(output.read_text()), row["policy"]
    # the README's table (gavel mechanics): shockwave's makespan, JCT and worst rho
    shockwave = next(r for r in rows if (r["policy"], r["mechanics"]) == ("shockwave", "gavel"))
    assert (round(shockwave["makespan"]), round(shockwave["avg_jct"])) == (22_673, 8_082)
    assert round(shockwave["worst_ftf"], 2) == 0.95
    capsys.readouterr()
    assert main(["reproduce", "canonical", "--out", str(out), "--no-figures"]) == 0
    assert "16 cells, 16 already recorded" in capsys.readouterr().err


def test_an_unknown_experiment_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["reproduce", "everything", "--out", "x"])
    assert caught.value.code == 2
    assert "invalid choice: 'everything'" in capsys.readouterr().err
