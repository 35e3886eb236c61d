"""The original simulator's *runtime* batch-size rules (``gavel`` mechanics).

The original does not follow a job's profile at run time. At every round boundary it evaluates an
Accordion or GNS rule for each active job and may set a pending flag; the flag is consumed at the
end of the job's next run, which rescales the batch size, the step counters and the throughput.
The facts (reference notes, section 2.6):

* the epoch counter is ceil-based, ``ceil(steps_run / ceil(D / b))``: it counts epochs *started*;
* Accordion: ``big`` when the job is at its initial batch size, not critical
  (:func:`shockwave.catalog.accordion_runtime_is_critical`) and below the model's maximum;
  ``small`` when it is not at its initial size, critical, and above the smallest listed size;
  ``big`` jumps to the model's maximum, ``small`` back to the initial size; Transformer never
  adapts;
* GNS: ``big`` when the profile staircase (built for ``max(760, counter + 2)`` epochs) exceeds the
  current size at the counter or the next epoch and the size is below the model's maximum; each
  consumption doubles the batch size once;
* a change is refused outright when the initial size already is the model's maximum, and
  reverted when the throughput table has no entry for the new size;
* on a change, ``total_steps`` is rescaled to keep the epoch count, and the steps run are rounded
  **up** to whole epochs at the new size (the partial epoch is credited for free).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shockwave.catalog import accordion_runtime_is_critical, model_family
from shockwave.profile_rules import gns_batch_size_at

#: The original builds the runtime GNS pattern with at least this many epochs.
GNS_PATTERN_MIN_EPOCHS = 760
#: Models whose Accordion rule the original skips outright.
_ACCORDION_SKIPPED = frozenset({"Transformer"})


def steps_per_epoch(samples_per_epoch: int, batch_size: int) -> int:
    """Iterations in one epoch: ``ceil(samples_per_epoch / batch_size)``."""
    return -(-samples_per_epoch // batch_size)


def epoch_counter(steps_run: int, samples_per_epoch: int, batch_size: int) -> int:
    """The original's ceil-based epoch index: epochs started after ``steps_run`` iterations."""
    return -(-steps_run // steps_per_epoch(samples_per_epoch, batch_size))


def wants_change(
    mode: str,
    model: str,
    initial_batch_size: int,
    gang_size: int,
    batch_size: int,
    counter: int,
) -> tuple[bool, bool]:
    """``(big, small)``: whether the rule of ``mode`` sets each flag for a job in this state."""
    family = model_family(model)
    if mode == "accordion":
        if model in _ACCORDION_SKIPPED:
            return False, False
        critical = accordion_runtime_is_critical(model, initial_batch_size, counter)
        if batch_size == initial_batch_size and not critical:
            return batch_size != family.max_batch_size, False
        if batch_size != initial_batch_size and critical:
            return False, batch_size != family.min_batch_size
        return False, False
    if mode == "gns":
        epochs = max(GNS_PATTERN_MIN_EPOCHS, counter + 2)
        current, following = (
            gns_batch_size_at(model, initial_batch_size, gang_size, epochs, i)
            for i in (counter, counter + 1)
        )
        grows = following > batch_size or current > batch_size
        return grows and batch_size != family.max_batch_size, False
    return False, False


@dataclass(frozen=True)
class Rescale:
    """The outcome of consuming a pending flag: the job's new batch size and step counters."""

    batch_size: int
    total_steps: int
    steps_run: int


def rescale(
    mode: str,
    model: str,
    initial_batch_size: int,
    batch_size: int,
    big: bool,
    total_steps: int,
    steps_run: int,
    samples_per_epoch: int,
) -> Rescale | None:
    """Apply a pending flag as the original's ``_scale_bs_and_iters`` does.

    Returns ``None`` when the change is refused (the initial size is already the model's maximum)
    or is a no-op (a ``static`` job). The caller reverts the change if the throughput table has
    no entry for the new batch size.
    """
    family = model_family(model)
    if initial_batch_size == family.max_batch_size and model != "Transformer":
        return None
    if mode == "gns":
        new_batch_size = 2 * batch_size
    elif mode == "accordion":
        new_batch_size = family.max_batch_size if big else initial_batch_size
    else:
        return None
    iterations_scaling = 1 / (new_batch_size / batch_size)
    old_per_epoch = steps_per_epoch(samples_per_epoch, batch_size)
    new_per_epoch = steps_per_epoch(samples_per_epoch, new_batch_size)
    old_epochs = -(-total_steps // old_per_epoch)
    new_total = math.ceil(total_steps * iterations_scaling)
    if -(-new_total // new_per_epoch) != old_epochs:
        new_total = new_per_epoch * old_epochs
    new_run = -(-steps_run // old_per_epoch) * new_per_epoch
    return Rescale(batch_size=new_batch_size, total_steps=new_total, steps_run=new_run)
