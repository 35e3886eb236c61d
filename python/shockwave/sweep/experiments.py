"""The paper's experiments as sweep specs shipped in the package (``shockwave reproduce NAME``).

Each is ``shockwave/sweep/specs/NAME.toml``; ``docs/sweep.md`` describes them and their wall
times on the project's 2-core machine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

#: Name -> what it reproduces.
EXPERIMENTS: dict[str, str] = {
    "canonical": "the canonical 120-job trace on 32 GPUs: all eight policies, both mechanics",
    "scale": "the paper's 64/128/256-GPU setups (220/460/900 generated jobs, 3 seeds each): "
    "shockwave against every baseline",
    "sensitivity": "shockwave's planning window, makespan weight, fairness exponent lambda and "
    "re-plan period, one at a time, against gavel",
    "large": "1,000 to 20,000 generated jobs on 256 to 6,500 GPUs: shockwave against every "
    "baseline",
    "heterogeneous": "Gavel's trace and generated static traces on 12:12:12 and 36:36:36 "
    "(v100:p100:k80): every typed policy, aware and agnostic (needs --throughputs; not a sweep "
    "spec: a table, --table)",
}
#: Experiments that are not sweep specs (their own runner).
NOT_SPECS = ("heterogeneous",)


@contextlib.contextmanager
def spec_file(name: str) -> Iterator[Path]:
    """The path of experiment ``name``'s spec while the context lasts.

    Raises:
        ValueError: for an unknown experiment.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r} (choose from {', '.join(EXPERIMENTS)})")
    resource = resources.files("shockwave.sweep").joinpath("specs").joinpath(f"{name}.toml")
    with resources.as_file(resource) as path:
        yield path
