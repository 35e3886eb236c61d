"""Fuzzing the command line (argument parsing, configs, paths) and the simulator itself.

The command line gets random argument lists built from its own options with random values, good
and bad paths and random config files: it must return one of the documented exit statuses with
one line on standard error, never a traceback and never an internal error. The simulator gets
random small workloads with extreme job values under every policy and both mechanics: it returns
a result or raises the documented ``ValueError`` / ``SimulationStalledError``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shockwave.cli import exit_codes, main
from shockwave.policies import POLICIES
from shockwave.scheduling import SimulationConfig, SimulationStalledError
from shockwave.sim import simulate
from shockwave.traces import write_native
from shockwave.workload import Job, Workload

from .conftest import PRODUCTION
from .fuzzing import any_float, any_int, fuzz

#: Production-trace fixtures, for ``trace convert --from``.
PRODUCTION_PATHS = [str(PRODUCTION / source) for source in ("philly", "helios", "pai", "tiresias")]

STATUSES = {
    exit_codes.OK,
    exit_codes.USAGE,
    exit_codes.INPUT,
    exit_codes.OUTPUT,
    exit_codes.RUN_FAILED,
    exit_codes.INTERRUPTED,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: Any, canonical_workload: Workload) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli")
    tiny = root / "tiny.jsonl"
    write_native(canonical_workload.with_jobs(canonical_workload.jobs[:3]), tiny)
    (root / "dir").mkdir()
    config = root / "ok.toml"
    config.write_text("[shockwave]\nplanning_rounds = 4\n[simulation]\nmax_rounds = 400\n")
    return {
        "tiny": str(tiny),
        "dir": str(root / "dir"),
        "config": str(config),
        "out": str(root / "out.json"),
        "missing": str(root / "missing" / "x"),
        "root": str(root),
    }


values = st.one_of(
    any_int.map(str),
    any_float.map(repr),
    st.sampled_from(
        [
            "",
            "-1",
            "0",
            "nan",
            "inf",
            "tacc",
            "wisr",
            "exact",
            "gavel",
            "fifo",
            "shockwave",
            "shockwave,fifo",
            "fifo,fifo",
            "1,2,3",
            "x:1",
            "ResNet-18:32",
        ]
    ),
    st.text(max_size=6),
)
OPTIONS = [
    "--trace",
    "--throughputs",
    "--gpus",
    "--policy",
    "--policies",
    "--mechanics",
    "--round-seconds",
    "--seed",
    "--config",
    "--output",
    "--timing",
    "--checkpoint",
    "--checkpoint-every",
    "--resume",
    "--plots",
    "--jobs",
    "-o",
    "--mean-interarrival",
    "--gang-sizes",
    "--mode-mix",
    "--templates",
    "--duration-grid-points",
    "--from",
    "--start",
    "--end",
    "--status",
    "--vc",
    "--min-gpus",
    "--max-gpus",
    "--max-jobs",
    "--sample",
    "--mode",
    "--bogus",
]


@st.composite
def argvs(draw: Any, files: dict[str, str]) -> list[str]:
    paths = st.sampled_from(
        [files["tiny"], files["dir"], files["config"], files["missing"], files["out"], "tacc"]
    )
    command = draw(
        st.sampled_from(
            [
                ["simulate"],
                ["compare"],
                ["trace", "inspect"],
                ["trace", "convert"],
                ["trace", "generate"],
                [],
            ]
        )
    )
    argv = list(command)
    if command[:1] in (["simulate"], ["compare"]) and draw(st.integers(0, 3)):
        argv += ["--trace", files["tiny"], "--gpus", draw(st.sampled_from(["8", "2", "0"]))]
        argv += [
            "--policy" if command == ["simulate"] else "--policies",
            draw(st.sampled_from(["fifo", "shockwave", "gavel", "allox", "nope"])),
        ]
    if command[:2] == ["trace", "inspect"] or command[:2] == ["trace", "convert"]:
        argv.append(draw(st.one_of(paths, st.sampled_from(PRODUCTION_PATHS))))
    for _ in range(draw(st.integers(0, 4))):
        option = draw(st.sampled_from(OPTIONS))
        argv += [option, draw(st.one_of(values, paths))]
        if option == "--from":
            argv[-1] = draw(st.sampled_from(["philly", "helios", "pai", "tiresias", "borg"]))
        if option == "--round-seconds":  # short rounds make long (valid) runs: keep them bounded
            argv[-1] = draw(st.sampled_from(["120", "600", "0", "-1", "nan", "inf", "x", "1e300"]))
        if option in ("--output", "--timing", "--checkpoint", "-o", "--plots"):
            argv[-1] = draw(
                st.sampled_from(
                    [files["out"], files["dir"], files["missing"], files["root"] + "/x.jsonl"]
                )
            )
    return argv


@fuzz(40)
@given(data=st.data())
def test_the_command_line_answers_every_argument_list_in_one_line(
    data: Any, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = data.draw(argvs(files))
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    assert status in STATUSES, (argv, status, captured.err)
    assert "Traceback" not in captured.err
    if status not in (exit_codes.OK, exit_codes.USAGE):
        errors = [line for line in captured.err.splitlines() if line.startswith("shockwave:")]
        assert len(errors) == 1, captured.err


config_values = st.one_of(
    any_int, any_float, st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2)
)


@fuzz(40)
@given(
    policy=st.sampled_from(sorted(POLICIES)),
    parameter=st.one_of(
        st.sampled_from(
            [
                "planning_rounds",
                "rho_max",
                "alpha",
                "estimator",
                "solver_tolerance",
                "replan_period",
            ]
        ),
        st.text(max_size=5),
    ),
    value=config_values,
    simulation_key=st.sampled_from(
        ["max_rounds", "throughput_noise", "restart_penalty_seconds", "recompute_interval_seconds"]
    ),
    simulation_value=config_values,
)
def test_random_configs_are_applied_or_named(
    files: dict[str, str],
    tmp_path_factory: Any,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    parameter: str,
    value: Any,
    simulation_key: str,
    simulation_value: Any,
) -> None:
    config = tmp_path_factory.mktemp("config") / "c.json"
    table = {policy: {parameter: value}, "simulation": {simulation_key: simulation_value}}
    config.write_text(json.dumps(table))
    argv = [
        "simulate",
        "--trace",
        files["tiny"],
        "--gpus",
        "8",
        "--policy",
        policy,
        "--config",
        str(config),
    ]
    status = main(argv)
    captured = capsys.readouterr()
    assert status in STATUSES and "Traceback" not in captured.err, captured.err
    if status == exit_codes.INPUT:
        assert str(config) in captured.err


@st.composite
def workloads(draw: Any, gpus: int) -> Workload:
    count = draw(st.integers(1, 5))
    jobs = []
    for job_id in range(count):
        epochs = draw(st.integers(1, 6))
        seconds = draw(
            st.lists(
                st.one_of(st.floats(1.0, 900.0), st.sampled_from([1e-6, 2e-6, 1e-3, 0.5, 3000.0])),
                min_size=epochs,
                max_size=epochs,
            )
        )
        jobs.append(
            Job(
                job_id=draw(st.one_of(st.just(job_id), st.integers(-(2**63), 2**63 - 1))),
                arrival_time=draw(st.one_of(st.floats(0, 5000), st.sampled_from([0.0, 1e9, 1e12]))),
                gang_size=draw(st.integers(1, gpus)),
                model=draw(st.sampled_from(["ResNet-18", "LM", "custom"])),
                dataset="",
                mode="static",
                batch_sizes=draw(
                    st.lists(st.sampled_from([16, 32, 64, 2**40]), min_size=epochs, max_size=epochs)
                ),
                epoch_seconds=seconds,
                weight=draw(st.one_of(st.just(1.0), st.sampled_from([1e-300, 1e300, 2.5e-7, 7.5]))),
            )
        )
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        jobs = [dataclasses.replace(j, job_id=i) for i, j in enumerate(jobs)]
    return Workload(tuple(jobs), None, source="fuzz")


@fuzz(40)
@given(
    data=st.data(),
    gpus=st.integers(1, 8),
    policy=st.sampled_from(sorted(POLICIES)),
    noise=st.sampled_from([0.0, 0.0, 0.5]),
    round_seconds=st.sampled_from([120.0, 30.0, 1e4]),
)
def test_the_simulator_returns_a_result_or_a_documented_error(
    data: Any, gpus: int, policy: str, noise: float, round_seconds: float
) -> None:
    workload = data.draw(workloads(gpus))
    config = SimulationConfig(
        gpus=gpus,
        throughput_noise=noise,
        round_seconds=round_seconds,
        restart_penalty_seconds=0.0,
        max_rounds=200,
    )
    try:
        result = simulate(workload, policy, config)
    except SimulationStalledError:
        return
    except ValueError as exc:
        assert "job" in str(exc) or "policy" in str(exc), str(exc)
        return
    assert np.isfinite(result.makespan) and np.all(np.isfinite(result.jct))
    assert len(result.jct) == len(workload)
