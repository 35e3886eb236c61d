"""An independent check of a market equilibrium: :func:`check_equilibrium`.

Given a market (the arguments of :func:`shockwave.market.solve`) and shares to judge, it returns
the invariants the shares violate, each as one line that starts with the invariant's name:

``feasibility``
    every share in ``[0, 1]``, 0 where the job's gang does not fit (the round's supply, of the
    share's type), and with GPU types at most one gang per job and round: ``sum_k x_itk <= 1``;
``supply``
    no good oversold: ``sum_i n_i x_it <= G_t`` (with types, ``sum_i n_i x_itk <= S_tk``);
``ceilings``
    no job past its ceiling: ``u_i = c_i + sum a x <= ubar_i``;
``optimality``
    the shares are optimal to ``tol``: a dual bound computed here, from prices read off the
    shares themselves, exceeds their objective ``sum_i w_i log u_i`` by at most ``tol`` times
    the total budget (so ``sum_i w_i log(u*_i / u_i) / sum_i w_i <= tol``);
``market clearing``
    every good with a positive price is sold out: the value of the GPUs left unsold at those
    prices is at most ``tol`` times the total budget.

It shares no code with the solver (written in numpy from the program's KKT conditions), so a
solver bug cannot hide behind its own certificate.

**The program** (``K = 1`` for ``(N, T)`` valuations): with prices ``p_tk`` on the goods
(round, type), each job's rent ``v_it >= 0`` for the cap of one gang per round and the ceiling's
multiplier ``beta_i``, the KKT conditions are: ``V_i a_itk - n_i p_tk - v_it <= 0`` with equality
where ``x_itk > 0``, ``V_i = w_i / u_i - beta_i`` the job's marginal value of utility; ``v_it > 0``
only where the job holds a whole gang in the round; ``p_tk > 0`` only where the good is sold out;
``beta_i > 0`` only at the ceiling. With one type ``v_it`` is the rent a job holding its whole gang
pays above the price.

**The prices.** Read off shares that are only nearly optimal, these conditions disagree a little,
and a price off by a relative ``d`` costs a job holding a share ``x`` of a good about ``x d`` in
the bound (the utilities are linear). So the prices, with the multipliers of the jobs at their
ceiling, are the ones that minimise the first-order part of the bound: the value of the unsold GPUs
plus what each job would gain by re-choosing its shares of each round at the prices (the best
type, or none, against what it holds), a small linear program (solved by HiGHS through scipy).
At those prices the dual bound is
``D(p) = sum p S + sum_i max_x (w_i log u_i(x) - n_i p . x_i)`` (each job's best response,
computed exactly: in every round the cheapest utility runs along the upper concave hull of the
points (cost ``n_i p_tk``, gain ``a_itk``), and the job buys hull segments in decreasing bang per
buck until its marginal utility of money falls to one), and ``D(p) - sum_i w_i log u_i`` is the
value of the unsold GPUs plus every job's regret (what its best response gains over its shares at
the prices). Both are nonnegative, so the bound holds whatever the prices; read off an
equilibrium, they make it tight.

Shares from a solve certified to a gap ``g`` pass with ``tol`` a little above ``g`` (the prices
read here are not the solver's): check with ``tol`` a few times the solver's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shockwave.arguments import floats, gang_sizes, per_job, vector
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
    and units), with one GPU type or several.

    Args:
        valuations: ``(N, T)`` ``a_it >= 0``, or ``(N, T, K)`` on ``K`` GPU types.
        gang_sizes: ``(N,)`` GPUs per job.
        supply: GPUs per round, a scalar or ``(T,)``; with types a scalar, ``(K,)`` or
            ``(T, K)``.
        shares: the shares to judge, shaped like ``valuations`` (for example
            ``market.solve(...).shares``).
        budgets: ``(N,)`` budgets (default 1 each).
        progress: ``(N,)`` utility already earned (default 0).
        ceilings: ``(N,)`` utility ceilings (default 1).
        tol: the relative tolerance of ``optimality`` and ``market clearing`` (``> 0``).
        prices: ``(T,)`` (with types ``(T, K)``) prices to try as well (in budget units, for
            example the solver's ``solution.prices``). The bound is computed here whatever prices
            it uses, and any prices give a valid one; without them the prices are read off the
            shares alone, which on ill-conditioned markets (budgets spanning many orders of
            magnitude) gives a bound up to a few tens of times the solver's certified gap.

    Returns:
        One line per violated invariant (``"feasibility: ..."``, ``"supply: ..."``,
        ``"ceilings: ..."``, ``"optimality: ..."``, ``"market clearing: ..."``), empty when
        all hold.

    Raises:
        InputError: naming the argument, for inputs :func:`shockwave.market.solve` would
            refuse by shape or type, shares of the wrong shape or not finite, or a ``tol`` that
            is not positive.
    """
    a = floats(valuations, "valuations")
    if a.ndim not in (2, 3):
        raise InputError(
            "valuations",
            f"expected a 2-D (jobs, rounds) or 3-D (jobs, rounds, types) array, got {a.ndim}-D",
        )
    typed = a.ndim == 3
    a3 = a if typed else a[:, :, None]
    jobs, rounds, types = a3.shape
    n = _gangs(gang_sizes, jobs)
    g = _supply(supply, rounds, types if typed else None)
    x = floats(shares, "shares")
    if x.shape != a.shape:
        raise InputError("shares", f"expected shape {a.shape}, got {x.shape}")
    if not np.isfinite(x).all():
        raise InputError("shares", "expected finite values")
    x = x if typed else x[:, :, None]
    w = np.ones(jobs) if budgets is None else per_job(budgets, "budgets", jobs)
    c = np.zeros(jobs) if progress is None else per_job(progress, "progress", jobs)
    ubar = np.ones(jobs) if ceilings is None else per_job(ceilings, "ceilings", jobs)
    if not (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0):
        raise InputError("tol", f"expected a positive number, got {tol!r}")
    given = None
    if prices is not None:
        given = floats(prices, "prices")
        expected = (rounds, types) if typed else (rounds,)
        if given.shape != expected:
            raise InputError("prices", f"expected shape {expected}, got {given.shape}")
        if not (np.isfinite(given).all() and (given >= 0).all()):
            raise InputError("prices", "expected finite values >= 0")
        given = given.reshape(rounds, types)
    for name, values in (("valuations", a3), ("budgets", w), ("progress", c)):
        if not (np.isfinite(values).all() and (values >= 0).all()):
            raise InputError(name, "expected finite values >= 0")

    def where(t: object, k: object) -> str:
        return f"round {t}" if not typed else f"round {t}, type {k}"

    violations: list[str] = []
    fits = n[:, None, None] <= g[None, :, :]
    low, high = x.min(initial=0.0), x.max(initial=0.0)
    if low < -FEASIBILITY_SLACK or high > 1 + FEASIBILITY_SLACK:
        violations.append(f"feasibility: shares must lie in [0, 1], found {low:g} to {high:g}")
    misplaced = (~fits) & (np.abs(x) > FEASIBILITY_SLACK)
    if misplaced.any():
        i, t, k = np.argwhere(misplaced)[0]
        violations.append(
            f"feasibility: job {i} holds {x[i, t, k]:g} of {where(t, k)}, where its gang of "
            f"{n[i]} GPUs does not fit ({g[t, k]:g} GPUs)"
        )
    x = np.clip(x, 0.0, 1.0)
    held = x.sum(axis=2)
    if typed and (held > 1 + FEASIBILITY_SLACK).any():
        i, t = np.unravel_index(int(np.argmax(held)), held.shape)
        violations.append(
            f"feasibility: job {i} holds {held[i, t]:g} gangs in round {t} (at most one, of one "
            "type)"
        )
    used = np.einsum("i,itk->tk", n.astype(np.float64), x)
    over = used - g > FEASIBILITY_SLACK * np.maximum(g, 1.0)
    if over.any():
        t, k = np.unravel_index(int(np.argmax(used - g)), used.shape)
        violations.append(f"supply: {where(t, k)} uses {used[t, k]:g} of its {g[t, k]:g} GPUs")
    u = c + (a3 * x).sum(axis=(1, 2))
    past = u > ubar * (1 + FEASIBILITY_SLACK)
    if past.any():
        i = int(np.argmax(np.where(past, u - ubar, -np.inf)))
        violations.append(
            f"ceilings: job {i} reaches utility {u[i]:g} past its ceiling {ubar[i]:g}"
        )
    if violations:
        return violations  # optimality is judged on feasible shares only

    buyable = (a3 > 0) & fits & (w[:, None, None] > 0)
    in_objective = (w > 0) & (buyable.any(axis=(1, 2)) | (c > 0))
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
    normalised = _Market(a3, n, x, u, c, ubar, weight, buyable, unsold)
    start = _prices(normalised, at_ceiling)
    if given is not None:  # the caller's prices, in the normalised budget units
        start = min((start, given / total), key=lambda p: normalised.bound(p)[0])
    best = _polish(normalised, start, tol)
    _, regrets, _ = normalised.bound(best)
    clearing = float((best * unsold).sum())
    gap = clearing + float(np.maximum(regrets, 0.0).sum())
    if gap > tol:
        i = int(np.argmax(regrets))
        violations.append(
            f"optimality: the dual bound exceeds the objective by {gap:.3g} of the total budget "
            f"(tol {tol:g}); job {i} would gain most at the prices ({regrets[i]:.3g})"
        )
    if clearing > tol:
        t, k = np.unravel_index(int(np.argmax(best * unsold)), unsold.shape)
        violations.append(
            f"market clearing: GPUs unsold at positive prices are worth {clearing:.3g} of the "
            f"total budget (tol {tol:g}); {where(t, k)} leaves {unsold[t, k]:g} of "
            f"{g[t, k]:g} GPUs unsold at price {best[t, k]:.3g}"
        )
    return violations


