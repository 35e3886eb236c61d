"""The training loop of a bundled job (``"run": {"family": ...}``), preemptible and deterministic.

:func:`train` runs ``launch.epochs`` epochs of the family named in ``launch.run.family`` through
a :class:`~shockwave.job.context.JobContext`: it saves its state and returns when the scheduler
stops it, and resumes from that state when launched again, computing exactly what an
uninterrupted run computes (same parameters bit for bit, same batch size every epoch).

**Randomness**, all from ``launch.run.seed`` through ``np.random.default_rng``:

* initial parameters: ``default_rng([seed, 0])``;
* the data order of epoch ``e``: ``default_rng([seed, 1, e]).permutation(dataset size)``, of
  which the epoch takes the first ``launch.samples_per_epoch`` samples (all of them when, as
  usual, it equals the family's ``samples_per_epoch``; a smaller value trains on a different
  subset every epoch); recomputed on resume, so only the epoch and the position in it are saved;
* augmentation noise: one stateful generator, ``default_rng([seed, 2])``, whose
  ``bit_generator.state`` is saved in every checkpoint.

**Optimiser**: SGD with momentum (the velocity is saved); at batch size ``b`` the learning rate is
``learning_rate * sqrt(b / launch.initial_batch_size)`` (square-root scaling).

**Batch size**: the epoch's batch size is the context's; the last batch of an epoch is partial
when the batch size does not divide the epoch. At every epoch's end the job's
:class:`~shockwave.job.batch_size_adapter.BatchSizeAdapter` (mode ``launch.mode``) picks the next
epoch's batch size.

**Options** (``launch.run.options``): ``learning_rate`` (> 0), ``momentum`` (in ``[0, 1)``),
``gns_threshold`` (> 0) and ``accordion_eta`` (> 0) override the family's defaults.

**Checkpoint** (:meth:`~shockwave.job.context.JobContext.save`): arrays ``param.<name>``,
``velocity.<name>`` and the adaptation's ``adaptation.<name>``; meta ``{"trainer": {"family",
"mode", "epoch", "position", "augment_rng", "adaptation"}}``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.arguments import is_number
from shockwave.job.batch_size_adapter import ACCORDION_ETA, BatchSizeAdapter
from shockwave.job.checkpoint import Checkpoint, digest
from shockwave.job.context import JobContext
from shockwave.job.families import Family, Params, get_family
from shockwave.job.spec import JobLaunch
from shockwave.job.step import training_step

#: Seed-sequence streams (second entropy word) of the job's random draws.
INIT_STREAM, ORDER_STREAM, AUGMENT_STREAM = 0, 1, 2


@dataclass(frozen=True)
class TrainingSettings:
    """A bundled job's hyper-parameters: its family's defaults, overridden by run options.

    Attributes:
        learning_rate: SGD learning rate at the job's initial batch size.
        momentum: SGD momentum, in ``[0, 1)``.
        gns_threshold: the ``gns`` mode's noise-scale threshold, a multiple of the batch size.
        accordion_eta: the ``accordion`` mode's threshold on the gradient norm's relative change.
    """

    learning_rate: float
    momentum: float
    gns_threshold: float
    accordion_eta: float

    @classmethod
    def for_run(cls, family: Family, options: Mapping[str, Any]) -> TrainingSettings:
        """The settings of a job of ``family`` with run ``options``.

        Raises:
            ValueError: naming ``run.options.<key>`` for an unknown or invalid option.
        """
        settings = cls(
            learning_rate=family.learning_rate,
            momentum=family.momentum,
            gns_threshold=family.gns_threshold,
            accordion_eta=ACCORDION_ETA,
        )
        known = {f.name for f in dataclasses.fields(cls)}
        for key, value in options.items():
            if key not in known:
                raise ValueError(
                    f"run.options.{key}: unknown option (the bundled families take "
                    f"{', '.join(sorted(known))})"
                )
            if not is_number(value, numpy=False):
                raise ValueError(f"run.options.{key}: must be a number, got {value!r}")
            number = float(value)
            low_ok = 0.0 <= number < 1.0 if key == "momentum" else number > 0.0
            if not (math.isfinite(number) and low_ok):
                bound = "in [0, 1)" if key == "momentum" else "> 0"
                raise ValueError(f"run.options.{key}: must be {bound}, got {value!r}")
            settings = dataclasses.replace(settings, **{key: number})
        return settings

    def learning_rate_at(self, batch_size: int, initial_batch_size: int) -> float:
        """Square-root scaling: ``learning_rate * sqrt(batch_size / initial_batch_size)``."""
        return self.learning_rate * math.sqrt(batch_size / initial_batch_size)


@dataclass
class TrainingState:
    """Everything a bundled job needs to continue: saved whole in its checkpoint.

    Attributes:
        params: the model's parameters.
        velocity: SGD momentum buffers (same names and shapes).
        epoch: index of the epoch in progress (``launch.epochs`` when done).
        position: samples of the epoch already trained on.
        augment_rng: the generator of augmentation noise.
        adapter: the batch-size adaptation and its statistics.
    """

    params: Params
    velocity: Params
    epoch: int
    position: int
    augment_rng: np.random.Generator
    adapter: BatchSizeAdapter

    def checkpoint(self, family: Family) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
        """The arrays and meta to save (see the module notes)."""
        adaptation_meta, adaptation_arrays = self.adapter.state()
        arrays: dict[str, npt.NDArray[Any]] = {}
        arrays.update({f"param.{name}": value for name, value in self.params.items()})
        arrays.update({f"velocity.{name}": value for name, value in self.velocity.items()})
        arrays.update(adaptation_arrays)
        meta = {
            "trainer": {
                "family": family.name,
                "mode": self.adapter.mode,
                "epoch": self.epoch,
                "position": self.position,
                "augment_rng": self.augment_rng.bit_generator.state,
                "adaptation": adaptation_meta,
            }
        }
        return arrays, meta


def train(ctx: JobContext) -> str | None:
    """Train the bundled job of ``ctx.launch`` to its end, or until the scheduler stops it.

    Returns:
        The digest of the final parameters (:func:`~shockwave.job.checkpoint.digest`) after
        ``ctx.finish``, or ``None`` if the job was stopped (its checkpoint is then saved).

    Raises:
        ValueError: naming the launch field, run option or checkpoint that is not valid.
    """
    launch = ctx.launch
    family, settings = _family_and_settings(launch)
    data = family.load()
    per_epoch = launch.samples_per_epoch
    if per_epoch > data.size:
        raise ValueError(
            f"samples_per_epoch: {per_epoch} exceeds the {data.size} samples of {family.name}"
        )
    state = fresh_state(launch, family, settings)
    state = _resume(ctx, family, state, ctx.restore())
    order: npt.NDArray[np.intp] | None = None
    while state.epoch < launch.epochs:
        if ctx.should_stop():
            ctx.stop(*state.checkpoint(family))
            return None
        if order is None:
            order = epoch_order(launch.run.seed, state.epoch, data.size, per_epoch)
        batch_size = ctx.batch_size
        indices = order[state.position : state.position + batch_size]
        training_step(
            family,
            data,
            indices,
            state.augment_rng,
            state.params,
            state.velocity,
            settings.learning_rate_at(batch_size, launch.initial_batch_size),
            settings.momentum,
            state.adapter,
        )
        samples = int(indices.shape[0])
        state.position += samples
        ctx.report(samples=samples, batch_size=batch_size)
        if state.position == per_epoch:
            next_size = state.adapter.end_epoch(batch_size)
            state.epoch += 1
            state.position = 0
            order = None
            ctx.set_batch_size(next_size)
        if ctx.checkpoint_due:
            ctx.save(*state.checkpoint(family))
    final = digest(state.params)
    ctx.finish(final)
    return final


def run_standalone(launch: JobLaunch) -> str:
    """Train ``launch``'s bundled job from scratch without a scheduler; its final digest.

    The reference run of a job: the launch's checkpoint path is ignored (no checkpoint is
    read or written), and nothing stops the job.

    Raises:
        ValueError: naming the launch field or run option that is not valid.
    """
    ctx = JobContext.standalone(dataclasses.replace(launch, checkpoint_path=""))
    result = train(ctx)
    if result is None:  # pragma: no cover - a standalone context never stops
        raise RuntimeError("a standalone job was stopped")
    return result


def fresh_state(launch: JobLaunch, family: Family, settings: TrainingSettings) -> TrainingState:
    """The state of a job before its first step."""
    seed = launch.run.seed
    params = family.init_params(np.random.default_rng([seed, INIT_STREAM]))
    return TrainingState(
        params=params,
        velocity={name: np.zeros_like(value) for name, value in params.items()},
        epoch=0,
        position=0,
        augment_rng=np.random.default_rng([seed, AUGMENT_STREAM]),
        adapter=BatchSizeAdapter(
            launch.mode,
            launch.batch_sizes,
            gns_threshold=settings.gns_threshold,
            accordion_eta=settings.accordion_eta,
        ),
    )


def epoch_order(seed: int, epoch: int, dataset_size: int, samples: int) -> npt.NDArray[np.intp]:
    """The indices of the samples of epoch ``epoch``, in training order."""
    permutation = np.random.default_rng([seed, ORDER_STREAM, epoch]).permutation(dataset_size)
    return permutation[:samples]


def check_bundled_launch(launch: JobLaunch) -> None:
    """Check, without training, everything about a bundled job's launch that :func:`train`
    would refuse at its start: the family, its batch sizes, the run options, the adaptation
    mode and the samples per epoch (so that a run refuses a bad job before it starts).

    Raises:
        ValueError: naming the field (``run.family``, ``batch_sizes``, ``run.options.<key>``,
            ``mode``, ``samples_per_epoch``).
    """
    family, settings = _family_and_settings(launch)
    size = family.load().size
    if launch.samples_per_epoch > size:
        raise ValueError(
            f"samples_per_epoch: {launch.samples_per_epoch} exceeds the {size} samples of "
            f"{family.name}"
        )
    BatchSizeAdapter(
        launch.mode,
        launch.batch_sizes,
        gns_threshold=settings.gns_threshold,
        accordion_eta=settings.accordion_eta,
    )


def _family_and_settings(launch: JobLaunch) -> tuple[Family, TrainingSettings]:
    if launch.run.family is None:
        raise ValueError("run: a command job is not a bundled family (it runs its own script)")
    family = get_family(launch.run.family)
    unknown = sorted(set(launch.batch_sizes) - set(family.batch_sizes))
    if unknown:
        raise ValueError(
            f"batch_sizes: {unknown[0]} is not a batch size of {family.name} "
            f"{list(family.batch_sizes)}"
        )
    return family, TrainingSettings.for_run(family, launch.run.options)


def _resume(
    ctx: JobContext, family: Family, state: TrainingState, checkpoint: Checkpoint | None
) -> TrainingState:
    """``state`` updated from ``checkpoint`` (checked against the job), or ``state`` itself."""
    if checkpoint is None:
        return state
    where = f"checkpoint {ctx.launch.checkpoint_path!r}"
    saved = checkpoint.meta.get("trainer")
    if not isinstance(saved, dict):
        raise ValueError(f"{where}: meta 'trainer' is missing")
    if saved.get("family") != family.name:
        raise ValueError(f"{where}: made by family {saved.get('family')!r}, not {family.name!r}")
    epoch, position = saved.get("epoch"), saved.get("position")
    per_epoch = ctx.launch.samples_per_epoch
    if (
        not isinstance(epoch, int)
        or not isinstance(position, int)
        or not 0 <= position < per_epoch
        or epoch * per_epoch + position != ctx.samples
    ):
        raise ValueError(f"{where}: the epoch and position do not match the job's sample count")
    for prefix, target in (("param.", state.params), ("velocity.", state.velocity)):
        for name, value in target.items():
            array = checkpoint.arrays.get(prefix + name)
            if array is None or array.shape != value.shape or array.dtype != value.dtype:
                raise ValueError(f"{where}: array {prefix + name!r} is missing or malformed")
            target[name] = array
    adaptation = saved.get("adaptation")
    if not isinstance(adaptation, dict):
        raise ValueError(f"{where}: meta 'trainer.adaptation' is missing")
    rng_state = saved.get("augment_rng")
    if not isinstance(rng_state, dict):
        raise ValueError(f"{where}: meta 'trainer.augment_rng' is missing")
    try:
        state.adapter.load_state(adaptation, checkpoint.arrays)
        state.augment_rng.bit_generator.state = rng_state
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    state.epoch = epoch
    state.position = position
    return state


__all__ = [
    "TrainingSettings",
    "TrainingState",
    "epoch_order",
    "fresh_state",
    "run_standalone",
    "train",
]
