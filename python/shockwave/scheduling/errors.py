"""Errors of the round loop, in a simulation and in a real run alike."""

from __future__ import annotations

from shockwave.errors import RunFailedError


class PolicyOutputError(RunFailedError, ValueError):
    """A policy returned something the round loop cannot execute: fractions of the wrong shape or
    outside ``[0, 1]``, an unknown or inactive job, a job twice, or more GPUs than the cluster
    has."""


class SimulationStalledError(RunFailedError, RuntimeError):
    """The run did not finish within its round limit (a policy that starves jobs)."""
