"""A cell of a sweep: one simulation, and the key that identifies it.

A cell is one workload on one cluster (a number of identical GPUs, or a typed cluster such as
``v100:12,p100:12,k80:12``) under one policy (with its parameters), one mechanics, one set of
simulation settings and one seed. Its **key** is the SHA-256 of the canonical JSON of everything
that determines its result: the workload's identity (:mod:`shockwave.sweep.sources`), GPUs, the
typed cluster (only for a typed cell: the keys of homogeneous cells are those they always had),
policy, its parameters (only those that differ from the policy's defaults, with the policy's own
types), mechanics, every simulation setting, the seed and the package version. Labels (a trace's
name) are not in the key; a new package version is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shockwave import __version__
from shockwave.heterogeneous import HeterogeneousConfig
from shockwave.scheduling import SimulationConfig
from shockwave.sweep.sources import TraceSource

#: Settings of :class:`~shockwave.scheduling.SimulationConfig` every cell holds, with their
#: defaults (a spec's ``[simulation]`` table may set any setting but ``gpus``, ``mechanics`` and
#: ``seed``, which have their own spec keys; a cell holds one beyond these five only when it
#: differs from its default, so that the keys of existing cells stay).
SIMULATION_DEFAULTS: dict[str, Any] = {
    "round_seconds": SimulationConfig.round_seconds,
    "restart_penalty_seconds": SimulationConfig.restart_penalty_seconds,
    "throughput_noise": SimulationConfig.throughput_noise,
    "recompute_interval_seconds": SimulationConfig.recompute_interval_seconds,
    "max_rounds": SimulationConfig.max_rounds,
}


#: The settings of a typed cell (a spec that names a cluster) with their defaults, those of the
#: heterogeneous simulator (:class:`~shockwave.heterogeneous.HeterogeneousConfig`: Gavel's 360 s
#: rounds and 1,920 s between resets, as ``shockwave simulate --cluster``); every typed cell
#: holds all three.
TYPED_SIMULATION_DEFAULTS: dict[str, Any] = {
    "round_seconds": HeterogeneousConfig.round_seconds,
    "recompute_interval_seconds": HeterogeneousConfig.recompute_interval_seconds,
    "max_rounds": HeterogeneousConfig.max_rounds,
}


#: The largest grid a spec may describe unless told otherwise (``shockwave sweep --max-cells``):
#: a sweep is sized (the product of its axes' lengths) before its cells are enumerated, and a
#: bigger one is refused. 100,000 cells of the canonical trace are about 8 hours on 32 cores and
#: about 70 MB of cell descriptions; a million is almost always a typo (a ``seeds`` list or a
#: ``[params]`` axis much longer than meant).
DEFAULT_MAX_CELLS = 100_000


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: equal values give equal text (floats as ``repr``)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class Cell:
    """One simulation of a sweep.

    Attributes:
        trace: the trace's label (the spec's ``name``, or its path, or a generated label).
        trace_family: the label without the generator seed (equal to ``trace`` for files):
            cells of one family and different seeds are aggregated in the report.
        trace_seed: the generator's seed (``None`` for a file).
        source: where the workload comes from.
        jobs: jobs in the workload (orders the cells: largest first).
        gpus: GPUs in the cluster (of every type, for a typed cell).
        policy: a built-in policy's name.
        parameters: the policy's parameters that differ from its defaults.
        mechanics: ``"exact"`` or ``"gavel"``.
        simulation: every setting of :data:`SIMULATION_DEFAULTS`, and any other setting of
            the spec's ``[simulation]`` that differs from its default (for a typed cell: every
            setting of :data:`TYPED_SIMULATION_DEFAULTS`).
        seed: the simulation's seed (throughput noise; for a typed cell, Gavel's ``--seed``).
        version: the package version that runs it.
        cluster: the typed cluster (``v100:12,p100:12,k80:12``), run by the heterogeneous
            simulator; ``None`` for ``gpus`` identical GPUs.
        key: the cell's key (module notes); computed.
    """

    trace: str
    trace_family: str
    trace_seed: int | None
    source: TraceSource
    jobs: int
    gpus: int
    policy: str
    parameters: Mapping[str, Any]
    mechanics: str
    simulation: Mapping[str, Any]
    seed: int
    version: str = __version__
    cluster: str | None = None
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        identity: dict[str, Any] = {
            "version": self.version,
            "workload": self.source.identity(),
            "gpus": self.gpus,
            "policy": self.policy,
            "parameters": dict(self.parameters),
            "mechanics": self.mechanics,
            "simulation": dict(self.simulation),
            "seed": self.seed,
        }
        if self.cluster is not None:
            identity["cluster"] = self.cluster
        digest = hashlib.sha256(canonical_json(identity).encode()).hexdigest()
        object.__setattr__(self, "key", digest)

    def config(self) -> SimulationConfig:
        """The simulation's configuration.

        Raises:
            ValueError: naming a bad setting.
        """
        return SimulationConfig(
            gpus=self.gpus,
            mechanics=self.mechanics,  # type: ignore[arg-type]  # checked by the config
            seed=self.seed,
            **self.simulation,
        )

    def typed_config(self) -> HeterogeneousConfig:
        """A typed cell's configuration (the heterogeneous simulator's).

        Raises:
            ValueError: naming a bad setting.
        """
        return HeterogeneousConfig(
            seed=self.seed,
            mechanics=self.mechanics,  # type: ignore[arg-type]  # checked by the config
            **self.simulation,
        )

    @property
    def parameters_json(self) -> str:
        """The parameters as canonical JSON (the ``parameters`` column)."""
        return canonical_json(dict(self.parameters))

    @property
    def simulation_json(self) -> str:
        """The simulation settings as canonical JSON (the ``simulation`` column)."""
        return canonical_json(dict(self.simulation))

    def describe(self) -> str:
        """A one-line description for messages."""
        params = f" {self.parameters_json}" if self.parameters else ""
        where = self.cluster if self.cluster is not None else f"{self.gpus} GPUs"
        return f"{self.trace} on {where}, {self.policy}{params}, {self.mechanics}, seed {self.seed}"


def labels(cell: Cell) -> dict[str, Any]:
    """The input columns of a cell's rows (shared by the results and the per-job rows;
    ``cluster`` is written only in the datasets' typed parts)."""
    return {
        "key": cell.key,
        "trace": cell.trace,
        "trace_family": cell.trace_family,
        "trace_seed": cell.trace_seed,
        "gpus": cell.gpus,
        "cluster": cell.cluster,
        "policy": cell.policy,
        "parameters": cell.parameters_json,
        "mechanics": cell.mechanics,
        "simulation": cell.simulation_json,
        "seed": cell.seed,
    }
