"""What a bundled model family is: its data, its model and its training defaults.

A :class:`Family` describes a real training workload that :mod:`shockwave.job.trainer` runs with
numpy in float64: a dataset of ``samples_per_epoch`` samples, a model (parameters from a random
generator, the mean loss and its gradients for a batch), a data augmentation drawn from the
trainer's stateful generator, and the defaults of its optimiser (SGD with momentum, learning rate
scaled with the batch size) and of its GNS adaptation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

#: A model's parameters (or a gradient, or the optimiser's velocity) by name, float64.
Params: TypeAlias = dict[str, npt.NDArray[np.float64]]
#: ``loss_and_gradients(params, inputs, targets) -> (mean loss, gradients of the mean loss)``.
LossAndGradients: TypeAlias = Callable[
    [Params, npt.NDArray[np.float64], npt.NDArray[Any]], tuple[float, Params]
]


@dataclass(frozen=True)
class Dataset:
    """A training set held in memory (read-only arrays).

    Attributes:
        inputs: one row per sample, float64, shape ``(samples, ...)``.
        targets: one entry per sample (class labels int64, or float64 values),
            shape ``(samples, ...)``.
    """

    inputs: npt.NDArray[np.float64]
    targets: npt.NDArray[Any]

    def __post_init__(self) -> None:
        if self.inputs.shape[0] != self.targets.shape[0]:
            raise ValueError(
                f"targets: {self.targets.shape[0]} rows for {self.inputs.shape[0]} inputs"
            )
        self.inputs.setflags(write=False)
        self.targets.setflags(write=False)

    @property
    def size(self) -> int:
        """Number of samples."""
        return int(self.inputs.shape[0])


@dataclass(frozen=True)
class Family:
    """A bundled model family (see the module notes).

    Attributes:
        name: registry key, e.g. ``"softmax-digits"``.
        model: model label, e.g. ``"softmax regression"``.
        dataset: dataset label, e.g. ``"digits-nudged"``.
        samples_per_epoch: samples in the dataset (one epoch trains on all of them).
        batch_sizes: the batch sizes a job may run at, ascending powers of two.
        initial_batch_sizes: those a workload generator may pick for a job's first epoch.
        learning_rate: SGD learning rate at the job's initial batch size; at batch size ``b`` the
            trainer uses ``learning_rate * sqrt(b / initial_batch_size)``.
        momentum: SGD momentum coefficient, in ``[0, 1)``.
        gns_threshold: the ``gns`` mode grows the batch size at an epoch's end when the gradient
            noise scale is at least this multiple of the current batch size.
        load: the training set (cached: repeated calls return the same arrays).
        init_params: fresh parameters from a generator.
        loss_and_gradients: mean loss of a batch and its gradients (same names as the
            parameters).
        augment: a batch's inputs after augmentation, drawing from the given generator (a new
            array; the input is not modified).
    """

    name: str
    model: str
    dataset: str
    samples_per_epoch: int
    batch_sizes: tuple[int, ...]
    initial_batch_sizes: tuple[int, ...]
    learning_rate: float
    momentum: float
    gns_threshold: float
    load: Callable[[], Dataset]
    init_params: Callable[[np.random.Generator], Params]
    loss_and_gradients: LossAndGradients
    augment: Callable[[npt.NDArray[np.float64], np.random.Generator], npt.NDArray[np.float64]]

    def __post_init__(self) -> None:
        sizes = self.batch_sizes
        if not sizes or list(sizes) != sorted(set(sizes)):
            raise ValueError(f"family {self.name}: batch_sizes must be ascending, got {sizes}")
        if any(b < 2 or b & (b - 1) for b in sizes):
            raise ValueError(f"family {self.name}: batch_sizes must be powers of two >= 2")
        if not self.initial_batch_sizes or not set(self.initial_batch_sizes) <= set(sizes):
            raise ValueError(f"family {self.name}: initial_batch_sizes must be in batch_sizes")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"family {self.name}: momentum must be in [0, 1)")

    @property
    def max_batch_size(self) -> int:
        """The largest batch size of the family."""
        return self.batch_sizes[-1]
