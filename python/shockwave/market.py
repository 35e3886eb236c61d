"""The dynamic Fisher market of one planning step, solved in Rust with a certificate.

Every scheduling round the Shockwave policy sells the next ``T`` rounds of GPU time to the active
jobs. Job ``i`` has a budget ``w_i``, a gang of ``n_i`` GPUs, utility already earned ``c_i``
(fraction of its epochs done) and valuations ``a_it`` (expected fraction of its epochs done in
future round ``t`` if it holds its gang through it). The market's equilibrium is the optimum of
the Eisenberg-Gale program::

    maximise   sum_i w_i log u_i,          u_i = c_i + sum_t a_it x_it
    subject to sum_i n_i x_it <= G_t       (GPUs per round; its dual is the price p_t)
               0 <= x_it <= 1               (a job holds at most its gang)
               u_i <= ubar_i                (no progress past completion; default 1)
               x_it = 0 where n_i > G_t     (a gang that does not fit cannot run)

where ``x_it`` is the fraction of round ``t`` during which job ``i`` holds its gang. :func:`solve`
returns the shares with prices and a duality-gap certificate; :func:`round_schedule` turns shares
into whole-gang rounds. Units: ``supply`` and gang sizes in GPUs, rounds of the planning window
(120 s each in the policy), utilities in fractions of a job's epochs, budgets and prices in
budget units (prices per GPU per round).

**GPU types.** On a cluster of ``K`` GPU types the goods are the pairs (round ``t``, type
``k``), with ``S_tk`` GPUs each, and a job holds at most one gang per round, of one type::

    maximise   sum_i w_i log u_i,          u_i = c_i + sum_tk a_itk x_itk
    subject to sum_i n_i x_itk <= S_tk     (GPUs of type k in round t; price p_tk)
               x_itk >= 0,  sum_k x_itk <= 1
               u_i <= ubar_i,  x_itk = 0 where n_i > S_tk

Give ``valuations`` as ``(N, T, K)`` (``a_itk``: the job's progress on type ``k``, from its
speed there) and ``supply`` as a scalar, ``(K,)`` or ``(T, K)``: shares and bids come back
``(N, T, K)``, prices ``(T, K)``. With ``K = 1`` this is the program above, solved the same way to
the same bits (``(N, T, 1)`` in, ``(N, T, 1)`` out).

The certificate: ``gap`` is the dual bound at ``prices`` minus the objective of ``shares``,
divided by the total budget. It bounds the budget-weighted mean log-utility loss,
``sum_i w_i log(u*_i / u_i) / sum_i w_i <= gap``, so ``gap = 1e-6`` means the utilities are
optimal to about one part in a million on (weighted geometric) average. It does not change when
all budgets, or one job's utilities, are scaled.

Jobs that can buy nothing (all valuations zero, a zero budget, or a gang too large for every
round where they value anything) get nothing; those with zero progress as well are left out of the
objective, whose log would be minus infinity.

Warm start across rounds (what a receding-horizon scheduler does)::

    plan = solve(a, n, gpus, budgets=w, progress=c)
    ...  # dispatch plan's first round, one round passes, jobs come and go
    warm = warm_start_bids(plan, previous_jobs=old_ids, current_jobs=new_ids)
    plan = solve(a2, n2, gpus, budgets=w2, progress=c2, warm_start=warm)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shockwave import _core, arguments
from shockwave.arguments import INT64_MAX, as_array, is_integer, is_number
from shockwave.arguments import gang_sizes as _gang_sizes
from shockwave.errors import InputError
from shockwave.id_lookup import IntArray, has_repeats, positions_of

#: Job identifiers of a market's rows: any unique hashables, or an integer numpy array.
JobIds = Sequence[Hashable] | NDArray[np.integer]

__all__ = [
    "MAX_INTERIOR_POINT_ROUNDS",
    "MAX_SOLVER_THREADS",
    "MAX_TYPES",
    "METHODS",
    "SOLVER_DEFAULTS",
    "JobIds",
    "MarketSolution",
    "Method",
    "SolverSettings",
    "SolverStatus",
    "align_bids",
    "round_schedule",
    "shift_bids",
    "solve",
    "warm_start_bids",
]

Method = Literal["interior_point", "proportional_response"]
"""``"interior_point"`` (default): a few proportional-response iterations find prices, then a
primal-dual interior-point method reduced to the ``T`` prices finishes (tens of Newton steps,
each ``O(N T^2 + T^3 / 3)`` operations, with a dense ``T x T`` price system held twice: 16 ``T^2``
bytes); windows are limited to :data:`MAX_INTERIOR_POINT_ROUNDS` rounds. With ``K`` GPU types
the prices are the ``T K`` goods' (``O(N (T K)^2 + (T K)^3 / 3)`` a step, at most
:data:`MAX_INTERIOR_POINT_ROUNDS` goods).
``"proportional_response"``: proportional response alone, certified every 10 iterations (cheap
iterations, ``O(N T)`` memory and time each, no limit on ``T``; fast to a 1e-4 gap, slow to
1e-6). One GPU type only."""

#: The methods, as the core names them (the same strings as :data:`Method`).
METHODS: tuple[Method, ...] = _core.SOLVER_METHODS

#: Longest window (``T`` rounds) the interior-point method accepts (64 MiB of price system, about
#: a second per factorisation at this size); the Shockwave policy plans 20 rounds by default.
MAX_INTERIOR_POINT_ROUNDS: int = _core.MAX_INTERIOR_POINT_ROUNDS
#: Most threads a solve accepts (``threads`` of :func:`solve`).
MAX_SOLVER_THREADS: int = _core.MAX_SOLVER_THREADS

#: Longest window (rounds) any function here accepts, as the Rust core.
MAX_ROUNDS: int = _core.MAX_ROUNDS

#: Most GPU types a market may have (the interior point's passes are compiled for each count).
MAX_TYPES: int = _core.MAX_TYPES

SolverSettings = _core.SolverSettings
"""Settings of a solve (``tol``, ``max_iter``, ``method``, ``warmup_iterations``), validated by
the core; :func:`solve` builds them from its arguments."""

#: The core's default settings: the defaults of :func:`solve`.
SOLVER_DEFAULTS: SolverSettings = _core.SolverSettings()

SolverStatus = _core.SolverStatus
"""Why the solver stopped (:attr:`MarketSolution.status`):

