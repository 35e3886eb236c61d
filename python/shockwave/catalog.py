"""What the original Shockwave artifact knows about its five model families.

Every constant of the original that describes a *model* (its dataset, its batch-size limits, when
its training is "critical" for Accordion, its GNS staircase) lives here, once, with the fact it
encodes. The facts come from the Shockwave artifact (github.com/uw-mad-dash/shockwave, MIT
licence, UW-Madison), as documented in the project's reference notes; the numbers are theirs, the
code is ours.

Two readers use these facts:

* the *profile* builder (:mod:`shockwave.profile_rules`), which turns a trace line into a per-epoch
  batch-size and duration schedule, exactly as the original's ``generate_pickle_file`` does;
* the ``gavel`` simulator mechanics, which reproduce the original's *runtime* batch-size rules
  (which differ from the profile: no 30 % rule, fewer Recommendation windows, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

#: An epoch index, or an array of them.
EpochIndex: TypeAlias = "int | npt.NDArray[np.integer]"

#: Adaptation modes of the Shockwave trace format.
AdaptationMode = Literal["static", "accordion", "gns"]
ADAPTATION_MODES: tuple[AdaptationMode, ...] = ("static", "accordion", "gns")


@dataclass(frozen=True)
class ModelFamily:
    """Facts about one model family of the original's job table.

    Attributes:
        name: model name as it appears in a job type, e.g. ``"ResNet-18"``.
        dataset: dataset label, e.g. ``"CIFAR-10"``.
        samples_per_epoch: training samples in one epoch of the dataset.
        max_batch_size: largest batch size the adaptation rules may reach (both Accordion and GNS
            clip to it).
        min_batch_size: smallest batch size listed for the model in the throughput tables (the
            runtime Accordion rule never shrinks below it).
    """

    name: str
    dataset: str
    samples_per_epoch: int
    max_batch_size: int
    min_batch_size: int


#: The five model families (dataset lengths: original ``utils.py``; limits: its Accordion and GNS
#: code). ImageNet is a 100,000-sample subset in the original.
MODEL_FAMILIES: dict[str, ModelFamily] = {
    f.name: f
    for f in (
        ModelFamily("ResNet-18", "CIFAR-10", 50_000, 256, 16),
        ModelFamily("ResNet-50", "ImageNet", 100_000, 128, 16),
        ModelFamily("Transformer", "Multi30k", 10_000, 128, 16),
        ModelFamily("LM", "Wikitext-2", 59_675, 80, 5),
        ModelFamily("Recommendation", "ML-20M", 117_907, 8192, 512),
    )
}

#: Models whose Accordion schedule is never adapted (the original returns the schedule unchanged).
ACCORDION_NEVER_ADAPTS: frozenset[str] = frozenset({"Transformer", "CycleGAN", "A3C"})


def model_family(model: str) -> ModelFamily:
    """Return the :class:`ModelFamily` for ``model``; raise ``KeyError`` naming it if unknown."""
    try:
        return MODEL_FAMILIES[model]
    except KeyError:
        known = ", ".join(sorted(MODEL_FAMILIES))
        raise KeyError(f"unknown model {model!r} (known: {known})") from None


def _head_regime_epochs(model: str, initial_batch_size: int) -> int:
    """Length (epochs) of the critical regime at the start of training, Accordion profile rules."""
    if model == "ResNet-18":
        return 20 if initial_batch_size == 256 else 10
    if model == "Recommendation":
        if initial_batch_size in (512, 1024):
            return 30
        if initial_batch_size == 2048:
            return 40
        return 10
    if model == "LM":
        return 10
    return 0


def _critical_windows(model: str, initial_batch_size: int, *, runtime: bool) -> list[range]:
    """Epoch windows in which an Accordion job is critical (ResNet-50 aside: see callers)."""
    head = range(_head_regime_epochs(model, initial_batch_size))
    if model == "ResNet-18":
        return [head, range(150, 160), range(250, 260)]
    if model == "Recommendation":
        return [head] if runtime else [head, range(60, 70), range(80, 90)]
    if model == "LM":
        return [head]
    return []


def _within(epochs: npt.NDArray[np.integer], windows: list[range]) -> npt.NDArray[np.bool_]:
    mask = np.zeros(epochs.shape, dtype=np.bool_)
    for window in windows:
        mask |= (epochs >= window.start) & (epochs < window.stop)
    return mask


def accordion_profile_is_critical(
    model: str, initial_batch_size: int, epoch: EpochIndex
) -> npt.NDArray[np.bool_]:
    """Whether ``epoch`` (0-based; int or array) is in the Accordion *profile*'s critical regime.

    Critical epochs keep the initial batch size. The profile rules are (original
    ``get_accordion_bs_pattern``): ResNet-18 ``[0, r) | [150, 160) | [250, 260)``; ResNet-50 epochs
    below 600 with ``epoch mod 30 < 10``; LM ``[0, 10)``; Recommendation
    ``[0, r) | [60, 70) | [80, 90)``; ``r`` depends on the initial batch size. Other models are
    critical everywhere (never adapted).
    """
    e = np.asarray(epoch)
    if model == "ResNet-50":
        return (e < 600) & (e % 30 < 10)
    if model not in MODEL_FAMILIES or model == "Transformer":
        return np.ones(e.shape, dtype=np.bool_)
    return _within(e, _critical_windows(model, initial_batch_size, runtime=False))


def accordion_runtime_is_critical(
    model: str, initial_batch_size: int, epoch_counter: EpochIndex
) -> npt.NDArray[np.bool_]:
    """Whether the original *simulator* treats a job as critical (runtime Accordion rule).

    ``epoch_counter`` (int or array) is the simulator's ceil-based epoch index (epochs
    *started*). Unlike the profile: Recommendation has no 60-70 and 80-90 windows, and ResNet-50's
    rule has no 600 cap.
    """
    e = np.asarray(epoch_counter)
    if model == "ResNet-50":
        return e % 30 < 10
    if model not in MODEL_FAMILIES or model == "Transformer":
        return np.ones(e.shape, dtype=np.bool_)
    return _within(e, _critical_windows(model, initial_batch_size, runtime=True))


@dataclass(frozen=True)
class GnsStaircase:
    """One entry of the original's hard-coded GNS table.

    Attributes:
        stages: ``(first_epoch, batch_size)`` pairs, ascending; from ``first_epoch`` (0-based
            epoch index) on, the job trains at ``batch_size`` until the next stage.
        min_epochs: the staircase applies to a job's profile only if the job has at least this many
            epochs (its epoch count exceeds the first threshold); otherwise the profile is static.
    """

    stages: tuple[tuple[int, int], ...]
    min_epochs: int


@cache
def gns_table() -> dict[tuple[str, int, int], GnsStaircase]:
    """The GNS staircases keyed by ``(model, initial batch size, gang size)``.

    Entries exist only for gang sizes 1, 2 and 4; Transformer has none. Data from the original's
    ``get_gns_bs_pattern``, shipped as ``shockwave/data/gns_table.json``.
    """
    raw = json.loads(resources.files("shockwave.data").joinpath("gns_table.json").read_text())
    table: dict[tuple[str, int, int], GnsStaircase] = {}
    for key, entry in raw.items():
        model, batch_size, gang_size = key.split("|")
        stages = tuple((int(epoch), int(bs)) for epoch, bs in entry["steps"])
        table[(model, int(batch_size), int(gang_size))] = GnsStaircase(
            stages=stages, min_epochs=int(entry["applies_when_num_epochs_at_least"])
        )
    return table


def gns_staircase(model: str, initial_batch_size: int, gang_size: int) -> GnsStaircase | None:
    """The GNS staircase of a job, or ``None`` if the original never adapts it."""
    return gns_table().get((model, initial_batch_size, gang_size))


@dataclass(frozen=True)
class OriginalLaunch:
    """How the original's job table launches a model family: ``.trace`` fields 2 to 5.

    None of these fields matters to a simulation; they are kept so that generated traces carry
    the same text as the original's (``canonical_120jobs.trace`` shows every one of them).

    Attributes:
        command: launch command with ``{batch_size}`` to fill in and the original's ``%s``
            placeholder for the data directory left as is.
        working_directory: directory of the training script, relative to the workloads folder.
        num_steps_arg: the script's option that takes the number of steps.
        needs_data_dir: whether the command takes a data directory (``.trace`` field 5).
        distributed: whether the original may give the model a gang of more than one GPU
            (Recommendation is single-GPU only: its throughputs exist for gang size 1 alone).
    """

    command: str
    working_directory: str
    num_steps_arg: str
    needs_data_dir: bool
    distributed: bool


#: Launch facts of the five model families, read off the original's traces and job table.
ORIGINAL_LAUNCHES: dict[str, OriginalLaunch] = {
    "ResNet-18": OriginalLaunch(
        "python3 main.py --data_dir=%s/cifar10 --batch_size {batch_size}",
        "image_classification/cifar10", "--num_steps", needs_data_dir=True, distributed=True,
    ),
    "ResNet-50": OriginalLaunch(
        "python3 main.py -j 4 -a resnet50 -b {batch_size} %s/imagenet/",
        "image_classification/imagenet", "--num_minibatches", needs_data_dir=True,
        distributed=True,
    ),
    "Transformer": OriginalLaunch(
        "python3 train.py -data %s/translation/multi30k.atok.low.pt -batch_size {batch_size}"
        " -proj_share_weight",
        "translation", "-step", needs_data_dir=True, distributed=True,
    ),
    "LM": OriginalLaunch(
        "python3 main.py --cuda --data %s/wikitext2 --batch_size {batch_size}",
        "language_modeling", "--steps", needs_data_dir=True, distributed=True,
    ),
    "Recommendation": OriginalLaunch(
        "python3 train.py --data_dir %s/ml-20m/pro_sg/ --batch_size {batch_size}",
        "recommendation", "-n", needs_data_dir=True, distributed=False,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class JobTemplate:
    """One entry of the trace generator's job table: a model at an initial batch size.

    Attributes:
        model: one of :data:`MODEL_FAMILIES`.
        batch_size: the initial batch size (samples per iteration).
    """

    model: str
    batch_size: int

    @property
    def launch(self) -> OriginalLaunch:
        """The model family's launch facts; raises ``KeyError`` naming an unknown model."""
        try:
            return ORIGINAL_LAUNCHES[self.model]
        except KeyError:
            known = ", ".join(sorted(ORIGINAL_LAUNCHES))
            raise KeyError(f"unknown model {self.model!r} (known: {known})") from None

    @property
    def command(self) -> str:
        """The launch command at this batch size (the data directory left as ``%s``)."""
        return self.launch.command.format(batch_size=self.batch_size)


#: The original generator's 21 job templates, **in the order of its job table** (the generator
#: draws an index into this tuple, so the order is part of reproducing its traces): ResNet-18 at
#: 32-256, ResNet-50 at 16-64, Transformer at 16-128 (256 runs out of memory on a 16 GB V100),
#: LM at 5-80, Recommendation at 512-8192. Each is drawn with probability 1/21.
ORIGINAL_JOB_TEMPLATES: tuple[JobTemplate, ...] = tuple(
    JobTemplate(model, batch_size)
    for model, batch_sizes in (
        ("ResNet-18", (32, 64, 128, 256)),
        ("ResNet-50", (16, 32, 64)),
        ("Transformer", (16, 32, 64, 128)),
        ("LM", (5, 10, 20, 40, 80)),
        ("Recommendation", (512, 1024, 2048, 4096, 8192)),
    )
    for batch_size in batch_sizes
)
