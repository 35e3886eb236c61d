"""``softmax-digits``: multinomial logistic regression on the nudged digits (64 -> 10).

Parameters ``W`` (64, 10) and ``b`` (10,), initialised from N(0, 0.01^2) and 0; the loss is the
mean cross-entropy; every training image gets a random affine distortion
(:func:`~.digits.random_affine`).

**Measured** (this project's 2-core development machine, one BLAS thread, best of four 0.6 s
runs of :func:`shockwave.job.measure_throughput`): a step takes 0.125 / 0.159 / 0.226 / 0.369 /
0.644 ms at batch 16 / 32 / 64 / 128 / 256 (128,000 to 397,000 samples/s), an epoch 0.13 s at 16
and 0.08 s at 32: the lightest family, below the 0.2 s aimed at. The augmentation is most of a
step's per-sample cost. Two threads change nothing (the matrices are too small for OpenBLAS to
split).
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


def init_params(rng: np.random.Generator) -> Params:
    """Weights from N(0, 0.01^2), bias 0."""
    return {"W": rng.normal(0.0, 0.01, size=(FEATURES, CLASSES)), "b": np.zeros(CLASSES)}


def loss_and_gradients(
    params: Params, inputs: npt.NDArray[np.float64], targets: npt.NDArray[Any]
) -> tuple[float, Params]:
    """Mean cross-entropy of the batch and its gradients."""
    logits = inputs @ params["W"] + params["b"]
    loss, grad_logits = softmax_cross_entropy(logits, targets)
    return loss, {"W": inputs.T @ grad_logits, "b": grad_logits.sum(axis=0)}


FAMILY = Family(
    name="softmax-digits",
    model="softmax regression",
    dataset="digits-nudged",
    samples_per_epoch=NUDGED_SAMPLES,
    batch_sizes=(16, 32, 64, 128, 256),
    initial_batch_sizes=(16, 32),
    learning_rate=0.02,
    momentum=0.9,
    gns_threshold=32.0,
    load=nudged_digits,
    init_params=init_params,
    loss_and_gradients=loss_and_gradients,
    augment=random_affine,
)
