"""This machine's own profile: its throughputs and runtime costs, measured once and cached.

A real run's metrics and its prediction rest on how fast the jobs train *here*: finish-time
fairness divides a job's completion time by its runtime alone, and a simulation that predicts a
run needs the speeds and the overheads of the machine that will run it. The project's machines
differ 2 to 3 times in speed from one to the next (the bundled ``cluster`` table was measured on
one of them), so no table measured elsewhere will do.

* :func:`machine_id` names this machine: its host name, processor, usable cores, GPUs and the
  versions of numpy and shockwave (any of which changes the speeds).
* :func:`machine_profile` returns this machine's table: read from the cache
  (:func:`profile_cache_path`: ``$SHOCKWAVE_CACHE_DIR``, else ``$XDG_CACHE_HOME/shockwave``,
  else ``~/.cache/shockwave``; one file per machine id), or measured and cached when there is
  none yet (``shockwave cluster profile`` measures it again on demand and refreshes the cache).
* :func:`measure_costs` measures what a real run costs besides training, by running a small real
  workload under the runtime itself: the mean start delay of a (re)started job (from a round's
  dispatch to its first step) and the mean round turnaround (the boundary wait plus the
  decision).

``shockwave cluster generate`` and ``shockwave cluster run`` use this profile unless given
``--throughputs``; ``shockwave simulate --throughputs machine`` reads it too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import socket
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from shockwave import __version__
from shockwave.errors import TraceError
from shockwave.job.families import FAMILIES
from shockwave.job.throughput_probe import measure_throughput
from shockwave.profile_rules import epoch_durations
from shockwave.run_spec import RunSpec
from shockwave.runtime.config import machine_gpus, usable_cores
from shockwave.runtime.throughput_measurement import (
    MeasurementCallback,
    measure_family_throughputs,
    write_throughput_file,
)
from shockwave.throughputs import RuntimeCosts, ThroughputTable
from shockwave.workload import Job, Workload

#: The name that stands for this machine's profile wherever a throughput table is named.
MACHINE_TABLE = "machine"
#: Environment variable that overrides the cache directory.
ENV_CACHE_DIR = "SHOCKWAVE_CACHE_DIR"
#: Round length of the cost-measuring run, seconds.
COST_ROUND_SECONDS = 2.0
#: Jobs of the cost-measuring run, and their exclusive runtime each, seconds.
COST_JOBS, COST_JOB_SECONDS = 3, 5.0

#: Called with one line of news while a profile is measured.
NoteCallback = Callable[[str], None]


def machine_id() -> str:
    """A short stable name of this machine as far as training speed goes (see the module
    notes): ``<host>-<12 hex digits>``."""
    processor = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    processor = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    facts = "|".join(
        [
            socket.gethostname(),
            processor,
            str(usable_cores()),
            str(machine_gpus()),
            np.__version__,
            __version__,
        ]
    )
    digest = hashlib.sha256(facts.encode()).hexdigest()[:12]
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:40]
    return f"{host or 'machine'}-{digest}"


def cache_directory() -> Path:
    """Where shockwave caches what it measured on this machine (see the module notes)."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR]).absolute()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).absolute() / "shockwave"


def profile_cache_path() -> Path:
    """The cached profile of this machine (it may not exist yet)."""
    return cache_directory() / "machine-profiles" / f"{machine_id()}.json"


def cached_machine_profile() -> ThroughputTable | None:
    """This machine's cached profile, or ``None`` if it was never measured.

    Raises:
        TraceError: for a cached file that cannot be read (it names the file: delete it or run
            ``shockwave cluster profile`` again).
    """
    path = profile_cache_path()
    if not path.is_file():
        return None
    return ThroughputTable.from_file(path)


