"""Scheduling policies: the protocol and the seven baselines.

=================  ===============================  ==========================================
name               the original's name              what it does
=================  ===============================  ==========================================
``fifo``           ``fifo``                         first in, first out, non-preemptive
``gavel``          ``max_min_fairness``             max-min fairness over GPU shares
``themis``         ``finish_time_fairness``         min-max of finish-time ratios
``allox``          ``allox``                        min-cost matching, sticky allocations
``mst``            ``max_sum_throughput_perf``      maximum sum of raw throughputs
``ossp``           ``min_total_duration``           shortest horizon that finishes every job
``gandiva-fair``   ``gandiva_fair``                 equal time shares
=================  ===============================  ==========================================

Build one with :func:`make_policy`; write your own by subclassing
:class:`~shockwave.scheduling.AllocationPolicy` or :class:`~shockwave.scheduling.RoundPolicy`
(see ``docs/simulator.md`` and ``docs/architecture.md``).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from shockwave.policies.allox import AlloX
from shockwave.policies.fifo import Fifo
from shockwave.policies.finish_time_fairness import FinishTimeFairness
from shockwave.policies.gandiva_fair import GandivaFair
from shockwave.policies.max_min_fairness import MaxMinFairness
from shockwave.policies.max_sum_throughput import MaxSumThroughput
from shockwave.policies.min_total_duration import MinTotalDuration
from shockwave.policies.shockwave import Shockwave
from shockwave.scheduling.protocol import Policy

#: Constructors of the built-in policies, by name.
POLICIES: dict[str, Callable[..., Policy]] = {
    "shockwave": Shockwave,
    "fifo": Fifo,
    "gavel": MaxMinFairness,
    "themis": FinishTimeFairness,
    "allox": AlloX,
    "mst": MaxSumThroughput,
    "ossp": MinTotalDuration,
    "gandiva-fair": GandivaFair,
}

#: The name each baseline has in the original artifact (its result files and scripts).
ORIGINAL_NAMES: dict[str, str] = {
    "shockwave": "shockwave",
    "fifo": "fifo",
    "gavel": "max_min_fairness",
    "themis": "finish_time_fairness",
    "allox": "allox",
    "mst": "max_sum_throughput_perf",
    "ossp": "min_total_duration",
    "gandiva-fair": "gandiva_fair",
}


def policy_parameters(name: str) -> dict[str, Any]:
    """The tunable parameters of a built-in policy and their defaults."""
    factory = _factory(name)
    if isinstance(factory, type) and dataclasses.is_dataclass(factory):
        return {
            f.name: f.default
            for f in dataclasses.fields(factory)
            if f.init and f.default is not dataclasses.MISSING
        }
    return {
        p.name: p.default
        for p in inspect.signature(factory).parameters.values()
        if p.default is not inspect.Parameter.empty
    }


def make_policy(name: str, parameters: Mapping[str, Any] | None = None) -> Policy:
    """A fresh instance of the built-in policy ``name``.

    Args:
        name: one of :data:`POLICIES`.
        parameters: keyword parameters of the policy (see :func:`policy_parameters`).

    Raises:
        ValueError: for an unknown policy, an unknown parameter (naming it) or a bad value.
    """
    factory = _factory(name)
    return factory(**checked_parameters(name, parameters, policy_parameters(name)))


def checked_parameters(
    name: str, parameters: Mapping[str, Any] | None, known: Mapping[str, Any]
) -> dict[str, Any]:
    """``parameters`` of policy ``name`` checked against ``known`` (each parameter's default):
    every key known, every value of its default's type (an integer is taken as a float where
    the default is one).

    Raises:
        ValueError: naming the policy and the parameter.
    """
    checked = dict(parameters or {})
    unknown = sorted(set(checked) - set(known))
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise ValueError(
            f"policy {name!r} has no parameter {unknown[0]!r} (its parameters: {allowed})"
        )
    for key, value in checked.items():
        default = known[key]
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            checked[key] = float(value)
        elif type(value) is not type(default):
            raise ValueError(
                f"policy {name!r}: parameter {key!r} must be a {type(default).__name__}, "
                f"got {value!r}"
            )
    return checked


def built_in_parameters(policy: Policy) -> dict[str, Any] | None:
    """The parameters with which :func:`make_policy` rebuilds ``policy``, if it is an
    instance of a built-in policy's own class (``None`` for any other policy)."""
    factory = POLICIES.get(policy.name)
    if factory is None or type(policy) is not factory:
        return None
    return {name: getattr(policy, name) for name in policy_parameters(policy.name)}


def resolve_policy_name(name: str) -> str:
    """The built-in policy called ``name``, also accepting the original's names
    (``max_min_fairness`` for ``gavel``, ...).

    Raises:
        ValueError: for an unknown name.
    """
    if name in POLICIES:
        return name
    for ours, original in ORIGINAL_NAMES.items():
        if name == original:
            return ours
    raise ValueError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")


def _factory(name: str) -> Callable[..., Policy]:
    return POLICIES[resolve_policy_name(name)]


__all__ = [
    "ORIGINAL_NAMES",
    "POLICIES",
    "AlloX",
    "Fifo",
    "FinishTimeFairness",
    "GandivaFair",
    "MaxMinFairness",
    "MaxSumThroughput",
    "MinTotalDuration",
    "built_in_parameters",
    "make_policy",
    "policy_parameters",
    "resolve_policy_name",
]
