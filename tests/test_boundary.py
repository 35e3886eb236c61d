"""The Rust/Python boundary: typed results (no positional tuples), one input error shape,
statuses that explain every solve, defaults and option names read from the core, and an import
graph without cycles."""

from __future__ import annotations

import ast
import copy
import pickle
from pathlib import Path
from typing import get_args

import numpy as np
import pytest

import shockwave
from shockwave import InputError, _core, adaptation, market
from shockwave.policies.shockwave.backends import BACKENDS, MarketBackend, MilpBackend
from shockwave.policies.shockwave.fairness import FAIRNESS_CLOCKS
from shockwave.policies.shockwave.policy import Shockwave
from shockwave.testing import random_market


def test_a_solution_is_a_typed_object_whose_arrays_are_shared_and_read_only() -> None:
    solution = random_market(30, 8, 1).solve()
    assert isinstance(solution, market.MarketSolution)
    assert solution.shares is solution.shares  # the same array on every access: no copy
    for name in ("shares", "prices", "utilities", "bids"):
        array = getattr(solution, name)
        assert array.dtype == np.float64 and not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0.0
    assert (solution.jobs, solution.rounds) == solution.shares.shape
    assert solution.status is not None and solution.converged


def test_a_solution_pickles_and_copies_bit_for_bit() -> None:
    solution = random_market(20, 6, 2).solve(tol=1e-4)
    for restored in (pickle.loads(pickle.dumps(solution)), copy.deepcopy(solution)):
        assert restored.status == solution.status
        for name in ("shares", "prices", "utilities", "bids"):
            assert getattr(restored, name).tobytes() == getattr(solution, name).tobytes()
        fields = ("objective", "dual_bound", "gap", "iterations", "converged", "ipm_iterations")
        assert [getattr(restored, f) for f in fields] == [getattr(solution, f) for f in fields]


def test_a_solution_built_by_hand_is_checked() -> None:
    solution = random_market(5, 3, 3).solve()
    fields = solution.__getnewargs_ex__()[1]
    with pytest.raises(InputError) as info:
        market.MarketSolution(**{**fields, "prices": np.zeros(7)})
    assert info.value.argument == "prices"
    with pytest.raises(InputError) as info:
        market.MarketSolution(**{**fields, "converged": False})
    assert info.value.argument == "converged"


def test_the_status_explains_every_stop() -> None:
    m = random_market(60, 10, 4)
    statuses = {
        "converged": m.solve(),
        "iteration_limit": m.solve(max_iter=2, tol=1e-12),
        "pr_iteration_limit": m.solve(max_iter=3, method="proportional_response"),
        "unreachable": m.solve(tol=1e-300),
    }
    assert statuses["converged"].status == market.SolverStatus.CONVERGED
    assert statuses["iteration_limit"].status == market.SolverStatus.ITERATION_LIMIT
    assert statuses["pr_iteration_limit"].status == market.SolverStatus.ITERATION_LIMIT
    assert statuses["unreachable"].status in (
        market.SolverStatus.STALLED,
        market.SolverStatus.NUMERICAL_TROUBLE,
    )
    for solution in statuses.values():
        assert solution.converged == (solution.status == market.SolverStatus.CONVERGED)
    assert str(market.SolverStatus.STALLED) == market.SolverStatus.STALLED.value == "stalled"
    assert pickle.loads(pickle.dumps(market.SolverStatus.STALLED)) == market.SolverStatus.STALLED


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: market.solve([[0.1]], [1], 1, tol=-1.0), "tol"),
        (lambda: market.solve([[0.1]], [0], 1), "gang_sizes"),
        (lambda: market.solve([[np.nan]], [1], 1), "valuations"),
        (lambda: market.solve([[0.1]], [1], 1, progress=[1.0]), "progress"),
        (lambda: market.solve([[0.1]], [1], 1, method="newton"), "method"),  # type: ignore[arg-type]
        (lambda: market.shift_bids([[1.0]], -1), "rounds"),
        (lambda: market.round_schedule([[2.0]], [1], 1), "shares"),
        (lambda: adaptation.JobModels(prior_strength=-1.0), "prior_strength"),
        (lambda: adaptation.JobModels().remove(3), "job_id"),
        (lambda: adaptation.JobModels().predict(3, -1.0), "round_seconds"),
        (lambda: adaptation.JobModels.from_bytes(b"markov\nxx"), "state"),
        (lambda: adaptation.predict_remaining([], {32: 1.0}, 3), "batch_sizes_so_far"),
        (lambda: market.SolverSettings(max_iter=0), "max_iter"),
        (lambda: adaptation.ModelSettings(calibration_strength=0.0), "calibration_strength"),
    ],
)
def test_every_core_input_error_is_an_input_error_naming_the_field(
    call: object, argument: str
) -> None:
    with pytest.raises(InputError) as info:
        call()  # type: ignore[operator]
    assert isinstance(info.value, ValueError)
    assert info.value.argument == argument
    assert str(info.value) == f"{argument}: {info.value.reason}"
    assert pickle.loads(pickle.dumps(info.value)).argument == argument


