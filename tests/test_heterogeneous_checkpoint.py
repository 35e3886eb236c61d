"""``simulate --cluster ... --checkpoint FILE`` and ``simulate --resume FILE`` on a typed cluster:
a run interrupted by Ctrl-C (status 130, checkpoint saved) and resumed writes the bytes of the
uninterrupted run, under both mechanics, for a ``.trace`` and for a native ``.jsonl``."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.heterogeneous.checkpoint import TypedSimulation
from shockwave.rounds.loop import RoundLoop

GAVEL = Path(__file__).resolve().parent / "data" / "gavel"
CLUSTER = "v100:4,p100:4,k80:4"
#: the boundary at which the test sends SIGINT; the checkpoint is saved at the next one
INTERRUPT_AT = 5


def _trace(tmp_path: Path, kind: str) -> list[str]:
    """The options naming a workload of ``kind`` (``trace``: 25 jobs of Gavel's T2 trace with
    its throughputs; ``jsonl``: 20 adapting jobs from ``trace generate --cluster``)."""
    if kind == "trace":
        trace = tmp_path / "small.trace"
        lines = (GAVEL / "T2.trace").read_text().splitlines(keepends=True)[:25]
        trace.write_text("".join(lines))
        throughputs = GAVEL / "simulation_throughputs.json.gz"
        return ["--trace", str(trace), "--throughputs", str(throughputs)]
    native = tmp_path / "w.jsonl"
    generate = ["trace", "generate", "--jobs", "20", "--cluster", CLUSTER, "--seed", "3"]
    assert main([*generate, "-o", str(native)]) == 0
    return ["--trace", str(native)]


@pytest.mark.parametrize(
    ("kind", "mechanics", "cluster", "policy"),
    [
        ("trace", "gavel", CLUSTER, "themis"),
        ("trace", "exact", CLUSTER, "themis"),
        ("jsonl", "gavel", CLUSTER, "themis"),
        ("jsonl", "exact", CLUSTER, "themis"),
        # placement on servers of 2: the rounds each job ran spread are saved too
        ("trace", "exact", "v100:4/2,p100:4/2,k80:4/2", "themis"),
        # the market policy: its adaptation models, plan and solver statistics are saved too
        ("jsonl", "exact", CLUSTER, "shockwave"),
    ],
)
def test_an_interrupted_typed_run_resumes_to_the_same_bytes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    mechanics: str,
    cluster: str,
    policy: str,
) -> None:
    run = ["simulate", "--cluster", cluster, *_trace(tmp_path, kind), "--policy", policy,
           "--mechanics", mechanics]  # fmt: skip
    whole, resumed, checkpoint = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "run.ckpt"
    assert main([*run, "--output", str(whole)]) == 0

    original = RoundLoop._check_round_limit

    def ctrl_c(loop: RoundLoop, round_index: int) -> None:
        if round_index == INTERRUPT_AT:
            os.kill(os.getpid(), signal.SIGINT)
        original(loop, round_index)

    monkeypatch.setattr(RoundLoop, "_check_round_limit", ctrl_c)
    capsys.readouterr()
    interrupted = [*run, "--checkpoint", str(checkpoint), "--checkpoint-every", "1e9"]
    assert main([*interrupted, "--output", str(resumed)]) == 130
    err = capsys.readouterr().err
    assert f"the latest checkpoint is {checkpoint} (continue with --resume {checkpoint})" in err
    assert not resumed.exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    monkeypatch.undo()
    assert TypedSimulation.load(checkpoint).round_index == INTERRUPT_AT + 1

    assert main(["simulate", "--resume", str(checkpoint), "--output", str(resumed)]) == 0
    assert resumed.read_bytes() == whole.read_bytes()
    assert f"{mechanics} mechanics" in capsys.readouterr().out
    assert ("spread_rounds" in whole.read_text()) == ("/" in cluster)


def test_resuming_refuses_settings_the_checkpoint_holds_and_damaged_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = tmp_path / "run.ckpt"
    run = ["simulate", "--cluster", CLUSTER, *_trace(tmp_path, "trace"), "--policy", "gavel"]
    # saved at every boundary: the file holds the state before the last round
    assert main([*run, "--checkpoint", str(checkpoint), "--checkpoint-every", "0"]) == 0
    capsys.readouterr()
    conflicting = ["--cluster", "v100:2,p100:2,k80:2", "--policy", "fifo"]
    assert main(["simulate", "--resume", str(checkpoint), *conflicting]) == 2
    assert capsys.readouterr().err.strip() == (
        "shockwave: error: --resume takes the workload, policy and settings from the "
        "checkpoint; drop --cluster, --policy"
    )
    assert main(["simulate", "--resume", str(checkpoint), "--mechanics", "exact"]) == 2
    assert "drop --mechanics" in capsys.readouterr().err
    damaged = tmp_path / "damaged.ckpt"
    data = checkpoint.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    assert main(["simulate", "--resume", str(damaged)]) == 3
    assert "corrupted state" in capsys.readouterr().err
    assert main(["simulate", "--resume", str(tmp_path / "missing.ckpt")]) == 3
    assert "cannot read" in capsys.readouterr().err
