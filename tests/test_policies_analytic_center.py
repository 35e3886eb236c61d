"""Interior points of a box with a knapsack: optimality conditions and degenerate cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.policies.analytic_center import analytic_center, central_path_point, interior_point


@st.composite
def boxes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    n = draw(st.integers(1, 30))
    lower = np.array(draw(st.lists(st.floats(-0.5, 0.95), min_size=n, max_size=n)))
    weight = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 4.0, 8.0]), min_size=n, max_size=n)))
    floor = np.maximum(lower, 0.0)
    spare = draw(st.floats(1e-6, 1.0)) * float(weight @ (1.0 - floor))
    return lower, weight, floor, float(weight @ floor) + spare


@settings(max_examples=60, deadline=None)
@given(boxes())
def test_the_analytic_center_satisfies_its_optimality_conditions(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, float],
) -> None:
    lower, weight, floor, capacity = case
    x = analytic_center([np.zeros_like(lower), lower], np.ones_like(lower), weight, capacity)
    slack = capacity - float(weight @ x)
    assert np.all(x > floor)
    assert np.all(x < 1.0)
    assert slack > 0.0
    # gradient of the barrier vanishes: 1/x + 1/(x - l) - 1/(1 - x) = w / slack
    gradient = 1.0 / x + 1.0 / (x - lower) - 1.0 / (1.0 - x) - weight / slack
    scale = 1.0 / x + 1.0 / (x - lower) + 1.0 / (1.0 - x) + weight / slack
    assert np.all(np.abs(gradient) <= 1e-7 * scale)


def test_the_center_of_a_symmetric_box_is_symmetric() -> None:
    x = analytic_center([np.zeros(4)], np.ones(4), np.ones(4), 100.0)
    assert np.ptp(x) == 0.0
    # only the box matters when the knapsack is far: log x + log(1-x) has its centre near 1/2
    assert 0.49 < x[0] < 0.5


def test_interior_point_handles_degenerate_sets() -> None:
    lower = np.array([0.2, 1.0, 0.5])
    # the second variable is pinned at its upper bound; the knapsack leaves exactly no room
    x = interior_point([np.zeros(3), lower], np.ones(3), np.ones(3), 0.2 + 1.0 + 0.5)
    assert x.tolist() == [0.2, 1.0, 0.5]
    roomy = interior_point([np.zeros(3), lower], np.ones(3), np.ones(3), 2.5)
    assert roomy[1] == 1.0
    assert np.all(roomy[[0, 2]] > lower[[0, 2]])


def test_no_interior_is_an_error() -> None:
    with pytest.raises(ValueError, match="no interior"):
        analytic_center([np.array([0.5, 0.5])], np.ones(2), np.ones(2), 1.0)


def test_the_central_path_point_approaches_the_lp_vertex() -> None:
    x = central_path_point(np.array([3.0, 2.0, 1.0]), np.ones(3), 1.5, mu=1e-9)
    assert x[0] == pytest.approx(1.0, abs=1e-6)
    assert x[1] == pytest.approx(0.5, abs=1e-6)
    assert 0.0 < x[2] < 1e-6
