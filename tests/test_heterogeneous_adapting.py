"""Native workloads (adapting jobs) on a typed cluster under the exact mechanics: a job's speed on
a type is that of the epoch it is in there, it keeps its epoch when it moves between types (and
pays the restart penalty), its ``gpu_types`` are respected, and generated workloads run to
completion under every typed policy that can schedule them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from shockwave.cli import main
from shockwave.heterogeneous import (
    HeterogeneousConfig,
    make_typed_policy,
    simulate_heterogeneous,
    typed_result,
    typed_round_loop,
)
from shockwave.heterogeneous.protocol import TypedAllocationPolicy, TypedAllocationState
from shockwave.heterogeneous.registry import TYPED_POLICIES
from shockwave.heterogeneous.typed_jobs import typed_jobs_from_profiles
from shockwave.heterogeneous.workload_check import UnschedulableJobError
from shockwave.persistence import dump_state, load_state
from shockwave.rounds import RoundSnapshot
from shockwave.traces import generate_workload, load_workload
from shockwave.traces.generator_parameters import GeneratorParameters
from shockwave.workload import Job, Workload

CLUSTER = "v100:4,p100:4,k80:4"
EXACT = HeterogeneousConfig(mechanics="exact", round_seconds=360.0, restart_penalty_seconds=20.0)


class FastestNow(TypedAllocationPolicy):
    """All of each job's time on the type where it is fastest at its current epoch; records
    what it was shown."""

    name = "fastest-now"

    def __init__(self) -> None:
        self.seen: list[tuple[list[list[float]], list[int]]] = []

    def reset(self) -> None:
        self.seen = []

    def allocate(self, state: TypedAllocationState) -> np.ndarray:
        self.seen.append((state.throughput.tolist(), state.remaining_steps.tolist()))
        x = np.zeros_like(state.throughput)
        x[np.arange(state.num_active), np.argmax(state.throughput, axis=1)] = 1.0
        return x


def _job(job_id: int, by_type: dict[str, list[float]], **extra: object) -> Job:
    sizes = [32, 64]
    first = next(iter(by_type.values()))
    return Job(
        job_id=job_id, arrival_time=0.0, gang_size=1, model="custom", dataset="d",
        mode="accordion", batch_sizes=sizes, epoch_seconds=first, samples_per_epoch=3200,
        epoch_seconds_by_type={k: v for k, v in by_type.items()}, **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_job_follows_its_profile_and_keeps_its_epoch_when_it_moves() -> None:
    # epoch 0: 100 iterations (3200 / 32), 100 s on v100, 200 s on k80;
    # epoch 1: 50 iterations (3200 / 64), 300 s on v100 (slower there), 200 s on k80
    job = _job(0, {"v100": [100.0, 300.0], "k80": [200.0, 200.0]})
    jobs = typed_jobs_from_profiles(Workload(jobs=(job,), source="hand"), "v100:1,k80:1")
    policy = FastestNow()
    result = simulate_heterogeneous(jobs, policy, EXACT)
    # round 0 on v100 (1 it/s against 0.5): 20 s penalty, epoch 0 (100 s), 240 s of epoch 1;
    # round 1: epoch 1 is faster on k80 (50/200 against 50/300 it/s): it moves, pays 20 s and
    # runs the remaining 20 % of epoch 1 there (40 s): done at 360 + 20 + 40
    assert policy.seen[0] == ([[1.0, 0.5]], [150])
    thr, remaining = policy.seen[1]
    assert thr == [[pytest.approx(50 / 300), 0.25]] and remaining == [10]
    assert result.completion[0] == pytest.approx(420.0)
    assert result.gpu_seconds[0].tolist() == pytest.approx([340.0, 40.0])
    # isolated: half of each type (one job, two GPUs, capped at all of its time):
    # 1 / (0.5 / 100 + 0.5 / 200) + 1 / (0.5 / 300 + 0.5 / 200) = 133.33 + 240 s
    assert result.isolated_seconds[0] == pytest.approx(400.0 / 3.0 + 240.0)
    assert result.ftf[0] == pytest.approx(420.0 / (400.0 / 3.0 + 240.0), abs=1e-5)


def test_a_job_staying_on_its_type_pays_no_penalty_after_its_first_round() -> None:
    job = _job(0, {"v100": [100.0, 300.0]})
    jobs = typed_jobs_from_profiles(Workload(jobs=(job,), source="hand"), "v100:1")
    result = simulate_heterogeneous(jobs, FastestNow(), EXACT)
    # 20 s penalty, 340 s of work in round 0; the last 60 s of epoch 1 in round 1, no penalty
    assert result.completion[0] == pytest.approx(420.0)
    assert result.isolated_seconds[0] == pytest.approx(400.0)


def _generated() -> Workload:
    mix = (0.6, 0.3, 0.1, 0.0)  # no 8-GPU gangs: no type has 8 GPUs
    parameters = GeneratorParameters.for_cluster(20, CLUSTER, seed=5, gang_size_mix=mix)
    return generate_workload(parameters)


def test_gpu_types_are_respected() -> None:
    workload = _generated()
    only = {0: ("k80",), 3: ("p100",), 5: ("v100", "p100")}
    jobs_in = tuple(
        dataclasses.replace(j, gpu_types=only[j.job_id]) if j.job_id in only else j
        for j in workload.jobs
    )
    jobs = typed_jobs_from_profiles(dataclasses.replace(workload, jobs=jobs_in), CLUSTER)
    types = jobs.cluster.types
    for policy in ("gavel", "fifo", "mst", "gavel-agnostic"):
        result = simulate_heterogeneous(jobs, policy, EXACT)
        assert not np.isnan(result.completion).any()
        for job_id, allowed in only.items():
            row = int(np.flatnonzero(jobs.job_ids == job_id)[0])
            for k, name in enumerate(types):
                if name not in allowed:
                    assert result.gpu_seconds[row, k] == 0.0, (policy, job_id, name)
            assert result.gpu_seconds[row].sum() > 0.0


def test_a_constraint_no_type_satisfies_is_refused_naming_the_job() -> None:
    workload = _generated()
    bad = dataclasses.replace(workload.jobs[2], gpu_types=("k80",))
    jobs_in = (*workload.jobs[:2], bad, *workload.jobs[3:])
    with pytest.raises(UnschedulableJobError, match="job 2"):
        typed_jobs_from_profiles(dataclasses.replace(workload, jobs=jobs_in), "v100:4,p100:4")


@pytest.mark.parametrize("policy", sorted(TYPED_POLICIES))
def test_a_generated_workload_runs_to_completion_or_is_refused(policy: str) -> None:
    jobs = typed_jobs_from_profiles(_generated(), CLUSTER)
    if policy == "gandiva":
        with pytest.raises(ValueError, match="gavel mechanics only"):
            simulate_heterogeneous(jobs, policy, EXACT)
        return
    if policy == "allox":
        with pytest.raises(ValueError, match="job 2 needs 4 GPUs"):
            simulate_heterogeneous(jobs, policy, EXACT)
        return
    result = simulate_heterogeneous(jobs, policy, EXACT)
    assert not result.dropped.any() and not np.isnan(result.completion).any()
    assert np.all(result.completion >= result.arrival)
    # every job's work on its types adds up to its profile (GPU-seconds / gang on a type /
    # that type's profile length: the share of the profile done there)
    profiles = jobs.profiles
    assert profiles is not None
    done = (result.gpu_seconds / jobs.gang[:, None] / profiles.total_seconds).sum(axis=1)
    assert done.min() > 0.0
    assert np.all(np.isfinite(result.ftf)) and result.worst_ftf > 0.0
    assert set(result.utilization_by_type) == {"v100", "p100", "k80"}


def test_gavel_mechanics_run_a_job_along_its_profile_in_whole_iterations() -> None:
    job = _job(0, {"v100": [100.0, 300.0]})
    jobs = typed_jobs_from_profiles(Workload(jobs=(job,), source="hand"), "v100:1")
    result = simulate_heterogeneous(jobs, "gavel", HeterogeneousConfig())
    # round 0: 360 s, epoch 0 (100 iterations) and 260 s of epoch 1 (43.3 of its 50
    # iterations: 43 whole ones, the run ends at 360); round 1: the last 40 s, done at 400
    assert result.completion[0] == pytest.approx(400.0)
    assert result.gpu_seconds[0, 0] == pytest.approx(400.0)


@pytest.mark.parametrize("policy", ["gavel", "themis-agnostic", "fifo", "ossp"])
def test_a_generated_workload_runs_under_gavel_mechanics(policy: str) -> None:
    jobs = typed_jobs_from_profiles(_generated(), CLUSTER)
    result = simulate_heterogeneous(jobs, policy, HeterogeneousConfig())
    assert not result.dropped.any() and not np.isnan(result.completion).any()
    assert result.lease_extension_share > 0.0
    with pytest.raises(ValueError, match="static jobs"):
        simulate_heterogeneous(jobs, "gandiva", HeterogeneousConfig())


def test_the_command_line_runs_a_native_workload_the_same_bytes_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "w.jsonl"
    generate = ["trace", "generate", "--jobs", "20", "--cluster", CLUSTER, "--seed", "5"]
    assert main([*generate, "--gang-size-mix", "0.6,0.3,0.1,0", "-o", str(trace)]) == 0
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for out in (first, second):
        argv = ["simulate", "--cluster", CLUSTER, "--trace", str(trace), "--policy", "themis"]
        assert main([*argv, "--output", str(out)]) == 0
    assert first.read_bytes() == second.read_bytes()
    assert "exact mechanics" in capsys.readouterr().out
    compare = ["compare", "--cluster", CLUSTER, "--trace", str(trace), "--policies", "gavel,fifo"]
    assert main([*compare, "--output", str(tmp_path / "c.json")]) == 0
    assert main(["simulate", "--cluster", CLUSTER, "--trace", str(trace), "--policy", "gavel",
                 "--mechanics", "gavel"]) == 0  # fmt: skip
    assert "gavel mechanics" in capsys.readouterr().out
    assert main(["simulate", "--cluster", CLUSTER, "--trace", str(trace), "--policy", "gavel",
                 "--throughputs", "gavel"]) == 2  # fmt: skip
    assert "--throughputs is for a .trace" in capsys.readouterr().err
    assert main(["simulate", "--cluster", "v100:4,a100:4", "--trace", str(trace), "--policy",
                 "gavel"]) == 2  # fmt: skip
    assert "'a100'" in capsys.readouterr().err
    assert load_workload(trace).jobs[0].epoch_seconds_by_type is not None


@pytest.mark.parametrize(
    ("policy", "config"),
    [("gavel", EXACT), ("themis", EXACT), ("gavel", HeterogeneousConfig())],
)
def test_a_run_of_adapting_jobs_restored_from_a_snapshot_ends_bit_for_bit(
    policy: str, config: HeterogeneousConfig
) -> None:
    jobs = typed_jobs_from_profiles(_generated(), CLUSTER)
    straight = simulate_heterogeneous(jobs, policy, config).to_json()
    loop = typed_round_loop(jobs, make_typed_policy(policy, config.seed), config)
    assert not loop.run(until_round=20)
    saved = load_state(dump_state("test", loop.snapshot().to_data()), "test")
    fresh = typed_round_loop(jobs, make_typed_policy(policy, config.seed), config)
    fresh.restore(RoundSnapshot.from_data(saved, "snapshot"), "snapshot")
    assert fresh.run()
    assert typed_result(fresh, jobs, config, 0.0).to_json() == straight
