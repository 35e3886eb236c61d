"""The original's rules that build a job's epoch profile: the batch size and duration of every
epoch (held by a job as an :class:`~shockwave.epoch_profile.EpochProfile`).

A profile is what the original computes in ``generate_pickle_file`` from a trace line and a
throughput table, quirks included:

* ``num_epochs = ceil(total_steps / ceil(samples_per_epoch / initial_batch_size))``;
* the batch-size schedule follows the job's adaptation mode (:func:`batch_size_schedule`);
* ``duration[e] = (samples_per_epoch / bs[e]) / thr(model, bs[e], gang)`` seconds: a plain float
  division, and the last, partial epoch counts as a whole epoch.

The functions here are pure and cheap; the simulator never calls them in a loop.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from shockwave.catalog import (
    ACCORDION_NEVER_ADAPTS,
    AdaptationMode,
    accordion_profile_is_critical,
    gns_staircase,
    model_family,
)
from shockwave.throughputs import ThroughputTable

#: Batch size of every epoch of a job, shape ``(epochs,)``.
BatchSizes: TypeAlias = npt.NDArray[np.int64]

#: Share of an Accordion job's epochs that always keeps the initial batch size (profile rule:
#: an epoch may switch to the large batch size only if ``epoch > 0.3 * num_epochs``).
ACCORDION_WARMUP_FRACTION = 0.3


def num_epochs(total_steps: int, samples_per_epoch: int, initial_batch_size: int) -> int:
    """Epochs of a job: ``ceil(total_steps / ceil(samples_per_epoch / initial_batch_size))``."""
    steps_per_epoch = math.ceil(samples_per_epoch / initial_batch_size)
    return math.ceil(total_steps / steps_per_epoch)


def accordion_schedule(model: str, initial_batch_size: int, epochs: int) -> BatchSizes:
    """Accordion batch sizes per epoch (profile rules of the original).

    An epoch trains at the model's maximum batch size iff it is outside the critical regime
    (:func:`shockwave.catalog.accordion_profile_is_critical`) and ``epoch > 0.3 * epochs``;
    otherwise at the initial batch size. Transformer jobs are never adapted.
    """
    schedule = np.full(epochs, initial_batch_size, dtype=np.int64)
    if model in ACCORDION_NEVER_ADAPTS:
        return schedule
    index = np.arange(epochs)
    large = (index > ACCORDION_WARMUP_FRACTION * epochs) & ~accordion_profile_is_critical(
        model, initial_batch_size, index
    )
    schedule[large] = model_family(model).max_batch_size
    return schedule


def gns_schedule(
    model: str,
    initial_batch_size: int,
    gang_size: int,
    epochs: int,
) -> BatchSizes:
    """GNS batch sizes per epoch (profile rules of the original).

    The job follows its staircase (:func:`shockwave.catalog.gns_staircase`), clipped to the
    model's maximum batch size, if it has one and ``epochs`` reaches the staircase's
    ``min_epochs``; otherwise it is static. The original's final-epoch quirk is reproduced: for a
    staircase of two or more stages, if the last epoch lies at or beyond the second stage, it keeps
    the initial batch size.
    """
    schedule = np.full(epochs, initial_batch_size, dtype=np.int64)
    staircase = gns_staircase(model, initial_batch_size, gang_size)
    if staircase is None or epochs < staircase.min_epochs:
        return schedule
    max_bs = model_family(model).max_batch_size
    stages = staircase.stages
    for index, (first_epoch, batch_size) in enumerate(stages):
        end = stages[index + 1][0] if index + 1 < len(stages) else epochs
        schedule[first_epoch:end] = min(batch_size, max_bs)
    if len(stages) >= 2 and epochs - 1 >= stages[1][0]:
        schedule[epochs - 1] = initial_batch_size
    return schedule


def gns_batch_size_at(
    model: str, initial_batch_size: int, gang_size: int, epochs: int, index: int
) -> int:
    """Batch size of epoch ``index`` in :func:`gns_schedule` of ``epochs`` epochs, without
    building the schedule (the simulator asks for single entries of very long schedules)."""
    staircase = gns_staircase(model, initial_batch_size, gang_size)
    if staircase is None or epochs < staircase.min_epochs:
        return initial_batch_size
    stages = staircase.stages
    if index == epochs - 1 and len(stages) >= 2 and epochs - 1 >= stages[1][0]:
        return initial_batch_size
    batch_size = initial_batch_size
    for first_epoch, stage_batch_size in stages:
        if first_epoch > index:
            break
        batch_size = min(stage_batch_size, model_family(model).max_batch_size)
    return batch_size


def batch_size_schedule(
    mode: AdaptationMode,
    model: str,
    initial_batch_size: int,
    gang_size: int,
    epochs: int,
) -> BatchSizes:
    """Batch size of every epoch for the given adaptation mode (original profile rules)."""
    if mode == "static":
        return np.full(epochs, initial_batch_size, dtype=np.int64)
    if mode == "accordion":
        return accordion_schedule(model, initial_batch_size, epochs)
    if mode == "gns":
        return gns_schedule(model, initial_batch_size, gang_size, epochs)
    raise ValueError(f"unknown adaptation mode {mode!r}")


def epoch_durations(
    model: str,
    batch_sizes: BatchSizes,
    gang_size: int,
    throughputs: ThroughputTable,
    samples_per_epoch: int | None = None,
) -> npt.NDArray[np.float64]:
    """Seconds per epoch on the job's gang: ``(samples_per_epoch / bs) / thr(model, bs, gang)``.

    ``samples_per_epoch`` defaults to the catalog's value for ``model`` (the original's models);
    give it for any other model (the runtime's bundled families, users' jobs).

    Raises:
        KeyError: if the table lacks a batch size of the schedule, or the model is not in the
            catalog and ``samples_per_epoch`` is not given.
        ValueError: if a needed throughput is zero (the epoch would never end).
    """
    samples = (
        model_family(model).samples_per_epoch if samples_per_epoch is None else samples_per_epoch
    )
    distinct, where = np.unique(batch_sizes, return_inverse=True)
    seconds = np.empty(distinct.shape, dtype=np.float64)
    for k, bs in enumerate(distinct.tolist()):
        thr = throughputs.isolated(model, bs, gang_size)
        if thr <= 0:
            raise ValueError(
                f"throughput of ({model} (batch size {bs}), {gang_size}) is 0: the epoch never ends"
            )
        seconds[k] = (samples / bs) / thr
    return seconds[where]
