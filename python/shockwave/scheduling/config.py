"""Simulation settings: the cluster, the round length and the mechanics.

Every constant of the original simulator that the ``gavel`` mechanics reproduce lives here, once,
with the fact it encodes (original: Gavel's scheduler as extended by the Shockwave artifact,
github.com/uw-mad-dash/shockwave, ``scheduler/scheduler.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from shockwave.arguments import is_integer

#: The two simulator mechanics. ``exact`` follows each job's per-epoch profile exactly and asks the
#: policy every round; ``gavel`` reproduces the original simulator, quirks included.
Mechanics = Literal["exact", "gavel"]
MECHANICS: tuple[Mechanics, ...] = ("exact", "gavel")

#: Round length of the paper's experiments (the original's ``time_per_iteration``), seconds.
DEFAULT_ROUND_SECONDS = 120.0
#: Checkpoint-restore cost charged to a job that did not run in the previous round (the
#: original's ``preemption_overhead``), seconds.
DEFAULT_RESTART_PENALTY_SECONDS = 20.0
#: The original recomputes a Gavel-style allocation at most this often
#: (``minimum_time_between_allocation_resets``), seconds.
GAVEL_MIN_SECONDS_BETWEEN_RECOMPUTES = 1000.0
#: Under ``gavel`` mechanics the restart penalty applies only when the job's execution time in the
#: round exceeds the round length minus this margin (the original's ``time_per_iteration - 5``).
GAVEL_PENALTY_MARGIN_SECONDS = 5.0
#: Scheduled rounds with zero progress after which the original drops a job
#: (``MAX_FAILED_ATTEMPTS``).
GAVEL_MAX_FAILED_ATTEMPTS = 5
#: A job whose execution time exceeds this multiple of its profile runtime is force-completed
#: (``is_over_deadline``).
GAVEL_OVERTIME_FACTOR = 1.5


#: Largest ``throughput_noise`` (sigma of the log of the speed factor) accepted.
MAX_THROUGHPUT_NOISE = 10.0
#: Range of ``round_seconds`` accepted (a millisecond to the longest job time,
#: ``shockwave.limits.MAX_SECONDS``).
MIN_ROUND_SECONDS, MAX_ROUND_SECONDS = 1e-3, 1e12


@dataclass(frozen=True)
class SimulationConfig:
    """How to simulate a workload.

    Attributes:
        gpus: identical GPUs in the cluster (G), >= 1.
        mechanics: ``"exact"`` (default) or ``"gavel"``; see ``docs/simulator.md``.
        round_seconds: round length tau, seconds (default 120). Under ``gavel`` mechanics the
            original truncates the steps of a round to an integer, so its rounds last slightly
            less.
        restart_penalty_seconds: time lost by a job that did not run in the previous round,
            seconds (default 20). Must be shorter than a round.
        round_overhead_seconds: time every running job loses at every round boundary (a real
            cluster's round turnaround: the jobs report, the policy decides, leases go out),
            seconds (default 0). ``exact`` mechanics only; with the restart penalty it must be
            shorter than a round. ``shockwave cluster profile`` measures it for real runs.
        seed: seed of every random draw (throughput noise), for bit-for-bit reproducible runs.
        throughput_noise: standard deviation ``sigma`` of the log of a multiplicative throughput
            factor drawn per job and round, ``exp(sigma * Z - sigma**2 / 2)`` with ``Z`` standard
            normal (mean 1). 0 (default) disables noise. ``exact`` mechanics only.
        recompute_interval_seconds: under ``gavel`` mechanics, the minimum time between two
            allocation recomputes (default 1000 s, the original's). Under ``exact`` mechanics the
            allocation is recomputed every round, and this is the minimum time between two resets
            of the round mechanism's time counters (as Gavel's physical scheduler does).
        max_rounds: safety stop: raise if the simulation has not finished after this many
            rounds (``None``: a bound derived from the workload).
    """

    gpus: int
    mechanics: Mechanics = "exact"
    round_seconds: float = DEFAULT_ROUND_SECONDS
    restart_penalty_seconds: float = DEFAULT_RESTART_PENALTY_SECONDS
    round_overhead_seconds: float = 0.0
    seed: int = 0
    throughput_noise: float = 0.0
    recompute_interval_seconds: float = GAVEL_MIN_SECONDS_BETWEEN_RECOMPUTES
    max_rounds: int | None = None

    def __post_init__(self) -> None:
        for name in ("gpus", "seed", "max_rounds"):  # accept numpy integers too
            value = getattr(self, name)
            if isinstance(value, np.integer):
                object.__setattr__(self, name, int(value))
        if not is_integer(self.gpus, numpy=False) or self.gpus < 1:
            raise ValueError(f"gpus must be an integer >= 1, got {self.gpus!r}")
        if self.mechanics not in MECHANICS:
            raise ValueError(f"mechanics must be one of {MECHANICS}, got {self.mechanics!r}")
        _check_number("round_seconds", self.round_seconds, positive=True)
        _check_number("restart_penalty_seconds", self.restart_penalty_seconds, positive=False)
        if self.restart_penalty_seconds >= self.round_seconds:
            raise ValueError(
                "restart_penalty_seconds must be shorter than round_seconds "
                f"({self.restart_penalty_seconds} >= {self.round_seconds}): no job could progress "
                "(the command line's --restart-penalty-seconds sets it)"
            )
        _check_number("round_overhead_seconds", self.round_overhead_seconds, positive=False)
        if self.round_overhead_seconds > 0:
            if self.mechanics == "gavel":
                raise ValueError("round_overhead_seconds is supported by the exact mechanics only")
            if self.restart_penalty_seconds + self.round_overhead_seconds >= self.round_seconds:
                raise ValueError(
                    "restart_penalty_seconds + round_overhead_seconds must be shorter than "
                    f"round_seconds ({self.restart_penalty_seconds} + "
                    f"{self.round_overhead_seconds} >= {self.round_seconds}): no job could progress"
                )
        _check_number("throughput_noise", self.throughput_noise, positive=False)
        if self.throughput_noise > MAX_THROUGHPUT_NOISE:
            raise ValueError(
                f"throughput_noise must be at most {MAX_THROUGHPUT_NOISE:g} (a log-normal sigma "
                f"beyond it stops every job: exp(-sigma**2 / 2)), got {self.throughput_noise!r}"
            )
        if not MIN_ROUND_SECONDS <= self.round_seconds <= MAX_ROUND_SECONDS:
            raise ValueError(
                f"round_seconds must be in [{MIN_ROUND_SECONDS:g}, {MAX_ROUND_SECONDS:g}], "
                f"got {self.round_seconds!r}"
            )
        _check_number("recompute_interval_seconds", self.recompute_interval_seconds, positive=False)
        if self.throughput_noise > 0 and self.mechanics == "gavel":
            raise ValueError("throughput_noise is supported by the exact mechanics only")
        if not is_integer(self.seed, numpy=False) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if self.max_rounds is not None and (
            isinstance(self.max_rounds, bool)
            or not isinstance(self.max_rounds, int)
            or self.max_rounds < 1
        ):
            raise ValueError(f"max_rounds must be an integer >= 1 or None, got {self.max_rounds!r}")


def _check_number(name: str, value: object, *, positive: bool) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if not positive and value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
