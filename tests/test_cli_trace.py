"""The ``shockwave trace`` commands, through the console entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.traces import load_workload

from .conftest import CANONICAL_TRACE, TACC


def test_inspect_prints_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "inspect", str(CANONICAL_TRACE), "--throughputs", str(TACC),
                 "--gpus", "32"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "jobs:                 120" in out
    assert "1: 92 (77%), 2: 20 (17%), 4: 8 (7%)" in out  # NOTES §6: 92/20/8/0
    assert "accordion: 59 (49%), gns: 57 (48%), static: 4 (3%)" in out
    assert "GPU-hours" in out and "contention on 32 GPUs" in out


def test_convert_then_inspect_the_native_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.jsonl"
    assert main(["trace", "convert", str(CANONICAL_TRACE), "--throughputs", "tacc",
                 "-o", str(out)]) == 0  # fmt: skip
    assert "wrote 120 jobs" in capsys.readouterr().out
    assert len(load_workload(out)) == 120
    assert main(["trace", "inspect", str(out)]) == 0
    assert "jobs:                 120" in capsys.readouterr().out


def test_bad_input_is_one_line_on_stderr_with_status_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("LM (batch size 10)\tx\n")
    assert main(["trace", "inspect", str(bad), "--throughputs", str(TACC)]) == 3  # input
    err = capsys.readouterr().err
    assert err.startswith(f"shockwave: error: {bad}:1: expected 10 (Gavel) or 12")
    assert "Traceback" not in err
    assert main(["trace", "inspect", str(CANONICAL_TRACE)]) == 3
    assert "needs a throughput table" in capsys.readouterr().err
