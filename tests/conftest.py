"""Shared fixtures: paths of the bundled reference data."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from shockwave.traces import load_workload
from shockwave.workload import Workload

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "traces"
DATA = Path(__file__).resolve().parent / "data"
CANONICAL_TRACE = TRACES / "canonical_120jobs.trace"
TACC = TRACES / "tacc_throughputs.json"


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
