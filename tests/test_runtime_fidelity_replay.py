"""``benches/runtime_fidelity.py --replay``: the report recomputed from a run directory."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from benches import runtime_fidelity

from shockwave.throughputs import RuntimeCosts, ThroughputTable
from shockwave.traces import write_native
from shockwave.workload import Workload
from tests.test_runtime_scheduler import make_workload, run_fake


def test_replay_recomputes_every_step_from_the_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one rate per job and batch size, so that a throughput table describes the jobs exactly
    jobs = []
    for job in make_workload(jobs=5).jobs:
        seconds = 3.0 + 40.0 / job.batch_sizes + job.job_id
        jobs.append(dataclasses.replace(job, model=f"fake-{job.job_id}", epoch_seconds=seconds))
    workload = Workload(tuple(jobs))
    entries = {}
    for job in workload.jobs:
        for size, seconds in zip(job.batch_sizes.tolist(), job.epoch_seconds.tolist(), strict=True):
            entries[(job.model, int(size), job.gang_size)] = (1000 / size) / seconds
    costs = RuntimeCosts(restart_seconds=0.0, round_overhead_seconds=0.0)
    table = ThroughputTable(entries, costs=costs)
    workload = dataclasses.replace(workload, throughputs=table, costs=costs)
    seed_dir = tmp_path / "seed-0"
    seed_dir.mkdir()
    write_native(workload, seed_dir / "workload.jsonl")
    result, _, _ = run_fake(workload, "gavel", seed_dir / "run-gavel")
    (seed_dir / "run-gavel" / "result.json").write_text(json.dumps(result.to_dict()))
    settings = {"jobs": 5, "gpus": 2, "minutes": 1.0, "round_seconds": 10.0}
    settings |= {"throughputs": "fake", "costs": costs.to_dict()}
    fidelity = {**settings, "workloads": {"0": {"policies": {"gavel": {}}}}}
    (tmp_path / "fidelity.json").write_text(json.dumps(fidelity))

    assert runtime_fidelity.main(["--replay", str(tmp_path), "--noise-seeds", "3"]) == 0
    printed = capsys.readouterr().out
    assert "| 0 | gavel |" in printed  # the prediction row
    for step in ("realized", "+ measured throughput", "+ planned view", "+ throughput noise"):
        assert f"| 0 | gavel | replay: {step}" in printed
    report = runtime_fidelity._replay(
        runtime_fidelity.argparse.Namespace(replay=tmp_path, throughputs=None, noise_seeds=2)
    )
    gavel = report["workloads"]["0"]["policies"]["gavel"]
    physical = gavel["physical"]
    # fake jobs run their profiles and start at once: the prediction and the replays are the run
    # itself, up to the whole steps a fake job runs (an epoch of 1000 samples at 64 is 15.6 steps)
    for step in ("prediction", "replay: realized", "replay: + planned view"):
        assert gavel["simulated"][step]["makespan"] == pytest.approx(physical["makespan"], rel=0.02)
        assert gavel["simulated"][step]["avg_jct"] == pytest.approx(physical["avg_jct"], rel=0.02)
    assert gavel["simulated"]["prediction"] == gavel["simulated"]["replay: realized"]
