"""Typed slots: real runs on a heterogeneous cluster (``RuntimeConfig(cluster=spec)``).

Every gang must run on slots of the GPU type its policy chose, as the result says, as the
journal's launches say, and as the job processes themselves saw it (the first line each
incarnation writes to its log: its slot ids, its ``SHOCKWAVE_GPU_TYPE`` and its CPU cores).
On this machine there are no GPUs: the types are labels on CPU slots (no emulated speeds).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.registry import make_typed_policy
from shockwave.heterogeneous.simulate import HeterogeneousConfig, typed_round_loop
from shockwave.heterogeneous.workload_check import UnknownGpuTypeError, UnschedulableJobError
from shockwave.job.families import FAMILIES
from shockwave.policies.shockwave.typed_policy import TypedShockwave
from shockwave.rounds.loop import RoundLoop
from shockwave.rounds.observers import RoundObserver, RoundReport
from shockwave.run_spec import RunSpec
from shockwave.runtime import RunResult, RuntimeConfig, _named_policy, run_workload
from shockwave.runtime.config import type_slots, usable_cores
from shockwave.runtime.generate import job_regimes, planned_schedule
from shockwave.runtime.journal import Journal
from shockwave.runtime.result import run_result
from shockwave.runtime.scheduler import RuntimeScheduler
from shockwave.traces import write_native
from shockwave.workload import Job, Workload
from tests.runtime_fakes import FakeClock, FakeExecutor
from tests.test_runtime_scheduler import make_workload

CLUSTER = "v100:1,p100:1"
SLOTS = {"v100": (0,), "p100": (1,)}

#: (family, mode, initial batch size, epochs, arrival seconds, gpu_types constraint)
TINY = [
    ("softmax-digits", "gns", 16, 20, 0.0, None),
    ("mlp-digits", "static", 32, 6, 0.0, ("p100",)),
    ("rnn-sines", "accordion", 16, 6, 0.5, None),
    ("mlp-digits", "gns", 16, 5, 1.0, None),
]


def typed_workload() -> Workload:
    """Small bundled jobs with a profile on each type (planned 2x faster on ``v100``); one may
    run on ``p100`` only."""
    jobs = []
    for i, (name, mode, initial, epochs, arrival, allowed) in enumerate(TINY):
        family = FAMILIES[name]
        regimes = job_regimes(family, mode, initial)  # type: ignore[arg-type]
        jobs.append(
            Job(
                job_id=i,
                arrival_time=arrival,
                gang_size=1,
                model=name,
                dataset=family.dataset,
                mode=mode,  # type: ignore[arg-type]
                batch_sizes=planned_schedule(mode, regimes, epochs),  # type: ignore[arg-type]
                epoch_seconds=np.full(epochs, 0.6),
                epoch_seconds_by_type={"v100": [0.4] * epochs, "p100": [0.8] * epochs},
                gpu_types=allowed,
                samples_per_epoch=family.samples_per_epoch,
                run=RunSpec(family=name, seed=200 + i),
            )
        )
    return Workload(tuple(jobs), source="typed-tiny")


# ------------------------------------------------------------------------ the evidence
def launches(run_dir: Path) -> list[tuple[int, str, list[int]]]:
    """Every launch the journal recorded: ``(job id, GPU type, slots)``."""
    db = sqlite3.connect(run_dir / "journal.sqlite")
    rows = db.execute("SELECT job, detail FROM events WHERE kind = 'launch' ORDER BY id").fetchall()
    db.close()
    out = []
    for job, detail in rows:
        match = re.fullmatch(r"incarnation \d+ on (\S+) slots \[([\d, ]+)\]", detail)
        assert match is not None, detail
        out.append((int(job), match[1], [int(s) for s in match[2].split(",")]))
    return out


def seen_by_processes(run_dir: Path, job_id: int) -> list[tuple[str, list[int], list[int]]]:
    """What each incarnation of a job saw: ``(SHOCKWAVE_GPU_TYPE, slot ids, CPU cores)`` (on
    CPU slots the local executor sets no ``CUDA_VISIBLE_DEVICES``; a Ray task's is Ray's)."""
    text = (run_dir / "logs" / f"job-{job_id}.log").read_text()
    out = []
    for match in re.finditer(r"slots (\S+) type (\S+) cuda (\S+) cores (\S+)", text):
        slots = [int(s) for s in match[1].split(",")]
        cores = [int(c) for c in match[4].split(",")] if match[4] != "-" else []
        out.append((match[2], slots, cores))
    return out


def check_every_gang_on_its_type(result: RunResult, workload: Workload) -> None:
    run_dir = Path(result.run_dir)
    assert result.status == "completed", (result.errors, result.failed_jobs)
    assert result.cluster == CLUSTER
    assert result.gpu_types is not None
    for job, rounds in zip(workload.jobs, result.gpu_types, strict=True):
        assert rounds, f"job {job.job_id} never ran"
        allowed = job.worker_types or ("v100", "p100")
        assert {name for _, name in rounds} <= set(allowed), (job.job_id, rounds)
    # the journal's rounds carry each gang's type, and agree with the result
    journal = Journal(run_dir / "journal.sqlite", create=False)
    by_round: dict[int, dict[int, str]] = {}
    for entry in journal.rounds():
        ids = [int(i) for i in entry.decision["job_ids"].tolist()]
        by_round[entry.index] = dict(zip(ids, entry.decision["types"], strict=True))
    journal.close()
    for job, rounds in zip(workload.jobs, result.gpu_types, strict=True):
        for k, name in rounds:
            assert by_round[k][job.job_id] == name
    # every launch on slots of its type; every incarnation saw those slots and that type
    launched = launches(run_dir)
    assert {name for _, name, _ in launched} == {"v100", "p100"}  # both types were used
    for job in workload.jobs:
        mine = [(name, slots) for j, name, slots in launched if j == job.job_id]
        assert len(mine) == result.launches[job.job_id]
        for name, slots in mine:
            assert set(slots) <= set(SLOTS[name]), (job.job_id, name, slots)
        seen = seen_by_processes(run_dir, job.job_id)
        assert [(name, slots) for name, slots, _ in seen] == mine
        # every incarnation's type is one the job was dispatched on
        assert {name for name, _ in mine} <= {name for _, name in result.gpu_types[job.job_id]}


# ----------------------------------------------------------------------------- real runs
needs_two_cores = pytest.mark.skipif(usable_cores() < 2, reason="needs two CPU slots")


@needs_two_cores
def test_a_typed_run_runs_every_gang_on_slots_of_its_type(tmp_path: Path) -> None:
    workload = typed_workload()
    config = RuntimeConfig(
        cluster=ClusterSpec.parse(CLUSTER), round_seconds=1.0, run_dir=tmp_path / "run"
    )
    assert config.gpus == 2
    result = run_workload(workload, "gavel", config)
    check_every_gang_on_its_type(result, workload)
    # each incarnation was pinned to the one core its slot maps to: one per type, distinct
    cores: dict[str, set[tuple[int, ...]]] = {"v100": set(), "p100": set()}
    for j in range(len(TINY)):
        for name, _, seen in seen_by_processes(tmp_path / "run", j):
            cores[name].add(tuple(seen))
    assert all(len(c) == 1 and len(next(iter(c))) == 1 for c in cores.values()), cores
    assert cores["v100"] != cores["p100"]
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["cluster"] == CLUSTER and saved["gpu_types"] == result.gpu_types


@needs_two_cores
def test_a_typed_run_under_ray_runs_every_gang_on_its_type(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    workload = typed_workload()
    config = RuntimeConfig(
        cluster=ClusterSpec.parse(CLUSTER),
        round_seconds=1.0,
        executor="ray",
        run_dir=tmp_path / "run",
    )
    result = run_workload(workload, "gavel", config)
    assert result.executor == "ray"
    check_every_gang_on_its_type(result, workload)


# ------------------------------------------------------------------ bad input, refused
@pytest.mark.parametrize(
    ("cluster", "error", "named"),
    [
        ("v100:1,k80:1", UnknownGpuTypeError, "'k80'"),
        ("v100:2", UnschedulableJobError, "job 1"),  # job 1 runs on p100 only
    ],
)
def test_bad_input_is_refused_before_the_journal(
    cluster: str, error: type[Exception], named: str, tmp_path: Path
) -> None:
    config = RuntimeConfig(
        cluster=ClusterSpec.parse(cluster), round_seconds=1.0, run_dir=tmp_path / "run"
    )
    with pytest.raises(error, match=named):
        run_workload(typed_workload(), "gavel", config)
    assert not (tmp_path / "run" / "journal.sqlite").exists()


def test_a_homogeneous_policy_is_refused_on_typed_slots(tmp_path: Path) -> None:
    config = RuntimeConfig(cluster=ClusterSpec.parse(CLUSTER), run_dir=tmp_path / "run")
    with pytest.raises(ValueError, match="allox-agnostic"):
        run_workload(typed_workload(), "allox-agnostic", config)
    with pytest.raises(ValueError, match="gpus"):
        RuntimeConfig(gpus=3, cluster=ClusterSpec.parse(CLUSTER))
    assert type_slots(RuntimeConfig(cluster=ClusterSpec.parse("v100:2,p100:1"))) == {
        "v100": (0, 1),
        "p100": (2,),
    }
    assert type_slots(RuntimeConfig(gpus=2)) is None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from shockwave.cli import main; sys.exit(main())",
         "cluster", "run", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_command_line_refuses_bad_types_with_status_2_and_jobs_with_3(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.jsonl"
    write_native(typed_workload(), path)
    common = ("--workload", str(path), "--policy", "gavel", "--run-dir", str(tmp_path / "r"))
    unknown = _cli(*common, "--cluster", "v100:1,k80:1")
    assert unknown.returncode == 2, unknown.stderr
    assert "'k80'" in unknown.stderr
    stuck = _cli(*common, "--cluster", "v100:2")
    assert stuck.returncode == 3, stuck.stderr
    assert "job 1" in stuck.stderr and "gpu_types" in stuck.stderr
    both = _cli(*common, "--cluster", CLUSTER, "--gpus", "2")
    assert both.returncode == 2
    # a --config's typed parameters are checked before anything is written
    config = tmp_path / "c.toml"
    config.write_text("[shockwave]\nmakespan_wieght = 0.1\n")
    bad = _cli("--workload", str(path), "--policy", "shockwave", "--cluster", CLUSTER,
               "--config", str(config), "--run-dir", str(tmp_path / "r"))  # fmt: skip
    assert bad.returncode == 3, bad.stderr
    assert "c.toml:2: shockwave.makespan_wieght" in bad.stderr
    assert not (tmp_path / "r").exists()


def test_a_typed_run_builds_its_policy_with_the_given_parameters() -> None:
    config = RuntimeConfig(cluster=ClusterSpec.parse(CLUSTER))
    name, policy = _named_policy("shockwave", {"makespan_weight": 0.1}, config)
    assert name == "shockwave"
    assert isinstance(policy, TypedShockwave) and policy.makespan_weight == 0.1
    with pytest.raises(ValueError, match="no parameter 'x'"):
        _named_policy("gavel", {"x": 1}, config)


# --------------------------------------------------------------- on a simulated clock
def run_typed_fake(
    workload: Workload,
    policy: str,
    run_dir: Path,
    cluster: str,
    tau: float = 10.0,
    *,
    resume: bool = False,
    clock: FakeClock | None = None,
    **executor_options: object,
) -> tuple[RunResult, RuntimeScheduler, FakeExecutor]:
    clock = clock or FakeClock()
    run_dir.mkdir(parents=True, exist_ok=True)
    executor = FakeExecutor(workload, clock, **executor_options)  # type: ignore[arg-type]
    config = RuntimeConfig(cluster=ClusterSpec.parse(cluster), round_seconds=tau, run_dir=run_dir)
    journal = Journal(run_dir / "journal.sqlite", create=not resume)
    scheduler = RuntimeScheduler(
        workload, make_typed_policy(policy), config, executor, journal, "cpu", clock=clock
    )
    if resume:
        snapshot = journal.snapshot()
        assert snapshot is not None
        scheduler.restore(journal.rounds(), snapshot[1])
    scheduler.execute()
    result = run_result(scheduler, 0.0, executor.name)
    journal.close()
    return result, scheduler, executor


@pytest.mark.parametrize(
    "policy", ["gavel", "themis", "fifo", "mst", "gavel-agnostic", "shockwave"]
)
def test_typed_runs_on_a_simulated_clock_keep_every_gang_on_its_type(
    policy: str, tmp_path: Path
) -> None:
    workload = make_workload(seed=2, jobs=8)  # no per-type profiles: any type runs them
    cluster = "v100:2,p100:2"
    result, scheduler, _ = run_typed_fake(workload, policy, tmp_path / "run", cluster)
    assert result.status == "completed"
    assert result.gpu_types is not None and all(result.gpu_types)
    slots = type_slots(scheduler.config)
    assert slots is not None
    launched = launches(tmp_path / "run")
    for job_id, name, job_slots in launched:
        assert set(job_slots) <= set(slots[name]), (job_id, name, job_slots)
    # a launch for every round in which a gang started on a new type (a move is a restart)
    for position, rounds in enumerate(result.gpu_types):
        job_id = workload.jobs[position].job_id
        moves = sum(1 for (_, a), (_, b) in itertools.pairwise(rounds) if a != b)
        assert result.launches[position] >= 1 + moves, (job_id, rounds)
    # deterministic: the same run decides the same
    again, _, _ = run_typed_fake(workload, policy, tmp_path / "again", cluster)
    assert again.gpu_types == result.gpu_types
    assert again.to_dict()["jct"] == result.to_dict()["jct"]


def test_a_gang_larger_than_any_type_is_refused(tmp_path: Path) -> None:
    workload = make_workload(seed=0, jobs=4)  # job 3 is a gang of 2
    config = RuntimeConfig(cluster=ClusterSpec.parse("v100:1,p100:1"), run_dir=tmp_path / "run")
    with pytest.raises(UnschedulableJobError, match="gang_size"):
        run_workload(workload, "gavel", config)
    assert ClusterSpec.parse(CLUSTER).total_gpus == 2


def test_an_interrupted_typed_run_resumes_from_its_journal(tmp_path: Path) -> None:
    workload = make_workload(seed=5, jobs=8)
    clock = FakeClock()
    checkpoints: dict[int, float] = {}
    run_dir = tmp_path / "run"
    first, _, _ = run_typed_fake(
        workload, "themis", run_dir, "v100:1,p100:2", clock=clock, interrupt_at=1065.0,
        checkpoints=checkpoints,
    )  # fmt: skip
    assert first.incomplete
    before = first.gpu_types
    assert before is not None and any(before)
    second, scheduler, _ = run_typed_fake(
        workload, "themis", run_dir, "v100:1,p100:2", clock=clock, resume=True,
        checkpoints=checkpoints,
    )  # fmt: skip
    assert second.status == "completed"
    assert second.gpu_types is not None
    slots = type_slots(scheduler.config)
    assert slots is not None
    for job_id, name, job_slots in launches(run_dir):
        assert set(job_slots) <= set(slots[name]), (job_id, name, job_slots)
    # the rounds before the interrupted one are kept (the round in flight is lost)
    lost = max(k for rounds in before for k, _ in rounds)
    for old, new in zip(before, second.gpu_types, strict=True):
        assert [r for r in new if r[0] < lost] == [r for r in old if r[0] < lost]


class _TypeLog(RoundObserver):
    """Every job's ``[round, GPU type]`` in a typed simulation, by job id."""

    def __init__(self) -> None:
        self.types: dict[int, list[list[object]]] = {}

    def round_decided(self, loop: RoundLoop, report: RoundReport) -> None:
        decision = report.decision
        assert decision.types is not None
        names = ("v100", "p100")
        for j, k in zip(decision.jobs.tolist(), decision.types.tolist(), strict=True):
            job_id = int(report.job_ids[j])
            self.types.setdefault(job_id, []).append([report.round_index, names[k]])


