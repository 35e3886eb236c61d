"""``round_schedule`` against a plain reference of its rule (the full sort every round).

The core sorts only the head of each round's order, a chunk at a time; these instances are large
enough (hundreds of owed jobs, a small supply) to take several chunks.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave import market


def reference_schedule(
    shares: npt.NDArray[np.float64],
    gangs: npt.NDArray[np.int64],
    supply: npt.NDArray[np.float64],
    backfill: list[int] | None,
    deficit: npt.NDArray[np.float64] | None,
) -> npt.NDArray[np.bool_]:
    """The module's rule, written out: every owed job sorted, first fit, then the backfill."""
    jobs, rounds = shares.shape
    owed = np.zeros(jobs) if deficit is None else deficit.astype(np.float64).copy()
    schedule = np.zeros((jobs, rounds), dtype=bool)
    for t in range(rounds):
        owed += shares[:, t]
        queue = [i for i in range(jobs) if owed[i] > 1e-9 and gangs[i] <= supply[t]]
        queue.sort(key=lambda i: (-owed[i], -shares[i, t], i))
        free = float(supply[t])
        for i in queue:
            if gangs[i] <= free:
                free -= gangs[i]
                schedule[i, t] = True
                owed[i] -= 1.0
        for i in backfill or []:
            if not schedule[i, t] and gangs[i] <= free:
                free -= gangs[i]
                schedule[i, t] = True
    return schedule


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 900),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.booleans(),
)
def test_the_schedule_is_the_rules(
    jobs: int, rounds: int, seed: int, with_backfill: bool, with_deficit: bool
) -> None:
    check(jobs, rounds, seed, with_backfill, with_deficit)


@pytest.mark.parametrize("jobs", [300, 700, 2000])
@pytest.mark.parametrize("seed", [1, 2])
def test_large_rounds_take_several_chunks(jobs: int, seed: int) -> None:
    check(jobs, 3, seed, with_backfill=seed == 2, with_deficit=seed == 1)


def check(jobs: int, rounds: int, seed: int, with_backfill: bool, with_deficit: bool) -> None:
    """The core's schedule equals the reference on a random instance."""
    rng = np.random.default_rng(seed)
    # shares with ties (a coarse grid) so that the tie-breaks matter
    shares = rng.integers(0, 5, size=(jobs, rounds)) / 4.0
    gangs = rng.choice([1, 2, 4, 8], size=jobs, p=[0.6, 0.3, 0.09, 0.01]).astype(np.int64)
    supply = rng.integers(0, max(2, jobs // 3), size=rounds).astype(np.float64) + 0.5
    backfill = list(rng.permutation(jobs)[: jobs // 2]) if with_backfill else None
    deficit = rng.integers(-2, 3, size=jobs) / 2.0 if with_deficit else None
    mine = market.round_schedule(
        shares,
        gangs,
        supply,
        backfill_order=None if backfill is None else np.array(backfill, dtype=np.int64),
        deficit=deficit,
    )
    assert np.array_equal(mine, reference_schedule(shares, gangs, supply, backfill, deficit))


# --- GPU types ---------------------------------------------------------------------------------


def reference_typed_schedule(
    shares: npt.NDArray[np.float64],
    gangs: npt.NDArray[np.int64],
    supply: npt.NDArray[np.float64],
    backfill: list[int] | None,
    deficit: npt.NDArray[np.float64] | None,
) -> npt.NDArray[np.bool_]:
    """The rule with GPU types, written out: every owed (job, type) pair sorted, first fit of
    one gang per job and round within each type's supply, then the backfill (first type, in type
    order, where the gang fits)."""
    jobs, rounds, types = shares.shape
    owed = np.zeros((jobs, types)) if deficit is None else deficit.astype(np.float64).copy()
    schedule = np.zeros((jobs, rounds, types), dtype=bool)
    for t in range(rounds):
        owed += shares[:, t, :]
        queue = [
            (i, k)
            for i in range(jobs)
            for k in range(types)
            if owed[i, k] > 1e-9 and gangs[i] <= supply[t, k]
        ]
        queue.sort(key=lambda p: (-owed[p], -shares[p[0], t, p[1]], p[0], p[1]))
        free = supply[t].astype(np.float64).copy()
        running = np.zeros(jobs, dtype=bool)
        for i, k in queue:
            if not running[i] and gangs[i] <= free[k]:
                free[k] -= gangs[i]
                schedule[i, t, k] = True
                owed[i, k] -= 1.0
                running[i] = True
        for i in backfill or []:
            if running[i]:
                continue
            for k in range(types):
                if gangs[i] <= free[k]:
                    free[k] -= gangs[i]
                    schedule[i, t, k] = True
                    running[i] = True
                    break
    return schedule


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 600),
    st.integers(1, 4),
    st.integers(2, 4),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.booleans(),
)
def test_the_schedule_with_types_is_the_rules(
    jobs: int, rounds: int, types: int, seed: int, with_backfill: bool, with_deficit: bool
) -> None:
    check_typed(jobs, rounds, types, seed, with_backfill, with_deficit)


@pytest.mark.parametrize("jobs", [300, 1500])
@pytest.mark.parametrize("types", [2, 3])
def test_large_rounds_with_types_take_several_chunks(jobs: int, types: int) -> None:
    check_typed(jobs, 3, types, jobs + types, with_backfill=True, with_deficit=types == 3)


def check_typed(
    jobs: int, rounds: int, types: int, seed: int, with_backfill: bool, with_deficit: bool
) -> None:
    """The core's schedule equals the reference on a random instance with GPU types, and the
    one-type schedule is the (N, T, 1) one."""
    rng = np.random.default_rng(seed)
    # shares with ties (a coarse grid), at most one gang per job and round
    raw = rng.integers(0, 5, size=(jobs, rounds, types)) / 4.0
    shares = raw / np.maximum(1.0, raw.sum(axis=2, keepdims=True))
    gangs = rng.choice([1, 2, 4, 8], size=jobs, p=[0.6, 0.3, 0.09, 0.01]).astype(np.int64)
    supply = rng.integers(0, max(2, jobs // (3 * types)), size=(rounds, types)) + 0.5
    backfill = list(rng.permutation(jobs)[: jobs // 2]) if with_backfill else None
    deficit = rng.integers(-2, 3, size=(jobs, types)) / 2.0 if with_deficit else None
    mine = market.round_schedule(
        shares,
        gangs,
        supply,
        backfill_order=None if backfill is None else np.array(backfill, dtype=np.int64),
        deficit=deficit,
    )
    assert mine.shape == shares.shape
    assert np.array_equal(mine, reference_typed_schedule(shares, gangs, supply, backfill, deficit))
    one = market.round_schedule(
        shares[:, :, :1], gangs, supply[:, :1],
        deficit=None if deficit is None else deficit[:, :1],
    )  # fmt: skip
    flat = market.round_schedule(
        shares[:, :, 0], gangs, supply[:, 0], deficit=None if deficit is None else deficit[:, 0]
    )
    assert np.array_equal(one[:, :, 0], flat)
