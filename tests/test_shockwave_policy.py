"""The Shockwave policy: fairness targets, budgets, the planning step, backends and determinism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.cli import main
from shockwave.errors import InputError
from shockwave.market import SolverStatus
from shockwave.policies import make_policy, policy_parameters
from shockwave.policies.shockwave import Plan, Shockwave
from shockwave.policies.shockwave.budgets import critical_path_weights, market_budgets
from shockwave.policies.shockwave.correction import correct_plan, required_rounds
from shockwave.policies.shockwave.fairness import (
    FINISHING_EXPONENT,
    MAX_BOOST,
    FinishTimeTargets,
    fairness_boost,
)
from shockwave.policies.shockwave.policy import paced_shares
from shockwave.scheduling import ClusterState, SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import GeneratorParameters, generate_workload
from shockwave.workload import Job, Workload

from .conftest import CANONICAL_TRACE, TACC


# ------------------------------------------------------------------------------ fairness
def test_boost_is_rho_to_the_lambda_above_rho_max_only() -> None:
    rho = np.array([0.5, 1.0, 1.2, 2.0, 1.3])
    remaining = np.array([1000.0, 1000.0, 1000.0, 1000.0, 60.0])
    boost = fairness_boost(rho, remaining, rho_max=1.0, exponent=12.0, round_seconds=120.0)
    assert boost[:2].tolist() == [1.0, 1.0]
    assert boost[2] == pytest.approx(1.2**12)
    assert boost[3] == pytest.approx(2.0**12)
    assert boost[4] == pytest.approx(min(1.3**FINISHING_EXPONENT, MAX_BOOST))  # within a round


def test_boost_is_capped_for_hopeless_jobs() -> None:
    boost = fairness_boost(
        np.array([50.0]), np.array([1e4]), rho_max=1.0, exponent=12.0, round_seconds=120.0
    )
    assert boost[0] == MAX_BOOST


def test_momentum_target_follows_the_original_rule() -> None:
    targets = FinishTimeTargets(jobs=3)
    positions = np.array([0, 2])
    admitted = np.array([0.0, 100.0])
    # round 0: 2 jobs on 4 GPUs: share 1
    targets.reestimate(0, positions, admitted, np.array([1000.0, 500.0]), gpus=4)
    assert targets.targets(0, positions).tolist() == [1000.0, 600.0]
    # round 5: 8 GPUs / 2 jobs still share 1; new estimates 2000 and 700
    targets.reestimate(5, positions, admitted, np.array([2000.0, 600.0]), gpus=8)
    # at round 10 each estimate has stood 5 rounds: mean, mixed 0.9/0.1 with the latest
    expected = 0.9 * np.array([1500.0, 650.0]) + 0.1 * np.array([2000.0, 700.0])
    np.testing.assert_allclose(targets.targets(10, positions), expected)
    # a second estimate in the same round replaces the first (weight 0)
    targets.reestimate(10, positions, admitted, np.array([3000.0, 600.0]), gpus=8)
    targets.reestimate(10, positions, admitted, np.array([2000.0, 600.0]), gpus=8)
    weights = np.array([5.0, 5.0])
    history = np.array([[1000.0, 2000.0], [600.0, 700.0]])
    mean = (history * weights).sum(axis=1) / 10.0
    np.testing.assert_allclose(
        targets.targets(10, positions), 0.9 * mean + 0.1 * np.array([2000.0, 700.0])
    )


def test_equal_share_ignores_gang_sizes_and_caps_at_one() -> None:
    targets = FinishTimeTargets(jobs=4)
    positions = np.arange(4)
    targets.reestimate(0, positions, np.zeros(4), np.full(4, 100.0), gpus=2)
    assert targets.targets(0, positions).tolist() == [200.0] * 4  # share 2 / 4


def test_projected_ratio_clocks() -> None:
    jct = FinishTimeTargets(jobs=1, clock="jct")
    absolute = FinishTimeTargets(jobs=1, clock="absolute")
    for t in (jct, absolute):
        t.reestimate(0, np.array([0]), np.array([1000.0]), np.array([500.0]), gpus=1)
    args = (1200.0, 1, np.array([0]), np.array([1000.0]), np.array([500.0]), 1)
    # on its own GPU from t = 1200: finishes at 1700 against a target of 1500
    assert jct.projected_ratio(*args)[0] == pytest.approx(700.0 / 500.0)
    assert absolute.projected_ratio(*args)[0] == pytest.approx(1700.0 / 1500.0)
    assert jct.deadlines(1, np.array([0]), np.array([1000.0]), 1.2)[0] == pytest.approx(1600.0)


# -------------------------------------------------------------------------------- pacing
def test_pacing_spreads_each_jobs_rounds_over_its_rounds_with_work() -> None:
    shares = np.array([[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
    valuations = np.array([[0.1, 0.1, 0.1, 0.1], [0.3, 0.2, 0.0, 0.0], [0.1, 0.1, 0.1, 0.1]])
    paced = paced_shares(shares, valuations)
    np.testing.assert_allclose(paced[0], [0.5] * 4)  # two rounds placed late: now half of each
    np.testing.assert_allclose(paced[1], [1.0, 1.0, 0.0, 0.0])  # a job ending soon keeps them
    np.testing.assert_allclose(paced[2], shares[2])
    gangs = np.array([2, 1, 2])
    # the supply is respected on average over the window
    assert (paced * gangs[:, None]).sum() == pytest.approx((shares * gangs[:, None]).sum())


def test_a_job_planned_late_every_round_is_not_postponed_forever() -> None:
    """Two identical long jobs on one GPU: both make progress every few rounds."""
    jobs = tuple(
        Job(i, 0.0, 1, "LM", "", "static", np.full(40, 10), np.full(40, 120.0)) for i in range(2)
    )
    policy = Recording(makespan_weight=0.0, remaining_exponent=0.0)
    simulate(Workload(jobs), policy, SimulationConfig(gpus=1))
    runs = [set(chosen.tolist()) for chosen in policy.dispatched]
    for job_id in (0, 1):
        gaps = np.diff([k for k, chosen in enumerate(runs) if job_id in chosen])
        assert gaps.size and gaps.max() <= 4, f"job {job_id} waited {gaps.max()} rounds"


# ------------------------------------------------------------------------------- budgets
def test_critical_path_weights() -> None:
    weights = critical_path_weights(np.array([1000.0, 5000.0, 4800.0, 100.0]), 360.0)
    assert weights.sum() == pytest.approx(1.0)
    assert weights[0] == weights[3] == 0.0
    assert weights[1] > weights[2] > 0.0
    assert critical_path_weights(np.zeros(3), 360.0).tolist() == [0.0] * 3
    for window in (0.0, 1e-300):  # only the longest jobs, equally
        tied = critical_path_weights(np.array([5000.0, 100.0, 5000.0]), window)
        assert tied.tolist() == [0.5, 0.0, 0.5]


def test_budgets_combine_gang_tilt_boost_and_makespan() -> None:
    weight = np.ones(3)
    gang = np.array([1, 4, 1])
    remaining = np.array([600.0, 600.0, 6000.0])
    plain = market_budgets(
        weight, gang, np.ones(3), remaining, gang_budgets=True, remaining_exponent=0.0,
        makespan_weight=0.0, window_seconds=360.0, round_seconds=120.0,
    )  # fmt: skip
    assert plain.tolist() == [1.0, 4.0, 1.0]  # time-fair: proportional to gang size
    tilted = market_budgets(
        weight, gang, np.ones(3), remaining, gang_budgets=False,
        remaining_exponent=1.0, makespan_weight=0.0, window_seconds=360.0, round_seconds=120.0,
    )  # fmt: skip
    assert tilted[0] == tilted[1]
    assert tilted[2] == pytest.approx(tilted[0] * 720.0 / 6120.0)  # (median + tau) / (R + tau)
    critical = market_budgets(
        weight, gang, np.ones(3), remaining, gang_budgets=True, remaining_exponent=0.0,
        makespan_weight=0.5, window_seconds=360.0, round_seconds=120.0,
    )  # fmt: skip
    assert critical.tolist() == [1.0, 4.0, 1.0 + 0.5 * 6.0]  # the longest job takes it all
    late = market_budgets(
        weight, gang, np.array([1.0, 1.0, 3.0]), remaining, gang_budgets=True,
        remaining_exponent=1.0, makespan_weight=0.0, window_seconds=360.0, round_seconds=120.0,
    )  # fmt: skip
    assert late[2] == pytest.approx(3.0)  # behind schedule: boosted, no longer held back


# ---------------------------------------------------------------------------- correction
def test_correction_meets_feasible_floors_with_the_least_change() -> None:
    shares = np.array([[1.0, 1.0], [0.0, 0.0]])
    valuations = np.full((2, 2), 0.1)
    fixed = correct_plan(shares, valuations, np.array([1, 1]), 1.0, np.array([0.0, 1.0]),
                         np.ones(2))  # fmt: skip
    assert fixed.solved
    np.testing.assert_allclose(fixed.shares.sum(axis=1), [1.0, 1.0], atol=1e-4)
    assert np.all(fixed.shares.sum(axis=0) <= 1.0 + 1e-9)
    assert fixed.shortfall.max() == pytest.approx(0.0, abs=1e-4)


def test_correction_not_needed_when_the_market_meets_every_floor() -> None:
    shares = np.array([[1.0, 0.0], [0.0, 1.0]])
    fixed = correct_plan(shares, np.full((2, 2), 0.1), np.array([1, 1]), 1.0,
                         np.array([1.0, 0.5]), np.ones(2))  # fmt: skip
    assert fixed.status == "not needed" and fixed.solved and not fixed.inexact
    assert fixed.shares is shares


def test_correction_gives_way_on_the_least_urgent_floor() -> None:
    shares = np.zeros((2, 2))
    valuations = np.full((2, 2), 0.1)
    fixed = correct_plan(shares, valuations, np.array([1, 1]), 1.0, np.array([2.0, 2.0]),
                         np.array([1.0, 100.0]))  # fmt: skip
    assert fixed.solved
    np.testing.assert_allclose(fixed.shares.sum(axis=1), [0.0, 2.0], atol=1e-3)
    assert fixed.shortfall[0] == pytest.approx(2.0, abs=1e-3)


def test_required_rounds() -> None:
    need = required_rounds(
        1000.0, np.array([3400.0, 900.0, 1e9]), np.array([1200.0, 500.0, 50.0]), 20, 120.0
    )
    assert need[0] == pytest.approx(10.0)  # half the time from now on
    assert need[1] == pytest.approx(500.0 / 120.0)  # deadline passed: all it needs
    assert need[2] == pytest.approx(20 * 50.0 / (1e9 - 1000.0))


# ------------------------------------------------------------------------ planning step
class Recording(Shockwave):
    """Shockwave that keeps every plan and the state it was made from."""

    def __init__(self, **parameters: Any) -> None:
        super().__init__(**parameters)
        self.seen: list[tuple[ClusterState, Plan]] = []
        self.dispatched: list[npt.NDArray[np.int64]] = []

    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        chosen = np.asarray(super().schedule(state), dtype=np.int64)
        assert self.last_plan is not None
        self.seen.append((state, self.last_plan))
        self.dispatched.append(chosen)
        return chosen


def small_workload(seed: int = 3, jobs: int = 30, gpus: int = 8) -> Workload:
    return generate_workload(GeneratorParameters(jobs=jobs, gpus=gpus, seed=seed))


@pytest.mark.parametrize("mechanics", ["exact", "gavel"])
def test_every_plan_fits_the_cluster_and_budgets_carry_the_fairness_boost(
    mechanics: Any,
) -> None:
    workload = small_workload()
    policy = Recording(planning_rounds=8, fairness_exponent=4.0)  # the boost under test
    result = simulate(workload, policy, SimulationConfig(gpus=8, mechanics=mechanics))
    assert np.isfinite(result.to_dict()["makespan"])
    boosted = 0
    for state, plan in policy.seen:
        gangs = (
            state.gang_size[state.index_of(plan.job_ids)]
            if plan.job_ids.size
            else state.gang_size[:0]
        )
        assert np.all((plan.schedule * gangs[:, None]).sum(axis=0) <= state.gpus)
        if plan.round_index != state.round_index:
            continue
        # recompute the budgets from the plan's rho^ and remaining: the boost is applied
        boost = fairness_boost(
            plan.rho_hat, plan.remaining_seconds, rho_max=policy.rho_max,
            exponent=policy.fairness_exponent, round_seconds=state.round_seconds,
        )  # fmt: skip
        expected = market_budgets(
            state.weight, state.gang_size, boost, plan.remaining_seconds, gang_budgets=True,
            remaining_exponent=policy.remaining_exponent, makespan_weight=policy.makespan_weight,
            window_seconds=policy.critical_window_rounds * state.round_seconds,
            round_seconds=state.round_seconds,
        )  # fmt: skip
        np.testing.assert_allclose(plan.budgets, expected)
        boosted += int((plan.rho_hat > policy.rho_max).any())
        assert plan.solution is not None
        # Every plan is certified to the policy's tolerance (a warm start that stalls is retried
        # cold), and its status says so.
        assert plan.solution.converged, plan.solution
        assert plan.solution.gap <= policy.solver_tolerance
        assert plan.solution.status == SolverStatus.CONVERGED
    assert policy.stats.not_converged == 0
    assert policy.stats.not_converged_by_status.get("iteration_limit", 0) == 0
    assert boosted > 0, "no job ever fell behind its target: the test exercises nothing"
    assert policy.stats.solves == len([1 for s, p in policy.seen if p.round_index == s.round_index])


def test_simulations_are_deterministic(canonical: Workload) -> None:
    runs = [
        simulate(canonical, make_policy("shockwave"), SimulationConfig(gpus=32, mechanics=m))
        for m in ("gavel", "gavel", "exact", "exact")
    ]
    for first, second in (runs[:2], runs[2:]):
        assert first.to_dict()["jct"] == second.to_dict()["jct"]
        assert first.to_dict()["makespan"] == second.to_dict()["makespan"]


@pytest.fixture(scope="module")
def canonical() -> Workload:
    from shockwave.traces import load_workload

    return load_workload(CANONICAL_TRACE, TACC)


def test_replan_period_replans_on_events_and_periodically() -> None:
    workload = small_workload(jobs=12)
    every = Recording(replan_period=1)
    sparse = Recording(replan_period=5)
    simulate(workload, every, SimulationConfig(gpus=8))
    simulate(workload, sparse, SimulationConfig(gpus=8))
    assert sparse.stats.solves < every.stats.solves
    for state, plan in sparse.seen:
        age = state.round_index - plan.round_index
        assert age < 5
        if state.arrived.size or state.completed.size:
            assert age == 0


@pytest.mark.parametrize(
    "parameters",
    [
        {"estimator": "dirichlet", "fairness_clock": "absolute"},
        {"estimator": "oracle", "ftf_correction": True},
    ],
)
def test_estimators_clocks_and_correction_run(parameters: dict[str, Any]) -> None:
    policy = Recording(**parameters)
    result = simulate(small_workload(), policy, SimulationConfig(gpus=8, mechanics="gavel"))
    assert np.all(np.isfinite(result.to_dict()["jct"]))
    if parameters.get("ftf_correction"):
        assert policy.stats.corrections > 0
        assert policy.stats.correction_failures == 0
        assert policy.stats.correction_inexact <= policy.stats.corrections
        assert policy.stats.solves > policy.stats.corrections  # some plans needed none


def test_milp_backend_on_a_small_cluster() -> None:
    jobs = tuple(
        Job(i, 60.0 * i, 1 + (i % 2), "LM", "", "static", np.full(4, 10), np.full(4, 150.0))
        for i in range(5)
    )
    policy = Recording(backend="milp", milp_time_limit=5.0, planning_rounds=6, replan_period=3)
    result = simulate(Workload(jobs), policy, SimulationConfig(gpus=2))
    assert np.all(np.isfinite(result.to_dict()["jct"]))
    assert sum(policy.stats.milp_paths.values()) == policy.stats.solves > 0
    for state, plan in policy.seen:
        gangs = (
            state.gang_size[state.index_of(plan.job_ids)]
            if plan.job_ids.size
            else state.gang_size[:0]
        )
        assert np.all((plan.schedule * gangs[:, None]).sum(axis=0) <= 2)


@pytest.mark.parametrize(
    ("parameters", "argument", "message"),
    [
        ({"planning_rounds": 0}, "planning_rounds", "must be >= 1"),
        ({"estimator": "crystal-ball"}, "estimator", "must be one of"),
        ({"backend": "gurobi"}, "backend", "must be one of"),
        ({"fairness_clock": "sundial"}, "fairness_clock", "must be one of"),
        ({"milp_time_limit": 0.0}, "milp_time_limit", "must be > 0"),
    ],
)
def test_bad_parameters_name_themselves(
    parameters: dict[str, Any], argument: str, message: str
) -> None:
    with pytest.raises(InputError, match=message) as info:
        Shockwave(**parameters)
    assert info.value.argument == argument
    assert policy_parameters("shockwave")["planning_rounds"] == 20


def test_config_file_sets_parameters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "sw.toml"
    config.write_text("[shockwave]\nplanning_rounds = 10\nestimator = 'oracle'\n")
    out = tmp_path / "r.json"
    assert main(["simulate", "--trace", str(CANONICAL_TRACE), "--throughputs", str(TACC),
                 "--gpus", "32", "--policy", "shockwave", "--config", str(config),
                 "--output", str(out)]) == 0  # fmt: skip
    assert out.exists()
    config.write_text("[shockwave]\nhorizon = 10\n")
    status = main(["simulate", "--trace", str(CANONICAL_TRACE), "--throughputs", str(TACC),
                   "--gpus", "32", "--policy", "shockwave", "--config", str(config)])  # fmt: skip
    assert status == 3
    assert "has no parameter 'horizon'" in capsys.readouterr().err


def test_the_round_is_the_plans_column_plus_backfill() -> None:
    """Each round runs the plan's column for the active jobs, then fills the GPUs left greedily
    in the backfill order: walking that order (then the jobs admitted since the plan, in
    admission order), a job runs exactly when its gang fits in the GPUs still free.

    Three 2-GPU jobs and a 1-GPU job on 3 GPUs: a plan's round holds one 2-GPU gang and leaves
    a GPU that only the 1-GPU job can use."""
    workload = Workload(
        tuple(
            Job(i, 0.0, gang, "LM", "", "static", np.full(6, 10), np.full(6, 300.0 * (1 + 0.3 * i)))
            for i, gang in enumerate((2, 2, 2, 1))
        )
    )
    policy = Recording()
    simulate(workload, policy, SimulationConfig(gpus=3))
    backfilled = skipped = 0
    for (state, plan), chosen in zip(policy.seen, policy.dispatched, strict=True):
        column = plan.schedule[:, state.round_index - plan.round_index]
        active = set(state.job_ids.tolist())
        planned = set(plan.job_ids[column].tolist()) & active
        ran = set(chosen.tolist())
        assert planned <= ran
        assert int(state.gang_size[state.index_of(chosen)].sum()) <= state.gpus
        free = state.gpus - int(state.gang_size[state.index_of(sorted(planned))].sum())
        if free <= 0:
            assert ran == planned
            continue
        order = [j for j in plan.backfill_order.tolist() if j in active]
        order += [j for j in state.job_ids.tolist() if j not in set(order)]
        for job in order:
            if job in planned:
                continue
            gang = int(state.gang_size[state.index_of([job])][0])
            if gang <= free:
                assert job in ran, f"round {state.round_index}: job {job} fits but did not run"
                free -= gang
                backfilled += 1
            else:
                assert job not in ran, f"round {state.round_index}: job {job} ran past the GPUs"
                skipped += 1
    assert len(policy.seen) > 10
    assert backfilled > 0, "no round was backfilled: the test exercises nothing"
    assert skipped > 0, "no job was ever too large for the GPUs left"
