"""How a bundled job changes its batch size: the ``static``, ``gns`` and ``accordion`` modes.

Decisions are taken at epoch boundaries only, from the gradients of the epoch that just ended
(never from wall time), so they are deterministic and a job resumed from a checkpoint decides
exactly as it would have without the preemption. A job's reachable batch sizes are its launch's
``batch_sizes`` (its regimes).

**Statistics, gathered at every step in every mode** (so a step costs the same in every mode):
the trainer computes each step's gradient ``G`` over ``B`` samples as the mean of the gradients
of the batch's two halves. :class:`GradientMonitor` takes both halves and the mean and keeps

* the two-batch-size estimates of McCandlish et al. (2018), *An Empirical Model of Large-Batch
  Training*, appendix A.1: with ``B_small = B / 2`` (``|G_small|^2`` = mean of the halves'
  squared norms) and ``B_big = B`` (``|G_big|^2 = |G|^2``),
  ``|G|^2 ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)`` and
  ``tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1 / B_small - 1 / B_big)``, each smoothed by its own
  bias-corrected exponential moving average (decay :data:`GNS_EMA_DECAY` per step, restarted at
  every epoch); the epoch's noise scale is ``B_noise = tr(Sigma) / |G|^2`` of the averages
  (steps whose batch does not split into equal halves, such as an odd last batch, are skipped);
* the epoch's accumulated gradient ``sum_t n_t G_t / sum_t n_t`` (``n_t`` samples at step
  ``t``) and its norm.

**Modes.**

``static``
    keeps the initial batch size.
``gns``
    at an epoch's end, if ``B_noise >= threshold * B`` (``threshold`` is the family's
    ``gns_threshold``, or the run option ``gns_threshold``), moves to the next larger allowed batch
    size; it never goes down. A batch smaller than the noise scale wastes samples on noise, so
    the job grows its batch as its gradients shrink relative to their noise.
``accordion``
    Agarwal et al. (2021), *Adaptive Gradient Communication via Critical Learning Regime
    Identification* (MLSys): an epoch is *critical* if it is among the first
    :data:`ACCORDION_WARMUP_EPOCHS`, or if the norm of its accumulated gradient changed by at
    least ``eta`` (:data:`ACCORDION_ETA` = 0.5, the paper's value, or the run option
    ``accordion_eta``) relative to the last epoch trained at the same batch size:
    ``|n_prev - n| / n_prev >= eta``. After a critical epoch the job trains at its smallest batch
    size, otherwise at its largest. An epoch with no earlier epoch at its batch size (the first
    after a switch) keeps the batch size. Comparing only epochs of one batch size is our choice:
    the norm of an epoch's accumulated gradient depends on the batch size it was trained at
    (measured on the bundled families: 2.5 to 4 times larger at 256 than at 16, with the
    learning rate scaled), so a comparison across a switch would read every switch as a critical
    change and the job would alternate between its two sizes every epoch or two.

**Measured** (30 epochs from batch 16, seeds 0 / 1 / 2, the families' defaults; ``size@epoch`` is
the first epoch, counted from 0, at each new batch size):

* ``gns`` over 16, 32, 64, 128, 256:

  - ``softmax-digits`` (threshold 32): ``32@2 64@7 128@14 256@19`` /
    ``32@4 64@7 128@10 256@16`` / ``32@3 64@28``;
  - ``mlp-digits`` (threshold 16): ``32@5 64@6 128@16 256@17`` / ``32@5 64@6 128@11 256@24`` /
    ``32@3 64@11 128@18 256@28``;
  - ``rnn-sines`` (threshold 0.6): ``32@2 64@3 128@9 256@11`` / ``32@2 64@3 128@4`` /
    ``32@2 64@3 128@20``.

* ``accordion`` over 16 and 256: in every job epochs 0 and 1 are critical and epoch 2 is not,
  so it moves to 256 at epoch 3. ``softmax-digits`` stays there (all three seeds);
  ``mlp-digits`` returns to 16 for epochs 5 and 7 (seeds 0 and 2) and stays at 256 from epoch
  8, or stays from epoch 3 (seed 1); ``rnn-sines``, whose training at 256 is noisy from epoch to
  epoch, returns to 16 for single epochs 7, 3 and 9 times (seeds 0, 1, 2).

The state (:meth:`BatchSizeAdapter.state`) is a JSON object plus the accumulated gradient's
arrays, for the checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from shockwave.arguments import is_integer, is_number
from shockwave.job.families.family import Params

Mode = Literal["static", "gns", "accordion"]
#: The adaptation modes of a bundled job.
MODES: tuple[Mode, ...] = ("static", "gns", "accordion")
#: Per-step decay of the moving averages of the GNS estimates.
GNS_EMA_DECAY = 0.999
#: Accordion's threshold on the relative change of the accumulated gradient norm (the paper's).
ACCORDION_ETA = 0.5
#: Accordion: the first epochs of a job are critical.
ACCORDION_WARMUP_EPOCHS = 1
#: Name prefix of the accumulated gradient's arrays in a checkpoint.
ARRAY_PREFIX = "adaptation."


def squared_norm(gradients: Mapping[str, npt.NDArray[np.float64]]) -> float:
    """Sum of the squares of every entry of ``gradients``."""
    return sum(float(np.vdot(value, value)) for value in gradients.values())


def gns_estimates(
    small_sq: float, big_sq: float, small_batch: float, big_batch: float
) -> tuple[float, float]:
    """McCandlish et al.'s unbiased estimates ``(|G|^2, tr(Sigma))`` from two batch sizes.

    Args:
        small_sq: mean squared norm of gradients over ``small_batch`` samples.
        big_sq: squared norm of a gradient over ``big_batch`` samples.
        small_batch, big_batch: the two batch sizes, ``0 < small_batch < big_batch``.
    """
    gradient_sq = (big_batch * big_sq - small_batch * small_sq) / (big_batch - small_batch)
    trace = (small_sq - big_sq) / (1.0 / small_batch - 1.0 / big_batch)
    return gradient_sq, trace


def noise_scale(gradient_sq: float, trace: float) -> float:
    """``B_noise = tr(Sigma) / |G|^2`` (samples); ``inf`` when the noise swamps the gradient.

    A non-positive trace estimate gives 0 (no measurable noise); a non-positive gradient
    estimate with noise gives ``inf``.
    """
    if trace <= 0.0:
        return 0.0
    if gradient_sq <= 0.0:
        return math.inf
    return trace / gradient_sq


def gns_next_batch_size(
    scale: float, current: int, batch_sizes: Sequence[int], threshold: float
) -> int:
    """The ``gns`` rule: the next larger batch size if ``scale >= threshold * current``."""
    if scale >= threshold * current:
        larger = [b for b in batch_sizes if b > current]
        if larger:
            return min(larger)
    return current


def accordion_critical(previous_norm: float, norm: float, eta: float) -> bool:
    """Whether an epoch is critical: its gradient norm moved by at least ``eta`` relatively."""
    if previous_norm <= 0.0:
        return norm > 0.0
    return abs(previous_norm - norm) / previous_norm >= eta


class GradientMonitor:
    """Gradient statistics of the epoch in progress (see the module notes)."""

    def __init__(self, decay: float = GNS_EMA_DECAY) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay!r}")
        self.decay = decay
        self.reset()

    def reset(self) -> None:
        """Forget the epoch's statistics (at an epoch's start)."""
        self.gradient_sq_average = 0.0
        self.trace_average = 0.0
        self.average_weight = 0.0
        self.samples = 0
        self.accumulated: Params | None = None

    def observe(self, halves: tuple[Params, Params] | None, gradient: Params, samples: int) -> None:
        """Take one step's gradients.

        Args:
            halves: the gradients of the batch's two halves when they have equal sizes, else
                ``None`` (the step then counts for the accumulated gradient only).
            gradient: the step's gradient (mean over its ``samples`` samples).
            samples: samples in the step's batch.
        """
        if halves is not None:
            small_sq = 0.5 * (squared_norm(halves[0]) + squared_norm(halves[1]))
            gradient_sq, trace = gns_estimates(
                small_sq, squared_norm(gradient), samples / 2, samples
            )
            keep = self.decay
            self.gradient_sq_average = keep * self.gradient_sq_average + (1 - keep) * gradient_sq
            self.trace_average = keep * self.trace_average + (1 - keep) * trace
            self.average_weight = keep * self.average_weight + (1 - keep)
        if self.accumulated is None:
            self.accumulated = {name: samples * value for name, value in gradient.items()}
        else:
            for name, value in gradient.items():
                self.accumulated[name] += samples * value
        self.samples += samples

    def noise_scale(self) -> float | None:
        """The epoch's gradient noise scale, samples (``None`` before a step that splits)."""
        if self.average_weight <= 0.0:
            return None
        return noise_scale(
            self.gradient_sq_average / self.average_weight,
            self.trace_average / self.average_weight,
        )

    def gradient_norm(self) -> float | None:
        """Norm of the epoch's accumulated (sample-weighted mean) gradient; ``None`` if empty."""
        if self.accumulated is None or self.samples == 0:
            return None
        return math.sqrt(squared_norm(self.accumulated)) / self.samples

    def state(self) -> tuple[dict[str, Any], dict[str, npt.NDArray[np.float64]]]:
        """JSON state and arrays (the accumulated gradient) for a checkpoint."""
        meta = {
            "gradient_sq_average": self.gradient_sq_average,
            "trace_average": self.trace_average,
            "average_weight": self.average_weight,
            "samples": self.samples,
        }
        arrays = {
            f"{ARRAY_PREFIX}{name}": value for name, value in (self.accumulated or {}).items()
        }
        return meta, arrays

    def load_state(
        self, meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[np.float64]]
    ) -> None:
        """Inverse of :meth:`state` (``arrays`` may hold other entries; they are ignored).

        Raises:
            ValueError: naming the field that is missing or malformed.
        """
        for key in ("gradient_sq_average", "trace_average", "average_weight"):
            value = meta.get(key)
            if not is_number(value, numpy=False):
                raise ValueError(f"adaptation.{key}: must be a number, got {value!r}")
        samples = meta.get("samples")
        if not is_integer(samples, numpy=False) or samples < 0:
            raise ValueError(f"adaptation.samples: must be an integer >= 0, got {samples!r}")
        accumulated = {
            name[len(ARRAY_PREFIX) :]: np.array(value, dtype=np.float64)
            for name, value in arrays.items()
            if name.startswith(ARRAY_PREFIX)
        }
        if bool(accumulated) != (samples > 0):
            raise ValueError("adaptation: the accumulated gradient does not match its samples")
        self.gradient_sq_average = float(meta["gradient_sq_average"])
        self.trace_average = float(meta["trace_average"])
        self.average_weight = float(meta["average_weight"])
        self.samples = samples
        self.accumulated = accumulated or None


