"""What a runnable job is: how to start it (:class:`RunSpec`) and what it is told at launch
(:class:`JobLaunch`).

A job of a workload that can run for real carries a :class:`RunSpec`: either the name of a
bundled model family (:mod:`shockwave.job.families`) with a seed, or the command line of a user's
own training script. When the runtime starts (or resumes) the job on its GPU slots, the job
process receives a :class:`JobLaunch` as JSON in the environment variable :data:`ENV_JOB`,
together with the variables listed below.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from shockwave.arguments import is_integer

#: JSON of the :class:`JobLaunch` of this process.
ENV_JOB = "SHOCKWAVE_JOB"
#: Address of the scheduler's channel (a Unix socket path) for this process.
ENV_CHANNEL = "SHOCKWAVE_CHANNEL"
#: Hex key authenticating the channel connection.
ENV_AUTHKEY = "SHOCKWAVE_AUTHKEY"
#: Comma-separated ids of the GPU slots the job holds (``"0,1"``), on GPUs and CPU slots alike.
ENV_GPUS = "SHOCKWAVE_GPUS"
#: Variables that cap a job's CPU threads (BLAS, OpenMP) at the threads it was given.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

#: What a slot is: a real GPU, or one CPU thread on a machine without GPUs.
SlotKind = Literal["gpu", "cpu"]

#: Largest seed (numpy's ``SeedSequence`` takes any integer; JSON readers keep 64 bits exactly).
MAX_SEED = 2**63 - 1

_OPTION_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class RunSpec:
    """How to run a job: a bundled family or a command.

    Attributes:
        family: name of a bundled model family (``shockwave.job.families.FAMILIES``), or
            ``None`` for a user command.
        command: the argument vector of a user's training script (``["python", "train.py"]``),
            or ``None`` for a bundled family. It runs in the workload file's directory and uses
            :mod:`shockwave.job` to read its lease, report and checkpoint.
        seed: seed of every random draw of the job (initialisation, data order, augmentation).
        options: family-specific settings (JSON scalars), e.g. ``{"learning_rate": 0.05}``.
    """

    family: str | None = None
    command: tuple[str, ...] | None = None
    seed: int = 0
    options: Mapping[str, bool | int | float | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.family is None) == (self.command is None):
            raise ValueError("run: give exactly one of 'family' and 'command'")
        if self.family is not None and (not isinstance(self.family, str) or not self.family):
            raise ValueError(f"run.family must be a non-empty string, got {self.family!r}")
        if self.command is not None:
            command = tuple(self.command) if isinstance(self.command, (list, tuple)) else None
            if not command or not all(isinstance(a, str) and a for a in command):
                raise ValueError(
                    f"run.command must be a non-empty list of strings, got {self.command!r}"
                )
            object.__setattr__(self, "command", command)
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed <= MAX_SEED
        ):
            raise ValueError(f"run.seed must be an integer in [0, 2**63 - 1], got {self.seed!r}")
        if not isinstance(self.options, Mapping):
            raise ValueError(f"run.options must be an object, got {self.options!r}")
        for key, value in self.options.items():
            if not isinstance(key, str) or not isinstance(value, _OPTION_TYPES):
                raise ValueError(
                    f"run.options.{key}: must be a string, number or boolean, got {value!r}"
                )
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"run.options.{key}: must be finite, got {value!r}")
        object.__setattr__(self, "options", dict(self.options))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the native workload format's ``run`` key."""
        out: dict[str, Any] = {}
        if self.family is not None:
            out["family"] = self.family
        if self.command is not None:
            out["command"] = list(self.command)
        out["seed"] = self.seed
        if self.options:
            out["options"] = dict(self.options)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> RunSpec:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: naming the field (``run.seed``, ...) for malformed input.
        """
        if not isinstance(data, dict):
            raise ValueError(f"run must be an object, got {data!r}")
        unknown = sorted(set(data) - {"family", "command", "seed", "options"})
        if unknown:
            raise ValueError(f"run: unknown key {unknown[0]!r}")
        return cls(
            family=data.get("family"),
            command=data.get("command"),
            seed=data.get("seed", 0),
            options=data.get("options", {}),
        )


@dataclass(frozen=True)
class JobLaunch:
    """What a job process is told when it is started (JSON in :data:`ENV_JOB`).

    Attributes:
        job_id: the job's id in the workload.
        incarnation: how many times the job was launched before this process (0 at first).
        model: model label (for a bundled job, the family's name).
        mode: adaptation mode, ``"static"``, ``"gns"`` or ``"accordion"``.
        epochs: epochs to train.
        batch_sizes: every batch size the job may run at (its regimes), ascending; a job must
            not report another one.
        initial_batch_size: batch size of the first epoch.
        samples_per_epoch: training samples in one epoch.
        gang_size: GPU slots the job holds.
        gpus: ids of those slots.
        slot_kind: ``"gpu"`` (real GPUs: ``CUDA_VISIBLE_DEVICES`` is set) or ``"cpu"`` (one CPU
            thread per slot).
        threads: CPU threads the job may use (BLAS and OpenMP are capped to it).
        checkpoint_path: where the job keeps its checkpoint (written atomically).
        run: how to run it.
    """

    job_id: int
    incarnation: int
    model: str
    mode: str
    epochs: int
    batch_sizes: tuple[int, ...]
    initial_batch_size: int
    samples_per_epoch: int
    gang_size: int
    gpus: tuple[int, ...]
    slot_kind: SlotKind
    threads: int
    checkpoint_path: str
    run: RunSpec

    def to_json(self) -> str:
        """The JSON text passed in :data:`ENV_JOB`."""
        data = {
            "job_id": self.job_id,
            "incarnation": self.incarnation,
            "model": self.model,
            "mode": self.mode,
            "epochs": self.epochs,
            "batch_sizes": list(self.batch_sizes),
            "initial_batch_size": self.initial_batch_size,
            "samples_per_epoch": self.samples_per_epoch,
            "gang_size": self.gang_size,
            "gpus": list(self.gpus),
            "slot_kind": self.slot_kind,
            "threads": self.threads,
            "checkpoint_path": self.checkpoint_path,
            "run": self.run.to_dict(),
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> JobLaunch:
        """Inverse of :meth:`to_json`.

        Raises:
            ValueError: naming the field, for malformed text.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{ENV_JOB}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{ENV_JOB}: must be a JSON object")
        try:
            launch = cls(
                job_id=_integer(data, "job_id", 0),
                incarnation=_integer(data, "incarnation", 0),
                model=str(data["model"]),
                mode=str(data["mode"]),
                epochs=_integer(data, "epochs", 1),
                batch_sizes=tuple(int(b) for b in data["batch_sizes"]),
                initial_batch_size=_integer(data, "initial_batch_size", 1),
                samples_per_epoch=_integer(data, "samples_per_epoch", 1),
                gang_size=_integer(data, "gang_size", 1),
                gpus=tuple(int(g) for g in data["gpus"]),
                slot_kind=data["slot_kind"],
                threads=_integer(data, "threads", 1),
                checkpoint_path=str(data["checkpoint_path"]),
                run=RunSpec.from_dict(data["run"]),
            )
        except KeyError as exc:
            raise ValueError(f"{ENV_JOB}: field {exc.args[0]!r} is missing") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{ENV_JOB}: {exc}") from None
        if launch.slot_kind not in ("gpu", "cpu"):
            raise ValueError(f"{ENV_JOB}: field 'slot_kind' must be 'gpu' or 'cpu'")
        sizes = list(launch.batch_sizes)
        if sizes != sorted(set(sizes)) or any(b < 1 for b in sizes):
            raise ValueError(
                f"{ENV_JOB}: field 'batch_sizes' must be ascending distinct integers >= 1, "
                f"got {sizes}"
            )
        if not launch.batch_sizes or launch.initial_batch_size not in launch.batch_sizes:
            raise ValueError(
                f"{ENV_JOB}: field 'batch_sizes' must list the initial batch size "
                f"{launch.initial_batch_size}"
            )
        if len(launch.gpus) != launch.gang_size:
            raise ValueError(f"{ENV_JOB}: field 'gpus' must hold gang_size = {launch.gang_size}")
        return launch


def _integer(data: dict[str, Any], key: str, minimum: int) -> int:
    value = data[key]
    if not is_integer(value, numpy=False) or value < minimum:
        raise ValueError(f"field {key!r} must be an integer >= {minimum}, got {value!r}")
    return value