def machine_profile(
    *,
    measure: bool = True,
    seconds: float = 2.0,
    progress: MeasurementCallback | None = None,
    note: NoteCallback | None = None,
) -> ThroughputTable:
    """This machine's profile: cached, or measured now (about a minute) and cached.

    Args:
        measure: measure it if it is not cached (else raise).
        seconds: measuring time per throughput entry, seconds.
        progress: called after each throughput entry.
        note: called with a line before and after a measurement.

    Raises:
        TraceError: if there is no cached profile and ``measure`` is false, or the cached file
            is unreadable.
    """
    table = cached_machine_profile()
    if table is not None:
        return table
    path = profile_cache_path()
    if not measure:
        raise TraceError(
            "this machine has no profile yet: run 'shockwave cluster profile' (about a minute)",
            path=path,
        )
    if note is not None:
        note(f"measuring this machine's throughputs and runtime costs once (cached in {path})")
    return refresh_machine_profile(seconds=seconds, progress=progress)


def refresh_machine_profile(
    *, seconds: float = 2.0, progress: MeasurementCallback | None = None
) -> ThroughputTable:
    """Measure this machine's profile (every bundled family, then the runtime's costs) and
    replace the cached one; return it."""
    table = measure_family_throughputs(seconds=seconds, progress=progress)
    costs = measure_costs(table)
    table = dataclasses.replace(table, costs=costs, source=str(profile_cache_path()))
    path = profile_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_throughput_file(table, path)
    return ThroughputTable.from_file(path)


def measure_costs(table: ThroughputTable) -> RuntimeCosts:
    """What a real run costs here besides training (see the module notes): a run of
    :data:`COST_JOBS` single-slot jobs of ``softmax-digits`` on up to 2 slots, in
    :data:`COST_ROUND_SECONDS`-second rounds under ``gavel`` (which time-shares them, so that
    jobs are preempted and restarted), in a temporary directory.

    Raises:
        RuntimeError: if the run fails.
    """
    from shockwave.runtime import RuntimeConfig, run_workload  # the package imports this one

    family, batch_size = "softmax-digits", 32
    per_epoch = FAMILIES[family].samples_per_epoch
    if (family, batch_size, 1) not in table:  # a partial profile: measure the one entry needed
        rate = measure_throughput(family, batch_size, 1, seconds=0.5)
        table = ThroughputTable({**table.entries, (family, batch_size, 1): rate})
    one = epoch_durations(family, np.array([batch_size]), 1, table, per_epoch)
    epochs = max(2, round(COST_JOB_SECONDS / float(one[0])))
    jobs = tuple(
        Job(
            job_id=i,
            arrival_time=0.0,
            gang_size=1,
            model=family,
            dataset="digits",
            mode="static",
            batch_sizes=np.full(epochs, batch_size, dtype=np.int64),
            epoch_seconds=np.full(epochs, float(one[0])),
            samples_per_epoch=per_epoch,
            run=RunSpec(family=family, seed=i),
        )
        for i in range(COST_JOBS)
    )
    workload = Workload(jobs, table.restricted_to([family]), source="shockwave cost run")
    slots = min(2, usable_cores())
    with tempfile.TemporaryDirectory(prefix="shockwave-costs-") as directory:
        config = RuntimeConfig(
            gpus=slots,
            round_seconds=COST_ROUND_SECONDS,
            slot_kind="cpu",
            run_dir=Path(directory) / "run",
            workdir=Path(directory),
        )
        result = run_workload(workload, "gavel", config)
    if result.failed_jobs or result.incomplete:
        raise RuntimeError(f"the cost-measuring run failed: {result.errors}")
    delays = [s[1] for starts in result.start_seconds for s in starts if s[1] > 0]
    turnaround = [
        wait + decision
        for wait, decision in zip(
            result.round_boundary_wait, result.round_decision_seconds, strict=False
        )
    ]
    return RuntimeCosts(
        restart_seconds=round(statistics.fmean(delays), 4) if delays else 0.0,
        round_overhead_seconds=round(statistics.fmean(turnaround), 4) if turnaround else 0.0,
        machine=machine_id(),
    )
