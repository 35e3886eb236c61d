"""One GPU type through the Python API gives the bits recorded before GPU types existed.

``data/market_single_type_bits.json`` holds, for every case below, a SHA-256 digest of what
``market.solve`` returned (shares, prices, utilities, bids, objective, dual bound, gap, iteration
counts, status) and of ``market.round_schedule`` of its shares, as computed by commit a1f77fc
(the last one with a single GPU type), on an AVX-512 machine; ``market_single_type_bits.avx2.json``
holds the same cases computed on an AVX2 machine (2026-12-02, by a build whose one-type digests
equal 62fc0a5's on all 91 cases): the markets' numbers come from a SplitMix64 stream written out
here, but some go through numpy's ``exp`` and ``log``, whose last bits depend on the CPU
(``tests/golden_platform.py``). Recorded with::

    SHOCKWAVE_RECORD_BITS=1 python -m pytest tests/test_market_single_type_bits.py

The core's own record (``rust/core/tests/market_single_type_bits.rs``) covers far more cases;
this one covers the binding, the ``(N, T)`` and ``(N, T, 1)`` forms of the arguments, and the
warm start through ``warm_start_bids``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shockwave import market
from tests.golden_platform import golden_path, record_path

DATA = Path(__file__).parent / "data"
#: the record this machine compares against (per CPU class: ``tests/golden_platform.py``; the
#: markets' budgets go through numpy's ``exp`` and ``log``, whose last bits depend on the CPU)
RECORD = golden_path(DATA, "market_single_type_bits", ".json")
MASK = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 (as ``rust/core/src/market/synthetic.rs``)."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return (self.next() >> 11) / float(1 << 53)


def build(jobs: int, rounds: int, seed: int, flags: int) -> dict[str, Any]:
    """A market of the benchmark recipe; ``flags`` as in the core's record (1 no ceilings, 2
    small rounds, 4 idle jobs, 8 budgets spanning 3^12)."""
    rng = SplitMix64(seed)
    gangs, progress, budgets = [], [], []
    valuations = np.zeros((jobs, rounds))
    for i in range(jobs):
        g = rng.uniform()
        gangs.append(1 if g < 0.6 else 2 if g < 0.8 else 4 if g < 0.92 else 8)
        done = 0.9 * rng.uniform()
        left = float(np.exp(np.log(30.0) + (2.0 * rng.uniform() - 1.0) * 1.5))
        growth = 0.5 * rng.uniform()
        for t in range(rounds):
            noise = 0.95 + 0.1 * rng.uniform()
            valuations[i, t] = (1.0 - done) / left * (1.0 + growth * t / rounds) * noise
        progress.append(done)
        budgets.append(3.0 ** int(6.0 * rng.uniform()))
    supply = np.full(rounds, max(8.0, float(sum(gangs) // 3)))
    ceilings = np.ones(jobs)
    if flags & 1:
        ceilings[:] = np.inf
    if flags & 2:
        for t in range(1, rounds):
            if rng.uniform() < 0.3:
                supply[t] = 4.0
    if flags & 4:
        for i in range(jobs):
            if rng.uniform() < 0.15:
                valuations[i] = 0.0
    if flags & 8:
        budgets = [3.0 ** int(13.0 * rng.uniform()) for _ in range(jobs)]
    return {
        "valuations": valuations,
        "gang_sizes": np.array(gangs, dtype=np.int64),
        "supply": supply,
        "budgets": np.array(budgets),
        "progress": np.array(progress),
        "ceilings": ceilings,
    }


CASES = [
    (jobs, rounds, seed, flags, tol, method)
    for seed, (jobs, rounds) in enumerate([(1, 1), (4, 3), (30, 8), (120, 20), (70, 13)], start=1)
    for flags in (0, 1 | 2, 4 | 8)
    for tol, method in ((1e-6, "interior_point"), (1e-9, "interior_point"),
                        (1e-4, "proportional_response"))
]  # fmt: skip


def digest(solution: market.MarketSolution, schedule: np.ndarray[Any, Any]) -> str:
    h = hashlib.sha256()
    for array in (solution.shares, solution.prices, solution.utilities, solution.bids):
        h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    for value in (solution.objective, solution.dual_bound, solution.gap):
        h.update(float(value).hex().encode())
    h.update(
        f"{solution.iterations} {solution.pr_iterations} {solution.ipm_iterations} "
        f"{solution.status.value}".encode()
    )
    h.update(np.ascontiguousarray(schedule, dtype=np.bool_).tobytes())
    return h.hexdigest()


def run(case: tuple[int, int, int, int, float, str], typed: bool) -> dict[str, str]:
    """Digests of the cold solve, a warm solve of the same market one round on, and their
    schedules; with ``typed``, every argument in its ``(N, T, 1)`` / ``(T, 1)`` form and the
    results squeezed back."""
    jobs, rounds, seed, flags, tol, method = case
    m = build(jobs, rounds, seed, flags)

    def solve(valuations: np.ndarray[Any, Any], **extra: Any) -> market.MarketSolution:
        supply = m["supply"][:, None] if typed else m["supply"]
        return market.solve(
            valuations[:, :, None] if typed else valuations,
            m["gang_sizes"],
            supply,
            budgets=m["budgets"],
            progress=m["progress"],
            ceilings=m["ceilings"],
            tol=tol,
            method=method,
            max_iter=3000,
            **extra,
        )

    def schedule(solution: market.MarketSolution) -> np.ndarray[Any, Any]:
        result = market.round_schedule(
            solution.shares,
            m["gang_sizes"],
            m["supply"][:, None] if typed else m["supply"],
            backfill_order=np.arange(jobs)[::-1].copy(),
        )
        return result[:, :, 0] if typed else result

    class Squeezed:
        def __init__(self, s: market.MarketSolution) -> None:
            self.shares = s.shares[:, :, 0] if typed else s.shares
            self.bids = s.bids[:, :, 0] if typed else s.bids
            self.prices = s.prices[:, 0] if typed else s.prices
            self.utilities, self.objective, self.dual_bound = s.utilities, s.objective, s.dual_bound
            self.gap, self.iterations, self.status = s.gap, s.iterations, s.status
            self.pr_iterations, self.ipm_iterations = s.pr_iterations, s.ipm_iterations

    cold = solve(m["valuations"])
    following = np.concatenate([m["valuations"][:, 1:], m["valuations"][:, -1:]], axis=1)
    warm = solve(following, warm_start=market.warm_start_bids(cold))
    return {
        "cold": digest(Squeezed(cold), schedule(cold)),  # type: ignore[arg-type]
        "warm": digest(Squeezed(warm), schedule(warm)),  # type: ignore[arg-type]
    }


def name(case: tuple[int, int, int, int, float, str]) -> str:
    jobs, rounds, seed, flags, tol, method = case
    return f"n{jobs}_t{rounds}_s{seed}_f{flags}_{method}_{tol:g}"


def test_record_covers_every_case() -> None:
    record = RECORD
    if os.environ.get("SHOCKWAVE_RECORD_BITS"):
        record = record_path(DATA, "market_single_type_bits", ".json")
        record.write_text(
            json.dumps({name(c): run(c, typed=False) for c in CASES}, indent=1, sort_keys=True)
            + "\n"
        )
    assert sorted(json.loads(record.read_text())) == sorted(name(c) for c in CASES)


@pytest.mark.parametrize("typed", [False, True], ids=["N_T", "N_T_1"])
@pytest.mark.parametrize("case", CASES, ids=name)
def test_one_type_gives_the_recorded_bits(
    case: tuple[int, int, int, int, float, str], typed: bool
) -> None:
    assert run(case, typed) == json.loads(RECORD.read_text())[name(case)]
