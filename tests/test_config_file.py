"""The one configuration reader (``shockwave.config_file``): the same rules for ``--config`` of
``simulate``, ``compare`` and ``cluster run`` as for sweep specs (``tests/sweep/test_spec.py``),
TOML and JSON alike, every problem named by file, line and key."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from shockwave import config_file
from shockwave.cli import exit_codes, main
from shockwave.config_file import (
    RUNTIME_KEYS,
    SIMULATION_KEYS,
    ConfigError,
    key_name,
    read_config,
)
from shockwave.errors import DataError
from shockwave.runtime import RuntimeConfig
from shockwave.scheduling import SimulationConfig

ROOT = Path(__file__).resolve().parents[1]
SIMULATE = ["simulate", "--trace", str(ROOT / "traces/canonical_120jobs.trace"),
            "--throughputs", "tacc", "--gpus", "32"]  # fmt: skip


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.removeprefix("shockwave: error: ").rstrip("\n")


def test_the_tables_are_the_dataclasses_fields() -> None:
    assert SIMULATION_KEYS == (
        "round_seconds", "restart_penalty_seconds", "round_overhead_seconds",
        "throughput_noise", "recompute_interval_seconds", "max_rounds",
    )  # fmt: skip
    assert set(SIMULATION_KEYS) | {"gpus", "mechanics", "seed"} == set(
        SimulationConfig.__dataclass_fields__
    )
    assert set(RUNTIME_KEYS) | {"gpus", "run_dir", "workdir", "output"} == set(
        RuntimeConfig.__dataclass_fields__
    )


def test_toml_and_json_give_the_same_settings(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(
        "[simulation]\nround_seconds = 60\nmax_rounds = 9000\n[runtime]\nmax_restarts = 1\n"
        "slot_kind = 'cpu'\n[max_min_fairness]\n[shockwave]\nplanning_rounds = 10\n"
        "makespan_weight = 1\n"
    )
    document = {
        "simulation": {"round_seconds": 60, "max_rounds": 9000},
        "runtime": {"max_restarts": 1, "slot_kind": "cpu"},
        "max_min_fairness": {},
        "shockwave": {"planning_rounds": 10, "makespan_weight": 1},
    }
    (tmp_path / "c.json").write_text(json.dumps(document))
    a, b = read_config(toml), read_config(tmp_path / "c.json")
    for read in (a, b):
        assert read.simulation == {"round_seconds": 60, "max_rounds": 9000}
        assert read.runtime == {"max_restarts": 1, "slot_kind": "cpu"}
        assert read.policies == {"gavel": {}, "shockwave": document["shockwave"]}
    assert a.simulation_config(gpus=4) == b.simulation_config(gpus=4)
    assert a.runtime_config(gpus=1).max_restarts == 1
    assert a.policy("shockwave").planning_rounds == 10  # type: ignore[attr-defined]


def test_simulate_reads_toml_and_json_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    document = {
        "allox": {"alpha": 0.5},
        "simulation": {"throughput_noise": 0.05},
        "runtime": {"max_restarts": 1},
    }
    for name, text in (
        ("c.toml", "[allox]\nalpha = 0.5\n[simulation]\nthroughput_noise = 0.05\n"
                   "[runtime]\nmax_restarts = 1\n"),
        ("c.json", json.dumps(document)),
    ):  # fmt: skip
        (tmp_path / name).write_text(text)
        out = tmp_path / f"{name}.out.json"
        argv = [*SIMULATE, "--policy", "allox", "--config", str(tmp_path / name)]
        assert main([*argv, "--output", str(out)]) == 0
        outputs.append(out.read_bytes())
        err = capsys.readouterr().err  # a table it does not use is noted, not refused
        assert "note: --config's [runtime] settings are for real runs (cluster run)" in err
    assert outputs[0] == outputs[1]


#: (config file name, content, the message after "shockwave: error: " less the file's path)
BAD_CONFIGS = [
    ("c.toml", "[simulation]\nround_secnds = 60\n",
     ":2: simulation.round_secnds: unknown simulation setting 'round_secnds' (did you mean "
     "'round_seconds'? allowed: round_seconds, restart_penalty_seconds, round_overhead_seconds, "
     "throughput_noise, recompute_interval_seconds, max_rounds)"),
    ("c.toml", "[simulation]\n\nseed = 3\n",
     ":3: simulation.seed: unknown simulation setting 'seed' (set by the command line's --seed; "
     "allowed here: round_seconds, "),
    ("c.json", '{"allox": {"alpha": 0.5},\n "simulation": {\n  "max_rounds": 2.5}}',
     ":3: simulation.max_rounds: must be an integer or null, got 2.5"),
    ("c.toml", "[simulation]\nthroughput_noise = 'high'\n",
     ":2: simulation.throughput_noise: must be a number, got 'high'"),
    ("c.toml", "[simulation]\nthroughput_noise = nan\n",
     ":2: simulation.throughput_noise: must be a finite number, got nan"),
    ("c.toml", "[runtime]\nslot_kind = 'tpu'\n",
     ":2: runtime.slot_kind: must be one of 'gpu', 'cpu' or null, got 'tpu'"),
    ("c.toml", "[runtime]\nmax_restart = 2\n",
     ":2: runtime.max_restart: unknown runtime setting 'max_restart' (did you mean "
     "'max_restarts'? allowed: round_seconds, "),
    ("c.toml", "# parameters\n[shockwave]\nplaning_rounds = 10\n",
     ":3: shockwave.planing_rounds: policy 'shockwave' has no parameter 'planing_rounds' (did "
     "you mean 'planning_rounds'? its parameters: planning_rounds, makespan_weight, "),
    ("c.toml", "[shockwave]\nestimator = 3\n",
     ":2: shockwave.estimator: must be a string, got 3"),
    ("c.toml", "[shockwave]\nplanning_rounds = 0\n",
     ":1: shockwave: planning_rounds: must be >= 1"),
    ("c.toml", "[shockwve]\n", ":1: shockwve: unknown policy 'shockwve' (choose from "),
    ("c.toml", "[max_min_fairness]\n[gavel]\n",
     ":2: gavel: the parameters of 'gavel' are also in [max_min_fairness]"),
    ("c.toml", "shockwave = 3\n", ":1: shockwave: must be a table of parameters, got 3"),
    ("c.json", "[1, 2]", ": the document must be a table (a JSON object)"),
    ("c.json", '{"allox":\n {"alpha": }}', ":2: not valid JSON (Expecting value)"),
    ("c.toml", "[allox]\nalpha = \n", ":2: not valid TOML (Invalid value (at line 2, column 9))"),
    ("c.yaml", "allox: {}\n", ": a --config file must end in .toml or .json"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "text", "message"), BAD_CONFIGS, ids=[m[:40] for _, _, m in BAD_CONFIGS]
)
def test_a_bad_config_is_named_by_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main([*SIMULATE, "--policy", "shockwave", "--config", str(path)]) == exit_codes.INPUT
    line = _error_line(capsys)
    assert line.startswith(f"{path}{message}"), line
    if "did you mean" in message:
        assert "did you mean" in line  # the suggestion is part of the message
    with pytest.raises(ConfigError) as caught:
        read_config(path) if "planning_rounds = 0" not in text else read_config(path).policy(
            "shockwave"
        )
    error = caught.value
    assert isinstance(error, DataError) and isinstance(error, ValueError)
    assert error.exit_status == exit_codes.INPUT
    assert error.path == str(path)
    assert str(error) == line
    if message.startswith(":") and message[1].isdigit():
        assert error.line == int(message.split(":")[1])


def test_a_config_setting_and_the_same_option_are_refused_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[simulation]\nround_seconds = 60.0\n")
    argv = [*SIMULATE, "--policy", "fifo", "--config", str(config)]
    assert main([*argv, "--round-seconds", "60"]) == exit_codes.USAGE
    assert _error_line(capsys) == (
        f"{config}: round_seconds is set there and by --round-seconds; keep one"
    )
    out, plain = tmp_path / "a.json", tmp_path / "b.json"
    assert main([*argv, "--output", str(out)]) == 0  # round_seconds from the config ...
    assert main([*argv[:-2], "--round-seconds", "60", "--output", str(plain)]) == 0
    assert out.read_bytes() == plain.read_bytes()  # ... is the option's
    capsys.readouterr()


def test_cluster_run_reads_runtime_settings_and_refuses_simulation_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from shockwave import runtime
    from shockwave.runtime.generate import generate_real_workload
    from shockwave.throughputs import ThroughputTable
    from shockwave.traces import write_native

    workload = tmp_path / "W.jsonl"
    write_native(generate_real_workload(2, 1, ThroughputTable.bundled("cluster")), workload)
    seen: list[tuple[RuntimeConfig, dict[str, Any]]] = []

    class StopError(Exception):
        pass

    def fake_run(work: Any, name: str, config: RuntimeConfig, **kwargs: Any) -> Any:
        seen.append((config, kwargs["policy_parameters"]))
        raise StopError

    monkeypatch.setattr(runtime, "run_workload", fake_run)
    run = ["cluster", "run", "--workload", str(workload), "--gpus", "1", "--policy", "shockwave",
           "--run-dir", str(tmp_path / "run")]  # fmt: skip
    config = tmp_path / "c.toml"
    config.write_text(
        "[runtime]\nmax_restarts = 0\nboundary_timeout_seconds = 5\nslot_kind = 'cpu'\n"
        "[simulation]\nrecompute_interval_seconds = 10\n[shockwave]\nplanning_rounds = 5\n"
    )
    assert main([*run, "--config", str(config)]) == exit_codes.INTERNAL  # the fake's StopError
    capsys.readouterr()
    used, parameters = seen[-1]
    assert (used.max_restarts, used.boundary_timeout_seconds, used.slot_kind) == (0, 5, "cpu")
    assert used.recompute_interval_seconds == 10 and used.round_seconds == 20.0
    assert parameters == {"planning_rounds": 5}
    refused = [
        ("[simulation]\nthroughput_noise = 0.1\n", exit_codes.INPUT,
         f"{config}:2: simulation.throughput_noise: 'throughput_noise' does not apply to real "
         "runs (their settings go in [runtime]: round_seconds, "),
        ("[runtime]\nrecompute_interval_seconds = 1\n"
         "[simulation]\nrecompute_interval_seconds = 2\n",
         exit_codes.INPUT,
         f"{config}:4: simulation.recompute_interval_seconds: is set in [runtime] too; keep one"),
        ("[runtime]\nstart_timeout_seconds = -1\n", exit_codes.INPUT,
         f"{config}:1: runtime: start_timeout_seconds must be a finite number > 0, got -1"),
        ("[runtime]\nmax_restarts = 1\n", exit_codes.USAGE,
         f"{config}: max_restarts is set there and by --max-restarts; keep one"),
        ("[shockwave]\nplanning_rounds = 0\n", exit_codes.INPUT,
         f"{config}:1: shockwave: planning_rounds: must be >= 1"),
    ]  # fmt: skip
    for text, status, message in refused:
        config.write_text(text)
        extra = ["--max-restarts", "2"] if "max_restarts" in text else []
        assert main([*run, "--config", str(config), *extra]) == status, text
        assert _error_line(capsys).startswith(message)
        assert not (tmp_path / "run").exists()  # refused before anything was written
    assert len(seen) == 1


def test_toml_is_read_through_tomli_where_tomllib_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.10 has no ``tomllib``: the reader uses ``tomli`` (a dependency there), with the
    same rules (before, ``--config`` refused TOML on 3.10)."""
    tomllib = pytest.importorskip("tomllib")  # on Python 3.10, tomli is the real one
    calls: list[str] = []

    def loads(text: str) -> Any:
        calls.append(text)
        return tomllib.loads(text)

    fake = types.ModuleType("tomli")
    fake.loads = loads  # type: ignore[attr-defined]
    fake.TOMLDecodeError = tomllib.TOMLDecodeError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tomllib", None)  # import tomllib -> ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "tomli", fake)
    path = tmp_path / "c.toml"
    path.write_text("[simulation]\nround_seconds = 60\n")
    assert read_config(path).simulation == {"round_seconds": 60}
    assert calls
    path.write_text("[simulation]\nround_seconds = \n")
    with pytest.raises(ConfigError, match=r"c.toml:2: not valid TOML"):
        read_config(path)


