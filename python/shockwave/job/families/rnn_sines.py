"""``rnn-sines``: an Elman RNN predicting the next value of noisy sums of sinusoids.

**Data** (deterministic, from the fixed seed :data:`DATA_SEED`): :data:`SEQUENCES` series of
``LENGTH + 1`` points, each the sum of three sinusoids with amplitudes in ``[0.2, 0.6)``, angular
frequencies in ``[0.1, 0.8)`` radians per step and uniform phases, plus N(0, 0.05^2) noise. The
inputs are the first ``LENGTH`` points, the targets the last ``LENGTH`` (the next value at every
step). Inputs get N(0, 0.02^2) noise per batch.

**Model**: ``h_t = tanh(x_t Wx + h_{t-1} Wh + bh)``, ``y_t = h_t . Wo + bo`` with ``h_0 = 0``,
hidden width :data:`HIDDEN`; the loss is the mean squared error over all samples and steps, its
gradients by backpropagation through time over the whole sequence.

**Measured** (this project's 2-core development machine, one BLAS thread, best of four 0.6 s
runs of :func:`shockwave.job.measure_throughput`): a step takes 0.82 / 1.07 / 1.46 / 2.30 / 4.08
ms at batch 16 / 32 / 64 / 128 / 256 (19,400 to 62,800 samples/s), an epoch 0.42 s at 16 and
0.27 s at 32. Two threads change nothing (the matrices are too small for OpenBLAS to split).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.job.families.family import Dataset, Family, Params

#: Seed of the data set (fixed: every job trains on the same data).
DATA_SEED = 20_230_417
#: Sequences in the data set (samples per epoch).
SEQUENCES = 8192
#: Time steps per sequence.
LENGTH = 24
#: Width of the hidden state.
HIDDEN = 48
#: Sinusoids per series.
COMPONENTS = 3
#: Standard deviation of the noise in the data, and of the noise added to every batch's inputs.
DATA_NOISE = 0.05
INPUT_NOISE = 0.02


@cache
def noisy_sines() -> Dataset:
    """The data set (see the module notes); cached per process."""
    rng = np.random.default_rng(DATA_SEED)
    amplitude = rng.uniform(0.2, 0.6, size=(SEQUENCES, COMPONENTS, 1))
    frequency = rng.uniform(0.1, 0.8, size=(SEQUENCES, COMPONENTS, 1))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=(SEQUENCES, COMPONENTS, 1))
    time = np.arange(LENGTH + 1, dtype=np.float64)
    series = (amplitude * np.sin(frequency * time + phase)).sum(axis=1)
    series += rng.normal(0.0, DATA_NOISE, size=series.shape)
    return Dataset(
        inputs=np.ascontiguousarray(series[:, :LENGTH]),
        targets=np.ascontiguousarray(series[:, 1:]),
    )


def init_params(rng: np.random.Generator) -> Params:
    """Input and output weights from N(0, 1/H), recurrent weights from N(0, 0.8^2/H)."""
    scale = 1.0 / np.sqrt(HIDDEN)
    return {
        "Wx": rng.normal(0.0, 1.0, size=HIDDEN),
        "Wh": rng.normal(0.0, 0.8 * scale, size=(HIDDEN, HIDDEN)),
        "bh": np.zeros(HIDDEN),
        "Wo": rng.normal(0.0, scale, size=HIDDEN),
        "bo": np.zeros(1),
    }


def loss_and_gradients(
    params: Params, inputs: npt.NDArray[np.float64], targets: npt.NDArray[Any]
) -> tuple[float, Params]:
    """Mean squared error of the batch's next-value predictions and its gradients (BPTT)."""
    n, length = inputs.shape
    w_in, w_rec, w_out = params["Wx"], params["Wh"], params["Wo"]
    states = np.zeros((length + 1, n, HIDDEN))
    for t in range(length):
        states[t + 1] = np.tanh(np.outer(inputs[:, t], w_in) + states[t] @ w_rec + params["bh"])
    hidden = states[1:]  # (length, n, HIDDEN)
    error = hidden @ w_out + params["bo"][0] - targets.T  # (length, n)
    loss = float(np.mean(error * error))
    grad_out = error * (2.0 / (n * length))
    grad_in = np.zeros(HIDDEN)
    grad_rec = np.zeros((HIDDEN, HIDDEN))
    grad_bias = np.zeros(HIDDEN)
    carried = np.zeros((n, HIDDEN))
    for t in range(length - 1, -1, -1):
        grad_state = np.outer(grad_out[t], w_out) + carried
        grad_pre = grad_state * (1.0 - hidden[t] * hidden[t])
        grad_in += inputs[:, t] @ grad_pre
        grad_rec += states[t].T @ grad_pre
        grad_bias += grad_pre.sum(axis=0)
        carried = grad_pre @ w_rec.T
    return loss, {
        "Wx": grad_in,
        "Wh": grad_rec,
        "bh": grad_bias,
        "Wo": np.tensordot(grad_out, hidden, axes=([0, 1], [0, 1])),
        "bo": np.array([grad_out.sum()]),
    }


def add_input_noise(
    inputs: npt.NDArray[np.float64], rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """``inputs`` plus N(0, :data:`INPUT_NOISE` ^2) noise (new array)."""
    return inputs + rng.normal(0.0, INPUT_NOISE, size=inputs.shape)


FAMILY = Family(
    name="rnn-sines",
    model=f"Elman RNN (hidden {HIDDEN}, {LENGTH} steps)",
    dataset="noisy-sines",
    samples_per_epoch=SEQUENCES,
    batch_sizes=(16, 32, 64, 128, 256),
    initial_batch_sizes=(16, 32),
    learning_rate=0.02,
    momentum=0.9,
    gns_threshold=0.6,
    load=noisy_sines,
    init_params=init_params,
    loss_and_gradients=loss_and_gradients,
    augment=add_input_noise,
)