@pytest.mark.parametrize("policy", ["gavel", "themis", "fifo", "mst", "ossp"])
def test_ideal_jobs_on_typed_slots_reproduce_the_exact_typed_simulator(
    policy: str, tmp_path: Path
) -> None:
    """Static jobs at one speed (the fake executor's ideal jobs follow their profiles), no
    restart penalty: the runtime on the simulated clock decides what the typed simulator's
    ``exact`` mechanics decide, round by round and type by type."""
    jobs = tuple(
        dataclasses.replace(
            job,
            mode="static",
            batch_sizes=np.full(job.num_epochs, 32),
            epoch_seconds=np.full(job.num_epochs, 7.0),
        )
        for job in make_workload(seed=0, jobs=8).jobs
    )
    workload = Workload(jobs)
    result, scheduler, _ = run_typed_fake(workload, policy, tmp_path / "run", "v100:2,p100:2")
    assert scheduler.typed is not None
    config = HeterogeneousConfig(
        round_seconds=10.0,
        mechanics="exact",
        restart_penalty_seconds=0.0,
        recompute_interval_seconds=scheduler.config.recompute_interval_seconds,
    )
    loop = typed_round_loop(scheduler.typed, make_typed_policy(policy), config)
    log = _TypeLog()
    loop.observers.append(log)
    loop.run()
    np.testing.assert_allclose(
        scheduler.ledger.completion_time, loop.ledger.completion_time, rtol=1e-12
    )
    assert result.gpu_types is not None
    for job, rounds in zip(workload.jobs, result.gpu_types, strict=True):
        assert rounds == log.types[job.job_id], job.job_id