class BatchSizeAdapter:
    """A job's adaptation mode, its statistics, and its decisions at epoch ends.

    Args:
        mode: ``"static"``, ``"gns"`` or ``"accordion"``.
        batch_sizes: the job's allowed batch sizes, ascending.
        gns_threshold: multiple of the batch size the noise scale must reach (``gns``), > 0.
        accordion_eta: relative change of the gradient norm that marks a critical epoch, > 0.
        decay: per-step decay of the GNS moving averages, in ``[0, 1)``.

    Raises:
        ValueError: naming the argument that is not valid.
    """

    def __init__(
        self,
        mode: str,
        batch_sizes: Sequence[int],
        *,
        gns_threshold: float,
        accordion_eta: float = ACCORDION_ETA,
        decay: float = GNS_EMA_DECAY,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not batch_sizes or list(batch_sizes) != sorted(set(batch_sizes)):
            raise ValueError(f"batch_sizes must be ascending and distinct, got {batch_sizes!r}")
        for name, value in (("gns_threshold", gns_threshold), ("accordion_eta", accordion_eta)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        self.mode: Mode = mode
        self.batch_sizes = tuple(batch_sizes)
        self.gns_threshold = gns_threshold
        self.accordion_eta = accordion_eta
        self.monitor = GradientMonitor(decay)
        self.epochs = 0
        #: the accumulated gradient norm of the last epoch trained at each batch size
        self.last_norms: dict[int, float] = {}

    def observe(self, halves: tuple[Params, Params] | None, gradient: Params, samples: int) -> None:
        """Take one step's gradients (see :meth:`GradientMonitor.observe`)."""
        self.monitor.observe(halves, gradient, samples)

    def end_epoch(self, batch_size: int) -> int:
        """Close the epoch trained at ``batch_size``; the batch size of the next epoch."""
        next_size = batch_size
        norm = self.monitor.gradient_norm()
        if self.mode == "gns":
            scale = self.monitor.noise_scale()
            if scale is not None:
                next_size = gns_next_batch_size(
                    scale, batch_size, self.batch_sizes, self.gns_threshold
                )
        elif self.mode == "accordion" and norm is not None:
            previous = self.last_norms.get(batch_size)
            if self.epochs < ACCORDION_WARMUP_EPOCHS:
                next_size = self.batch_sizes[0]
            elif previous is not None:
                critical = accordion_critical(previous, norm, self.accordion_eta)
                next_size = self.batch_sizes[0] if critical else self.batch_sizes[-1]
        if norm is not None:
            self.last_norms[batch_size] = norm
        self.epochs += 1
        self.monitor.reset()
        return next_size

    def state(self) -> tuple[dict[str, Any], dict[str, npt.NDArray[np.float64]]]:
        """JSON state and arrays for a checkpoint."""
        meta, arrays = self.monitor.state()
        meta = {
            "mode": self.mode,
            "epochs": self.epochs,
            "last_norms": [[size, norm] for size, norm in sorted(self.last_norms.items())],
            "monitor": meta,
        }
        return meta, arrays

    def load_state(
        self, meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[np.float64]]
    ) -> None:
        """Inverse of :meth:`state`.

        Raises:
            ValueError: naming the field that is missing, malformed or of another mode.
        """
        if meta.get("mode") != self.mode:
            raise ValueError(
                f"adaptation.mode: the checkpoint was made in mode {meta.get('mode')!r}, "
                f"the job runs in {self.mode!r}"
            )
        epochs = meta.get("epochs")
        if not is_integer(epochs, numpy=False) or epochs < 0:
            raise ValueError(f"adaptation.epochs: must be an integer >= 0, got {epochs!r}")
        norms = meta.get("last_norms")
        if not isinstance(norms, list) or not all(
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], int)
            and isinstance(pair[1], (int, float))
            for pair in norms
        ):
            raise ValueError("adaptation.last_norms: must be [[batch size, norm], ...]")
        monitor = meta.get("monitor")
        if not isinstance(monitor, dict):
            raise ValueError("adaptation.monitor: must be an object")
        self.monitor.load_state(monitor, arrays)
        self.epochs = epochs
        self.last_norms = {int(size): float(norm) for size, norm in norms}