def test_key_names_and_lines() -> None:
    assert key_name(("traces", 0, "generate", "jobs")) == "traces[0].generate.jobs"
    assert key_name(("params", "a b", 1)) == 'params."a b"[1]'
    toml = config_file._toml_key_lines(
        'top = 1\n[[traces]]\npath = "a"\n[[traces]]\ngenerate = { jobs = 3 }\n'
        '[traces.extra]\n"quoted key" = 2\nlong = """\nfake = 1\n"""\nafter = 1\n'
        "[params.shockwave]\ndotted.key = 3\n"
    )
    assert toml[("top",)] == 1
    assert toml[("traces", 0, "path")] == 3
    assert toml[("traces", 1, "generate")] == 5
    assert toml[("traces", 1, "extra", "quoted key")] == 7
    assert ("traces", 1, "extra", "fake") not in toml  # inside a multi-line string
    assert toml[("traces", 1, "extra", "after")] == 11
    assert toml[("params",)] == 12
    assert toml[("params", "shockwave", "dotted", "key")] == 13
    lines = config_file._json_key_lines('{"a": [1,\n {"b": "x\\"y"},\n 3],\n "c": {"d": null}}')
    assert lines == {
        ("a",): 1, ("a", 0): 1, ("a", 1): 2, ("a", 1, "b"): 2, ("a", 2): 3,
        ("c",): 4, ("c", "d"): 4,
    }  # fmt: skip