* ``CONVERGED``: the certified relative duality gap is at most ``tol``;
* ``ITERATION_LIMIT``: ``max_iter`` iterations ran first (more iterations, or a warm start, may
  reach ``tol``);
* ``STALLED``: the interior-point method stopped making progress (its barrier and supply residual
  stopped falling, its certificate stopped improving, or it ran its own cap of 300 iterations):
  typical of budgets spanning many orders of magnitude at a tight ``tol``; a cold start, a looser
  ``tol`` or ``"proportional_response"`` may do better;
* ``NUMERICAL_TROUBLE``: the price system could not be factored, a Newton direction was not
  finite or could not be refined, or the certificate overflowed in the caller's units.

``status.value`` is the lower-case name (``"converged"``, ...). ``converged`` is
``status == SolverStatus.CONVERGED``."""

MarketSolution = _core.MarketSolution
"""A solved market: equilibrium shares and prices with their certificate (a Rust object whose
arrays are the core's buffers, handed to numpy without copying, read-only).

Attributes:
    shares: ``(N, T)`` fraction of round ``t`` during which job ``i`` holds its gang, in
        ``[0, 1]``; feasible (no round oversold, no ceiling passed) whatever ``converged``.
        ``(N, T, K)`` for a market with GPU types (``x_itk``; at most one gang per round,
        ``sum_k x_itk <= 1``).
    prices: ``(T,)`` price of one GPU for one round, in budget units (0 for a round that is
        not sold out); ``(T, K)`` with GPU types.
    utilities: ``(N,)`` ``u_i = c_i + sum_t a_it x_it`` of ``shares`` (fraction of epochs).
    bids: shaped like ``shares``: proportional-response bids at this equilibrium, in budget
        units: ``b_it = w'_i a_it x_it / u_i`` where ``w'_i`` is the budget (less, for a job at
        its ceiling, the part it does not use). ``sum_t b_it = w'_i (u_i - c_i) / u_i`` and
        ``b_it >= n_i p_t x_it``, with equality where ``0 < x_it < 1`` (a job holding its
        whole gang pays a rent for the cap; with types, where the job holds less than a whole
        gang in the round). The warm start of the next solve. With
        ``method="proportional_response"``: the method's own last bids instead (close to
        these once converged), so that a warm start resumes the iteration where it stopped.
    objective: ``sum_i w_i log u_i`` over the jobs in the objective.
    dual_bound: the dual bound at ``prices`` (``>= objective``).
    gap: ``(dual_bound - objective) / sum_i w_i`` (relative duality gap).
    iterations: iterations of both methods together.
    pr_iterations: proportional-response iterations among them.
    ipm_iterations: interior-point iterations among them.
    converged: whether ``gap <= tol`` (with a finite certificate).
    status: why the solver stopped (:data:`SolverStatus`); every solve that did not converge
        says why, with its best certified answer.
    jobs: number of jobs ``N``.
    rounds: number of rounds ``T`` in the planning window.
    types: number of GPU types ``K`` (1 for a market given as ``(N, T)``).

