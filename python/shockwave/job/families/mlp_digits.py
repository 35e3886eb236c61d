"""``mlp-digits``: a multilayer perceptron 64 -> H -> H -> 10 (ReLU) on the nudged digits.

Parameters ``W1`` (64, H), ``b1``, ``W2`` (H, H), ``b2``, ``W3`` (H, 10), ``b3`` with
``H =`` :data:`HIDDEN`, He-initialised (N(0, 2 / fan_in)), biases 0; the loss is the mean
cross-entropy; every training image gets a random affine distortion
(:func:`~.digits.random_affine`).

**Measured** (this project's 2-core development machine, one BLAS thread, best of four 0.6 s
runs of :func:`shockwave.job.measure_throughput`): a step takes 0.86 / 1.12 / 1.49 / 2.31 / 4.5
ms at batch 16 / 32 / 64 / 128 / 256 (18,600 to 57,000 samples/s), an epoch 0.87 s at 16 and
0.57 s at 32. Two threads could not be measured cleanly there: with another process busy on one
of the two cores, OpenBLAS's two threads made a step 7 to 50 times slower.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.job.families.digits import (
    NUDGED_SAMPLES,
    nudged_digits,
    random_affine,
    softmax_cross_entropy,
)
from shockwave.job.families.family import Family, Params

FEATURES = 64
CLASSES = 10
#: Width of both hidden layers.
HIDDEN = 256


def init_params(rng: np.random.Generator) -> Params:
    """He-initialised weights, zero biases."""
    params: Params = {}
    for layer, (fan_in, fan_out) in enumerate(
        ((FEATURES, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, CLASSES)), start=1
    ):
        params[f"W{layer}"] = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out))
        params[f"b{layer}"] = np.zeros(fan_out)
    return params


def loss_and_gradients(
    params: Params, inputs: npt.NDArray[np.float64], targets: npt.NDArray[Any]
) -> tuple[float, Params]:
    """Mean cross-entropy of the batch and its gradients (backpropagation)."""
    pre1 = inputs @ params["W1"] + params["b1"]
    hidden1 = np.maximum(pre1, 0.0)
    pre2 = hidden1 @ params["W2"] + params["b2"]
    hidden2 = np.maximum(pre2, 0.0)
    logits = hidden2 @ params["W3"] + params["b3"]
    loss, grad_logits = softmax_cross_entropy(logits, targets)
    grad_hidden2 = grad_logits @ params["W3"].T
    grad_hidden2[pre2 <= 0.0] = 0.0
    grad_hidden1 = grad_hidden2 @ params["W2"].T
    grad_hidden1[pre1 <= 0.0] = 0.0
    return loss, {
        "W1": inputs.T @ grad_hidden1,
        "b1": grad_hidden1.sum(axis=0),
        "W2": hidden1.T @ grad_hidden2,
        "b2": grad_hidden2.sum(axis=0),
        "W3": hidden2.T @ grad_logits,
        "b3": grad_logits.sum(axis=0),
    }


FAMILY = Family(
    name="mlp-digits",
    model=f"MLP 64-{HIDDEN}-{HIDDEN}-10",
    dataset="digits-nudged",
    samples_per_epoch=NUDGED_SAMPLES,
    batch_sizes=(16, 32, 64, 128, 256),
    initial_batch_sizes=(16, 32),
    learning_rate=0.01,
    momentum=0.9,
    gns_threshold=16.0,
    load=nudged_digits,
    init_params=init_params,
    loss_and_gradients=loss_and_gradients,
    augment=random_affine,
)
