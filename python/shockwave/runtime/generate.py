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
  gradients), from the bundled jobs' measured behaviour (``benches/adaptation_calibration.py``:
  every family, mode and initial batch size trained alone for 40 epochs with the calibration
  training seeds 100, 101 and 102, which no generated job uses as far as anything can tell: a
  generated job's training seed is drawn from ``[0, 2**31 - 1)``):

  - a ``gns`` job first trains at each larger regime at the mean epoch the calibration jobs of
    its family and initial batch size first did (:data:`GNS_PLANNED_FIRST_EPOCHS`; a regime some
    seed never reached counts at epoch 40, a lower bound), the same epochs whatever the job's
    length: a short job spends most of its time at small batches, as a real one does. Regimes
    a short job would not reach are planned for its last epochs, one each, so that every
    regime appears;
  - an ``accordion`` job keeps its small batch for its first :data:`ACCORDION_PLANNED_CRITICAL`
    epochs (the critical early phase: the bundled jobs leave it after two or three epochs) and
    the large one after, except for the single epochs at the small batch that the family's jobs
    come back for (:data:`ACCORDION_PLANNED_RETURN_SHARE`: a quarter of the later epochs of
    ``rnn-sines``, whose training at batch 256 is noisy from epoch to epoch, so that its
    gradient-norm test finds a critical epoch now and then; none for the digits models, which
    stay at the large batch), spread evenly. A plan that ignored those returns would miss most
    of such a job's time: an epoch at batch 16 takes about 4 times as long as one at 256.

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
from shockwave.profile_rules import epoch_durations
from shockwave.run_spec import RunSpec
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Job, Workload

#: Adaptation modes drawn by default (equal shares).
DEFAULT_MODES: tuple[AdaptationMode, ...] = ADAPTATION_MODES
#: Epochs an Accordion job is planned at its small batch size (its critical early phase).
ACCORDION_PLANNED_CRITICAL = 3
#: Share of an Accordion job's epochs after its critical phase that are planned back at its small
#: batch size, per bundled family (measured by ``benches/adaptation_calibration.py``: 0.26 and
#: 0.23 for ``rnn-sines`` from 16 and 32, at most 0.05 for the digits models).
ACCORDION_PLANNED_RETURN_SHARE: dict[str, float] = {
    "softmax-digits": 0.0,
    "mlp-digits": 0.0,
    "rnn-sines": 0.25,
}
#: The epoch (counted from 0) at which a GNS job first trains at each regime above its initial
#: batch size, per (family, initial batch size): the means measured by
#: ``benches/adaptation_calibration.py`` (seeds 100-102, 40 epochs), rounded, each at least one
#: epoch after the one before.
GNS_PLANNED_FIRST_EPOCHS: dict[tuple[str, int], tuple[int, ...]] = {
    ("softmax-digits", 16): (2, 11, 19, 31),
    ("softmax-digits", 32): (8, 15, 24),
    ("mlp-digits", 16): (5, 6, 13, 22),
    ("mlp-digits", 32): (11, 21, 29),
    ("rnn-sines", 16): (3, 7, 23, 40),
    ("rnn-sines", 32): (2, 9, 29),
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
        top = len(regimes) - 1
        index = np.arange(epochs)
        firsts = GNS_PLANNED_FIRST_EPOCHS.get((family or "", int(regimes[0])))
        if firsts is None or len(firsts) != top:  # not calibrated: equal shares of the epochs
            stage = (index * len(regimes)) // epochs
        else:
            stage = np.searchsorted(np.asarray(firsts), index, side="right")
        # the last epochs climb through the regimes a short job would not reach, one each
        stage = np.maximum(stage, top - (epochs - 1 - index))
        schedule = np.asarray(regimes, dtype=np.int64)[np.clip(stage, 0, top)]
    elif mode == "accordion" and len(regimes) > 1:
        small = max(1, min(epochs - 1, ACCORDION_PLANNED_CRITICAL))
        schedule[small:] = regimes[-1]
        share = ACCORDION_PLANNED_RETURN_SHARE.get(family or "", 0.0)
        later = np.arange(epochs - small)
        # epoch small + i returns when the running count of returns steps up (even spacing;
        # the first epoch after the critical phase stays large, as a real job's does)
        returns = np.floor((later + 1) * share) > np.floor(later * share)
        schedule[small:][returns & (later > 0)] = regimes[0]
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
        costs=table.costs,
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
