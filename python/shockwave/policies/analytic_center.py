"""Interior points of a box with one knapsack constraint: what an interior-point solver returns
when a program has many optimal (or merely feasible) points.

The original's baselines call an interior-point solver (ECOS) on linear programs whose optimum is
often not unique: max-min fairness with fewer jobs than GPUs, max-sum-throughput with jobs of the
same type, the feasibility program of minimum total duration. Such a solver follows the *central
path* ``x(mu) = argmax c.x + mu * sum(log slacks)`` towards ``mu -> 0``. Two consequences matter to
the round mechanism, which ranks jobs by ``x_i / time received``:

* among many optima it lands on the **analytic center** of the optimal face (the point maximising
  the sum of the logarithms of the slacks of the inequalities that are not tight on the whole
  face): :func:`analytic_center`, :func:`interior_point`;
* a variable at a bound is not exactly there but off by ``~ mu / reduced cost``: a job the
  optimum gives nothing still gets a tiny positive share, larger the closer it came to being
  chosen. :func:`central_path_point` returns ``x(mu)`` for a small ``mu``, which reproduces these
  shares and so the order in which the mechanism backfills such jobs.

The sets are ``{x : x_i >= l_ki for every bound k, x_i <= u_i, sum_i w_i x_i <= C}``: a variable
may carry several lower bounds (``x >= 0`` and ``x >= l``), each with its own barrier term, exactly
as the constraints appear in the original programs.

The knapsack is handled through its slack ``s = C - w.x`` in ``(0, C - w.floor)``: for a given
slack the multiplier is ``1 / s`` (``mu / s`` on the central path), every variable solves its own
monotone stationarity equation (closed form or bracketed Newton steps, vectorised), and ``s`` is
found by bracketed Newton steps on a bounded interval, so no step can overflow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_NEWTON_ITERATIONS = 100
#: Knapsack room (relative to the capacity) below which a set counts as having no interior.
_TIGHT = 1e-12
#: Boxes narrower than this (relative) are treated as fixed.
_NARROW = 1e-9
_OUTER_ITERATIONS = 200
_EPS = float(np.finfo(np.float64).eps)


def analytic_center(
    lower: Sequence[FloatArray],
    upper: FloatArray,
    weight: FloatArray,
    capacity: float,
) -> FloatArray:
    """Maximise ``sum_i [sum_k log(x_i - l_ki) + log(u_i - x_i)] + log(C - w.x)``.

    Damped Newton steps on this self-concordant barrier; the Hessian is diagonal plus one rank-one
    term (the knapsack), so each step costs O(n) (Sherman-Morrison).

    Args:
        lower: one or more arrays of lower bounds (each a barrier term).
        upper: upper bounds, each above every lower bound of its variable.
        weight: knapsack weights ``w_i > 0``.
        capacity: ``C``, above ``sum_i w_i * max_k l_ki``.

    Raises:
        ValueError: if the set has no interior.
    """
    bounds = np.vstack([np.asarray(b, dtype=np.float64) for b in lower])
    floor = bounds.max(axis=0)
    span = upper - floor
    if np.any(span <= 0.0):
        raise ValueError("every upper bound must exceed the lower bounds")
    room = capacity - float(weight @ floor)
    if not room > 0.0:
        raise ValueError(f"no interior: the lower bounds use {capacity - room!r} of {capacity!r}")

    def barrier(x: FloatArray) -> float:
        slack = capacity - float(weight @ x)
        if slack <= 0.0 or np.any(x <= floor) or np.any(x >= upper):
            return -np.inf
        return float(np.sum(np.log(x - bounds)) + np.sum(np.log(upper - x)) + np.log(slack))

    x = floor + np.minimum(0.5 * span, 0.5 * room / float(weight.sum()))
    value = barrier(x)
    if not np.isfinite(value):
        raise ValueError("no interior at floating-point resolution")
    for _ in range(_NEWTON_ITERATIONS):
        gaps = x - bounds
        top = upper - x
        slack = capacity - float(weight @ x)
        gradient = np.sum(1.0 / gaps, axis=0) - 1.0 / top - weight / slack
        curvature = np.sum(1.0 / gaps**2, axis=0) + 1.0 / top**2
        knapsack = weight / slack
        d_gradient = gradient / curvature
        d_knapsack = knapsack / curvature
        step = d_gradient - d_knapsack * (
            float(knapsack @ d_gradient) / (1.0 + float(knapsack @ d_knapsack))
        )
        decrement = float(gradient @ step)  # squared Newton decrement
        if decrement <= 1e-20 or np.all(np.abs(step) <= 1e-15 * np.maximum(np.abs(x), span)):
            break
        # the longest step that stays strictly inside, then backtracking (Armijo)
        with np.errstate(divide="ignore", invalid="ignore"):
            to_floor = np.where(step < 0.0, (x - floor) / -step, np.inf)
            to_top = np.where(step > 0.0, top / step, np.inf)
        limit = float(min(to_floor.min(), to_top.min()))
        load = float(weight @ step)
        if load > 0.0:
            limit = min(limit, slack / load)
        length = min(1.0, 0.99 * limit)
        if decrement < 0.0625 and length == 1.0:  # quadratic convergence region
            x = x + step
            value = barrier(x)
            continue
        while length > 1e-20:
            trial = x + length * step
            trial_value = barrier(trial)
            if trial_value >= value + 0.25 * length * decrement:
                break
            length *= 0.5
        x, value = trial, trial_value
    return np.asarray(x, dtype=np.float64)


def interior_point(
    lower: Sequence[FloatArray],
    upper: FloatArray,
    weight: FloatArray,
    capacity: float,
) -> FloatArray:
    """The analytic center of ``{x : x >= l_k, x <= u, w.x <= C}``, degenerate cases included:
    a variable whose lower bounds reach its upper bound is fixed there, and when the knapsack
    leaves no room above the lower bounds the result is the lower bounds themselves.
    """
    bounds = [np.asarray(b, dtype=np.float64) for b in lower]
    floor = np.max(np.vstack(bounds), axis=0)
    span = upper - floor
    free = span > _NARROW * np.maximum(np.abs(upper), 1.0)
    # a box narrower than the resolution is squeezed to its middle (or its upper bound)
    x = np.where(span > 0.0, floor + 0.5 * span, upper)
    if not free.any():
        return x
    room = capacity - float(weight[~free] @ x[~free])
    spare = room - float(weight[free] @ floor[free])
    if spare <= _TIGHT * max(abs(capacity), 1.0):
        x[free] = floor[free]  # no interior at floating-point resolution: the lower bounds
        return x
    x[free] = analytic_center([b[free] for b in bounds], upper[free], weight[free], room)
    return x


def central_path_point(
    objective: FloatArray, weight: FloatArray, capacity: float, mu: float
) -> FloatArray:
    """``argmax c.x / mu + sum_i [log x_i + log(1 - x_i)] + log(C - w.x)`` over ``0 < x < 1``.

    The point of the central path of ``max c.x s.t. 0 <= x <= 1, w.x <= C`` at barrier weight
    ``mu`` (in the units of ``c``).
    """
    if not mu > 0.0:
        raise ValueError(f"mu must be > 0, got {mu!r}")

    def point(slack: float) -> tuple[FloatArray, float, float]:
        # 1/x - 1/(1-x) = (mu/s * w - c) / mu = w/s - c/mu
        target = weight / slack - objective / mu
        x = _unit_box_root(target)
        slope = -(1.0 / x**2 + 1.0 / (1.0 - x) ** 2)
        return x, float(weight @ x), float(weight @ (-(weight / slack**2) / slope))

    low, high = 0.0, capacity
    ratio = objective / weight
    order = np.argsort(-ratio, kind="stable")
    filled = np.cumsum(weight[order])
    if filled[-1] > capacity and ratio[order[-1]] > 0.0:
        # The multiplier mu/s tends to the ratio of the job at the margin: bracket s there
        # (h(s) is a staircase of very sharp steps; bisecting all of (0, C) would be slow).
        margin = float(ratio[order[int(np.searchsorted(filled, capacity))]])
        centre, spread = mu / margin, 1e-6
        while spread < 1e6:
            low = max(centre / (1.0 + spread), 0.0)
            high = min(centre * (1.0 + spread), capacity)
            if point(low)[1] + low < capacity < point(high)[1] + high:
                break
            spread *= 10.0
        else:
            low, high = 0.0, capacity
    x = point(_solve_slack(point, capacity, high, guess=0.5 * (low + high), low=low))[0]
    # The marginal variable's equation subtracts two numbers of size ~1/mu: its precision is
    # ~mu relative. Never let that rounding overfill the knapsack.
    load = float(weight @ x)
    return x * (capacity / load) if load > capacity else x


def _unit_box_root(target: FloatArray) -> FloatArray:
    """The root in ``(0, 1)`` of ``1/x - 1/(1-x) = t``, stable for any ``t``."""
    magnitude = np.abs(target)
    # for t > 0: x = 2 / ((t + 2) + sqrt(t^2 + 4)); for t < 0, 1 - x is that of -t
    with np.errstate(over="ignore"):
        root = np.sqrt(magnitude * magnitude + 4.0)
    root = np.where(np.isfinite(root), root, magnitude)
    small = 2.0 / ((magnitude + 2.0) + root)
    return np.where(target >= 0.0, small, 1.0 - small)


def _solve_slack(
    point: Callable[[float], tuple[FloatArray, float, float]],
    capacity: float,
    room: float,
    guess: float,
    low: float = 0.0,
) -> float:
    """The slack ``s`` in ``(0, room)`` with ``w.x(s) + s = C``.

    ``point(s)`` returns ``x(s)``, ``w.x(s)`` and ``w.dx/ds``. ``h(s) = w.x(s) + s - C``
    increases from below 0 to above 0 on ``(low, room)``; safeguarded Newton steps, bisection in
    ``log s`` when a step leaves the bracket.
    """
    high = room
    s = min(max(guess, low, room * 1e-12), room * 0.5) if low == 0.0 else guess
    for _ in range(_OUTER_ITERATIONS):
        _, load, derivative = point(s)
        value = load + s - capacity
        if value > 0.0:
            high = s
        elif value < 0.0:
            low = s
        else:
            return s
        step = s - value / (derivative + 1.0)
        if low < step < high:
            candidate = step
        else:
            candidate = float(np.sqrt(low * high)) if low > 0.0 else 0.5 * high
        if abs(candidate - s) <= 4 * _EPS * s or high - low <= 4 * _EPS * high:
            return candidate
        s = candidate
    return s
