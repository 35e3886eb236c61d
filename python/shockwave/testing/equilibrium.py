"""An independent check of a market equilibrium: :func:`check_equilibrium`.

Given a market (the arguments of :func:`shockwave.market.solve`) and shares to judge, it returns
the invariants the shares violate, each as one line that starts with the invariant's name:

``feasibility``
    every share in ``[0, 1]``, and 0 in a round where the job's gang does not fit;
``supply``
    no round oversold: ``sum_i n_i x_it <= G_t``;
``ceilings``
    no job past its ceiling: ``u_i = c_i + sum_t a_it x_it <= ubar_i``;
``optimality``
    the shares are optimal to ``tol``: a dual bound computed here, from prices read off the
    shares themselves, exceeds their objective ``sum_i w_i log u_i`` by at most ``tol`` times
    the total budget (so ``sum_i w_i log(u*_i / u_i) / sum_i w_i <= tol``);
``market clearing``
    every round with a positive price is sold out: the value of the GPUs left unsold at those
    prices is at most ``tol`` times the total budget.

It shares no code with the solver (written in numpy from the program's KKT conditions), so a
solver bug cannot hide behind its own certificate.

**The prices.** The equilibrium price of round ``t`` is the bang per buck ``w_i a_it / (n_i
u_i)`` of the jobs that buy part of it; it is at least that of every job that does not buy it
and at most that of every job that holds it whole (jobs at their ceiling excepted). A job at
its ceiling values utility less than ``w_i / u_i``, by its ceiling's multiplier. Read off
shares that are only nearly optimal, those bounds disagree a little, and a price off by a
relative ``d`` costs a job holding a share ``x`` of the round about ``x d`` in the bound (the
utilities are linear). So the prices, with the multipliers of the jobs at their ceiling, are the
ones that minimise the first-order part of the bound: the value of the unsold GPUs plus what
each job would gain by buying more of a round or selling its share, a small linear program
(solved by HiGHS through scipy). At those prices
the dual bound is ``D(p) = sum_t p_t G_t + sum_i max_x (w_i log u_i(x) - n_i p . x_i)`` (each
job's best response, computed exactly: it buys rounds in decreasing bang per buck until its
marginal utility of money falls to one), and ``D(p) - sum_i w_i log u_i`` is the value of the
unsold GPUs plus every job's regret (what its best response gains over its shares at the
prices). Both are nonnegative, so the bound holds whatever the prices; read off an equilibrium,
they make it tight.

Shares from a solve certified to a gap ``g`` pass with ``tol`` a little above ``g`` (the prices
read here are not the solver's): check with ``tol`` a few times the solver's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shockwave.arguments import floats, gang_sizes, matrix, per_job, vector
from shockwave.errors import InputError

__all__ = ["check_equilibrium"]

FloatArray = NDArray[np.float64]

#: Relative slack of the feasibility checks (shares, supply, ceilings): floating-point noise.
FEASIBILITY_SLACK = 1e-9
#: Most steps of the cutting-plane polish of the prices.
POLISH_STEPS = 30
#: A utility within this relative distance of its ceiling counts as at the ceiling when reading
#: prices (such a job's marginal value of utility is not its budget over its utility).
CEILING_NOISE = 1e-7


def check_equilibrium(
    valuations: ArrayLike,
    gang_sizes: ArrayLike,
    supply: ArrayLike,
    shares: ArrayLike,
    *,
    budgets: ArrayLike | None = None,
    progress: ArrayLike | None = None,
    ceilings: ArrayLike | None = None,
    tol: float = 1e-6,
    prices: ArrayLike | None = None,
) -> list[str]:
    """The equilibrium invariants ``shares`` violate in the market of the other arguments.

    The market's arguments are those of :func:`shockwave.market.solve` (same shapes, defaults
    and units).

    Args:
        valuations: ``(N, T)`` ``a_it >= 0``.
        gang_sizes: ``(N,)`` GPUs per job.
        supply: GPUs per round, a scalar or ``(T,)``.
        shares: ``(N, T)`` the shares to judge (for example ``market.solve(...).shares``).
        budgets: ``(N,)`` budgets (default 1 each).
        progress: ``(N,)`` utility already earned (default 0).
        ceilings: ``(N,)`` utility ceilings (default 1).
        tol: the relative tolerance of ``optimality`` and ``market clearing`` (``> 0``).
        prices: ``(T,)`` prices to try as well (in budget units, for example the solver's
            ``solution.prices``). The bound is computed here whatever prices it uses, and any
            prices give a valid one; without them the prices are read off the shares alone,
            which on ill-conditioned markets (budgets spanning many orders of magnitude) gives
            a bound up to a few tens of times the solver's certified gap.

    Returns:
        One line per violated invariant (``"feasibility: ..."``, ``"supply: ..."``,
        ``"ceilings: ..."``, ``"optimality: ..."``, ``"market clearing: ..."``), empty when
        all hold.

    Raises:
        InputError: naming the argument, for inputs :func:`shockwave.market.solve` would
            refuse by shape or type, shares of the wrong shape or not finite, or a ``tol`` that
            is not positive.
    """
    a = matrix(valuations, "valuations")
    jobs, rounds = a.shape
    n = _gangs(gang_sizes, jobs)
    g = _supply(supply, rounds)
    x = matrix(shares, "shares")
    if x.shape != a.shape:
        raise InputError("shares", f"expected shape {a.shape}, got {x.shape}")
    if not np.isfinite(x).all():
        raise InputError("shares", "expected finite values")
    w = np.ones(jobs) if budgets is None else per_job(budgets, "budgets", jobs)
    c = np.zeros(jobs) if progress is None else per_job(progress, "progress", jobs)
    ubar = np.ones(jobs) if ceilings is None else per_job(ceilings, "ceilings", jobs)
    if not (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0):
        raise InputError("tol", f"expected a positive number, got {tol!r}")
    given = None if prices is None else vector(prices, "prices", rounds)
    if given is not None and not (np.isfinite(given).all() and (given >= 0).all()):
        raise InputError("prices", "expected finite values >= 0")
    for name, values in (("valuations", a), ("budgets", w), ("progress", c)):
        if not (np.isfinite(values).all() and (values >= 0).all()):
            raise InputError(name, "expected finite values >= 0")

    violations: list[str] = []
    fits = n[:, None] <= g[None, :]
    low, high = x.min(initial=0.0), x.max(initial=0.0)
    if low < -FEASIBILITY_SLACK or high > 1 + FEASIBILITY_SLACK:
        violations.append(f"feasibility: shares must lie in [0, 1], found {low:g} to {high:g}")
    misplaced = (~fits) & (np.abs(x) > FEASIBILITY_SLACK)
    if misplaced.any():
        i, t = np.argwhere(misplaced)[0]
        violations.append(
            f"feasibility: job {i} holds {x[i, t]:g} of round {t}, where its gang of {n[i]} GPUs "
            f"does not fit ({g[t]:g} GPUs)"
        )
    x = np.clip(x, 0.0, 1.0)
    used = n @ x
    over = used - g > FEASIBILITY_SLACK * np.maximum(g, 1.0)
    if over.any():
        t = int(np.argmax(used - g))
        violations.append(f"supply: round {t} uses {used[t]:g} of its {g[t]:g} GPUs")
    u = c + (a * x).sum(axis=1)
    past = u > ubar * (1 + FEASIBILITY_SLACK)
    if past.any():
        i = int(np.argmax(np.where(past, u - ubar, -np.inf)))
        violations.append(
            f"ceilings: job {i} reaches utility {u[i]:g} past its ceiling {ubar[i]:g}"
        )
    if violations:
        return violations  # optimality is judged on feasible shares only

    buyable = (a > 0) & fits & (w[:, None] > 0)
    in_objective = (w > 0) & (buyable.any(axis=1) | (c > 0))
    total = float(w[in_objective].sum())
    if total == 0.0:
        return violations
    weight = np.where(in_objective, w / total, 0.0)  # budgets normalised: prices in their units
    starved = in_objective & (u <= 0.0)
    if starved.any():
        i = int(np.argmax(starved))
        violations.append(f"optimality: job {i} can buy and gets nothing (its utility is 0)")
        return violations

    at_ceiling = np.isfinite(ubar) & (u >= ubar * (1 - CEILING_NOISE))
    unsold = np.maximum(g - used, 0.0)
    normalised = _Market(a, n, x, u, c, ubar, weight, buyable, unsold)
    start = _prices(a, n, x, u, weight, buyable, at_ceiling, unsold)
    if given is not None:  # the caller's prices, in the normalised budget units
        start = min((start, given / total), key=lambda p: normalised.bound(p)[0])
    prices = _polish(normalised, start, tol)
    _, regrets, _ = normalised.bound(prices)
    clearing = float(prices @ unsold)
    gap = clearing + float(np.maximum(regrets, 0.0).sum())
    if gap > tol:
        i = int(np.argmax(regrets))
        violations.append(
            f"optimality: the dual bound exceeds the objective by {gap:.3g} of the total budget "
            f"(tol {tol:g}); job {i} would gain most at the prices ({regrets[i]:.3g})"
        )
    if clearing > tol:
        t = int(np.argmax(prices * unsold))
        violations.append(
            f"market clearing: GPUs unsold at positive prices are worth {clearing:.3g} of the "
            f"total budget (tol {tol:g}); round {t} leaves {unsold[t]:g} of {g[t]:g} GPUs unsold "
            f"at price {prices[t]:.3g}"
        )
    return violations


def _gangs(value: ArrayLike, jobs: int) -> NDArray[np.int64]:
    n = gang_sizes(value, jobs)
    if (n < 1).any():
        raise InputError("gang_sizes", "expected GPU counts >= 1")
    return n


def _supply(value: ArrayLike, rounds: int) -> FloatArray:
    array = floats(value, "supply")
    g = np.full(rounds, float(array)) if array.ndim == 0 else vector(array, "supply", rounds)
    if not (np.isfinite(g).all() and (g >= 0).all()):
        raise InputError("supply", "expected a finite number of GPUs >= 0 per round")
    return g


def _prices(
    a: FloatArray,
    n: NDArray[np.int64],
    x: FloatArray,
    u: FloatArray,
    weight: FloatArray,
    buyable: NDArray[np.bool_],
    at_ceiling: NDArray[np.bool_],
    unsold: FloatArray,
) -> FloatArray:
    """The prices that best explain the shares (see the module documentation): the linear
    program, solved by HiGHS,

    ``min sum_t p_t unsold_t + sum_it n_i ((1 - x_it) e_it + x_it f_it)`` over ``p >= 0``,
    ``e, f >= 0`` and ``0 <= beta_i <= w_i / u_i`` (jobs at their ceiling only), with
    ``e_it >= v_i a_it / n_i - p_t`` and ``f_it >= p_t - v_i a_it / n_i``, where
    ``v_i = w_i / u_i - beta_i`` is job ``i``'s marginal value of utility: ``e`` is what a job
    would gain per GPU by buying more of a round, ``f`` by selling its share. At an equilibrium
    its optimum is 0, at the equilibrium prices."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    jobs, rounds = a.shape
    value = np.divide(weight, u, out=np.zeros(jobs), where=u > 0)
    # Prices of order one for the solver's absolute tolerances: bangs per buck scaled by a
    # typical one (undone on the way out).
    bangs = (value[:, None] * a / n[:, None])[buyable]
    scale = float(np.median(bangs[bangs > 0])) if (bangs > 0).any() else 1.0
    value = value / scale
    capped = np.flatnonzero(at_ceiling & buyable.any(axis=1))
    beta_of = {int(i): rounds + k for k, i in enumerate(capped)}
    buy_pairs = np.argwhere(buyable & (x < 1.0))
    sell_pairs = np.argwhere(buyable & (x > 0.0))
    first = rounds + capped.size
    variables = first + len(buy_pairs) + len(sell_pairs)
    cost = np.zeros(variables)
    cost[:rounds] = unsold
    rows: list[int] = []
    cols: list[int] = []
    data: list[float] = []
    rhs: list[float] = []
    for kind, pairs, offset in (
        (1.0, buy_pairs, first),
        (-1.0, sell_pairs, first + len(buy_pairs)),
    ):
        # buy:  v a / n - p - e <= 0  ->  -p - (a/n) beta - e <= -(w/u) a / n
        # sell: p - v a / n - f <= 0  ->   p + (a/n) beta - f <=  (w/u) a / n
        for k, (i, t) in enumerate(pairs):
            row = len(rhs)
            ratio = a[i, t] / n[i]
            rows += [row, row]
            cols += [int(t), offset + k]
            data += [-kind, -1.0]
            if int(i) in beta_of:
                rows.append(row)
                cols.append(beta_of[int(i)])
                data.append(-kind * ratio)
            rhs.append(-kind * value[i] * ratio)
            share = x[i, t] if kind < 0 else 1.0 - x[i, t]
            cost[offset + k] = n[i] * share
    bounds: list[tuple[float, float | None]] = [(0.0, None)] * variables
    for i in capped:
        bounds[beta_of[int(i)]] = (0.0, float(value[i]))
    if not rhs:
        return np.zeros(rounds)
    matrix = coo_matrix((data, (rows, cols)), shape=(len(rhs), variables)).tocsr()
    result = linprog(cost, A_ub=matrix, b_ub=np.array(rhs), bounds=bounds, method="highs")
    if result.status != 0 or result.x is None:
        return np.zeros(rounds)  # any prices give a valid bound; zero ones a loose one
    return scale * np.maximum(np.asarray(result.x[:rounds], dtype=np.float64), 0.0)


