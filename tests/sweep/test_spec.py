"""Sweep specs: the grid they describe, the cell keys, and every problem refused before a cell
runs, with the key named."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.sweep import SpecError, load_spec
from shockwave.sweep.cells import SIMULATION_DEFAULTS

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "traces" / "canonical_120jobs.trace"


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    return path


FILE_TRACE = f'[[traces]]\npath = "{TRACE}"\nthroughputs = "tacc"\ngpus = 32\n'
GENERATED = "[[traces]]\ngenerate = { jobs = 30, gpus = 16, seed = 1 }\n"


def test_the_grid_is_the_product_of_the_axes(tmp_path: Path) -> None:
    spec = load_spec(
        _spec(
            tmp_path,
            'policies = ["shockwave", "max_min_fairness"]\nmechanics = ["exact", "gavel"]\n'
            "seeds = [0, 7]\n[simulation]\nround_seconds = [60, 120]\n"
            + FILE_TRACE
            + "[[traces]]\ngenerate = { jobs = 30, gpus = 16, seed = [1, 2] }\ngpus = [16, 32]\n"
            + "[params.shockwave]\nplanning_rounds = [10, 30]\nmakespan_weight = 1\n",
        )
    )
    assert spec.policies == ("shockwave", "gavel")  # the original's names are accepted
    assert [t.label for t in spec.traces] == [
        str(TRACE), "gen-30j-16g (seed 1)", "gen-30j-16g (seed 2)",
    ]  # fmt: skip
    assert spec.traces[1].gpus == (16, 32) and spec.traces[0].gpus == (32,)
    # (1 + 2 x 2) traces x GPUs, 2 mechanics, (2 + 1) policy settings, 2 rounds, 2 seeds
    cells = spec.cells()
    assert len(cells) == 5 * 2 * 3 * 2 * 2 == len({c.key for c in cells})
    assert {tuple(sorted(c.parameters.items())) for c in cells if c.policy == "shockwave"} == {
        (("makespan_weight", 1.0), ("planning_rounds", 10)),
        (("makespan_weight", 1.0), ("planning_rounds", 30)),
    }
    assert cells[0].trace == str(TRACE)  # in the spec's order
    assert {c.simulation["round_seconds"] for c in cells} == {60, 120}
    assert all(c.simulation.keys() == SIMULATION_DEFAULTS.keys() for c in cells)


def test_grids_of_params_tables_are_united_and_defaults_run_once(tmp_path: Path) -> None:
    spec = load_spec(
        _spec(
            tmp_path,
            'policies = ["shockwave"]\n' + GENERATED + "[[params.shockwave]]\n"
            "planning_rounds = [10, 20]\n[[params.shockwave]]\nmakespan_weight = [0.5, 2]\n",
        )
    )
    settings = [dict(p) for p in spec.parameters["shockwave"]]
    # planning_rounds = 20 and makespan_weight = 0.5 are the defaults: one cell, no parameters
    assert settings == [{"planning_rounds": 10}, {}, {"makespan_weight": 2.0}]
    assert len(spec.cells()) == 3


def test_relative_paths_are_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(TRACE, tmp_path / "sub" / "c.trace")
    shutil.copy(REPO / "traces" / "tacc_throughputs.json", tmp_path / "sub" / "t.json")
    spec = load_spec(
        _spec(
            tmp_path,
            'policies = ["fifo"]\n[[traces]]\npath = "sub/c.trace"\n'
            'throughputs = "sub/t.json"\ngpus = 32\nname = "mine"\n',
        )
    )
    (trace,) = spec.traces
    assert trace.label == "mine" and trace.jobs == 120
    assert trace.source.describe() == str(tmp_path / "sub" / "c.trace")


def test_keys_follow_what_determines_the_result(tmp_path: Path) -> None:
    def key(text: str) -> str:
        return load_spec(_spec(tmp_path, text)).cells()[0].key

    base = 'policies = ["fifo"]\n' + FILE_TRACE
    assert key(base) == key(base.replace("gpus = 32", 'gpus = 32\nname = "renamed"'))
    assert key(base) == key(base + "[simulation]\nround_seconds = 120.0\n")
    assert key(base) != key(base + "[simulation]\nround_seconds = 60\n")
    assert key(base) != key(base.replace('"tacc"', '"wisr"'))
    copy = tmp_path / "copy.trace"
    copy.write_bytes(TRACE.read_bytes())
    moved = base.replace(str(TRACE), str(copy))
    assert key(base) == key(moved)  # the content, not the path
    lines = TRACE.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:-1]))  # one job fewer: the cells run again
    assert key(base) != key(moved)
    cell = load_spec(_spec(tmp_path, base)).cells()[0]
    assert dataclasses.replace(cell, version="0.0.0+other").key != cell.key


BAD_SPECS = [
    # (spec text, the problem named)
    ('policies = ["fifo"]\npolicy = "x"\n' + GENERATED, "policy: unknown key 'policy'"),
    ('policies = ["fifo"]\n' + GENERATED.replace("seed = 1", "seed = 1, job = 3"),
     "traces[0].generate.job: unknown key 'job'"),
    ('policies = ["fifo"]\n' + GENERATED + "gpu = 3\n", "traces[0].gpu: unknown key 'gpu'"),
    ('policies = ["fifo"]\n[simulation]\nround = 3\n' + GENERATED,
     "simulation.round: unknown simulation setting 'round'"),
    ('policies = ["shockwave"]\n' + GENERATED + "[params.shockwave]\nwindow = [3]\n",
     "params.shockwave.window: policy 'shockwave' has no parameter 'window' (its parameters: "),
    ('policies = ["fifo"]\n' + GENERATED + "[params.gavel]\nx = 1\n",
     "params.gavel: policy 'gavel' is not in policies"),
    ('policies = ["fifo", "lottery"]\n' + GENERATED, "policies[1]: unknown policy 'lottery'"),
    ('policies = ["fifo", "fifo"]\n' + GENERATED, "policies: lists 'fifo' twice"),
    ("policies = []\n" + GENERATED, "policies: must be a non-empty list"),
    ("policies = [[]]\n" + GENERATED, "policies: must be a non-empty list of strings, got [[]]"),
    (GENERATED, "policies: required"),
    ('policies = ["fifo"]\n', "traces: required"),
    ('policies = ["fifo"]\nmechanics = ["quick"]\n' + GENERATED, "mechanics: unknown mechanics"),
    ('policies = ["fifo"]\nseeds = [-1]\n' + GENERATED, "seeds: must be an integer >= 0"),
    ('policies = ["fifo"]\nbaseline = "gavel"\n' + GENERATED,
     "baseline: policy 'gavel' is not in policies"),
    ('policies = ["fifo"]\n[[traces]]\npath = "missing.trace"\nthroughputs = "tacc"\ngpus = 4\n',
     "traces[0].path: no such file"),
    ('policies = ["fifo"]\n[[traces]]\npath = "."\ngpus = 4\n', "traces[0].path: is not a file"),
    ('policies = ["fifo"]\n' + FILE_TRACE.replace('"tacc"', '"nope.json"'),
     "traces[0].throughputs: no such file"),
    ('policies = ["fifo"]\n' + FILE_TRACE.replace('throughputs = "tacc"\n', ""),
     "traces[0].throughputs: a .trace file needs a throughput table"),
    ('policies = ["fifo"]\n' + FILE_TRACE.replace("gpus = 32", "gpus = 2"),
     "traces[0]: 2 GPUs, exact mechanics: job"),
    ('policies = ["fifo"]\n' + FILE_TRACE.replace("gpus = 32", "gpus = 0"),
     "traces[0].gpus: must be an integer >= 1"),
    ('policies = ["fifo"]\n' + FILE_TRACE.replace("gpus = 32\n", ""), "traces[0].gpus: required"),
    ('policies = ["fifo"]\n[[traces]]\ngpus = 3\n', "traces[0]: needs exactly one of 'path'"),
    ('policies = ["fifo"]\n' + GENERATED.replace("jobs = 30", "jobs = 0"),
     "traces[0].generate.jobs: must be in [1, "),
    ('policies = ["fifo"]\n' + GENERATED.replace("jobs = 30, ", ""),
     "traces[0].generate.jobs: required"),
    ('policies = ["fifo"]\n' + GENERATED.replace("seed = 1", "mode_mix = 0.5"),
     "traces[0].generate.mode_mix: must be a list of numbers"),
    ('policies = ["fifo"]\n' + GENERATED.replace("seed = 1", 'throughputs = "x.json"'),
     "traces[0].generate.throughputs: no such file"),
    ('policies = ["fifo"]\n' + GENERATED + "gpus = 4\n",
     "traces[0].gpus: 4 GPUs is fewer than the largest gang the generator draws (8)"),
    ('policies = ["fifo"]\n' + GENERATED + GENERATED,
     "traces[1]: its label 'gen-30j-16g (seed 1)'"),
    ('policies = ["shockwave"]\n' + GENERATED + "[params.shockwave]\nplanning_rounds = [0]\n",
     "params.shockwave: planning_rounds: must be >= 1"),
    ('policies = ["shockwave"]\n' + GENERATED + "[params.shockwave]\nplanning_rounds = 1.5\n",
     "params.shockwave.planning_rounds: must be an integer, got 1.5"),
    ('policies = ["shockwave"]\n' + GENERATED + "[params.shockwave]\nplanning_rounds = []\n",
     "params.shockwave.planning_rounds: an empty list sweeps nothing"),
    ('policies = ["fifo"]\n[simulation]\nround_seconds = -1\n' + GENERATED,
     "simulation: round_seconds must be > 0"),
    ('policies = ["fifo"]\nmechanics = ["gavel"]\n[simulation]\nthroughput_noise = 0.1\n'
     + GENERATED, "simulation: throughput_noise is supported by the exact mechanics only"),
    ('policies = ["ossp"]\n' + GENERATED + "[params.ossp]\ntolerance = inf\n",
     "params.ossp.tolerance: must be a finite number, got inf"),
    ('policies = ["fifo"]\n' + GENERATED.replace("seed = 1", "min_duration_hours = nan"),
     "traces[0].generate.min_duration_hours: must be finite"),
    ('policies = ["fifo"\n', "not valid TOML"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "problem"), BAD_SPECS, ids=[p for _, p in BAD_SPECS])
def test_a_bad_spec_is_refused_naming_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(_spec(tmp_path, text))
    assert problem in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "spec.toml"))


@pytest.mark.parametrize(("text", "problem"), BAD_SPECS[::6], ids=[p for _, p in BAD_SPECS[::6]])
def test_the_command_line_refuses_a_bad_spec_before_any_cell_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path, text)), "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()  # nothing ran, nothing was written


def test_a_spec_must_be_toml_or_json_and_readable(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="a sweep spec must end in .toml or .json"):
        load_spec(tmp_path / "spec.yaml")
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.toml")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(
        SpecError, match=r"not a text file \(a sweep spec must be UTF-8 TOML or JSON\)"
    ):
        load_spec(tmp_path / "binary.toml")


def test_a_json_spec_is_the_same_grid_as_its_toml(tmp_path: Path) -> None:
    toml = _spec(
        tmp_path,
        'policies = ["shockwave", "fifo"]\nseeds = [0, 7]\n'
        + "[simulation]\nround_seconds = [60, 120]\n"
        + FILE_TRACE
        + "[params.shockwave]\nplanning_rounds = [10, 30]\n",
    )
    document = {
        "policies": ["shockwave", "fifo"],
        "seeds": [0, 7],
        "simulation": {"round_seconds": [60, 120]},
        "traces": [{"path": str(TRACE), "throughputs": "tacc", "gpus": 32}],
        "params": {"shockwave": {"planning_rounds": [10, 30]}},
    }
    (tmp_path / "spec.json").write_text(json.dumps(document, indent=1))
    from_json = load_spec(tmp_path / "spec.json")
    assert [c.key for c in from_json.cells()] == [c.key for c in load_spec(toml).cells()]
    assert len(from_json.cells()) == 2 * 2 * 2 + 1 * 2 * 2


#: (spec text, the start of the message after the spec's path: the line and the key)
LOCATED = [
    ('policies = ["fifo"]\n[simulation]\nround_secnds = 60\n' + GENERATED,
     ":3: simulation.round_secnds: unknown simulation setting 'round_secnds' (did you mean "
     "'round_seconds'? allowed: round_seconds, "),
    ('policies = ["fifo"]\n[simulation]\ngpus = 4\n' + GENERATED,
     ":3: simulation.gpus: unknown simulation setting 'gpus' (set by each trace's 'gpus'; "
     "allowed here: round_seconds, "),
    ('policies = ["fifo"]\npolicys = 1\n' + GENERATED,
     ":2: policys: unknown key 'policys' (did you mean 'policies'? allowed: name, "),
    ('policies = ["fifo"]\n' + FILE_TRACE + FILE_TRACE.replace("gpus = 32", "gpus = 0"),
     ":9: traces[1].gpus: must be an integer >= 1"),
    ('policies = ["shockwave"]\n' + GENERATED + "[[params.shockwave]]\nplanning_rounds = 10\n"
     "[[params.shockwave]]\n\nmakespan_weigth = 1.0\n",
     ":8: params.shockwave[1].makespan_weigth: policy 'shockwave' has no parameter "
     "'makespan_weigth' (did you mean 'makespan_weight'? its parameters: planning_rounds, "),
    ('policies = ["shockwave"]\n' + GENERATED + "[params.shockwave]\nplanning_rounds = [10, 2.5]\n",
     ":5: params.shockwave.planning_rounds[1]: must be an integer, got 2.5"),
    ('policies = ["fifo"]\n' + GENERATED + "[simulation]\nround_seconds = -1\n",
     ":4: simulation: round_seconds must be > 0, got -1"),
    ('policies = ["fifo"]\n' + GENERATED.replace("jobs = 30", "jobs = 0"),
     ":3: traces[0].generate.jobs: must be in [1, "),
    ('policies = ["fifo"]\n\n\nmechanics = exact\n', ":4: not valid TOML"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), LOCATED, ids=[m.split(":")[2] for _, m in LOCATED])
def test_a_problem_names_its_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(_spec(tmp_path, text))
    assert str(caught.value).startswith(str(tmp_path / "spec.toml") + message), str(caught.value)
    assert caught.value.path == str(tmp_path / "spec.toml")
    assert caught.value.line == int(message.split(":")[1])


def test_a_json_spec_names_the_line_of_a_key(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    traces = '"traces": [{"generate": {"jobs": 30, "gpus": 16}}]'
    path.write_text(
        '{\n "policies": ["fifo"],\n "simulation": {\n  "round_secnds": 60\n },\n' + traces + "}"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(
        f"{path}:4: simulation.round_secnds: unknown simulation setting 'round_secnds' (did you "
        "mean 'round_seconds'?"
    )
    path.write_text('{"policies": ["fifo"],\n "traces": [}')
    with pytest.raises(SpecError, match=r"spec.json:2: not valid JSON"):
        load_spec(path)


def test_simulation_settings_beyond_the_five_keep_the_cells_of_their_default(
    tmp_path: Path,
) -> None:
    """[simulation] takes every SimulationConfig setting (round_overhead_seconds too, as
    --config does); a cell holds a setting beyond the five of SIMULATION_DEFAULTS only when it
    differs from its default, so that the keys of existing cells do not change."""
    base = 'policies = ["fifo"]\n' + FILE_TRACE
    plain = load_spec(_spec(tmp_path, base)).cells()
    written = load_spec(_spec(tmp_path, base + "[simulation]\nround_overhead_seconds = 0.0\n"))
    assert [c.key for c in written.cells()] == [c.key for c in plain]
    assert set(plain[0].simulation) == set(SIMULATION_DEFAULTS)
    swept = load_spec(_spec(tmp_path, base + "[simulation]\nround_overhead_seconds = [0.0, 2.0]\n"))
    cells = swept.cells()
    assert [c.simulation.get("round_overhead_seconds") for c in cells] == [None, 2.0]
    assert cells[1].config().round_overhead_seconds == 2.0


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["--workers", "0"], 2, "--workers must be >= 1"),
        (["--ray-address", "x:1"], 2, "--ray-address needs --ray"),
        (["--ray", "--ray-address", "x:1", "--workers", "2"], 2, "--workers sizes a local"),
        (["--flush-every", "-1"], 2, "--flush-every must be >= 0"),
        (["--baseline", "fifo"], 2, "--baseline and --no-figures belong"),
        ([], 2, "sweep needs --out DIR"),
    ],
)
def test_bad_sweep_options_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    message: str,
) -> None:
    spec = _spec(tmp_path, 'policies = ["fifo"]\n' + GENERATED)
    out = [] if not argv else ["--out", str(tmp_path / "out")]
    assert main(["sweep", str(spec), *out, *argv]) == status
    assert message in capsys.readouterr().err


def test_an_output_path_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, 'policies = ["fifo"]\n' + GENERATED)
    (tmp_path / "file").write_text("x")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "file")]) == 4
    assert "exists and is not a directory" in capsys.readouterr().err


def test_the_readme_example_spec_is_valid() -> None:
    spec = load_spec(REPO / "examples" / "sweep.toml")
    assert len(spec.cells()) == 15
    assert spec.traces[0].source.describe() == str(TRACE)  # relative to the spec


def test_the_heterogeneous_example_spec_is_issue_23s_evaluation() -> None:
    spec = load_spec(REPO / "examples" / "heterogeneous_adapting.toml")
    cells = spec.cells()
    assert len(cells) == 2 * 3 * 3  # clusters x seeds x policies
    assert {c.mechanics for c in cells} == {"exact"}
    assert {(c.cluster, c.trace_seed) for c in cells} == {
        (cluster, seed)
        for cluster in ("v100:12,p100:12,k80:12", "v100:36,p100:36,k80:36")
        for seed in (11, 12, 13)
    }
    assert {c.source.describe() for c in cells if c.trace_seed == 11} == {
        "shockwave trace generate --jobs 100 --cluster v100:12,p100:12,k80:12 --seed 11",
        "shockwave trace generate --jobs 300 --cluster v100:36,p100:36,k80:36 --seed 11",
    }
