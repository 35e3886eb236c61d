"""``--config`` on a typed cluster (``simulate``, ``compare`` and ``cluster run`` with
``--cluster``): a ``[shockwave]`` table sets the typed policy's parameters, ``[simulation]`` the
typed settings; every key and value is checked before the run, errors name the file, the line
and the key; a checkpointed run resumes with the parameters it ran with."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.config_file import read_config
from shockwave.heterogeneous import HeterogeneousConfig, simulate_heterogeneous
from shockwave.heterogeneous.checkpoint import TypedInputs, TypedSimulation
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.registry import make_typed_policy, typed_policy_parameters
from shockwave.policies.shockwave.typed_policy import TypedShockwave
from shockwave.rounds.loop import RoundLoop

CLUSTER = "v100:4,p100:4,k80:4"
#: parameters away from every default that matters here
PARAMETERS = {"makespan_weight": 0.1, "fairness_exponent": 0.0, "finish_fastest": False}
TOML = "[shockwave]\nmakespan_weight = 0.1\nfairness_exponent = 0\nfinish_fastest = false\n"


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("w") / "w.jsonl"
    generate = ["trace", "generate", "--jobs", "20", "--cluster", CLUSTER, "--seed", "3"]
    assert main([*generate, "-o", str(path)]) == 0
    return path


def _simulate(workload: Path, *options: str) -> list[str]:
    return ["simulate", "--cluster", CLUSTER, "--trace", str(workload), "--policy", "shockwave",
            *options]  # fmt: skip


def test_a_shockwave_table_sets_the_typed_policys_parameters(
    workload: Path, tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(TOML + "\n[simulation]\nrestart_penalty_seconds = 30\n")
    given, default = tmp_path / "given.json", tmp_path / "default.json"
    assert main([*_simulate(workload, "--config", str(config)), "--output", str(given)]) == 0
    assert main(_simulate(workload, "--output", str(default))) == 0
    # the same run through the Python API, with the same parameters and penalty
    jobs = TypedInputs.read(ClusterSpec.parse(CLUSTER), workload, None).jobs()
    settings = HeterogeneousConfig(mechanics="exact", restart_penalty_seconds=30.0)
    expected = simulate_heterogeneous(jobs, TypedShockwave(**PARAMETERS), settings)
    assert given.read_text() == expected.to_json()
    assert given.read_bytes() != default.read_bytes()  # the parameters did something
    # compare takes the same file, for each policy it runs
    both = tmp_path / "both.json"
    compare = ["compare", "--cluster", CLUSTER, "--trace", str(workload), "--policies",
               "shockwave,gavel", "--config", str(config), "--output", str(both)]  # fmt: skip
    assert main(compare) == 0
    assert json.loads(both.read_text())[0] == json.loads(given.read_text())


@pytest.mark.parametrize(
    ("text", "options", "status", "message"),
    [
        (
            "[shockwave]\nmakespan_wieght = 1\n",
            [],
            3,
            "c.toml:2: shockwave.makespan_wieght: policy 'shockwave' has no parameter "
            "'makespan_wieght' (did you mean 'makespan_weight'?",
        ),
        (
            "[shockwave]\nfinish_fastest = 1\n",
            [],
            3,
            "c.toml:2: shockwave.finish_fastest: must be true or false, got 1",
        ),
        (
            "[shockwave]\nplanning_rounds = 0\n",
            [],
            3,
            "c.toml:1: shockwave: policy 'shockwave': planning_rounds: must be >= 1",
        ),
        (
            "[gavel]\nseed = 1\n",
            [],
            3,
            "c.toml:2: gavel.seed: policy 'gavel' has no parameter 'seed' (its parameters: none)",
        ),
        (
            "[simulation]\nthroughput_noise = 0.1\n",
            [],
            3,
            "c.toml:2: simulation.throughput_noise: unknown simulation setting 'throughput_noise'",
        ),
        (
            "[simulation]\nround_seconds = 300\n",
            ["--round-seconds", "200"],
            2,
            "c.toml: round_seconds is set there and by --round-seconds; keep one",
        ),
        (
            "[simulation]\nrestart_penalty_seconds = 10\n",
            ["--mechanics", "gavel"],
            3,
            "restart_penalty_seconds applies to --mechanics exact",
        ),
    ],
)
def test_bad_settings_are_refused_before_the_run_naming_file_line_and_key(
    workload: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    options: list[str],
    status: int,
    message: str,
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    output = tmp_path / "out.json"
    capsys.readouterr()
    args = _simulate(workload, "--config", str(config), *options, "--output", str(output))
    assert main(args) == status
    assert message in capsys.readouterr().err
    assert not output.exists()


def test_a_checkpointed_run_resumes_with_the_parameters_it_ran_with(
    workload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(TOML)
    run = _simulate(workload, "--config", str(config))
    whole, resumed, checkpoint = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "run.ckpt"
    assert main([*run, "--output", str(whole)]) == 0
    original = RoundLoop._check_round_limit

    def ctrl_c(loop: RoundLoop, round_index: int) -> None:
        if round_index == 4:
            os.kill(os.getpid(), signal.SIGINT)
        original(loop, round_index)

    monkeypatch.setattr(RoundLoop, "_check_round_limit", ctrl_c)
    interrupted = [*run, "--checkpoint", str(checkpoint), "--checkpoint-every", "1e9"]
    assert main([*interrupted, "--output", str(resumed)]) == 130
    monkeypatch.undo()
    saved = TypedSimulation.load(checkpoint)
    assert saved.parameters == PARAMETERS
    assert isinstance(saved.policy, TypedShockwave) and saved.policy.makespan_weight == 0.1
    assert main(["simulate", "--resume", str(checkpoint), "--output", str(resumed)]) == 0
    assert resumed.read_bytes() == whole.read_bytes()


def test_typed_parameters_are_those_of_the_dataclass_and_checked() -> None:
    known = typed_policy_parameters("shockwave")
    assert known["finish_fastest"] is True and known["fairness_exponent"] == 2.0
    assert typed_policy_parameters("max_min_fairness_perf") == {}  # Gavel's name too
    policy = make_typed_policy("shockwave", 0, {"makespan_weight": 1})  # an integer is a number
    assert isinstance(policy, TypedShockwave) and policy.makespan_weight == 1.0
    with pytest.raises(ValueError, match="has no parameter 'x'"):
        make_typed_policy("gavel", 0, {"x": 1})
    with pytest.raises(ValueError, match="must be a bool"):
        make_typed_policy("shockwave", 0, {"finish_fastest": "yes"})


def test_the_typed_reader_knows_the_typed_policies_and_settings(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"water-filling": {}, "max_min_fairness_perf": {},
                                  "simulation": {"recompute_interval_seconds": 600}}))  # fmt: skip
    typed = read_config(config, typed=True)
    assert set(typed.policies) == {"water-filling", "gavel"}
    assert typed.heterogeneous_config().recompute_interval_seconds == 600.0
