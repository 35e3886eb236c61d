"""How to run a job for real: a bundled model family or a user's command (:class:`RunSpec`).

A job of a workload that can run for real (:attr:`shockwave.workload.Job.run`) carries a
:class:`RunSpec`: either the name of a bundled model family (:mod:`shockwave.job.families`) with a
seed, or the command line of a user's own training script. It is part of the data model (the
native workload format's ``run`` key); the runtime (:mod:`shockwave.runtime`) starts the job from
it and hands it to the job process inside its launch (:class:`shockwave.job.spec.JobLaunch`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
