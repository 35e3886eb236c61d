"""Fuzzing the market solver's public entry points (``shockwave.market``).

Each function gets random shapes, extreme magnitudes (1e-300 to 1e300), NaN, infinities, huge
integers and values of the wrong kind. It must return a sound answer or raise ``ValueError``
naming the argument; a solve reported converged must have a finite certificate and a feasible
plan, and the equilibrium must not move when budgets or a job's valuations are scaled.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from shockwave import market
from shockwave.errors import InputError

from .fuzzing import any_float, any_int, anything, fuzz, junk, magnitudes

SOLVE_ARGUMENTS = (
    "valuations",
    "gang_sizes",
    "supply",
    "budgets",
    "progress",
    "ceilings",
    "tol",
    "max_iter",
    "warm_start",
    "method",
    "warmup_iterations",
)


@st.composite
def markets(draw: Any, values: Any = any_float) -> dict[str, Any]:
    jobs = draw(st.integers(0, 6))
    rounds = draw(st.integers(0, 6))
    shape = (jobs, rounds)
    valuations = draw(st.one_of(hnp.arrays(np.float64, shape, elements=values), junk))
    gangs = draw(
        st.one_of(
            hnp.arrays(np.int64, (jobs,), elements=st.integers(0, 6)),
            st.lists(any_int, min_size=jobs, max_size=jobs),
            junk,
        )
    )
    supply = draw(
        st.one_of(
            st.sampled_from([4.0, 8.0]),
            values,
            hnp.arrays(np.float64, (rounds,), elements=values),
            junk,
        )
    )
    kwargs: dict[str, Any] = {}
    for name, default in (
        ("budgets", values),
        ("progress", st.floats(0, 1)),
        ("ceilings", st.sampled_from([1.0, np.inf])),
    ):
        if draw(st.booleans()):
            kwargs[name] = draw(
                st.one_of(
                    hnp.arrays(np.float64, (jobs,), elements=st.one_of(default, values)),
                    anything(values),
                )
            )
    if draw(st.booleans()):
        kwargs["warm_start"] = draw(
            st.one_of(hnp.arrays(np.float64, shape, elements=values), anything(values))
        )
    if draw(st.booleans()):
        kwargs["tol"] = draw(anything(st.sampled_from([1e-6, 1e-3, 0.0, -1.0, 1e-300])))
    if draw(st.booleans()):
        kwargs["max_iter"] = draw(st.one_of(st.integers(1, 500), any_int, junk))
    if draw(st.booleans()):
        kwargs["method"] = draw(
            st.one_of(st.sampled_from(["interior_point", "proportional_response"]), junk)
        )
    if draw(st.booleans()):
        kwargs["warmup_iterations"] = draw(st.one_of(st.integers(1, 10), any_int, junk))
    return {"valuations": valuations, "gang_sizes": gangs, "supply": supply, **kwargs}


def check_solution(solution: market.MarketSolution, args: dict[str, Any]) -> None:
    shares = solution.shares
    assert np.all(np.isfinite(shares)) and np.all((shares >= 0) & (shares <= 1))
    if solution.converged:
        assert np.isfinite(solution.gap) and solution.gap <= float(args.get("tol", 1e-6))
        assert np.isfinite(solution.objective) and np.isfinite(solution.dual_bound)
        assert np.all(np.isfinite(solution.utilities))
        assert np.all(np.isfinite(solution.prices)) and np.all(solution.prices >= 0)
        gangs = np.asarray(args["gang_sizes"], dtype=np.float64)
        supply = np.broadcast_to(np.asarray(args["supply"], dtype=np.float64), shares.shape[1:])
        used = gangs @ shares if shares.size else np.zeros(shares.shape[1])
        assert np.all(used - supply <= 1e-9 * np.maximum(supply, 1.0))


@fuzz(60)
@given(markets())
def test_solve_returns_a_sound_answer_or_names_the_argument(args: dict[str, Any]) -> None:
    try:
        solution = market.solve(**args)
    except InputError as exc:
        assert exc.argument in SOLVE_ARGUMENTS, str(exc)
        return
    check_solution(solution, args)


@fuzz(60)
@given(markets(values=magnitudes))
def test_solve_with_extreme_magnitudes(args: dict[str, Any]) -> None:
    try:
        solution = market.solve(**args)
    except InputError as exc:
        assert exc.argument in SOLVE_ARGUMENTS, str(exc)
        return
    check_solution(solution, args)


#: Conversions of a real argument into input that is not real numbers: complex (its imaginary
#: part was dropped and the solve reported converged), object and text arrays.
NON_REAL = (
    lambda a: np.asarray(a) + 0.5j,
    lambda a: np.asarray(a).astype(np.complex64),
    lambda a: np.asarray(a).astype(object),
    lambda a: np.asarray(a).astype(str),
    lambda a: [complex(x) for x in np.asarray(a, dtype=np.float64).ravel()] or [1j],
)


@fuzz(40)
@given(
    args=markets(values=st.floats(0.0, 1.0)),
    name=st.sampled_from(["valuations", "supply", "budgets", "progress", "ceilings", "warm_start"]),
    convert=st.sampled_from(NON_REAL),
)
def test_solve_refuses_non_real_input_naming_the_argument(
    args: dict[str, Any], name: str, convert: Any
) -> None:
    value = args.get(name, 1.0)
    if value is None or isinstance(value, dict | str | bool):
        value = 1.0  # junk drawn for the argument: make it a number, then not a real one
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.ones(1)
    args[name] = convert(array)
    try:
        market.solve(**args)
    except InputError as exc:
        # another argument's junk may be refused first; the non-real one is never accepted
        assert exc.argument in SOLVE_ARGUMENTS, str(exc)
        return
    raise AssertionError(f"solve accepted a non-real {name}")


@fuzz(40)
@given(
    base=hnp.arrays(
        np.float64, st.tuples(st.integers(1, 5), st.integers(1, 5)), elements=st.floats(0.01, 1.0)
    ),
    row_exponents=st.lists(st.integers(-300, 300), min_size=5, max_size=5),
    budget_exponent=st.integers(-300, 300),
)
def test_the_equilibrium_ignores_the_scale_of_budgets_and_valuations(
    base: np.ndarray, row_exponents: list[int], budget_exponent: int
) -> None:
    jobs = base.shape[0]
    k = 10.0 ** np.array(row_exponents[:jobs], dtype=np.float64)
    common = {"gang_sizes": np.ones(jobs, dtype=np.int64), "supply": 1.0, "ceilings": np.inf}
    one = market.solve(base, **common)
    two = market.solve(base * k[:, None], budgets=np.full(jobs, 10.0**budget_exponent), **common)
    assert one.converged and two.converged
    np.testing.assert_allclose(two.utilities / k, one.utilities, rtol=1e-3)


@fuzz(60)
@given(
    bids=st.one_of(
        hnp.arrays(np.float64, st.tuples(st.integers(0, 4), st.integers(0, 4)), elements=any_float),
        junk,
    ),
    rounds=st.one_of(any_int, junk),
    ids=st.one_of(
        st.lists(st.integers(-3, 3), max_size=5), st.lists(st.text(max_size=2), max_size=5)
    ),
    budgets=st.one_of(st.none(), hnp.arrays(np.float64, st.integers(0, 5), elements=any_float)),
    smoothing=anything(st.floats(-1, 2)),
    change=anything(st.floats(0, 10)),
)
def test_warm_start_helpers_never_fail_unnamed(
    bids: Any, rounds: Any, ids: list[Any], budgets: Any, smoothing: Any, change: Any
) -> None:
    arguments = (
        "bids",
        "rounds",
        "previous_jobs",
        "current_jobs",
        "smoothing",
        "budgets",
        "previous_budgets",
        "max_budget_change",
        "previous_budgets and budgets",
    )
    try:
        shifted = market.shift_bids(bids, rounds)
        assert shifted.shape == np.shape(bids)
        aligned = market.align_bids(bids, ids[: np.shape(bids)[0]], list(reversed(ids)))
        assert aligned.shape[0] == len(ids)
        market.warm_start_bids(
            bids,
            previous_jobs=ids[: np.shape(bids)[0]],
            current_jobs=list(reversed(ids)),
            elapsed_rounds=rounds,
            previous_budgets=budgets,
            budgets=budgets if budgets is None else budgets[::-1],
            max_budget_change=change,
            smoothing=smoothing,
        )
    except InputError as exc:
        assert exc.argument in arguments, str(exc)


@fuzz(60)
@given(
    shares=st.one_of(
        hnp.arrays(
            np.float64,
            st.tuples(st.integers(0, 5), st.integers(0, 5)),
            elements=st.one_of(st.floats(0, 1), any_float),
        ),
        junk,
    ),
    gangs=st.one_of(st.lists(any_int, max_size=5), junk),
    supply=anything(st.floats(0, 16)),
    order=st.one_of(st.none(), st.lists(any_int, max_size=6), junk),
    deficit=st.one_of(st.none(), st.lists(any_float, max_size=5), junk),
)
def test_round_schedule_never_fails_unnamed(
    shares: Any, gangs: Any, supply: Any, order: Any, deficit: Any
) -> None:
    arguments = ("shares", "gang_sizes", "supply", "backfill_order", "deficit")
    try:
        schedule = market.round_schedule(
            shares, gangs, supply, backfill_order=order, deficit=deficit
        )
    except InputError as exc:
        assert exc.argument in arguments, str(exc)
        return
    assert schedule.shape == np.shape(shares)
    used = np.asarray(gangs, dtype=np.float64) @ schedule if schedule.size else 0.0
    assert np.all(used <= np.asarray(supply, dtype=np.float64) + 1e-9)
