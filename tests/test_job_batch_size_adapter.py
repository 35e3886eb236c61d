"""The adaptation modes on controlled gradient statistics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shockwave.job.batch_size_adapter import (
    BatchSizeAdapter,
    GradientMonitor,
    accordion_critical,
    gns_estimates,
    gns_next_batch_size,
    noise_scale,
)

Params = dict[str, np.ndarray]


def test_gns_estimates_recover_the_gradient_and_the_trace_from_expectations() -> None:
    # E|G_B|^2 = |G|^2 + tr(Sigma) / B
    gradient_sq, trace = 0.25, 40.0
    small, big = 16.0, 32.0
    estimate = gns_estimates(gradient_sq + trace / small, gradient_sq + trace / big, small, big)
    assert estimate == pytest.approx((gradient_sq, trace), rel=1e-12)
    assert noise_scale(*estimate) == pytest.approx(160.0)


def test_noise_scale_edge_cases() -> None:
    assert noise_scale(2.0, 10.0) == 5.0
    assert noise_scale(-1.0, 10.0) == float("inf")  # noise swamps the gradient
    assert noise_scale(1.0, -3.0) == 0.0  # no measurable noise
    assert noise_scale(-1.0, 0.0) == 0.0


def test_gns_rule_steps_up_one_size_at_the_threshold_and_never_down() -> None:
    sizes = (16, 32, 64, 128)
    assert gns_next_batch_size(63.9, 32, sizes, 2.0) == 32
    assert gns_next_batch_size(64.0, 32, sizes, 2.0) == 64
    assert gns_next_batch_size(1e9, 32, sizes, 2.0) == 64  # one size per decision
    assert gns_next_batch_size(float("inf"), 128, sizes, 2.0) == 128  # the largest stays
    assert gns_next_batch_size(0.0, 64, sizes, 2.0) == 64  # never down


def _noisy_step(
    rng: np.random.Generator, mean: np.ndarray, sigma: float, batch: int
) -> tuple[tuple[Params, Params], Params]:
    """Two half-batch gradients and their mean, per-sample gradients ~ N(mean, sigma^2 I)."""
    samples = mean + sigma * rng.standard_normal((batch, mean.size))
    half = batch // 2
    first, second = samples[:half].mean(axis=0), samples[half:].mean(axis=0)
    return ({"g": first}, {"g": second}), {"g": samples.mean(axis=0)}


def test_monitor_measures_a_known_noise_scale() -> None:
    rng = np.random.default_rng(0)
    dims, sigma = 50, 1.0
    mean = np.full(dims, 0.1)  # |G|^2 = 0.5, tr(Sigma) = 50: B_noise = 100
    monitor = GradientMonitor(decay=0.999)
    for _ in range(3000):
        halves, full = _noisy_step(rng, mean, sigma, 32)
        monitor.observe(halves, full, 32)
    scale = monitor.noise_scale()
    assert scale is not None and scale == pytest.approx(100.0, rel=0.2)
    norm = monitor.gradient_norm()  # the epoch's mean gradient: noise averages out
    assert norm is not None and norm == pytest.approx(np.sqrt(0.5), rel=0.05)


def test_monitor_skips_unequal_halves_for_the_noise_scale() -> None:
    monitor = GradientMonitor()
    monitor.observe(None, {"g": np.ones(3)}, 7)
    assert monitor.noise_scale() is None
    assert monitor.gradient_norm() == pytest.approx(np.sqrt(3.0))
    assert monitor.samples == 7


def _epoch(
    adapter: BatchSizeAdapter,
    rng: np.random.Generator,
    mean: np.ndarray,
    sigma: float,
    batch: int,
    steps: int = 400,
) -> int:
    for _ in range(steps):
        halves, full = _noisy_step(rng, mean, sigma, batch)
        adapter.observe(halves, full, batch)
    return adapter.end_epoch(batch)


def test_gns_mode_grows_while_the_noise_scale_exceeds_the_threshold_and_never_shrinks() -> None:
    rng = np.random.default_rng(1)
    adapter = BatchSizeAdapter("gns", (16, 32, 64, 128, 256), gns_threshold=1.0)
    big_noise = np.full(50, 0.1)  # B_noise = 100
    batch = 16
    sizes = []
    for _ in range(5):
        batch = _epoch(adapter, rng, big_noise, 1.0, batch)
        sizes.append(batch)
    assert sizes == [32, 64, 128, 128, 128]  # 100 >= 1 x 64, but not >= 1 x 128
    small_noise = np.full(50, 10.0)  # B_noise = 0.01: no reason to grow, and none to shrink
    assert _epoch(adapter, rng, small_noise, 1.0, batch) == 128


def test_gns_threshold_scales_the_rule() -> None:
    rng = np.random.default_rng(2)
    strict = BatchSizeAdapter("gns", (16, 32, 64), gns_threshold=8.0)
    assert _epoch(strict, rng, np.full(50, 0.1), 1.0, 16) == 16  # 100 < 8 x 16


def test_static_mode_keeps_its_batch_size() -> None:
    rng = np.random.default_rng(3)
    adapter = BatchSizeAdapter("static", (32,), gns_threshold=1.0)
    for scale in (0.1, 10.0, 0.001):
        assert _epoch(adapter, rng, np.full(50, scale), 1.0, 32) == 32


def test_accordion_critical_rule() -> None:
    assert accordion_critical(1.0, 0.5, 0.5)
    assert accordion_critical(1.0, 1.5, 0.5)
    assert not accordion_critical(1.0, 0.51, 0.5)
    assert accordion_critical(0.0, 0.1, 0.5)
    assert not accordion_critical(0.0, 0.0, 0.5)


def test_accordion_switches_between_the_smallest_and_the_largest() -> None:
    rng = np.random.default_rng(4)
    adapter = BatchSizeAdapter("accordion", (16, 256), gns_threshold=1.0)
    noiseless = 1e-9

    def epoch(norm: float, batch: int) -> int:
        return _epoch(adapter, rng, np.full(4, norm / 2), noiseless, batch, steps=5)

    assert epoch(8.0, 16) == 16  # the first epoch is critical
    assert epoch(2.0, 16) == 16  # the norm fell by 75 %: critical
    assert epoch(1.5, 16) == 256  # by 25 %: not critical
    assert epoch(3.0, 256) == 256  # the first epoch at 256 has nothing to compare with
    assert epoch(2.5, 256) == 256  # 17 %
    assert epoch(1.0, 256) == 16  # 60 %: critical again
    assert epoch(1.4, 16) == 256  # compared with the last epoch at 16 (1.5): 7 %


def test_adapter_state_survives_json_and_continues_identically() -> None:
    rng = np.random.default_rng(5)
    adapter = BatchSizeAdapter("accordion", (16, 32, 256), gns_threshold=2.0)
    _epoch(adapter, rng, np.full(8, 0.3), 1.0, 16, steps=30)
    for _ in range(7):  # mid-epoch
        halves, full = _noisy_step(rng, np.full(8, 0.2), 1.0, 16)
        adapter.observe(halves, full, 16)
    meta, arrays = adapter.state()
    copy = BatchSizeAdapter("accordion", (16, 32, 256), gns_threshold=2.0)
    copy.load_state(json.loads(json.dumps(meta)), {k: v.copy() for k, v in arrays.items()})
    assert copy.state()[0] == meta
    tail_rng = np.random.default_rng(6)
    steps = [_noisy_step(tail_rng, np.full(8, 0.25), 1.0, 16) for _ in range(9)]
    for target in (adapter, copy):
        for halves, full in steps:
            target.observe(halves, full, 16)
    assert copy.monitor.noise_scale() == adapter.monitor.noise_scale()
    assert copy.monitor.gradient_norm() == adapter.monitor.gradient_norm()
    assert copy.end_epoch(16) == adapter.end_epoch(16)
    assert copy.state()[0] == adapter.state()[0]


def test_state_of_another_mode_or_malformed_state_is_refused() -> None:
    gns = BatchSizeAdapter("gns", (16, 32), gns_threshold=1.0)
    meta, arrays = gns.state()
    accordion = BatchSizeAdapter("accordion", (16, 32), gns_threshold=1.0)
    with pytest.raises(ValueError, match="adaptation.mode"):
        accordion.load_state(meta, arrays)
    with pytest.raises(ValueError, match="adaptation.epochs"):
        gns.load_state({**meta, "epochs": -1}, arrays)
    with pytest.raises(ValueError, match="adaptation.last_norms"):
        gns.load_state({**meta, "last_norms": {"16": 1.0}}, arrays)
    with pytest.raises(ValueError, match="accumulated gradient"):
        gns.load_state({**meta, "monitor": {**meta["monitor"], "samples": 5}}, arrays)


@pytest.mark.parametrize(
    ("mode", "sizes", "options", "match"),
    [
        ("adaptive", (16,), {}, "mode must be one of"),
        ("gns", (), {}, "batch_sizes"),
        ("gns", (32, 16), {}, "batch_sizes"),
        ("gns", (16,), {"gns_threshold": 0.0}, "gns_threshold"),
        ("gns", (16,), {"gns_threshold": float("inf")}, "gns_threshold"),
        ("accordion", (16,), {"accordion_eta": -1.0}, "accordion_eta"),
    ],
)
def test_invalid_adapters_are_refused(
    mode: str, sizes: tuple[int, ...], options: dict[str, float], match: str
) -> None:
    arguments: dict[str, float] = {"gns_threshold": 1.0, **options}
    with pytest.raises(ValueError, match=match):
        BatchSizeAdapter(mode, sizes, **arguments)
