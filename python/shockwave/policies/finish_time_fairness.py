"""``themis``: finish-time fairness (the original's ``finish_time_fairness``).

Each job's expected finish-time ratio under the allocation is

    rho_i(x) = (t_i + W_i / (r_i x_i)) / (c_i + W_i / (r_i x_i^iso)),

with ``t_i`` the time since arrival, ``W_i / r_i`` the remaining run time at full speed,
``x_i^iso = min(1, G / (N w_i))`` the isolated share and ``c_i`` the isolated time the job has
already "used" (accumulated across calls: ``c_i += (W_i^prev - W_i) / (r_i^prev x_i^iso,prev)``).
The program minimises ``max_i rho_i(x)`` subject to ``0 <= x <= 1``, ``sum_i w_i x_i <= G``.

For a target ``rho`` every job needs ``x_i >= l_i(rho) = (W_i / r_i) / (rho c'_i - t_i)``
(``c'_i`` the denominator), decreasing in ``rho``; the optimum ``rho*`` is the larger of
``max_i rho_i(1)`` and the root of ``sum_i w_i l_i(rho) = G``, found by bisection. Only the
bottleneck jobs are pinned by the min-max; the original returns whatever its solver (Gurobi) lands
on for the others. We return the analytic center of the optimal face
``{l(rho*) <= x <= 1, w.x <= G}``.

Units: ``W`` is the remaining work in the unit the cluster's progress counters count
(``state.progress_counter``). Where they count steps (the original simulator's mechanics) ``W``
is the original's remaining step count and ``r`` the throughput, so ``c`` inherits the
original's quirk (a batch-size change rescales ``W`` and makes ``c`` jump); a job with negative
remaining steps (a "stuck" job) makes the original's program non-convex, and it falls back to
the isolated allocation without updating ``c`` (we do the same). Where they follow the profiles
(exact profiles, the planned view, real runs) ``W`` is the remaining run time in seconds and
``r = 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader
from shockwave.policies.analytic_center import interior_point
from shockwave.policies.saved_state import id_table, read_id_table
from shockwave.scheduling import AllocationPolicy, ClusterState

#: The per-job tables the policy keeps between calls (its state in a checkpoint).
_TABLES = ("_used", "_previous_work", "_previous_isolated_rate")

_BISECTION_STEPS = 400


def isolated_share(gpus: int, gang: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """``min(1, G / (N w_i))``, computed in the original's order of operations."""
    share = (gpus / gang.shape[0]) / gang.astype(np.float64)
    return np.asarray(share / np.maximum(share, 1.0), dtype=np.float64)


class FinishTimeFairness(AllocationPolicy):
    """Min-max of finish-time ratios (no parameters; keeps ``c_i`` across calls)."""

    name = "themis"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._used: dict[int, float] = {}
        self._previous_work: dict[int, float] = {}
        self._previous_isolated_rate: dict[int, float] = {}

    def snapshot(self) -> dict[str, Any]:
        return {name.lstrip("_"): id_table(getattr(self, name)) for name in _TABLES}

    def restore(self, state: Mapping[str, Any]) -> None:
        saved = StateReader(dict(state), f"policy {self.name!r}")
        tables = {name: read_id_table(saved.table(name.lstrip("_"))) for name in _TABLES}
        saved.done()
        for name, table in tables.items():
            setattr(self, name, table)

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        n = state.num_active
        if n == 0:
            self._previous_work = {}
            self._previous_isolated_rate = {}
            return np.zeros(0)
        gang = state.gang_size
        iso = isolated_share(state.gpus, gang)
        if state.progress_counter == "steps":
            work = state.remaining_steps
            rate = state.throughput
        else:
            work = state.remaining_seconds
            rate = np.ones(n)
        ids = state.job_ids.tolist()
        used = np.array(
            [
                self._used.get(j, 0.0)
                + (
                    (self._previous_work[j] - w) / self._previous_isolated_rate[j]
                    if j in self._previous_work
                    else 0.0
                )
                for j, w in zip(ids, work.tolist(), strict=True)
            ]
        )
        denominator = used + work / (rate * iso)
        if np.any(work < 0.0) or np.any(denominator <= 0.0):
            return iso  # the original's fallback when its program is not convex
        for j, u in zip(ids, used.tolist(), strict=True):
            self._used[j] = u
        self._previous_work = dict(zip(ids, work.tolist(), strict=True))
        self._previous_isolated_rate = dict(zip(ids, (rate * iso).tolist(), strict=True))
        return self._solve(state.time_since_arrival, work / rate, denominator, gang, state.gpus)

    @staticmethod
    def _solve(
        waited: npt.NDArray[np.float64],
        seconds: npt.NDArray[np.float64],
        denominator: npt.NDArray[np.float64],
        gang_size: npt.NDArray[np.int64],
        gpus: int,
    ) -> npt.NDArray[np.float64]:
        gang = gang_size.astype(np.float64)
        working = seconds > 0.0
        # rho_i(x) is at least rho_i(1); jobs with no work left have a constant ratio.
        at_full = (waited + np.where(working, seconds, 0.0)) / denominator
        lowest = float(at_full.max())

        def bounds(rho: float) -> npt.NDArray[np.float64]:
            room = rho * denominator - waited
            with np.errstate(divide="ignore"):
                return np.where(working, seconds / room, 0.0)

        def load(rho: float) -> float:
            return float(gang @ bounds(rho))

        rho = lowest
        if load(rho) > gpus:
            low, high = rho, max(rho, 1.0) * 2.0
            while load(high) > gpus:
                low, high = high, high * 2.0
            for _ in range(_BISECTION_STEPS):
                middle = 0.5 * (low + high)
                if middle <= low or middle >= high:
                    break
                if load(middle) > gpus:
                    low = middle
                else:
                    high = middle
            rho = high
        floor = np.minimum(bounds(rho), 1.0)
        n = floor.shape[0]
        return interior_point([np.zeros(n), floor], np.ones(n), gang, float(gpus))
