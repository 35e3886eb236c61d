"""The Shockwave row of the README's results table, pinned (both mechanics).

The canonical 120-job trace with the TACC throughputs on 32 GPUs, the Shockwave policy with its
default parameters (market backend). The numbers below are the ones ``README.md`` ("Results on
the canonical trace", ``gavel`` mechanics) and ``docs/shockwave_results.md`` (main tables, both
mechanics) show. A change that moves them changes the package's headline result: if it is
intended, regenerate the tables with ``python benches/shockwave_results.py --output
docs/shockwave_results.md``, copy the new row into ``README.md``, and update the numbers here.
"""

from __future__ import annotations

import pytest

from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import load_workload

from .conftest import CANONICAL_TRACE, TACC

#: mechanics -> (makespan s, average JCT s, worst rho, unfair %), as the tables print them.
PUBLISHED = {
    "gavel": (22_673, 8_082, 0.953, 0.0),
    "exact": (23_236, 8_053, 0.951, 0.0),
}
#: The same runs to every bit the simulator reports (it is deterministic: the same inputs give
#: the same result file), so that a change below the tables' rounding is caught too.
EXACT = {
    "gavel": (22672.567866297155, 8081.884548947964, 0.95279),
    "exact": (23235.77046131321, 8052.847899514531, 0.95115),
}


@pytest.mark.parametrize("mechanics", sorted(PUBLISHED))
def test_the_readme_row_of_shockwave(mechanics: str) -> None:
    workload = load_workload(CANONICAL_TRACE, TACC)
    result = simulate(workload, "shockwave", SimulationConfig(gpus=32, mechanics=mechanics))  # type: ignore[arg-type]
    summary = result.to_dict()
    shown = (
        round(summary["makespan"]),
        round(summary["avg_jct"]),
        round(summary["worst_ftf"], 3),
        round(100 * summary["unfair_fraction"], 1),
    )
    regenerate = (
        "the canonical Shockwave results moved: regenerate docs/shockwave_results.md "
        "(python benches/shockwave_results.py --output docs/shockwave_results.md) and the "
        "README's results table, then update this test"
    )
    assert shown == PUBLISHED[mechanics], regenerate
    assert (summary["makespan"], summary["avg_jct"], summary["worst_ftf"]) == EXACT[mechanics], (
        regenerate
    )
    assert len(summary["jct"]) == 120
