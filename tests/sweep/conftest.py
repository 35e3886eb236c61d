"""Fixtures of the sweep tests: the equality spec and its cells run alone (session-wide)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sweep.cases import AloneResults, write_equality_spec


@pytest.fixture(scope="session")
def equality_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The equality spec and its files, written once per session."""
    return write_equality_spec(tmp_path_factory.mktemp("equality"))


@pytest.fixture(scope="session")
def alone(equality_spec: Path) -> AloneResults:
    """The equality spec's cells run alone through ``shockwave simulate`` (cached)."""
    return AloneResults(equality_spec.parent)
