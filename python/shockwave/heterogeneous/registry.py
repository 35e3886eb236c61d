"""Names of the heterogeneity-aware policies and their agnostic forms, and Gavel's names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from shockwave.errors import InputError
from shockwave.heterogeneous.fifo import TypedFifo
from shockwave.heterogeneous.gandiva_fair import TypedGandivaFair
from shockwave.heterogeneous.gavel_allox import GavelAlloX
from shockwave.heterogeneous.gavel_gandiva import GavelGandiva
from shockwave.heterogeneous.gavel_policies import (
    TypedFinishTimeFairness,
    TypedMaxMinFairness,
    TypedMaxSumThroughput,
    TypedMinTotalDuration,
)
from shockwave.heterogeneous.gavel_water_filling import TypedWaterFilling
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.policies import checked_parameters

if TYPE_CHECKING:
    from shockwave.policies.shockwave.typed_policy import TypedShockwave

#: Our name -> a factory taking the run's seed.
TYPED_POLICIES: dict[str, Callable[[int], TypedAllocationPolicy]] = {
    "fifo": lambda seed: TypedFifo(aware=True, seed=seed),
    "fifo-agnostic": lambda seed: TypedFifo(aware=False, seed=seed),
    "gavel": lambda seed: TypedMaxMinFairness(aware=True),
    "gavel-agnostic": lambda seed: TypedMaxMinFairness(aware=False),
    "themis": lambda seed: TypedFinishTimeFairness(aware=True),
    "themis-agnostic": lambda seed: TypedFinishTimeFairness(aware=False),
    "mst": lambda seed: TypedMaxSumThroughput(),
    "ossp": lambda seed: TypedMinTotalDuration(aware=True),
    "ossp-agnostic": lambda seed: TypedMinTotalDuration(aware=False),
    "gandiva": lambda seed: GavelGandiva(seed=seed),
    "water-filling": lambda seed: TypedWaterFilling(aware=True),
    "water-filling-agnostic": lambda seed: TypedWaterFilling(aware=False),
    "allox": lambda seed: GavelAlloX(),
    "gandiva-fair": lambda seed: TypedGandivaFair(aware=True),
    "gandiva-fair-agnostic": lambda seed: TypedGandivaFair(aware=False),
    "shockwave": lambda seed: parameterised()["shockwave"](),
}

#: Gavel's policy names (``simulate_scheduler_with_trace.py --policy``) -> ours.
GAVEL_NAMES: dict[str, str] = {
    "fifo_perf": "fifo",
    "fifo": "fifo-agnostic",  # shadowed by our "fifo" in resolve_typed_policy
    "max_min_fairness_perf": "gavel",
    "max_min_fairness": "gavel-agnostic",
    "finish_time_fairness_perf": "themis",
    "finish_time_fairness": "themis-agnostic",
    "max_sum_throughput_perf": "mst",
    "min_total_duration_perf": "ossp",
    "min_total_duration": "ossp-agnostic",
    "gandiva": "gandiva",
    "max_min_fairness_water_filling_perf": "water-filling",
    "max_min_fairness_water_filling": "water-filling-agnostic",
    "allox": "allox",
}

#: Policies of the homogeneous simulator not yet available on a typed cluster.
NOT_YET_TYPED = ("allox-agnostic",)


def resolve_typed_policy(name: str) -> str:
    """Our name for ``name`` (ours or Gavel's, case-insensitive; ``_`` and ``-`` alike). Our
    names come first: ``fifo`` is ours (the fastest free type, Gavel's ``fifo_perf``).

    Raises:
        ValueError: naming the policy, for an unknown one or one not available on a typed
            cluster yet.
    """
    key = name.strip().lower()
    dashed = key.replace("_", "-")
    if dashed in TYPED_POLICIES:  # ours first: Gavel's "fifo" is our "fifo-agnostic"
        return dashed
    if key in GAVEL_NAMES:
        return GAVEL_NAMES[key]
    if key in NOT_YET_TYPED or dashed in NOT_YET_TYPED:
        raise ValueError(
            f"policy {name!r} is not available on a heterogeneous cluster yet; available: "
            f"{', '.join(TYPED_POLICIES)}"
        )
    raise ValueError(
        f"unknown policy {name!r} for a heterogeneous cluster; available: "
        f"{', '.join(TYPED_POLICIES)} (or Gavel's names: {', '.join(GAVEL_NAMES)})"
    )


def parameterised() -> dict[str, type[TypedShockwave]]:
    """The typed policies that take parameters (ours), by name: each a dataclass whose fields
    with defaults are its parameters. (Imported when asked: the policy's module imports this
    package, so importing it first must not need this module to have it already.)"""
    from shockwave.policies.shockwave.typed_policy import TypedShockwave

    return {"shockwave": TypedShockwave}


def typed_policy_parameters(name: str) -> dict[str, Any]:
    """The parameters of typed policy ``name`` (ours or Gavel's) and their defaults: those of
    ``shockwave``; none for the baselines, whose one setting, the seed, is the run's.

    Raises:
        ValueError: naming the policy, for an unknown one.
    """
    cls = parameterised().get(resolve_typed_policy(name))
    if cls is None:
        return {}
    return {
        f.name: f.default
        for f in dataclasses.fields(cls)
        if f.init and f.default is not dataclasses.MISSING
    }


def make_typed_policy(
    name: str, seed: int = 0, parameters: Mapping[str, Any] | None = None
) -> TypedAllocationPolicy:
    """A new policy instance by name (ours or Gavel's), with ``parameters``
    (:func:`typed_policy_parameters`).

    Raises:
        ValueError: naming the policy, for an unknown one, and the parameter, for an unknown
            parameter or a bad value.
    """
    resolved = resolve_typed_policy(name)
    checked = checked_parameters(resolved, parameters, typed_policy_parameters(resolved))
    cls = parameterised().get(resolved)
    if cls is None:
        return TYPED_POLICIES[resolved](seed)
    try:
        return cls(**checked)
    except InputError as exc:
        raise ValueError(f"policy {resolved!r}: {exc}") from None