def test_defaults_are_the_cores() -> None:
    solver, model = _core.SolverSettings(), _core.ModelSettings()
    assert (solver.tol, solver.max_iter, solver.method) == (1e-6, 20_000, "interior_point")
    assert market.SOLVER_DEFAULTS.tol == solver.tol
    models = adaptation.JobModels()
    assert repr(models.settings) == repr(model) == repr(adaptation.MODEL_DEFAULTS)
    assert models.estimator == _core.DEFAULT_ESTIMATOR == adaptation.DEFAULT_ESTIMATOR
    assert model.calibration_round_seconds == adaptation.ROUND_SECONDS
    custom = adaptation.JobModels(max_blocks=4, deadline=False)
    assert (custom.settings.max_blocks, custom.settings.deadline) == (4, False)
    assert custom.settings.prior_strength == model.prior_strength


def test_option_names_are_defined_once() -> None:
    assert get_args(market.Method) == _core.SOLVER_METHODS == market.METHODS
    assert get_args(adaptation.Estimator) == _core.ESTIMATORS == adaptation.ESTIMATORS
    assert tuple(BACKENDS) == ("market", "milp")
    assert BACKENDS["market"] is MarketBackend and BACKENDS["milp"] is MilpBackend
    assert FAIRNESS_CLOCKS == ("jct", "absolute")
    for name, values in (
        ("estimator", adaptation.ESTIMATORS),
        ("fairness_clock", FAIRNESS_CLOCKS),
        ("backend", tuple(BACKENDS)),
    ):
        for value in values:
            Shockwave(**{name: value})  # type: ignore[arg-type]


def test_each_shared_type_has_one_import_path() -> None:
    import importlib

    import shockwave.policies
    import shockwave.scheduling
    import shockwave.sim

    # the shims of the move to scheduling/ are gone
    for old in ("sim.state", "sim.config", "sim.record", "sim.errors", "policies.protocol"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"shockwave.{old}")
    shared = (
        "AllocationPolicy", "ClusterState", "RoundPolicy", "SimulationConfig",
        "SimulationRecord", "PolicyOutputError", "SimulationStalledError", "ThroughputSamples",
    )  # fmt: skip
    for name in shared:
        defined = getattr(shockwave.scheduling, name).__module__
        assert defined.startswith("shockwave.scheduling."), (name, defined)
        assert not hasattr(shockwave.sim, name) and not hasattr(shockwave.policies, name), name


PACKAGE = Path(shockwave.__file__).parent
#: The packages whose import graph must be acyclic without TYPE_CHECKING guards.
UNITS = (
    "scheduling",
    "rounds",
    "policies",
    "sim",
    "metrics",
    "runtime",
    "market",
    "adaptation",
    "testing",
    "sweep",
)


def _imports(path: Path) -> set[str]:
    """The shockwave modules ``path`` imports at module level, TYPE_CHECKING blocks included
    (so that a guard cannot hide a cycle)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        nodes = node.body if isinstance(node, ast.If) else [node]
        for item in nodes:
            if isinstance(item, ast.ImportFrom) and item.module and item.level == 0:
                found.add(item.module)
                if item.module == "shockwave":  # from shockwave import market
                    found.update(f"shockwave.{alias.name}" for alias in item.names)
            elif isinstance(item, ast.Import):
                found.update(alias.name for alias in item.names)
    return {name for name in found if name.startswith("shockwave.")}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in UNITS else None


def test_the_package_import_graph_is_acyclic() -> None:
    """Between the packages that schedule (``sim``, ``runtime``), decide (``policies``),
    measure (``metrics``) and share (``scheduling``), and the solver's wrappers, imports flow
    one way."""
    edges: dict[str, set[str]] = {unit: set() for unit in UNITS}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(("shockwave", *path.relative_to(PACKAGE).with_suffix("").parts))
        source = _unit(module.removesuffix(".__init__"))
        if source is None:
            continue
        for target in map(_unit, _imports(path)):
            if target is not None and target != source:
                edges[source].add(target)
    assert "sim" not in edges["policies"] and "sim" not in edges["metrics"]
    assert edges["rounds"] <= {"scheduling"}  # the loop knows no world and no policy
    assert edges["scheduling"] == set()
    state: dict[str, int] = {}

    def visit(unit: str, trail: list[str]) -> None:
        state[unit] = 1
        for target in sorted(edges[unit]):
            assert state.get(target) != 1, f"import cycle: {' -> '.join([*trail, target])}"
            if target not in state:
                visit(target, [*trail, target])
        state[unit] = 2

    for unit in UNITS:
        if unit not in state:
            visit(unit, [unit])