@dataclass(frozen=True)
class _Market:
    """The normalised market of one check (budgets summing to 1 over the objective)."""

    a: FloatArray
    n: NDArray[np.int64]
    x: FloatArray
    u: FloatArray
    c: FloatArray
    ubar: FloatArray
    weight: FloatArray
    buyable: NDArray[np.bool_]
    unsold: FloatArray

    def bound(self, prices: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        """The dual bound minus the objective at ``prices`` (the value of the unsold GPUs plus
        every job's regret), the regrets, and a subgradient in the prices."""
        slope = self.unsold.copy()
        regrets = np.zeros(self.a.shape[0])
        for i in np.flatnonzero(self.weight > 0):
            best, bought = _best_response(
                self.a[i], int(self.n[i]), prices, self.c[i], self.ubar[i], self.weight[i],
                self.buyable[i],
            )  # fmt: skip
            held = self.weight[i] * math.log(self.u[i]) - self.n[i] * float(prices @ self.x[i])
            regrets[i] = best - held
            slope += self.n[i] * (self.x[i] - bought)
        return float(prices @ self.unsold) + float(regrets.sum()), regrets, slope


def _polish(market: _Market, prices: FloatArray, tol: float) -> FloatArray:
    """Lower the bound by a few steps of a cutting-plane method on its exact (convex, piecewise
    smooth) form, from ``prices``, until it is under ``tol`` or stops improving."""
    from scipy.optimize import linprog

    best = prices
    best_gap, _, slope = market.bound(best)
    cuts = [(best.copy(), best_gap, slope)]
    radius = np.maximum(1e-3 * best, 1e-6 * max(float(best.max(initial=0.0)), 1e-300))
    for _ in range(POLISH_STEPS):
        if best_gap <= tol:
            break
        rounds = best.size
        # min z over (p, z): z >= gap_k + slope_k . (p - p_k), |p - best| <= radius, p >= 0.
        cost = np.zeros(rounds + 1)
        cost[-1] = 1.0
        rows = [np.append(g, -1.0) for _, _, g in cuts]
        rhs = [float(g @ q) - v for q, v, g in cuts]
        bounds = [(max(0.0, b - r), b + r) for b, r in zip(best, radius, strict=True)]
        result = linprog(
            cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[*bounds, (None, None)],
            method="highs",
        )  # fmt: skip
        if result.status != 0 or result.x is None:
            break
        trial = np.asarray(result.x[:rounds], dtype=np.float64)
        gap, _, slope = market.bound(trial)
        cuts.append((trial, gap, slope))
        if gap < best_gap:
            best, best_gap = trial, gap
            radius = radius * 2.0
        else:
            radius = radius / 4.0
    return best


def _best_response(
    a: FloatArray,
    n: int,
    prices: FloatArray,
    c: float,
    ceiling: float,
    weight: float,
    buyable: NDArray[np.bool_],
) -> tuple[float, FloatArray]:
    """``max_x weight log(c + a.x) - n p.x`` over shares in ``[0, 1]`` of the buyable rounds
    with ``c + a.x <= ceiling``, and the shares that attain it: rounds bought in decreasing bang
    per buck (free ones first, up to the ceiling) until the marginal utility of money falls to
    one."""
    shares = np.zeros(a.size)
    u = c
    for t in np.flatnonzero(buyable & (prices <= 0.0)):
        if u >= ceiling:
            break
        take = min(1.0, (ceiling - u) / a[t])
        shares[t] = take
        u = min(u + take * a[t], ceiling)
    spent = 0.0
    paid = np.flatnonzero(buyable & (prices > 0.0))
    ratio = a[paid] / (n * prices[paid])  # utility per unit of money
    for k in np.argsort(-ratio, kind="stable"):
        r, gain = float(ratio[k]), float(a[paid[k]])
        if u >= ceiling or weight * r <= u:  # the next unit of money gains less than it costs
            break
        end = min(u + gain, ceiling)
        target = min(weight * r, end)
        spent += (target - u) / r
        shares[paid[k]] = (target - u) / gain
        u = target
        if target < end:  # stopped inside this round: the marginal utility of money is one
            break
    return (weight * math.log(u) - spent if u > 0 else -math.inf), shares
