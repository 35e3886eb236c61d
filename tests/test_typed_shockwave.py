"""The Shockwave policy on a typed cluster: the market over (round, GPU type) as a typed policy.

It plans with each job's speed on every type (a job goes where its comparative advantage is),
charges a move its restart, values static jobs exactly, holds an adaptation model per type for
adapting jobs, never gives a job time on a type it cannot use, and a run saved at a boundary and
restored ends bit for bit as the run straight through.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shockwave.errors import InputError
from shockwave.heterogeneous import HeterogeneousConfig, simulate_heterogeneous
from shockwave.heterogeneous.protocol import TypedAllocationState
from shockwave.heterogeneous.registry import make_typed_policy
from shockwave.heterogeneous.simulate import load_typed_trace, typed_result, typed_round_loop
from shockwave.heterogeneous.typed_jobs import typed_jobs_from_profiles
from shockwave.persistence import dump_state, load_state
from shockwave.policies.shockwave.typed_policy import TypedShockwave, finishing_types
from shockwave.policies.shockwave.typed_valuations import TypedPredictor
from shockwave.rounds import RoundSnapshot
from shockwave.traces import generate_workload
from shockwave.traces.generator_parameters import GeneratorParameters

DATA = Path(__file__).parent / "data" / "gavel"
CLUSTER = "v100:4,p100:4,k80:4"
EXACT = HeterogeneousConfig(mechanics="exact", round_seconds=360.0, restart_penalty_seconds=20.0)


def _state(
    throughput: list[list[float]],
    counts: list[int],
    *,
    remaining: list[int] | None = None,
    previous: list[int] | None = None,
    penalty: float = 0.0,
    round_seconds: float = 360.0,
) -> TypedAllocationState:
    t = np.array(throughput, dtype=np.float64)
    n, k = t.shape
    steps = np.full(n, 100_000, dtype=np.int64)
    return TypedAllocationState(
        time=0.0,
        types=("v100", "p100", "k80")[:k],
        counts=np.array(counts, dtype=np.int64),
        job_ids=np.arange(n, dtype=np.int64),
        throughput=t,
        gang=np.ones(n, dtype=np.int64),
        weight=np.ones(n),
        remaining_steps=steps if remaining is None else np.array(remaining, dtype=np.int64),
        time_since_arrival=np.zeros(n),
        round_seconds=round_seconds,
        positions=np.arange(n, dtype=np.int64),
        total_steps=steps,
        restart_penalty_seconds=penalty,
        previous_types=np.full(n, -1, dtype=np.int64)
        if previous is None
        else np.array(previous, dtype=np.int64),
    )


def test_each_job_is_planned_where_its_comparative_advantage_is() -> None:
    # job 0 is 10x faster on the v100, job 1 barely faster: one GPU of each type
    x = TypedShockwave().allocate(_state([[10.0, 1.0], [2.0, 1.5]], [1, 1]))
    assert x.shape == (2, 2)
    assert x[0, 0] > 0.9
    assert x[1, 1] > 0.9
    assert np.all(x.sum(axis=1) <= 1.0 + 1e-9)


def test_a_type_a_job_cannot_use_gets_it_no_time() -> None:
    # job 1 cannot run on the p100 (throughput 0); job 2's gang is larger than the k80s
    state = _state([[4.0, 2.0, 1.0], [4.0, 0.0, 1.0], [4.0, 2.0, 1.0]], [2, 2, 1])
    state = TypedAllocationState(**{**state.__dict__, "gang": np.array([1, 1, 2])})
    x = TypedShockwave().allocate(state)
    assert x[1, 1] == 0.0
    assert x[2, 2] == 0.0
    assert np.all(x.sum(axis=1) <= 1.0 + 1e-9)


def test_a_move_costs_its_restart() -> None:
    # two equally fast types, one GPU each, two jobs that each ran on one of them last round:
    # with a restart penalty each keeps its type
    for previous in ([0, 1], [1, 0]):
        x = TypedShockwave().allocate(
            _state([[3.0, 3.0], [3.0, 3.0]], [1, 1], previous=previous, penalty=120.0)
        )
        for job, k in enumerate(previous):
            assert x[job, k] > 0.5, (previous, x)
            assert x[job, 1 - k] < 1e-3 * x[job, k], (previous, x)


def test_a_job_that_can_finish_this_round_gets_the_type_where_it_finishes_soonest() -> None:
    # job 0 finishes in 30 s on the v100 and in 300 s on the p100: in the market both are worth
    # its whole remaining work, so without the rule it is parked on the cheaper, slower p100
    state = _state([[10.0, 1.0], [10.0, 9.0]], [1, 1], remaining=[300, 100_000])
    np.testing.assert_array_equal(TypedShockwave().allocate(state), [[1.0, 0.0], [0.0, 1.0]])
    parked = TypedShockwave(finish_fastest=False).allocate(state)
    assert parked[0, 1] > 0.99
    # far behind (rho ~ 50,000 s / its isolated runtime) among long jobs: the v100 too, and the
    # others share what is left with ordinary budgets (no ``** 100`` boost of 1e12 for it)
    state = _state([[10.0, 5.0]] * 4, [2, 2], remaining=[300, 100_000, 100_000, 100_000])
    behind = np.array([50_000.0, 0.0, 0.0, 0.0])
    state = TypedAllocationState(**{**state.__dict__, "time_since_arrival": behind})
    policy = TypedShockwave()
    x = policy.allocate(state)
    np.testing.assert_array_equal(x[0], [1.0, 0.0])
    np.testing.assert_allclose(x[1:].sum(axis=0), [1.0, 2.0], atol=1e-3)  # what is left
    plan = policy.last_plan
    assert plan is not None
    assert plan.budgets.max() / plan.budgets.min() < 10.0
    old = TypedShockwave(finish_fastest=False, fairness_exponent=0.0)
    assert old.allocate(state)[0, 1] > 0.99
    assert old.last_plan is not None and old.last_plan.budgets[0] == 1e12


def test_finishing_jobs_are_served_furthest_behind_first_where_their_gang_fits() -> None:
    round_seconds = 360.0
    # seconds each job needs to finish on v100 / p100 (a move's restart included)
    seconds = np.array([[100.0, 200.0], [50.0, 300.0], [90.0, 400.0], [80.0, np.inf]])
    gang = np.array([1, 1, 2, 1])
    rho_hat = np.array([1.0, 3.0, 5.0, 2.0])
    free = np.array([2.0, 1.0])
    given = finishing_types(seconds, round_seconds, gang, rho_hat, free)
    # job 2 (furthest behind) takes both v100s; job 1 then the p100; jobs 3 and 0 find no room
    # (job 3 cannot run on the p100)
    np.testing.assert_array_equal(given, [-1, 1, 0, -1])
    np.testing.assert_array_equal(free, [0.0, 0.0])
    # a job that cannot finish within the round on any type is left to the market
    assert finishing_types(np.array([[400.0, 361.0]]), round_seconds, np.array([1]),
                           np.array([9.0]), np.array([1.0, 1.0]))[0] == -1  # fmt: skip


def test_static_valuations_are_exact() -> None:
    # 1,000 iterations left of 100,000 at 2 it/s on the v100, 0.5 on the p100, rounds of 360 s
    state = _state([[2.0, 0.5]], [1, 1], remaining=[1_000])
    prediction = TypedPredictor("markov").predict(state, 4)
    v100 = prediction.valuations[0, :, 0] * 100_000
    p100 = prediction.valuations[0, :, 1] * 100_000
    np.testing.assert_allclose(v100, [720.0, 280.0, 0.0, 0.0])
    np.testing.assert_allclose(p100, [180.0, 180.0, 180.0, 180.0])
    np.testing.assert_allclose(prediction.remaining_seconds[0], [500.0, 2000.0])
    assert prediction.offsets[0] == pytest.approx(0.99)


def test_parameters_are_checked_by_the_homogeneous_rules() -> None:
    with pytest.raises(InputError, match="planning_rounds"):
        TypedShockwave(planning_rounds=0)
    with pytest.raises(InputError, match="estimator"):
        TypedShockwave(estimator="guess")  # type: ignore[arg-type]
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(InputError, match="time_discount"):
            TypedShockwave(time_discount=bad)


def _generated() -> object:
    mix = (0.6, 0.3, 0.1, 0.0)  # no 8-GPU gangs: no type has 8 GPUs
    parameters = GeneratorParameters.for_cluster(16, CLUSTER, seed=11, gang_size_mix=mix)
    return generate_workload(parameters)


def test_adapting_jobs_run_to_completion_with_one_model_per_type() -> None:
    jobs = typed_jobs_from_profiles(_generated(), CLUSTER)  # type: ignore[arg-type]
    policy = TypedShockwave()
    result = simulate_heterogeneous(jobs, policy, EXACT)
    assert not np.isnan(result.completion).any()
    assert len(policy._predictor.models) == 3  # one adaptation model per type
    assert result.market is not None  # what the solves did is in the result
    assert result.market["solves"] == policy.stats.solves > 0
    assert result.market["not_converged"] == 0
    assert "market" in result.to_dict()
    assert "market" not in simulate_heterogeneous(jobs, "gavel", EXACT).to_dict()
    # the same run again: bit for bit
    again = simulate_heterogeneous(jobs, TypedShockwave(), EXACT)
    assert again.to_json() == result.to_json()


def _resumed(jobs: object, config: HeterogeneousConfig, stop: int) -> str:
    loop = typed_round_loop(jobs, make_typed_policy("shockwave"), config)  # type: ignore[arg-type]
    assert not loop.run(until_round=stop)
    saved = load_state(dump_state("test", loop.snapshot().to_data()), "test")
    fresh = typed_round_loop(jobs, make_typed_policy("shockwave"), config)  # type: ignore[arg-type]
    fresh.restore(RoundSnapshot.from_data(saved, "snapshot"), "snapshot")
    assert fresh.run()
    return typed_result(fresh, jobs, config, 0.0).to_json()  # type: ignore[arg-type]


@pytest.mark.parametrize("mechanics", ["exact", "gavel"])
def test_a_run_restored_from_a_snapshot_ends_bit_for_bit(mechanics: str) -> None:
    adapting = typed_jobs_from_profiles(_generated(), CLUSTER)  # type: ignore[arg-type]
    static = load_typed_trace(
        DATA / "H4.trace", DATA / "simulation_throughputs.json.gz", "v100:6,p100:6,k80:6"
    )
    config = HeterogeneousConfig(mechanics=mechanics)  # type: ignore[arg-type]
    for jobs, stop in ((adapting, 6), (static, 40)):
        straight = simulate_heterogeneous(jobs, "shockwave", config).to_json()
        assert _resumed(jobs, config, stop) == straight


def test_a_job_crowded_out_by_finishing_jobs_waits_and_the_others_are_still_planned() -> None:
    # two GPUs of one type: job 0 finishes this round on one of them, job 1's gang of 2 no
    # longer fits this round, job 2 gets the other GPU from the market
    state = _state([[10.0], [10.0], [10.0]], [2], remaining=[300, 100_000, 100_000])
    state = TypedAllocationState(**{**state.__dict__, "gang": np.array([1, 2, 1])})
    x = TypedShockwave().allocate(state)
    np.testing.assert_allclose(x[:, 0], [1.0, 0.0, 1.0], atol=1e-6)


@pytest.mark.parametrize(
    "module",
    ["shockwave.policies.shockwave.typed_policy", "shockwave.heterogeneous.registry"],
)
def test_the_policy_and_its_registry_import_first(module: str, tmp_path: Path) -> None:
    """Either side of the registry's import of the policy can be a fresh interpreter's first
    import (the policy importing ``shockwave.heterogeneous`` once failed as a circular import)."""
    code = (
        f"import {module}\n"
        "from shockwave.heterogeneous.registry import make_typed_policy\n"
        "print(make_typed_policy('shockwave', 0, {'solver_threads': 2}).solver_threads)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "2"
