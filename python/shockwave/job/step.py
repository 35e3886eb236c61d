"""One training step of a bundled job, shared by the trainer and the throughput measurement.

A step takes the batch's samples (by index into the data set), augments the inputs with the
job's stateful generator, computes the gradient of the mean loss as the sample-weighted mean of
the gradients of the batch's two halves (so the GNS statistics come for free, in every mode),
hands both to the adaptation's monitor, and applies SGD with momentum::

    v <- momentum * v + G
    p <- p - learning_rate * v
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.job.batch_size_adapter import BatchSizeAdapter
from shockwave.job.families.family import Dataset, Family, Params


def gradient_halves(
    family: Family,
    params: Params,
    inputs: npt.NDArray[np.float64],
    targets: npt.NDArray[Any],
) -> tuple[float, Params, tuple[Params, Params] | None]:
    """Mean loss and gradient of a batch, computed over its two halves.

    Returns:
        ``(loss, gradient, halves)``: the batch's mean loss and gradient, and the two halves'
        gradients when the batch splits into equal halves (else ``None``). A batch of one sample
        is not split.
    """
    samples = inputs.shape[0]
    half = samples // 2
    if half == 0:
        loss, gradient = family.loss_and_gradients(params, inputs, targets)
        return loss, gradient, None
    first_loss, first = family.loss_and_gradients(params, inputs[:half], targets[:half])
    second_loss, second = family.loss_and_gradients(params, inputs[half:], targets[half:])
    first_weight = half / samples
    second_weight = (samples - half) / samples
    gradient = {name: first_weight * first[name] + second_weight * second[name] for name in first}
    loss = first_weight * first_loss + second_weight * second_loss
    return loss, gradient, ((first, second) if 2 * half == samples else None)


def training_step(
    family: Family,
    data: Dataset,
    indices: npt.NDArray[np.intp],
    augment_rng: np.random.Generator,
    params: Params,
    velocity: Params,
    learning_rate: float,
    momentum: float,
    adapter: BatchSizeAdapter,
) -> float:
    """Train on the samples ``indices`` of ``data``; updates ``params`` and ``velocity`` in place.

    Returns:
        The batch's mean loss before the update.
    """
    inputs = family.augment(data.inputs[indices], augment_rng)
    targets = data.targets[indices]
    loss, gradient, halves = gradient_halves(family, params, inputs, targets)
    adapter.observe(halves, gradient, int(indices.shape[0]))
    for name, value in gradient.items():
        step = velocity[name]
        step *= momentum
        step += value
        params[name] -= learning_rate * step
    return loss
