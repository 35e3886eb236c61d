"""Every simulation gives, byte for byte, the outputs recorded before the round-loop refactor.

The cases and what is compared are in :mod:`tests.golden_runs` (the canonical trace under both
mechanics and all eight policies, generated 460-, 2,000- and 20,000-job traces, noise and round
overhead, the planned view, checkpoint and resume, and the real runtime's scheduler on a
simulated clock). The outputs in ``tests/data/golden/`` were recorded with main at a1f77fc.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest

from tests.golden_runs import (
    Case,
    RuntimeCase,
    golden_name,
    load_golden,
    outputs,
    run_case,
    run_runtime_case,
    runtime_cases,
    runtime_outputs,
    simulation_cases,
)


def _params(cases: list[Case]) -> list[Any]:
    return [
        pytest.param(case, id=case.name, marks=[pytest.mark.slow] if case.slow else [])
        for case in cases
    ]


def _explain(expected: dict[str, Any], got: dict[str, Any]) -> str:
    lines = [
        f"{key}: recorded {expected.get(key)!r}, now {got.get(key)!r}"
        for key in ("makespan", "rounds", "avg_jct")
        if key in expected and expected.get(key) != got.get(key)
    ]
    if "result" in expected and expected["result"] != got.get("result"):
        diff = difflib.unified_diff(
            expected["result"].splitlines(), str(got.get("result")).splitlines(), lineterm="", n=1
        )
        lines += list(diff)[:40]
    return "\n".join(lines)


@pytest.mark.parametrize("case", _params(simulation_cases()))
def test_a_simulation_gives_its_recorded_outputs(case: Case) -> None:
    golden = load_golden("simulations_20000" if case.slow else "simulations")
    expected = golden[golden_name(case)]
    got = outputs(case, run_case(case))  # a resumed run: the straight run's outputs
    assert got == expected, _explain(expected, got)


@pytest.mark.parametrize("case", runtime_cases(), ids=lambda case: case.name)
def test_a_real_run_on_the_simulated_clock_gives_its_recorded_outputs(case: RuntimeCase) -> None:
    expected = load_golden("runtime")[case.name]
    got = runtime_outputs(run_runtime_case(case))
    assert got["record"] == expected["record"], _explain(expected, got)
    assert json.loads(got["result"]) == json.loads(expected["result"]), _explain(expected, got)
