"""Small real workloads of the bundled families, sized to run in about M minutes.

Every job names its family, adaptation mode, epochs, gang size and arrival, and a seed; its
*planning profile* (the batch size and expected duration of every epoch, which policies and the
simulator read) comes from a throughput table measured by ``shockwave cluster profile`` (or the
bundled default, measured on the project's 2-core development machine):

* regimes: ``static`` keeps its initial batch size; ``gns`` may double through the family's
  batch sizes up to the largest; ``accordion`` switches between its initial batch size and the
  family's largest. The profile lists every regime the job may reach (a job may not report
  another batch size).
* the planned schedule (a prior, not what the job will do: the real job decides from its own
  gradients), from the bundled jobs' measured behaviour: a ``gns`` job climbs one regime every
  few epochs (:data:`GNS_PLANNED_EPOCHS_PER_STEP`: 5 for ``softmax-digits``, 6 for
  ``mlp-digits``, 3 for ``rnn-sines``, the mean gaps between climbs measured over seeds 0-2 in
  ``docs/job.md`` and in the realized schedules of ``benches/runtime_fidelity.py``; a job with
  fewer epochs climbs once per equal share of them), then stays at the largest; an
  ``accordion`` job keeps its small batch for its first :data:`ACCORDION_PLANNED_CRITICAL`
  epochs (the critical early phase: the bundled jobs leave it after two or three epochs, then
  come back for single epochs now and then) and the large one after.
* sizes: each job's exclusive GPU-seconds are drawn log-normally (sigma 0.8) and scaled so that
  the workload holds ``load * minutes * 60 * gpus`` GPU-seconds (load 0.8 by default), so that a
  work-conserving policy needs about ``minutes``; arrivals are a Poisson process over the first
  40 % of that time (the first job at 0).
* gang sizes: 1 or 2 GPUs (70 / 30 %) on clusters of up to 3 GPUs, else the original generator's
  mix (1, 2, 4, 8 GPUs: 60 / 30 / 9 / 1 %) restricted to the cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shockwave.arguments import is_integer
from shockwave.catalog import ADAPTATION_MODES, AdaptationMode
from shockwave.job.families import FAMILIES, Family
from shockwave.job.spec import RunSpec
from shockwave.profiles import epoch_durations
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Job, Workload

#: Adaptation modes drawn by default (equal shares).
DEFAULT_MODES: tuple[AdaptationMode, ...] = ADAPTATION_MODES
#: Epochs an Accordion job is planned at its small batch size (its critical early phase).
ACCORDION_PLANNED_CRITICAL = 3
#: Epochs between two planned GNS climbs, per bundled family (measured; see the module notes).
GNS_PLANNED_EPOCHS_PER_STEP: dict[str, int] = {
    "softmax-digits": 5,
    "mlp-digits": 6,
    "rnn-sines": 3,
}
#: Smallest number of epochs of a generated job.
MIN_EPOCHS = 3


def job_regimes(family: Family, mode: AdaptationMode, initial_batch_size: int) -> list[int]:
    """The batch sizes a job may run at (ascending)."""
    if mode == "static":
        return [initial_batch_size]
    larger = [b for b in family.batch_sizes if b > initial_batch_size]
    if mode == "gns":
        return [initial_batch_size, *larger]
    return [initial_batch_size, family.max_batch_size] if larger else [initial_batch_size]


def planned_schedule(
    mode: AdaptationMode, regimes: Sequence[int], epochs: int, family: str | None = None
) -> npt.NDArray[np.int64]:
    """The planning profile's batch size of every epoch (see the module notes); every regime
    appears in it (``epochs >= len(regimes)``)."""
    schedule = np.full(epochs, regimes[0], dtype=np.int64)
    if mode == "gns" and len(regimes) > 1:
        step = GNS_PLANNED_EPOCHS_PER_STEP.get(family or "", epochs)
        # stage k starts at epoch k * step, or at k equal shares of a shorter job
        index = np.arange(epochs)
        stage = np.maximum(index // step, (index * len(regimes)) // epochs)
        schedule = np.asarray(regimes, dtype=np.int64)[np.minimum(stage, len(regimes) - 1)]
    elif mode == "accordion" and len(regimes) > 1:
        small = max(1, min(epochs - 1, ACCORDION_PLANNED_CRITICAL))
        schedule[small:] = regimes[-1]
    return schedule


def generate_real_workload(
    jobs: int,
    gpus: int,
    table: ThroughputTable,
    *,
    minutes: float = 10.0,
    seed: int = 0,
    load: float = 0.8,
    families: Sequence[str] | None = None,
    modes: Sequence[AdaptationMode] = DEFAULT_MODES,
) -> Workload:
    """A runnable workload (see the module notes).

    Args:
        jobs: how many jobs (>= 1).
        gpus: the cluster's GPU slots (gang sizes stay within it).
        table: measured throughputs of the families (every regime and gang size drawn must be
            in it).
        minutes: about how long a run should take, minutes.
        seed: seed of every draw (the same arguments give the same workload).
        load: share of the cluster's GPU-time the jobs' exclusive work fills.
        families: the families to draw from (default: all bundled ones).
        modes: the adaptation modes to draw from.

    Raises:
        ValueError: naming the argument, or the missing throughput entry.
    """
    if not is_integer(jobs, numpy=False) or not 1 <= jobs <= 100_000:
        raise ValueError(f"jobs must be an integer in [1, 100000], got {jobs!r}")
    if not is_integer(gpus, numpy=False) or gpus < 1:
        raise ValueError(f"gpus must be an integer >= 1, got {gpus!r}")
    if not math.isfinite(minutes) or not 0.1 <= minutes <= 10_000:
        raise ValueError(f"minutes must be in [0.1, 10000], got {minutes!r}")
    if not math.isfinite(load) or not 0 < load <= 4:
        raise ValueError(f"load must be in (0, 4], got {load!r}")
    names = list(families) if families is not None else sorted(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if not names or unknown:
        raise ValueError(
            f"families: unknown family {unknown[0] if unknown else ''!r} "
            f"(bundled: {', '.join(sorted(FAMILIES))})"
        )
    if not modes or any(m not in DEFAULT_MODES for m in modes):
        raise ValueError(f"modes must be drawn from {DEFAULT_MODES}, got {list(modes)!r}")
    rng = np.random.default_rng(seed)
    gangs, gang_weights = _gang_mix(gpus)
    budget = load * minutes * 60.0 * gpus  # GPU-seconds of exclusive work
    shares = rng.lognormal(0.0, 0.8, size=jobs)
    drawn = []
    for index in range(jobs):
        family = FAMILIES[names[int(rng.integers(len(names)))]]
        mode = modes[int(rng.integers(len(modes)))]
        gang = int(rng.choice(gangs, p=gang_weights))
        initial = int(
            family.initial_batch_sizes[int(rng.integers(len(family.initial_batch_sizes)))]
        )
        job_seed = int(rng.integers(2**31 - 1))
        drawn.append((index, family, mode, gang, initial, job_seed))
    gpu_share = shares / shares.sum() * budget
    span = 0.4 * minutes * 60.0
    gaps = rng.exponential(span / max(jobs - 1, 1), size=jobs)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps[1:])))
    out = []
    for (index, family, mode, gang, initial, job_seed), gpu_seconds, arrival in zip(
        drawn, gpu_share.tolist(), arrivals.tolist(), strict=True
    ):
        regimes = job_regimes(family, mode, initial)
        try:
            schedule, seconds = _size(family, mode, regimes, gang, gpu_seconds / gang, table)
        except KeyError as exc:
            raise ValueError(
                f"throughputs: {exc.args[0]} (measure this machine's table with "
                "'shockwave cluster profile')"
            ) from None
        out.append(
            Job(
                job_id=index,
                arrival_time=round(arrival, 3),
                gang_size=gang,
                model=family.name,
                dataset=family.dataset,
                mode=mode,
                batch_sizes=schedule,
                epoch_seconds=seconds,
                samples_per_epoch=family.samples_per_epoch,
                run=RunSpec(family=family.name, seed=job_seed),
            )
        )
    used = {job.model for job in out}
    return Workload(
        tuple(out),
        table.restricted_to(used),
        source=f"shockwave cluster generate --jobs {jobs} --gpus {gpus} --minutes {minutes:g} "
        f"--seed {seed}",
    )


def _size(
    family: Family,
    mode: AdaptationMode,
    regimes: list[int],
    gang: int,
    target_seconds: float,
    table: ThroughputTable,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The planned schedule and durations of the job whose exclusive runtime is closest to
    ``target_seconds`` (at least ``max(MIN_EPOCHS, regimes)`` epochs)."""
    floor = max(MIN_EPOCHS, len(regimes))
    per_regime = epoch_durations(
        family.name,
        np.asarray(regimes, dtype=np.int64),
        gang,
        table,
        family.samples_per_epoch,
    )
    mean_epoch = float(np.mean(per_regime))
    epochs = max(floor, round(target_seconds / mean_epoch))
    for _ in range(6):  # the planned mix of regimes depends on the epoch count
        schedule = planned_schedule(mode, regimes, epochs, family.name)
        seconds = epoch_durations(family.name, schedule, gang, table, family.samples_per_epoch)
        total = float(seconds.sum())
        better = max(floor, round(epochs * target_seconds / total))
        if better == epochs:
            break
        epochs = better
    schedule = planned_schedule(mode, regimes, epochs, family.name)
    seconds = epoch_durations(family.name, schedule, gang, table, family.samples_per_epoch)
    return schedule, seconds


def _gang_mix(gpus: int) -> tuple[list[int], list[float]]:
    if gpus <= 3:
        sizes, weights = [1, 2], [0.7, 0.3]
    else:
        sizes, weights = [1, 2, 4, 8], [0.6, 0.3, 0.09, 0.01]
    kept = [(s, w) for s, w in zip(sizes, weights, strict=True) if s <= gpus]
    total = sum(w for _, w in kept)
    return [s for s, _ in kept], [w / total for _, w in kept]
