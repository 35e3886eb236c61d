"""Checkpoint and resume: an interrupted simulation, resumed, equals the uninterrupted one.

Also the byte-for-byte reproducibility of result files (results apart from timing) and the
persistence of state (:mod:`shockwave.persistence`, ``JobModels.to_bytes``). Tampered and
corrupted checkpoints: ``tests/test_state_files.py``.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from shockwave import persistence
from shockwave.adaptation import JobModels
from shockwave.cli import main
from shockwave.policies import POLICIES
from shockwave.scheduling import SimulationConfig
from shockwave.sim import CheckpointSettings, Simulation, resume_simulation
from shockwave.workload import Workload

from .conftest import CANONICAL_TRACE, TACC


@pytest.fixture(scope="module")
def small(canonical_workload: Workload) -> Workload:
    return canonical_workload.with_jobs(canonical_workload.jobs[:24])


@pytest.mark.parametrize("mechanics", ["exact", "gavel"])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_resumed_run_equals_the_uninterrupted_one(
    small: Workload, policy: str, mechanics: str, tmp_path: Path
) -> None:
    config = SimulationConfig(gpus=6, mechanics=mechanics)  # type: ignore[arg-type]
    whole = Simulation(small, policy, config).run()
    assert whole is not None
    path = tmp_path / "run.ckpt"
    first = Simulation(small, policy, config)
    assert first.run(until_round=7) is None  # stopped early, the policy has state
    first.save(path)
    second = Simulation.load(path)  # a fresh copy, as in another process
    assert second.round_index == 7
    assert second.run(until_round=60) is None
    second.save(path)
    resumed = Simulation.load(path).run()
    assert resumed is not None
    assert resumed.rounds > 60
    assert resumed.to_json() == whole.to_json()  # bit for bit


def test_ctrl_c_with_a_checkpoint_saves_then_resumes_identically(
    small: Workload, tmp_path: Path
) -> None:
    config = SimulationConfig(gpus=6)
    whole = Simulation(small, "shockwave", config).run()
    assert whole is not None
    path = tmp_path / "run.ckpt"

    def ctrl_c_at_round_20(rounds: int, finished: int, total: int) -> None:
        if rounds == 20:
            os.kill(os.getpid(), signal.SIGINT)

    settings = CheckpointSettings(path, every_seconds=1e9)  # saves on Ctrl-C only
    with pytest.raises(KeyboardInterrupt):
        Simulation(small, "shockwave", config).run(progress=ctrl_c_at_round_20, checkpoint=settings)
    assert Simulation.load(path).round_index == 20
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    assert resume_simulation(path).to_json() == whole.to_json()


SIMULATE = ["simulate", "--trace", str(CANONICAL_TRACE), "--throughputs", str(TACC),
            "--gpus", "32"]  # fmt: skip


def test_cli_checkpoint_then_resume_writes_the_same_result_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, resumed, checkpoint = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "run.ckpt"
    argv = [*SIMULATE, "--policy", "shockwave", "--mechanics", "gavel"]
    assert main([*argv, "--output", str(plain)]) == 0
    # checkpoints at every boundary: the file holds the state just before the last round
    assert main([*argv, "--checkpoint", str(checkpoint), "--checkpoint-every", "0"]) == 0
    assert main(["simulate", "--resume", str(checkpoint), "--output", str(resumed)]) == 0
    assert resumed.read_bytes() == plain.read_bytes()
    capsys.readouterr()
    assert main(["simulate", "--resume", str(checkpoint), "--policy", "fifo"]) == 2
    assert "--resume takes the workload" in capsys.readouterr().err
    assert main(["simulate", "--resume", str(plain)]) == 3
    assert "not a shockwave state file" in capsys.readouterr().err
    damaged = tmp_path / "damaged.ckpt"
    data = checkpoint.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    assert main(["simulate", "--resume", str(damaged)]) == 3
    assert "corrupted state" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_result_files_are_identical_byte_for_byte_across_runs(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = (
        ["--policy", "shockwave"] if command == "simulate" else ["--policies", "shockwave,fifo"]
    )
    argv = [command, *SIMULATE[1:], *chosen, "--seed", "3"]
    outputs = []
    for run in ("one", "two"):
        out, timing = tmp_path / f"{run}.json", tmp_path / f"{run}.timing.json"
        assert main([*argv, "--output", str(out), "--timing", str(timing)]) == 0
        outputs.append(out.read_bytes())
        times = json.loads(timing.read_text())
        for entry in times if isinstance(times, list) else [times]:
            assert entry["wall_seconds"] > 0 and len(entry["policy_seconds"]) > 0
    assert outputs[0] == outputs[1]  # cmp: the same bytes
    assert b"wall_seconds" not in outputs[0]


# ------------------------------------------------------------------------------- state encoding
def test_job_models_round_trip_predicts_bit_for_bit() -> None:
    models = JobModels("markov")
    models.add(3, [32] * 5 + [64] * 5, [10.0] * 5 + [6.0] * 5, extra_regimes={128: 4.0},
               samples_per_epoch=5e4)  # fmt: skip
    models.add(9, [16, 16, 16], [3.0, 3.0, 3.0])
    models.observe([3, 9], [2.5, 1.25], [32, 16])
    models.observe_throughput([3], [1], [32], epoch_seconds=[11.0])
    copy = JobModels.from_bytes(models.to_bytes())
    import pickle

    pickled = pickle.loads(pickle.dumps(models))
    for other in (copy, pickled):
        assert other.estimator == "markov"
        for estimator in ("markov", "dirichlet", "oracle"):
            a = models.predict(12, estimator=estimator)  # type: ignore[arg-type]
            b = other.predict(12, estimator=estimator)  # type: ignore[arg-type]
            assert a.valuations.tobytes() == b.valuations.tobytes()
            assert a.remaining_mean_seconds.tobytes() == b.remaining_mean_seconds.tobytes()
    data = models.to_bytes()
    for bad in (b"", b"markov\n", data[:-3], data[:30] + b"\xff" * 8 + data[38:], b"x" * 100):
        with pytest.raises(ValueError, match="^state: "):
            JobModels.from_bytes(bad)


def test_state_files_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.bin"
    persistence.save_state_file(path, "answers", {"answer": np.arange(3)})
    assert persistence.load_state_file(path, "answers")["answer"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="holds a 'answers', expected a 'simulation-checkpoint'"):
        Simulation.load(path)
    monkeypatch.setattr(persistence, "__version__", "9.9.9")
    with pytest.raises(ValueError, match="written by shockwave .*, this is 9.9.9"):
        persistence.load_state_file(path, "answers")


def test_a_finished_simulation_cannot_run_again(small: Workload, tmp_path: Path) -> None:
    simulation = Simulation(small, "fifo", SimulationConfig(gpus=6))
    assert simulation.run() is not None
    with pytest.raises(ValueError, match="already run to its end"):
        simulation.run()
    simulation.save(tmp_path / "done.ckpt")
    with pytest.raises(ValueError, match="already finished"):
        Simulation.load(tmp_path / "done.ckpt")
