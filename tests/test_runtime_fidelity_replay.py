"""``benches/runtime_fidelity.py --replay``: the report recomputed from a run directory."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from benches import runtime_fidelity

from shockwave.runtime.profile import write_throughput_file
from shockwave.throughputs import ThroughputTable
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
    write_throughput_file(ThroughputTable(entries), tmp_path / "throughputs.json")
    write_native(workload, tmp_path / "workload.jsonl")
    result, _, _ = run_fake(workload, "gavel", tmp_path / "run-gavel")
    (tmp_path / "run-gavel" / "result.json").write_text(json.dumps(result.to_dict()))
    settings = {"jobs": 5, "gpus": 2, "minutes": 1.0, "round_seconds": 10.0, "seed": 0}
    (tmp_path / "fidelity.json").write_text(json.dumps({**settings, "policies": {"gavel": {}}}))

    assert runtime_fidelity.main(["--replay", str(tmp_path), "--noise-seeds", "3"]) == 0
    printed = capsys.readouterr().out
    for step in ("planned", "realized", "+ restart", "+ planned view", "+ throughput noise"):
        assert f"| gavel | {step}" in printed
    report = runtime_fidelity._replay(
        runtime_fidelity.argparse.Namespace(replay=tmp_path, throughputs=None, noise_seeds=2)
    )
    gavel = report["policies"]["gavel"]
    physical = gavel["physical"]
    # fake jobs run their profiles and start at once: the replays are the run itself, up to the
    # whole steps a fake job runs (an epoch of 1000 samples at 64 is 15.6 steps)
    for step in ("realized", "+ planned view"):
        assert gavel["simulated"][step]["makespan"] == pytest.approx(physical["makespan"], rel=0.02)
        assert gavel["simulated"][step]["avg_jct"] == pytest.approx(physical["avg_jct"], rel=0.02)
    assert gavel["simulated"]["planned"] == gavel["simulated"]["realized"]  # nothing adapted
    assert gavel["noise_seeds_matching_unfair"] == 2
