"""Bad input raises ValueError naming the argument; nothing is solved from it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from shockwave import market
from tests.market_reference import random_market

BASE = random_market(6, 4, 1)


def arguments(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "valuations": BASE.valuations.copy(),
        "gang_sizes": BASE.gang_sizes.copy(),
        "supply": BASE.supply.copy(),
        "budgets": BASE.budgets.copy(),
        "progress": BASE.progress.copy(),
        "ceilings": BASE.ceilings.copy(),
    }
    base.update(changes)
    return base


def with_entry(name: str, index: tuple[int, ...] | int, value: float) -> dict[str, Any]:
    args = arguments()
    array = np.array(args[name], dtype=float)
    array[index] = value
    args[name] = array
    return args


CASES = [
    ("valuations", with_entry("valuations", (0, 0), np.nan)),
    ("valuations", with_entry("valuations", (1, 2), np.inf)),
    ("valuations", with_entry("valuations", (2, 1), -0.1)),
    ("valuations", arguments(valuations=np.ones(4))),
    ("gang_sizes", arguments(gang_sizes=np.array([1, 2, 0, 1, 1, 1]))),
    ("gang_sizes", arguments(gang_sizes=np.array([1, 2, -1, 1, 1, 1]))),
    ("gang_sizes", arguments(gang_sizes=np.array([1, 2, 1.5, 1, 1, 1]))),
    ("gang_sizes", arguments(gang_sizes=np.array([1, 2, np.nan, 1, 1, 1]))),
    ("gang_sizes", arguments(gang_sizes=np.array([1, 2, 64, 1, 1, 1]))),
    ("gang_sizes", arguments(gang_sizes=np.array([1, 2, 1]))),
    ("gang_sizes", arguments(gang_sizes=np.array([True] * 6))),
    ("supply", arguments(supply=np.array([8.0, -1.0, 8.0, 8.0]))),
    ("supply", arguments(supply=np.array([8.0, np.nan, 8.0, 8.0]))),
    ("supply", arguments(supply=np.array([8.0, 8.0]))),
    ("supply", arguments(supply=np.inf)),
    ("budgets", with_entry("budgets", 0, -1.0)),
    ("budgets", with_entry("budgets", 3, np.nan)),
    ("budgets", arguments(budgets=np.ones(5))),
    ("progress", with_entry("progress", 1, 1.0)),
    ("progress", with_entry("progress", 1, -0.01)),
    ("progress", with_entry("progress", 1, np.nan)),
    ("ceilings", with_entry("ceilings", 2, 0.0)),
    ("ceilings", with_entry("ceilings", 2, np.nan)),
    ("ceilings", arguments(ceilings=np.ones((6, 1)))),
]


@pytest.mark.parametrize(("argument", "args"), CASES)
def test_invalid_input_names_the_argument(argument: str, args: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=f"^{argument}: "):
        market.solve(
            args["valuations"],
            args["gang_sizes"],
            args["supply"],
            budgets=args["budgets"],
            progress=args["progress"],
            ceilings=args["ceilings"],
        )


@pytest.mark.parametrize(
    ("argument", "settings"),
    [
        ("tol", {"tol": 0.0}),
        ("tol", {"tol": -1e-6}),
        ("tol", {"tol": float("nan")}),
        ("max_iter", {"max_iter": 0}),
        ("max_iter", {"max_iter": True}),
        ("max_iter", {"max_iter": 2.5}),
        ("method", {"method": "simplex"}),
        ("warmup_iterations", {"warmup_iterations": 0}),
        ("warm_start", {"warm_start": np.ones((6, 3))}),
        ("warm_start", {"warm_start": -np.ones((6, 4))}),
        ("warm_start", {"warm_start": np.full((6, 4), np.nan)}),
    ],
)
def test_invalid_settings_name_the_argument(argument: str, settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=f"^{argument}: "):
        BASE.solve(**settings)


def test_infinite_ceilings_mean_no_ceiling() -> None:
    solution = market.solve(BASE.valuations, BASE.gang_sizes, BASE.supply, ceilings=np.inf * 1)
    assert solution.converged
    ceiling_free = market.solve(
        BASE.valuations, BASE.gang_sizes, BASE.supply, ceilings=np.full(BASE.jobs, np.inf)
    )
    np.testing.assert_array_equal(solution.shares, ceiling_free.shares)


def test_scalar_supply_is_every_rounds_supply() -> None:
    scalar = market.solve(BASE.valuations, BASE.gang_sizes, 9)
    vector = market.solve(BASE.valuations, BASE.gang_sizes, np.full(BASE.rounds, 9.0))
    np.testing.assert_array_equal(scalar.shares, vector.shares)


def test_inputs_of_any_layout_and_numeric_type_are_accepted() -> None:
    fortran = np.asfortranarray(BASE.valuations)
    solution = market.solve(
        fortran.tolist(), BASE.gang_sizes.astype(np.int32), [8, 8, 8, 8], budgets=[1] * BASE.jobs
    )
    reference = market.solve(BASE.valuations, BASE.gang_sizes, np.full(4, 8.0))
    np.testing.assert_array_equal(solution.shares, reference.shares)


@pytest.mark.parametrize(
    ("argument", "kwargs"),
    [
        ("shares", {"shares": np.full((3, 2), 1.5)}),
        ("shares", {"shares": np.full((3, 2), np.nan)}),
        ("shares", {"shares": np.ones(3)}),
        ("gang_sizes", {"gang_sizes": np.array([1, 0, 1])}),
        ("supply", {"supply": np.array([4.0, -4.0])}),
        ("supply", {"supply": np.array([4.0])}),
        ("backfill_order", {"backfill_order": np.array([0, 0])}),
        ("backfill_order", {"backfill_order": np.array([0, 3])}),
        ("backfill_order", {"backfill_order": np.array([-1])}),
        ("backfill_order", {"backfill_order": np.array([0.5])}),
        ("deficit", {"deficit": np.array([0.0, np.inf, 0.0])}),
        ("deficit", {"deficit": np.array([0.0, 1.0])}),
    ],
)
def test_invalid_rounding_input_names_the_argument(argument: str, kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {
        "shares": np.full((3, 2), 0.5),
        "gang_sizes": np.array([1, 2, 1]),
        "supply": np.array([4.0, 4.0]),
    }
    args.update(kwargs)
    shares, gangs, supply = args.pop("shares"), args.pop("gang_sizes"), args.pop("supply")
    with pytest.raises(ValueError, match=f"^{argument}: "):
        market.round_schedule(shares, gangs, supply, **args)


def test_invalid_bid_helpers_name_the_argument() -> None:
    with pytest.raises(ValueError, match=r"^rounds: "):
        market.shift_bids(np.ones((2, 3)), -1)
    with pytest.raises(ValueError, match=r"^bids: "):
        market.shift_bids(np.ones(3), 1)
    with pytest.raises(ValueError, match=r"^previous_jobs: "):
        market.align_bids(np.ones((2, 3)), ["a"], ["a"])
    with pytest.raises(ValueError, match=r"^previous_jobs: "):
        market.align_bids(np.ones((2, 3)), ["a", "a"], ["a"])
    with pytest.raises(ValueError, match=r"^current_jobs: "):
        market.align_bids(np.ones((2, 3)), ["a", "b"], ["a", "a"])
    with pytest.raises(ValueError, match=r"^current_jobs: give previous_jobs and current_jobs"):
        market.warm_start_bids(np.ones((2, 3)), previous_jobs=["a", "b"])
