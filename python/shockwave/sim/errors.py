"""Errors raised by the simulator."""

from __future__ import annotations

from shockwave.errors import RunFailedError


class PolicyOutputError(RunFailedError, ValueError):
    """A policy returned something the simulator cannot execute: fractions of the wrong shape or
    outside ``[0, 1]``, an unknown or inactive job, a job twice, or more GPUs than the cluster
    has."""


class SimulationStalledError(RunFailedError, RuntimeError):
    """The simulation did not finish within its round limit (a policy that starves jobs)."""
