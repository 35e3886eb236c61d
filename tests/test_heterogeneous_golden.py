"""The heterogeneous simulator gives, byte for byte, the outputs it gave before it moved onto the
round loop (:mod:`tests.golden_heterogeneous` holds the cases and how they were recorded)."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

from tests.golden_heterogeneous import Case, cases, load_golden, output


def _params() -> list[Any]:
    return [
        pytest.param(case, id=case.name, marks=[pytest.mark.slow] if case.slow else [])
        for case in cases()
    ]


@pytest.mark.parametrize("case", _params())
def test_a_typed_simulation_gives_its_recorded_outputs(case: Case) -> None:
    expected = load_golden()[case.name]
    got = output(case)
    if got != expected:
        diff = difflib.unified_diff(
            str(expected.get("result", expected)).splitlines(),
            str(got.get("result", got)).splitlines(),
            lineterm="",
            n=1,
        )
        pytest.fail("\n".join(list(diff)[:40]))
