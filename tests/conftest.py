"""Shared fixtures (paths of the bundled reference data) and the hypothesis profiles.

Property tests draw the same examples on every run by default (profile ``deterministic``), so
that a run of the suite, in CI or on a laptop, is reproducible. To search for new
counterexamples, run with ``HYPOTHESIS_PROFILE=explore``: random examples, and 1,000 of them in
the tests that do not set their own count. ``HYPOTHESIS_PROFILE=fuzz`` is the long fuzzing
campaign of the ``test_fuzz_*`` files (random examples, 10,000 per entry point; see
``tests/fuzzing.py`` and ``docs/reliability.md``).

CI runs the suite against the installed wheel from a copy of ``tests/`` (with ``traces/``,
``docs/``, ``benches/`` and ``examples/`` beside it) outside the source tree, with
``SHOCKWAVE_SOURCE_TREE`` set to the checkout: the run stops at once if ``shockwave`` or these
tests were imported from there.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

import shockwave
from shockwave.traces import load_workload
from shockwave.workload import Workload

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "traces"
DATA = Path(__file__).resolve().parent / "data"
CANONICAL_TRACE = TRACES / "canonical_120jobs.trace"
TACC = TRACES / "tacc_throughputs.json"

if os.environ.get("SHOCKWAVE_SOURCE_TREE"):
    _source = Path(os.environ["SHOCKWAVE_SOURCE_TREE"]).resolve()
    for _what, _path, _tree in (
        ("shockwave", shockwave.__file__, _source / "python"),
        ("the tests", __file__, _source / "tests"),
    ):
        if _tree in Path(_path).resolve().parents:
            raise pytest.UsageError(
                f"{_what} imported from the source tree {_tree} ({_path}): this run must test "
                "the installed package from a copy of the tests"
            )

#: Test modules that start real training processes or a Ray instance: under ``pytest -n auto
#: --dist loadgroup`` they share one worker (one after another), so that two of them never compete
#: for this machine's cores (their runs have wall-clock rounds) while the other workers run the
#: rest of the suite.
REAL_PROCESS_MODULES = frozenset(
    {
        "test_runtime_real.py",
        "test_runtime_trust.py",
        "test_runtime_typed.py",
        "test_runtime_generate.py",
        "test_ray.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of :data:`REAL_PROCESS_MODULES` in one ``xdist_group``."""
    for item in items:
        if item.path.name in REAL_PROCESS_MODULES:
            item.add_marker(pytest.mark.xdist_group("real_processes"))


settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.register_profile("fuzz", derandomize=False, max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(scope="session", autouse=True)
def machine_profile_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private cache of this machine's profile for the whole suite (``SHOCKWAVE_CACHE_DIR``,
    inherited by the command lines the tests start), holding a stand-in profile: the bundled
    ``cluster`` table with fixed runtime costs, so that ``cluster generate`` and ``cluster run``
    do not spend a minute measuring this machine in every test. The test that measures a real
    profile points the variable elsewhere."""
    from shockwave.runtime.machine import ENV_CACHE_DIR, machine_id, profile_cache_path
    from shockwave.runtime.throughput_measurement import write_throughput_file
    from shockwave.throughputs import RuntimeCosts, ThroughputTable

    directory = tmp_path_factory.mktemp("shockwave-cache")
    previous = os.environ.get(ENV_CACHE_DIR)
    os.environ[ENV_CACHE_DIR] = str(directory)
    table = ThroughputTable.bundled("cluster")
    costs = RuntimeCosts(restart_seconds=0.3, round_overhead_seconds=0.01, machine=machine_id())
    path = profile_cache_path()
    path.parent.mkdir(parents=True)
    write_throughput_file(ThroughputTable(table.entries, costs=costs), path)
    yield directory
    if previous is None:
        del os.environ[ENV_CACHE_DIR]
    else:
        os.environ[ENV_CACHE_DIR] = previous


@pytest.fixture(scope="session")
def canonical_workload() -> Workload:
    """The canonical 120-job trace profiled with the TACC throughputs."""
    return load_workload(CANONICAL_TRACE, TACC)


@pytest.fixture(scope="session")
def reference_profiles() -> list[dict[str, Any]]:
    """The original's per-job profiles of the canonical trace."""
    with gzip.open(DATA / "canonical_120jobs.profiles.json.gz", "rt") as handle:
        jobs: list[dict[str, Any]] = json.load(handle)["jobs"]
    return jobs


#: Hand-written production-trace fixtures in the published schemas (tests/data/production).
PRODUCTION = DATA / "production"
