"""How much of this machine other programs used while a run (or a profile) was measured.

A real run's prediction rests on this machine's profile (:mod:`shockwave.runtime.machine`);
both assume the run's jobs have the machine to themselves. When other programs compete for the
cores (a build, a test suite, another user's jobs) the jobs train slower than their profile by
roughly the share the others take, and no simulation from the profile can predict that. A
:class:`CpuLoadMeter` measures it, so that a result says how far its speeds can be trusted:

* the machine's busy time comes from ``/proc/stat`` (user, nice, system, interrupts, and the
  *steal* time the hypervisor gave other virtual machines);
* this process tree's own CPU time from :func:`os.times` (this process and its children that
  have ended and been waited for: the local executor's job processes, the profile's measuring
  processes);
* the rest, busy time that was not ours, is the **other load**, in cores (CPU-seconds per
  second of wall time).

Measured over a whole run, the job processes have all ended and are counted; job processes the
meter cannot see (Ray's workers, which are not our children) count as other load, so under the
Ray executor the figure is an upper bound. Linux only: elsewhere :meth:`CpuLoadMeter.stop`
returns ``None``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

#: Where the kernel reports the machine's CPU time.
PROC_STAT = Path("/proc/stat")
#: Other load (cores) above which a result warns that its speeds were shared.
OTHER_LOAD_WARNING_CORES = 0.25


@dataclass(frozen=True)
class MachineLoad:
    """What a :class:`CpuLoadMeter` measured.

    Attributes:
        wall_seconds: the measured interval, seconds.
        cores: the machine's online CPUs.
        busy_cores: the machine's busy time (steal included) over the interval, in cores.
        own_cores: this process tree's CPU time over the interval, in cores.
        other_cores: ``busy_cores - own_cores`` (never below 0), in cores: what other programs
            and virtual machines took.
        steal_fraction: the share of the machine's time the hypervisor gave to others.
    """

    wall_seconds: float
    cores: int
    busy_cores: float
    own_cores: float
    other_cores: float
    steal_fraction: float

    def to_dict(self) -> dict[str, float]:
        """The figures as JSON-ready values (rounded to 3 decimals)."""
        return {
            "wall_seconds": round(self.wall_seconds, 3),
            "cores": float(self.cores),
            "busy_cores": round(self.busy_cores, 3),
            "own_cores": round(self.own_cores, 3),
            "other_cores": round(self.other_cores, 3),
            "steal_fraction": round(self.steal_fraction, 4),
        }

    @property
    def shared(self) -> bool:
        """Whether other programs took enough of the machine to slow the jobs noticeably."""
        return self.other_cores > OTHER_LOAD_WARNING_CORES


@dataclass(frozen=True)
class _Sample:
    wall: float
    busy_ticks: int
    steal_ticks: int
    total_ticks: int
    own_seconds: float


class CpuLoadMeter:
    """Measures the other load between :meth:`start` and :meth:`stop` (see the module notes)."""

    def __init__(self) -> None:
        self._start: _Sample | None = None

    def start(self) -> CpuLoadMeter:
        """Start measuring (again); returns the meter."""
        self._start = _sample()
        return self

    def stop(self) -> MachineLoad | None:
        """What was measured since :meth:`start`, or ``None`` where ``/proc/stat`` cannot be
        read or no time has passed."""
        if self._start is None:
            return None
        end = _sample()
        begin = self._start
        if begin is None or end is None:
            return None
        wall = end.wall - begin.wall
        ticks = end.total_ticks - begin.total_ticks
        if wall <= 0.0 or ticks <= 0:
            return None
        cores = os.cpu_count() or 1
        # the kernel's ticks over all CPUs: scale by cores / ticks to get cores busy
        busy = (end.busy_ticks - begin.busy_ticks) / ticks * cores
        own = (end.own_seconds - begin.own_seconds) / wall
        return MachineLoad(
            wall_seconds=wall,
            cores=cores,
            busy_cores=busy,
            own_cores=own,
            other_cores=max(0.0, busy - own),
            steal_fraction=(end.steal_ticks - begin.steal_ticks) / ticks,
        )


def _sample() -> _Sample | None:
    try:
        line = PROC_STAT.read_text(encoding="ascii").split("\n", 1)[0]
    except OSError:
        return None
    fields = line.split()
    if not fields or fields[0] != "cpu" or len(fields) < 5:
        return None
    try:
        ticks = [int(v) for v in fields[1:]]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal guest guest_nice (guest time is already
    # counted in user and nice)
    padded = ticks[:8] + [0] * (8 - len(ticks[:8]))
    user, nice, system, _idle, _iowait, irq, softirq, steal = padded
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    return _Sample(
        wall=time.monotonic(),
        busy_ticks=user + nice + system + irq + softirq + steal,
        steal_ticks=steal,
        total_ticks=sum(padded),
        own_seconds=own,
    )