def _gangs(value: ArrayLike, jobs: int) -> NDArray[np.int64]:
    n = gang_sizes(value, jobs)
    if (n < 1).any():
        raise InputError("gang_sizes", "expected GPU counts >= 1")
    return n


def _supply(value: ArrayLike, rounds: int, types: int | None) -> FloatArray:
    """``(T, K)`` GPUs per round and type (``K = 1`` for a market of one type)."""
    array = floats(value, "supply")
    if array.ndim == 0:
        g = np.full((rounds, types or 1), float(array))
    elif types is None:
        g = vector(array, "supply", rounds)[:, None]
    elif array.shape == (types,):
        g = np.broadcast_to(array, (rounds, types)).copy()
    elif array.shape == (rounds, types):
        g = array
    else:
        raise InputError(
            "supply",
            f"expected a scalar, ({types},) or ({rounds}, {types}), got shape {array.shape}",
        )
    if not (np.isfinite(g).all() and (g >= 0).all()):
        raise InputError("supply", "expected a finite number of GPUs >= 0 per round and type")
    return g


@dataclass(frozen=True)
class _Market:
    """The normalised market of one check (budgets summing to 1 over the objective); arrays
    ``(N, T, K)``, ``(T, K)`` and ``(N,)``."""

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
        """The dual bound minus the objective at ``prices`` (``(T, K)``: the value of the unsold
        GPUs plus every job's regret), the regrets, and a subgradient in the prices."""
        slope = self.unsold.copy()
        regrets = np.zeros(self.a.shape[0])
        for i in np.flatnonzero(self.weight > 0):
            best, bought = _best_response(
                self.a[i], int(self.n[i]), prices, self.c[i], self.ubar[i], self.weight[i],
                self.buyable[i],
            )  # fmt: skip
            paid = float((prices * self.x[i]).sum())
            held = self.weight[i] * math.log(self.u[i]) - self.n[i] * paid
            regrets[i] = best - held
            slope += self.n[i] * (self.x[i] - bought)
        return float((prices * self.unsold).sum()) + float(regrets.sum()), regrets, slope


