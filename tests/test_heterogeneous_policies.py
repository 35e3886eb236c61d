"""Gavel's packing mechanism, placement and lease extensions, and the typed policies' rules
(``gandiva``, ``allox``, ``water-filling``, ``gandiva-fair``, the horizon search of ``ossp``)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.errors import TraceError
from shockwave.heterogeneous import (
    ClusterSpec,
    TypedJobs,
    TypedThroughputTable,
    gavel_policies,
    load_typed_trace,
    make_typed_policy,
    simulate_heterogeneous,
)
from shockwave.heterogeneous.gandiva_fair import TypedGandivaFair, trade
from shockwave.heterogeneous.mechanism import TypedRoundMechanism
from shockwave.heterogeneous.placement import GavelPlacement
from shockwave.heterogeneous.protocol import TypedAllocationState

DATA = Path(__file__).parent / "data" / "gavel"
THROUGHPUTS = DATA / "simulation_throughputs.json.gz"


def _state(
    thr: np.ndarray, gang: list[int], counts: list[int], **extra: object
) -> TypedAllocationState:
    n = thr.shape[0]
    values: dict[str, object] = {
        "time": 0.0,
        "types": tuple(f"t{k}" for k in range(thr.shape[1])),
        "counts": np.array(counts, dtype=np.int64),
        "job_ids": np.arange(n, dtype=np.int64),
        "throughput": thr,
        "gang": np.array(gang, dtype=np.int64),
        "weight": np.ones(n),
        "remaining_steps": np.full(n, 1000, dtype=np.int64),
        "time_since_arrival": np.arange(n, dtype=np.float64)[::-1].copy(),
    }
    values.update(extra)
    return TypedAllocationState(**values)  # type: ignore[arg-type]


def test_a_gzip_throughput_file_keeps_its_colocation_pairs(tmp_path: Path) -> None:
    table = TypedThroughputTable.from_file(THROUGHPUTS)
    pair = table.colocated(
        "v100", ("ResNet-18 (batch size 16)", 1), ("ResNet-18 (batch size 64)", 1)
    )
    assert pair is not None and pair[0] > 0.0 and pair[1] > 0.0
    broken = tmp_path / "t.json.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(TraceError, match="gzip"):
        TypedThroughputTable.from_file(broken)
    broken.write_bytes(gzip.compress(b"{not json"))
    with pytest.raises(TraceError, match="not valid JSON"):
        TypedThroughputTable.from_file(broken)


def test_pairs_are_formed_between_jobs_of_one_gang_size_and_dropped_with_them() -> None:
    mechanism = TypedRoundMechanism(4, 2, 360.0, lambda i, j: np.full((2, 2), 1.0 + i + j))
    gang = np.array([1, 2, 1, 1], dtype=np.int64)
    ids = np.arange(4, dtype=np.int64)
    mechanism.admit(np.array([0, 1], dtype=np.int64), np.zeros(0, dtype=np.int64), gang, ids)
    mechanism.admit(np.array([2, 3], dtype=np.int64), np.array([0, 1], dtype=np.int64), gang, ids)
    assert mechanism.pair_entries() == [(0, 2), (0, 3), (2, 3)]
    np.testing.assert_array_equal(mechanism.pair_throughput()[0], np.full((2, 2), 3.0))
    # a reset counts tau/2 per job and per pair alive; pairs start from 0 time received
    mechanism.reset(np.arange(4, dtype=np.int64), 0.0)
    assert mechanism.type_total[0] == pytest.approx(180.0 * 7)
    mechanism.remove(2)
    assert mechanism.pair_entries() == [(0, 3)]


def test_the_scan_never_runs_a_job_twice_and_a_pair_takes_one_gang_of_gpus() -> None:
    mechanism = TypedRoundMechanism(3, 1, 360.0, lambda i, j: np.array([[2.0, 2.0]]))
    gang = np.ones(3, dtype=np.int64)
    active = np.arange(3, dtype=np.int64)
    mechanism.admit(active, np.zeros(0, dtype=np.int64), gang, active)
    mechanism.reset(active, 0.0)
    pairs = mechanism.pair_entries()
    pair_x = np.array([[1.0 if p == (0, 1) else 0.0] for p in pairs])
    mechanism.set_allocation(active, np.array([[0.2], [0.2], [0.5]]), pair_x)
    chosen = mechanism.select(active, gang, np.ones((3, 1)), np.array([2]), [0],
                              run_zero_priority=True)  # fmt: skip
    assert chosen == [((0, 1), 0), ((2,), 0)]


def test_placement_keeps_a_gang_on_its_gpus_and_counts_the_extension() -> None:
    placement = GavelPlacement([4], [2])
    gang: dict[tuple[int, ...], int] = {(0,): 2, (1,): 1}

    def place(chosen: list[tuple[tuple[int, ...], int]]) -> None:
        placement.place(chosen, gang=lambda e: gang[e], allocated=lambda e: True,
                        active=lambda e: True, type_order=[0])  # fmt: skip

    place([((1,), 0), ((0,), 0)])
    first = dict(placement.previous)
    assert first[(0,)][1] == (0, 1) and first[(1,)][1] == (2,)  # largest gang first
    place([((0,), 0)])
    assert placement.previous[(0,)] == first[(0,)]
    assert (placement.extensions, placement.opportunities) == (1, 2)
    assert placement.extension_share == pytest.approx(0.5)


def test_gandiva_packs_only_when_the_jobs_do_not_fit_and_draws_reproducibly() -> None:
    thr = np.ones((4, 1))
    pairs = np.array([[a, b] for a in range(4) for b in range(a + 1, 4)], dtype=np.int64)
    colocated = np.full((pairs.shape[0], 1, 2), 0.8)
    state = _state(thr, [1, 1, 1, 1], [4], pairs=pairs, pair_throughput=colocated)
    x = make_typed_policy("gandiva").allocate(state)
    np.testing.assert_allclose(x[:4], 1.0)  # 4 jobs fit on 4 GPUs: equal shares, no packing
    np.testing.assert_array_equal(x[4:], 0.0)
    crowded = _state(thr, [1, 1, 1, 1], [2], pairs=pairs, pair_throughput=colocated)
    first = make_typed_policy("gandiva", seed=3).allocate(crowded)
    again = make_typed_policy("gandiva", seed=3).allocate(crowded)
    np.testing.assert_array_equal(first, again)
    packed = np.flatnonzero(first[4:, 0] > 0.0)
    assert packed.shape[0] == 2  # two random pairs share the two GPUs
    np.testing.assert_array_equal(first[:4], 0.0)
    assert set(pairs[packed].ravel().tolist()) == {0, 1, 2, 3}


def test_allox_refuses_a_multi_gpu_job_before_the_run() -> None:
    jobs = load_typed_trace(DATA / "T2.trace", THROUGHPUTS, "v100:12,p100:12,k80:12")
    with pytest.raises(ValueError, match="job 1 needs 2 GPUs: Gavel's AlloX"):
        simulate_heterogeneous(jobs, "allox")


def test_allox_gives_each_gpu_the_job_at_the_head_of_its_queue() -> None:
    thr = np.array([[4.0, 1.0], [4.0, 1.0], [1.0, 1.0]])
    x = make_typed_policy("allox").allocate(_state(thr, [1, 1, 1], [1, 1]))
    assert x.sum() == 2.0  # two GPUs, two jobs start; the third waits
    assert np.all(x.sum(axis=1) <= 1.0)


def test_water_filling_agrees_with_max_min_on_its_first_level() -> None:
    thr = np.array([[3.0, 1.0], [1.0, 2.0], [2.0, 2.0]])
    state = _state(thr, [1, 1, 1], [1, 1])
    filled = make_typed_policy("water-filling").allocate(state)
    max_min = make_typed_policy("gavel").allocate(state)
    split = np.array([0.5, 0.5])
    normalized_filled = (thr * filled).sum(axis=1) / (thr @ split)
    normalized_max_min = (thr * max_min).sum(axis=1) / (thr @ split)
    assert normalized_filled.min() == pytest.approx(normalized_max_min.min(), rel=1e-6)
    assert np.all(filled.sum(axis=1) <= 1.0 + 1e-9)


def test_the_horizon_screen_falls_back_to_gavels_search_when_it_is_wrong(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thr = np.array([[2.0, 1.0], [1.0, 3.0], [1.0, 1.0]])
    state = _state(thr, [1, 1, 1], [1, 1])
    honest = make_typed_policy("ossp").allocate(state)
    monkeypatch.setattr(gavel_policies, "largest_rate_scale", lambda *args: 1e-9)
    np.testing.assert_allclose(make_typed_policy("ossp").allocate(state), honest, atol=1e-12)


def test_gandiva_fair_on_one_type_is_the_homogeneous_equal_share() -> None:
    for n, gpus in ((3, 8), (10, 4)):
        state = _state(np.ones((n, 1)), [1] * n, [gpus])
        x = make_typed_policy("gandiva-fair").allocate(state)
        np.testing.assert_allclose(x[:, 0], min(1.0, gpus / n))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 8),
    seed=st.integers(0, 10_000),
    counts=st.lists(st.integers(1, 6), min_size=2, max_size=3),
)
def test_gandiva_fair_trades_help_both_sides_and_keep_each_types_gpu_time(
    n: int, seed: int, counts: list[int]
) -> None:
    rng = np.random.default_rng(seed)
    k = len(counts)
    thr = rng.uniform(0.5, 5.0, size=(n, k))
    thr[rng.random((n, k)) < 0.1] = 0.0
    thr[:, 0] = np.maximum(thr[:, 0], 0.5)  # every job runs somewhere
    gang = rng.integers(1, 3, size=n).astype(np.float64)
    share = np.repeat((np.array(counts, float) / (3 * n))[None, :], n, axis=0)  # crowded
    share /= np.maximum(share.sum(axis=1), 1.0)[:, None]
    before = share.copy()
    trade(share, thr, gang)
    assert np.all(share >= -1e-12) and np.all(share.sum(axis=1) <= 1.0 + 1e-9)
    np.testing.assert_allclose((gang[:, None] * share).sum(axis=0),
                               (gang[:, None] * before).sum(axis=0), rtol=1e-9)  # fmt: skip
    assert np.all((thr * share).sum(axis=1) >= (thr * before).sum(axis=1) - 1e-9)


def test_trading_raises_throughput_on_a_crowded_typed_cluster() -> None:
    cluster = ClusterSpec.parse("fast:2,slow:2")
    thr = np.array([[8.0, 1.0]] * 3 + [[2.0, 1.5]] * 3)
    jobs = TypedJobs(
        job_ids=np.arange(6, dtype=np.int64),
        job_types=("a",) * 6,
        arrival=np.zeros(6),
        gang=np.ones(6, dtype=np.int64),
        weight=np.ones(6),
        total_steps=np.full(6, 20_000, dtype=np.int64),
        throughput=thr,
        cluster=cluster,
    )
    state = _state(thr, [1] * 6, [2, 2])
    traded = TypedGandivaFair(aware=True).allocate(state)
    equal = TypedGandivaFair(aware=False).allocate(state)
    assert np.all((thr * traded).sum(axis=1) >= (thr * equal).sum(axis=1) - 1e-12)
    assert (thr * traded).sum() > (thr * equal).sum()
    aware = simulate_heterogeneous(jobs, "gandiva-fair")
    assert aware.avg_jct < simulate_heterogeneous(jobs, "gandiva-fair-agnostic").avg_jct