``shifted_bids(rounds=1)`` returns the bids shifted ``rounds`` rounds forward (see
:func:`shift_bids`). Solutions pickle (the policy's checkpoints hold them)."""


#: dtype kinds of the arrays the functions here accept: booleans, integers and floats. Complex
#: numbers would lose their imaginary part in the conversion to float64 (silently: a solve of
#: complex valuations reported converged), object arrays hide what they hold (Python integers
#: past 64 bits, fractions, ``None``), and text would be parsed as numbers.
_REAL_KINDS = "biuf"


def _real(value: object, argument: str) -> object:
    """``value`` as an array if it holds real numbers; :class:`InputError` naming ``argument``
    for complex, object, text or other non-real input. ``None`` is passed on (the helpers of
    :mod:`shockwave.arguments` name it)."""
    if value is None:
        return value
    array = value if isinstance(value, np.ndarray) else as_array(value, argument)
    if array.dtype.kind not in _REAL_KINDS:
        given = (
            f"an array of dtype {array.dtype}"
            if isinstance(value, np.ndarray)
            else " ".join(f"{value!r:.80}".split())
        )
        what = "complex numbers" if array.dtype.kind == "c" else f"dtype {array.dtype}"
        raise InputError(
            argument,
            f"expected numbers, got {given} ({what}; only real numbers are accepted: bool, "
            "integer or float values)",
        )
    return array


def _floats(value: object, argument: str) -> NDArray[np.float64]:
    """:func:`shockwave.arguments.floats` of real input only (:func:`_real`)."""
    return arguments.floats(_real(value, argument), argument)


def _vector(value: object, argument: str, length: int) -> NDArray[np.float64]:
    """:func:`shockwave.arguments.vector` of real input only (:func:`_real`)."""
    return arguments.vector(_real(value, argument), argument, length)


def _per_job(value: object, argument: str, jobs: int) -> NDArray[np.float64]:
    """:func:`shockwave.arguments.per_job` of real input only (:func:`_real`)."""
    return arguments.per_job(_real(value, argument), argument, jobs)


def _market_array(value: object, argument: str) -> NDArray[np.float64]:
    """A market's per-(job, round[, type]) array: float64, ``(N, T)`` or ``(N, T, K)``, of real
    input only."""
    array = _floats(value, argument)
    if array.ndim not in (2, 3):
        raise InputError(
            argument,
            f"expected a 2-D (jobs, rounds) or 3-D (jobs, rounds, types) array, got {array.ndim}-D",
        )
    return array


def _iterations(value: object, argument: str) -> int:
    if not is_integer(value) or not 1 <= int(value) <= INT64_MAX:
        raise InputError(argument, f"expected a positive integer up to 2**63 - 1, got {value!r}")
    return int(value)


def _threads(value: object) -> int:
    if not is_integer(value) or not 0 <= int(value) <= MAX_SOLVER_THREADS:
        raise InputError(
            "threads",
            f"expected an integer from 0 (one per core) to {MAX_SOLVER_THREADS}, got {value!r}",
        )
    return int(value)


def _supply(
    value: ArrayLike, rounds: int, types: int | None = None, window: str = "valuations"
) -> NDArray[np.float64]:
    """GPUs per round, ``(T,)``, from a scalar or ``(T,)``; with ``types`` (a market given as
    ``(N, T, K)``), per round and type, ``(T, K)``, from a scalar, ``(K,)`` or ``(T, K)``."""
    supply = _floats(value, "supply")
    if rounds > MAX_ROUNDS:  # before the scalar is spread over the rounds
        raise InputError(window, f"{rounds} rounds; a window may have at most 2**32")
    if types is not None and not 1 <= types <= MAX_TYPES:  # and over the types
        raise InputError(window, f"{types} GPU types; a market has 1 to {MAX_TYPES}")
    if supply.ndim == 0:
        if not (np.isfinite(supply) and supply >= 0):  # checked even when there are no rounds
            raise InputError(
                "supply", f"expected a finite number of GPUs >= 0, got {float(supply)}"
            )
        shape = (rounds,) if types is None else (rounds, types)
        return np.full(shape, float(supply))
    if types is None:
        return _vector(supply, "supply", rounds)
    if supply.shape == (types,):
        return np.ascontiguousarray(np.broadcast_to(supply, (rounds, types)))
    if supply.shape != (rounds, types):
        raise InputError(
            "supply",
            f"expected a scalar, ({types},) (per type) or ({rounds}, {types}) (per round and "
            f"type) for {window} of {rounds} rounds and {types} GPU types, got shape "
            f"{supply.shape}",
        )
    return supply


def solve(
    valuations: ArrayLike,
    gang_sizes: ArrayLike,
    supply: ArrayLike,
    *,
    budgets: ArrayLike | None = None,
    progress: ArrayLike | None = None,
    ceilings: ArrayLike | None = None,
    tol: float = SOLVER_DEFAULTS.tol,
    max_iter: int = SOLVER_DEFAULTS.max_iter,
    warm_start: MarketSolution | ArrayLike | None = None,
    method: Method = SOLVER_DEFAULTS.method,
    warmup_iterations: int | None = SOLVER_DEFAULTS.warmup_iterations,
    threads: int = SOLVER_DEFAULTS.threads,
) -> MarketSolution:
    """Compute the market equilibrium (the Eisenberg-Gale optimum) to a certified gap.

    Args:
        valuations: ``(N, T)`` ``a_it >= 0``: fraction of job ``i``'s epochs it is expected to
            complete if it holds its gang through round ``t`` (per round, not cumulative). On a
            cluster of ``K`` GPU types, ``(N, T, K)``: the same on each type (at most
            :data:`MAX_TYPES`).
        gang_sizes: ``(N,)`` GPUs each job needs to run (integers ``>= 1``), all of one type.
        supply: GPUs available per round: a scalar, or ``(T,)`` when it varies by round. With
            ``(N, T, K)`` valuations: a scalar (every type), ``(K,)`` (per type) or ``(T, K)``.
        budgets: ``(N,)`` budgets ``w_i >= 0`` (default 1 each); only their ratios matter. A
            job with budget 0 gets nothing.
        progress: ``(N,)`` utility already earned ``c_i`` in ``[0, 1)`` (default 0).
        ceilings: ``(N,)`` utility ceilings ``ubar_i > c_i`` (default 1: the job is finished);
            ``inf`` disables a job's ceiling. ``budgets``, ``progress`` and ``ceilings`` may
            also be scalars, shared by every job.
        tol: target relative duality gap (see the module documentation), ``> 0`` (default:
            :data:`SOLVER_DEFAULTS`, the core's).
        max_iter: most iterations, both methods together (``>= 1``).
        warm_start: bids aligned with this market (shaped like ``valuations``, budget units), or a
            :class:`MarketSolution` of this same market (its ``bids``). For the next round's
            market use :func:`warm_start_bids` (shift and realign rows). A job's row is used when
            it bids on at least one round the job can buy; an all-zero row means "no
            information: start this job cold".
        method: ``"interior_point"`` (default) or ``"proportional_response"`` (see
            :data:`Method`; one GPU type only).
        warmup_iterations: proportional-response iterations that find the starting prices of the
            interior-point method (``None``: 5 from a cold start, 1 from a warm start).
        threads: threads of the solve's passes over the jobs (the interior-point method's, the
            proportional-response iterations' and the certificate's; one GPU type or several), 0
            to :data:`MAX_SOLVER_THREADS`; 0 is one per available core, the default 1 (on a
            two-core machine shared with other work two threads measured up to 3x slower than
            one; on an idle one 1.2x to 1.6x faster: ``benches/README.md``, issue 24). Markets
            with fewer than 128 jobs per thread use fewer threads. The result is the same bits
            for any number.

    Returns:
        The :class:`MarketSolution` (shares and bids shaped like ``valuations``); ``converged``
        says whether ``gap <= tol``, ``status`` why the solver stopped.

    Raises:
        InputError: (a ``ValueError``) whose ``argument`` names the argument, for a wrong shape, a
            non-numeric value (complex, object and text arrays included: a complex valuation
            would lose its imaginary part), NaN or infinity (``inf`` is allowed in
            ``ceilings``), a negative value, a gang size of 0 or larger than every round's
            supply (of every type), progress outside ``[0, 1)``, a ceiling not above the
            progress, more than :data:`MAX_TYPES` GPU types, budgets whose
            sum overflows double precision (only their ratios matter: scale them down), a job
            without a ceiling whose reachable utility overflows, a window over
            :data:`MAX_INTERIOR_POINT_ROUNDS` rounds with the interior-point method, a market
            whose working memory exceeds the memory this process can still allocate (the least
            of the machine's available memory, the address-space limit and the cgroup's memory
            limit), or invalid ``tol``, ``max_iter``, ``method`` or ``warm_start``.
        MemoryError: naming ``valuations``, if a buffer of the solve could not be allocated
            all the same.

    Magnitudes: budgets, valuations and warm-start bids of any finite magnitude are handled
    (budgets are normalised by their sum, each job's utilities by its reach, and a warm-start row
    spending more than a thousand budgets is scaled down to its budget); ``converged`` is
    ``True`` only when the gap, the objective and the dual bound are finite.

    The GIL is released during the solve. The same inputs give bit-for-bit the same outputs.
    """
    a = _market_array(valuations, "valuations")
    jobs, rounds = a.shape[:2]
    gangs = _gang_sizes(gang_sizes, jobs)
    g = _supply(supply, rounds, a.shape[2] if a.ndim == 3 else None)
    w = np.ones(jobs) if budgets is None else _per_job(budgets, "budgets", jobs)
    c = np.zeros(jobs) if progress is None else _per_job(progress, "progress", jobs)
    ubar = np.ones(jobs) if ceilings is None else _per_job(ceilings, "ceilings", jobs)
    if isinstance(warm_start, MarketSolution):
        warm_start = warm_start.bids
    warm = None
    if warm_start is not None:
        warm = _floats(warm_start, "warm_start")
        if warm.shape != a.shape:
            raise InputError("warm_start", f"expected shape {a.shape}, got {warm.shape}")
    if not is_number(tol):
        raise InputError("tol", f"expected a positive number, got {tol!r}")
    settings = SolverSettings(
        tol=float(tol),
        max_iter=_iterations(max_iter, "max_iter"),
        method=method if isinstance(method, str) else repr(method),
        warmup_iterations=(
            None
            if warmup_iterations is None
            else _iterations(warmup_iterations, "warmup_iterations")
        ),
        threads=_threads(threads),
    )
    return _core.solve_market(a, gangs, g, w, c, ubar, settings, warm)


def shift_bids(bids: ArrayLike, rounds: int = 1) -> NDArray[np.float64]:
    """Shift ``(N, T)`` (or ``(N, T, K)``) bids ``rounds`` rounds forward for the next plan's
    warm start.

    Round ``t`` takes the old round ``t + rounds`` (all its types); the rounds entering the
    window repeat the old last round (the job's latest spending rate). With ``rounds >= T`` every
    row is zero (cold start).
    """
    if not is_integer(rounds) or rounds < 0:
        raise InputError("rounds", f"expected a nonnegative integer, got {rounds!r}")
    bid_array = _market_array(bids, "bids")
    # any shift of T rounds or more gives all zeros: cap it there
    return _core.shift_market_bids(bid_array, min(int(rounds), bid_array.shape[1]))


def align_bids(
    bids: ArrayLike,
    previous_jobs: JobIds,
    current_jobs: JobIds,
) -> NDArray[np.float64]:
    """Reorder the rows of ``bids`` (one per job of ``previous_jobs``; ``(N, T)`` or
    ``(N, T, K)``) to ``current_jobs``.

    Rows of jobs that left are dropped; jobs that arrived get an all-zero row (cold start).
    Job identifiers must be unique in each sequence. Integer identifiers (a sequence or a numpy
    array) are matched by sorting, in O(N log N); other hashables through a dictionary.
    """
    old = _market_array(bids, "bids")
    return _gather_rows(old, _previous_rows(previous_jobs, current_jobs, old.shape[0]))


def _previous_rows(previous_jobs: JobIds, current_jobs: JobIds, rows: int) -> IntArray:
    """The row of each of ``current_jobs`` among ``previous_jobs`` (``rows`` of them), -1 for a
    job that arrived (see :func:`align_bids`)."""
    if rows != len(previous_jobs):
        raise InputError(
            "previous_jobs", f"{len(previous_jobs)} identifiers for {rows} rows of bids"
        )
    previous_ids = as_array(previous_jobs, "previous_jobs")
    current_ids = as_array(current_jobs, "current_jobs")
    if (
        previous_ids.ndim == current_ids.ndim == 1
        and previous_ids.dtype.kind in "iu"
        and current_ids.dtype.kind in "iu"
    ):
        # Integer identifiers (the policy's job ids): sort once and match by binary search.
        for ids, name in ((previous_ids, "previous_jobs"), (current_ids, "current_jobs")):
            if has_repeats(ids):
                raise InputError(name, "identifiers must be unique")
        return positions_of(previous_ids, current_ids)
    row_of = {job: row for row, job in enumerate(previous_jobs)}
    if len(row_of) != len(previous_jobs):
        raise InputError("previous_jobs", "identifiers must be unique")
    if len(set(current_jobs)) != len(current_jobs):
        raise InputError("current_jobs", "identifiers must be unique")
    return np.array([row_of.get(job, -1) for job in current_jobs], dtype=np.int64)


def _gather_rows(values: NDArray[np.float64], rows: IntArray) -> NDArray[np.float64]:
    """Row ``rows[i]`` of ``values`` for each ``i``, zeros where ``rows[i] < 0`` (a fresh,
    C-ordered array)."""
    gathered = np.zeros((rows.shape[0], *values.shape[1:]))
    found = rows >= 0
    gathered[found] = values[rows[found]]
    return gathered


def warm_start_bids(
    previous: MarketSolution | ArrayLike,
    *,
    previous_jobs: JobIds | None = None,
    current_jobs: JobIds | None = None,
    elapsed_rounds: int = 1,
    previous_budgets: ArrayLike | None = None,
    budgets: ArrayLike | None = None,
    max_budget_change: float = 2.0,
    smoothing: float = 0.0,
) -> NDArray[np.float64]:
    """Warm-start bids for the next plan from the previous plan (or its bids, ``(N, T)`` or
    ``(N, T, K)``).

    Shifts the bids ``elapsed_rounds`` rounds forward (:func:`shift_bids`) and, when both job
    sequences are given, realigns their rows (:func:`align_bids`).

    When the budgets changed between the two markets, give ``previous_budgets`` (one per row of
    the previous plan) and ``budgets`` (one per job of the new market): bids are in budget
    units, so each row is rescaled by its job's budget ratio, and a job whose budget changed by
    more than a factor ``max_budget_change`` (``>= 1``) starts cold (its row is zeroed: its old
    bids say little about its new demand).

    Finally a share ``smoothing`` (in ``[0, 1]``; default 0) of each row's spend is spread
    evenly over the window (with GPU types, each type's over the rounds): an equilibrium plan
    bids (almost) nothing on the rounds a job did not buy, and proportional response, being
    multiplicative, is slow to move money back to them when the market changed more than by the
    shift (jobs arrived, budgets moved).

    Measured (``benches/README.md``, "Warm starts on the policy's markets"): on the Shockwave
    policy's consecutive markets the budgets and a smoothing of 0.1 each cut the iterations of
    warm starts (the policy uses both); on a market that only moved on by one round, smoothing
    costs iterations instead.
    """
    if not (isinstance(smoothing, int | float) and 0.0 <= smoothing <= 1.0):
        raise InputError("smoothing", f"expected a number in [0, 1], got {smoothing!r}")
    bids = previous.bids if isinstance(previous, MarketSolution) else previous
    shifted = shift_bids(bids, elapsed_rounds)
    if (previous_budgets is None) != (budgets is None):
        raise InputError("budgets", "give previous_budgets and budgets together, or neither")
    if (previous_jobs is None) != (current_jobs is None):
        raise InputError("current_jobs", "give previous_jobs and current_jobs together, or neither")
    budget_pair = None
    if previous_budgets is not None and budgets is not None:
        if not (isinstance(max_budget_change, int | float) and 1.0 <= max_budget_change < np.inf):
            raise InputError(
                "max_budget_change", f"expected a finite number >= 1, got {max_budget_change!r}"
            )
        rows = shifted.shape[0] if current_jobs is None else len(current_jobs)
        budget_pair = (
            _budget_vector(previous_budgets, "previous_budgets", shifted.shape[0]),
            _budget_vector(budgets, "budgets", rows),
        )
    if previous_jobs is not None and current_jobs is not None:
        # one lookup of the identifiers for the bids and the previous budgets
        rows = _previous_rows(previous_jobs, current_jobs, shifted.shape[0])
        shifted = _gather_rows(shifted, rows)
        if budget_pair is not None:
            budget_pair = (_gather_rows(budget_pair[0], rows), budget_pair[1])
    # `shifted` is this call's own array from here on (fresh from the shift or the gather): the
    # steps below update it in place, with the same operations as on copies (the same bits).
    if budget_pair is not None:
        old, new = budget_pair
        known = old > 0
        per_row = (-1,) + (1,) * (shifted.ndim - 1)  # one factor per job, over its rounds (types)
        with np.errstate(over="ignore", invalid="ignore"):  # non-finite rows start cold below
            ratio = np.divide(new, old, out=np.zeros_like(new), where=known)
            keep = known & (ratio * max_budget_change >= 1.0) & (ratio <= max_budget_change)
            shifted *= ratio.reshape(per_row)
        keep &= np.isfinite(shifted).reshape(len(keep), -1).all(axis=1)
        shifted[~keep] = 0.0
    if smoothing > 0.0 and shifted.size:
        mean = shifted.mean(axis=1, keepdims=True)
        shifted *= 1.0 - smoothing
        shifted += smoothing * mean
    return shifted


def _budget_vector(value: ArrayLike, argument: str, length: int) -> NDArray[np.float64]:
    array = _vector(value, argument, length)
    if not (np.isfinite(array).all() and (array >= 0).all()):
        raise InputError(argument, "expected finite values >= 0")
    return array


def round_schedule(
    shares: ArrayLike,
    gang_sizes: ArrayLike,
    supply: ArrayLike,
    *,
    backfill_order: ArrayLike | None = None,
    deficit: ArrayLike | None = None,
) -> NDArray[np.bool_]:
    """Turn planned shares into an integral schedule of whole gangs (of one type per round).

    Rounds are filled in order. Before round ``t``, job ``i`` is owed
    ``d_i = deficit_i + sum_{s <= t} x_is - (rounds this schedule already gave it)``. Jobs owed
    more than 1e-9 rounds are taken in decreasing order of ``d_i`` (ties: larger share of this
    round, then lower index) and scheduled when their gang fits in the GPUs still free (first
    fit). So no round is ever oversold, a job runs only when owed time, and whenever the gangs
    pack (e.g. equal gang sizes and an integral supply) each job's count of rounds stays within
    one of its planned total ``sum_t x_it``. Deterministic.

    **GPU types.** With ``(N, T, K)`` shares, what a job is owed is kept per type
    (``d_ik = deficit_ik + sum_{s <= t} x_isk - received_ik``), and round ``t`` takes the pairs
    (job, type) owed more than 1e-9 in decreasing order of ``d_ik`` (ties: larger share of the
    round on that type, then lower job index, then lower type index); a pair is scheduled when its
    job runs nothing yet in the round and its gang fits in that type's GPUs still free. So a job
    runs at most one gang, of one type, per round, no type is ever oversold, and with one type
    this is the rule above. Backfilling gives each listed job not yet running the first type, in
    type order, where its gang fits (list the types fastest first). Gangs are placed by count:
    packing them on servers belongs to the cluster model.

    Args:
        shares: ``(N, T)`` planned fractions in ``[0, 1]`` (e.g. ``MarketSolution.shares``), or
            ``(N, T, K)`` with GPU types.
        gang_sizes: ``(N,)`` GPUs per job (integers ``>= 1``).
        supply: GPUs per round, a scalar or ``(T,)``; with types a scalar, ``(K,)`` or
            ``(T, K)``.
        backfill_order: job indices, highest priority first, that receive GPUs still free after
            the plan (work conservation; the original Shockwave uses longest expected remaining
            runtime first). Backfilled rounds are extra: they are not charged against the plan.
        deficit: ``(N,)`` rounds owed to each job by earlier plans (negative: ahead); ``(N, K)``
            with types. A receding-horizon caller that dispatches only round 0 carries
            ``deficit + shares[:, 0] - schedule[:, 0]`` (planned minus run) into the next plan,
            which keeps long-run counts honest.

    Returns:
        Booleans shaped like ``shares``: ``True`` where job ``i`` runs its whole gang in round
        ``t`` (on type ``k``).

    Raises:
        InputError: (a ``ValueError``) naming the argument, for a wrong shape, a share outside
            ``[0, 1]``, a gang size below 1, a negative or non-finite supply or deficit, or an
            invalid backfill order (unknown or repeated job).
    """
    x = _market_array(shares, "shares")
    jobs, rounds = x.shape[:2]
    types = x.shape[2] if x.ndim == 3 else None
    gangs = _gang_sizes(gang_sizes, jobs)
    g = _supply(supply, rounds, types, "shares")
    order = None
    if backfill_order is not None:
        raw = as_array(backfill_order, "backfill_order")
        if raw.ndim != 1 or (raw.size > 0 and not np.issubdtype(raw.dtype, np.integer)):
            raise InputError("backfill_order", "expected a 1-D sequence of integer job indices")
        order = np.ascontiguousarray(raw, dtype=np.int64)
    owed = None
    if deficit is not None:
        owed = _floats(_real(deficit, "deficit"), "deficit")
        expected = (jobs,) if types is None else (jobs, types)
        if owed.shape != expected:
            raise InputError("deficit", f"expected shape {expected}, got {owed.shape}")
    return _core.round_market_schedule(x, gangs, g, order, owed)
