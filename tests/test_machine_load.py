"""The other-load meter: busy time that was not this process tree's, in cores."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shockwave.runtime import machine_load
from shockwave.runtime.machine_load import CpuLoadMeter, MachineLoad


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _stat(tmp_path: Path, user: int, system: int, idle: int, steal: int) -> Path:
    path = tmp_path / "stat"
    path.write_text(
        f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n",
        encoding="ascii",
    )
    return path


def test_other_load_is_the_machines_busy_time_minus_our_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cores for 10 s (2,000 ticks): 1,500 busy (100 of them stolen), 6 s ours: the
    machine was 1.5 cores busy, 0.6 ours, 0.9 others', 5 % stolen."""
    clock = _Clock()
    own = [1.0]

    def times() -> Any:
        return type(
            "T", (), {"user": own[0], "system": 0.0, "children_user": 0.0, "children_system": 0.0}
        )()

    monkeypatch.setattr(machine_load.time, "monotonic", clock)
    monkeypatch.setattr(machine_load.os, "times", times)
    monkeypatch.setattr(machine_load.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(machine_load, "PROC_STAT", _stat(tmp_path, 1000, 0, 1000, 0))
    meter = CpuLoadMeter().start()
    clock.now += 10.0
    own[0] += 6.0
    monkeypatch.setattr(machine_load, "PROC_STAT", _stat(tmp_path, 2300, 100, 1500, 100))
    load = meter.stop()
    assert load is not None
    assert load.busy_cores == pytest.approx(1.5)
    assert load.own_cores == pytest.approx(0.6)
    assert load.other_cores == pytest.approx(0.9)
    assert load.steal_fraction == pytest.approx(0.05)
    assert load.shared
    assert load.to_dict()["other_cores"] == pytest.approx(0.9)


def test_the_meter_says_nothing_where_the_kernel_does_not_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine_load, "PROC_STAT", tmp_path / "missing")
    assert CpuLoadMeter().start().stop() is None
    assert CpuLoadMeter().stop() is None  # never started
    (tmp_path / "garbage").write_text("intr 1 2 3\n")
    monkeypatch.setattr(machine_load, "PROC_STAT", tmp_path / "garbage")
    assert CpuLoadMeter().start().stop() is None


@pytest.mark.skipif(not machine_load.PROC_STAT.exists(), reason="needs /proc/stat")
def test_a_busy_program_that_is_not_ours_counts_as_other_load() -> None:
    """A process that spins and is never waited for is not this tree's CPU time: about one
    core of other load while it runs (at least half a core on a busy machine)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start
        meter = CpuLoadMeter().start()
        time.sleep(1.5)
        load = meter.stop()
    finally:
        spinner.kill()
        spinner.wait()
    assert isinstance(load, MachineLoad)
    assert load.other_cores >= 0.5
    assert load.own_cores < 0.5  # this process only slept
