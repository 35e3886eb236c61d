"""The worked example of ``docs/testing.md`` (a user property-testing their own market) runs and
passes as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "testing.md"


def test_the_worked_example_of_the_testing_guide_passes(tmp_path: Path) -> None:
    if not GUIDE.exists():
        pytest.fail(f"{GUIDE} is missing: the test suite runs beside the repository's docs/")
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert len(blocks) == 1, "the guide has one worked example"
    example = tmp_path / "test_worked_example.py"
    example.write_text(blocks[0])
    assert pytest.main(["-q", "-p", "no:cacheprovider", str(example)]) == pytest.ExitCode.OK
