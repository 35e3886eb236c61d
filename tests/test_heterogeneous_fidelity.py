"""Fidelity to Gavel's own simulator on heterogeneous clusters (issue 22, item 8).

References: ``tests/data/gavel/references.json.gz``, computed by Gavel's unmodified simulator
(commit c4fa400, 360 s rounds, seed 0, ECOS; see ``tests/data/gavel/README.md``). ``T2`` is the
tuning set (the issue's 200-job trace on 12:12:12): every policy within 2 % on makespan and
average JCT (and 2 points on Gavel's lease-extension share); ``H1``-``H4`` (other traces and
clusters) are held out: within 5 % (5 points). The policies whose runs do not depend on the last
bits of a solver's arithmetic (FIFO, Gandiva, AlloX) must match every job's JCT.

Water filling (an LP and a MILP per level, a dozen levels per allocation) is the slowest policy to
simulate: it is checked on ``T2`` and the two smaller held-out sets here, on every set by
``benches/gavel_heterogeneous_table.py``.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shockwave.heterogeneous import HeterogeneousResult
from tests.golden_heterogeneous import SETS, result_of

DATA = Path(__file__).parent / "data" / "gavel"
BOUND = {"T2": 0.02, "H1": 0.05, "H2": 0.05, "H3": 0.05, "H4": 0.05}
#: Ours -> Gavel's name, for the policies implemented on typed clusters.
POLICIES = {
    "fifo": "fifo_perf",
    "fifo-agnostic": "fifo",
    "gavel": "max_min_fairness_perf",
    "gavel-agnostic": "max_min_fairness",
    "themis": "finish_time_fairness_perf",
    "themis-agnostic": "finish_time_fairness",
    "mst": "max_sum_throughput_perf",
    "ossp": "min_total_duration_perf",
    "ossp-agnostic": "min_total_duration",
    "gandiva": "gandiva",
    "allox": "allox",
    "water-filling": "max_min_fairness_water_filling_perf",
    "water-filling-agnostic": "max_min_fairness_water_filling",
}
#: Policies decided by rules (no solver): every job's JCT must be Gavel's.
EXACT = {"fifo", "fifo-agnostic", "gandiva", "allox"}
#: Sets on which the slowest policies are checked here (every set in the bench table).
SLOW_POLICY_SETS = {
    "water-filling": {"T2", "H2", "H4"},
    "water-filling-agnostic": {"T2", "H2", "H4"},
}
#: (set, policy) pairs measured outside the bound, with the measured errors (none since the
#: programs are solved by ECOS's method; kept to mark a measured miss honestly).
KNOWN_MISSES: dict[tuple[str, str], str] = {}
#: (set, policy) pairs not measured when the bounds were last set (marked non-strictly).
UNMEASURED: set[tuple[str, str]] = set()


@cache
def references() -> dict[str, Any]:
    with gzip.open(DATA / "references.json.gz", "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _run(name: str, policy: str) -> HeterogeneousResult:
    """The run of ``policy`` on set ``name`` (shared with ``tests/test_heterogeneous_golden.py``
    within one process)."""
    result = result_of(name, policy)
    assert not isinstance(result, Exception), result
    return result


def cases(fast: bool) -> list[Any]:
    out = []
    for name in BOUND:
        for ours, gavel in POLICIES.items():
            if gavel not in references()["sets"][name]["policies"]:
                continue  # Gavel itself failed there (ECOS on H3's finish_time_fairness)
            if (ours in EXACT) != fast or name not in SLOW_POLICY_SETS.get(ours, {name}):
                continue
            marks = [] if fast else [pytest.mark.slow]
            if (name, ours) in KNOWN_MISSES:
                marks.append(pytest.mark.xfail(reason=KNOWN_MISSES[(name, ours)], strict=True))
            elif (name, ours) in UNMEASURED:
                marks.append(pytest.mark.xfail(reason="not measured yet", strict=False))
            out.append(pytest.param(name, ours, gavel, marks=marks, id=f"{name}-{ours}"))
    return out


@pytest.mark.parametrize(("name", "ours", "gavel"), cases(fast=True))
def test_rule_policies_match_every_jct(name: str, ours: str, gavel: str) -> None:
    ref = references()["sets"][name]["policies"][gavel]
    result = _run(name, ours)
    assert result.makespan == pytest.approx(ref["makespan"], rel=1e-12)
    assert result.avg_jct == pytest.approx(ref["avg_jct"], rel=1e-12)
    expected = np.array([np.nan if v is None else v for v in ref["jct"]])
    np.testing.assert_allclose(result.jct, expected, rtol=0, atol=1e-6)
    assert 100 * result.lease_extension_share == pytest.approx(ref["lease_extension_pct"], abs=1e-9)


@pytest.mark.parametrize(("name", "ours", "gavel"), cases(fast=False))
def test_solver_policies_within_the_bound(name: str, ours: str, gavel: str) -> None:
    ref = references()["sets"][name]["policies"][gavel]
    result = _run(name, ours)
    bound = BOUND[name]
    makespan_error = result.makespan / ref["makespan"] - 1.0
    jct_error = result.avg_jct / ref["avg_jct"] - 1.0
    assert abs(makespan_error) <= bound, f"makespan {100 * makespan_error:+.2f} %"
    assert abs(jct_error) <= bound, f"average JCT {100 * jct_error:+.2f} %"
    lease = 100 * result.lease_extension_share - ref["lease_extension_pct"]
    assert abs(lease) <= 100 * bound, f"lease-extension share {lease:+.2f} points"


def test_the_runs_are_of_the_references_traces_and_clusters() -> None:
    for name, entry in references()["sets"].items():
        assert entry["trace"] == f"{name}.trace"
        assert SETS[name] == entry["cluster"]