def _prices(market: _Market, at_ceiling: NDArray[np.bool_]) -> FloatArray:
    """The prices that best explain the shares (see the module documentation): the linear
    program, solved by HiGHS,

    ``min sum_tk p_tk unsold_tk + sum_it (g_it - sum_k (v_i a_itk - n_i p_tk) x_itk)`` over
    ``p >= 0``, ``g >= 0`` and ``0 <= beta_i <= w_i / u_i`` (jobs at their ceiling only), with
    ``g_it >= v_i a_itk - n_i p_tk`` on every buyable good, where ``v_i = w_i / u_i - beta_i`` is
    job ``i``'s marginal value of utility: ``g_it - sum_k (...) x_itk`` is what job ``i`` would
    gain, to first order, by re-choosing its shares of round ``t`` (the best type at the prices, or
    none) against what it holds. At an equilibrium its optimum is 0, at the equilibrium prices."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    a, n, x, u, weight = market.a, market.n, market.x, market.u, market.weight
    jobs, rounds, types = a.shape
    buyable = market.buyable
    goods = rounds * types
    value = np.divide(weight, u, out=np.zeros(jobs), where=u > 0)
    # Prices of order one for the solver's absolute tolerances: bangs per buck scaled by a
    # typical one (undone on the way out).
    bangs = (value[:, None, None] * a / n[:, None, None])[buyable]
    scale = float(np.median(bangs[bangs > 0])) if (bangs > 0).any() else 1.0
    value = value / scale
    capped = np.flatnonzero(at_ceiling & buyable.any(axis=(1, 2)))
    beta_of = {int(i): goods + k for k, i in enumerate(capped)}
    slots = np.argwhere(buyable.any(axis=2))  # (job, round) pairs with something to buy
    slot_of = {(int(i), int(t)): k for k, (i, t) in enumerate(slots)}
    first = goods + capped.size
    variables = first + len(slots)
    cost = np.zeros(variables)
    cost[:goods] = market.unsold.reshape(-1)
    cost[first:] = 1.0
    # the linear terms of - sum_k (v a - n p) x: + n x on p, + a x on beta (the constant
    # - (w/u) a x drops out of the minimisation)
    cost[:goods] += np.einsum("i,itk->tk", n.astype(np.float64), x).reshape(-1)
    for i in capped:
        cost[beta_of[int(i)]] += float((a[i] * x[i]).sum())
    rows: list[int] = []
    cols: list[int] = []
    data: list[float] = []
    rhs: list[float] = []
    for i, t, k in np.argwhere(buyable):
        # g >= (w/u - beta) a - n p  ->  -g - n p - a beta <= -(w/u) a
        row = len(rhs)
        rows += [row, row]
        cols += [first + slot_of[(int(i), int(t))], int(t) * types + int(k)]
        data += [-1.0, -float(n[i])]
        if int(i) in beta_of:
            rows.append(row)
            cols.append(beta_of[int(i)])
            data.append(-float(a[i, t, k]))
        rhs.append(-float(value[i] * a[i, t, k]))
    if not rhs:
        return np.zeros((rounds, types))
    bounds: list[tuple[float, float | None]] = [(0.0, None)] * variables
    for i in capped:
        bounds[beta_of[int(i)]] = (0.0, float(value[i]))
    matrix = coo_matrix((data, (rows, cols)), shape=(len(rhs), variables)).tocsr()
    result = linprog(cost, A_ub=matrix, b_ub=np.array(rhs), bounds=bounds, method="highs")
    if result.status != 0 or result.x is None:
        return np.zeros((rounds, types))  # any prices give a valid bound; zero ones a loose one
    p = np.maximum(np.asarray(result.x[:goods], dtype=np.float64), 0.0).reshape(rounds, types)
    return scale * p


def _polish(market: _Market, prices: FloatArray, tol: float) -> FloatArray:
    """Lower the bound by a few steps of a cutting-plane method on its exact (convex, piecewise
    smooth) form, from ``prices``, until it is under ``tol`` or stops improving."""
    from scipy.optimize import linprog

    shape = prices.shape
    best = prices.reshape(-1)
    best_gap, _, slope = market.bound(best.reshape(shape))
    cuts = [(best.copy(), best_gap, slope.reshape(-1))]
    radius = np.maximum(1e-3 * best, 1e-6 * max(float(best.max(initial=0.0)), 1e-300))
    for _ in range(POLISH_STEPS):
        if best_gap <= tol:
            break
        goods = best.size
        # min z over (p, z): z >= gap_k + slope_k . (p - p_k), |p - best| <= radius, p >= 0.
        cost = np.zeros(goods + 1)
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
        trial = np.asarray(result.x[:goods], dtype=np.float64)
        gap, _, slope = market.bound(trial.reshape(shape))
        cuts.append((trial, gap, slope.reshape(-1)))
        if gap < best_gap:
            best, best_gap = trial, gap
            radius = radius * 2.0
        else:
            radius = radius / 4.0
    return best.reshape(shape)


def _best_response(
    a: FloatArray,
    n: int,
    prices: FloatArray,
    c: float,
    ceiling: float,
    weight: float,
    buyable: NDArray[np.bool_],
) -> tuple[float, FloatArray]:
    """``max_x weight log(c + a.x) - n p.x`` over shares ``x >= 0`` of the buyable goods
    (``(T, K)``) holding at most one gang per round, with ``c + a.x <= ceiling``, and the shares
    that attain it.

    In a round, the cheapest way to gain utility runs along the upper concave hull of the origin
    and the points (cost ``n p_tk``, gain ``a_tk``): a vertex holds one type whole, and between two
    vertices the round's gang is split between their types. Free types give their gain at once
    (the best free one per round, held whole, up to the ceiling); then the job buys hull segments
    of all rounds in decreasing bang per buck until its marginal utility of money falls to one."""
    rounds, types = a.shape
    shares = np.zeros((rounds, types))
    u = c
    # per round: its hull, as vertices (type or -1 for nothing) from the best free one
    hulls: list[list[int]] = []
    segments: list[tuple[float, int, int, float]] = []  # (ratio, round, to vertex, gain)
    for t in range(rounds):
        live = np.flatnonzero(buyable[t])
        free = [int(k) for k in live if prices[t, k] <= 0.0]
        start = max(free, key=lambda k: a[t, k]) if free else -1
        free_gain = float(a[t, start]) if start >= 0 else 0.0
        if start >= 0 and u < ceiling:
            take = min(1.0, (ceiling - u) / free_gain)
            shares[t, start] = take
            u = min(u + take * free_gain, ceiling)
        vertices = [start]
        cost, gain = 0.0, free_gain
        points = [
            (n * float(prices[t, k]), float(a[t, k]), int(k)) for k in live if prices[t, k] > 0.0
        ]
        while True:
            best: tuple[float, float, float, int] | None = None
            for pc, pg, k in points:
                if pg > gain and pc > cost:
                    slope = (pg - gain) / (pc - cost)
                    if best is None or slope > best[0] or (slope == best[0] and pg > best[2]):
                        best = (slope, pc, pg, k)
            if best is None:
                break
            segments.append((best[0], t, len(vertices), best[2] - gain))
            vertices.append(best[3])
            cost, gain = best[1], best[2]
        hulls.append(vertices)
    spent = 0.0
    position = [0.0] * rounds  # per round: the vertex reached (fractional inside a segment)
    if u < ceiling:
        for ratio, t, to, gain in sorted(segments, key=lambda s: (-s[0], s[1], s[2])):
            if weight * ratio <= u:
                break
            reach = min(u + gain, ceiling)
            target = min(weight * ratio, reach)
            spent += (target - u) / ratio
            position[t] = to - 1 + min(max((target - u) / gain, 0.0), 1.0)
            u = target
            if target < reach or u >= ceiling:
                break
    for t in range(rounds):
        vertices = hulls[t]
        whole = min(math.floor(position[t]), len(vertices) - 1)
        part = position[t] - whole
        if whole == 0 and part == 0.0:
            continue  # the free part, if any, is set above
        shares[t] = 0.0
        if vertices[whole] >= 0:
            shares[t, vertices[whole]] = 1.0 - part
        if part > 0.0 and vertices[whole + 1] >= 0:
            shares[t, vertices[whole + 1]] += part
    return (weight * math.log(u) - spent if u > 0 else -math.inf), shares
