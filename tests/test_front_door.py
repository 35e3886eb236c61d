"""The front door: ``from shockwave import ...`` offers what the guides use, and stays cheap.

``import shockwave`` loads the workload types and the errors only; the simulator, the policies,
the market, the runtime and the heterogeneous simulator are imported on first use (PEP 562).
The data model (``shockwave.workload``, the native reader) does not import the job side or the
runtime. Every ``from shockwave import ...`` of the guides names a front-door export or a
submodule, and the guides' simulation examples run as written.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import shockwave

ROOT = Path(__file__).resolve().parents[1]

#: Modules ``import shockwave`` must not load (heavy, or the runtime's process machinery).
NOT_AT_IMPORT = (
    "ray",
    "matplotlib",
    "pandas",
    "pyarrow",
    "scipy",
    "sqlite3",
    "multiprocessing",
    "subprocess",
    "shockwave.job",
    "shockwave.runtime",
    "shockwave.sim",
    "shockwave.policies",
    "shockwave.market",
    "shockwave.heterogeneous",
)


def _loaded_after(statement: str) -> set[str]:
    """The modules of :data:`NOT_AT_IMPORT` a fresh interpreter holds after ``statement``."""
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps([m for m in {list(NOT_AT_IMPORT)!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_shockwave_loads_nothing_heavy() -> None:
    assert _loaded_after("import shockwave") == set()


def test_the_data_model_does_not_import_the_job_side_or_the_runtime() -> None:
    loaded = _loaded_after("import shockwave.workload, shockwave.traces.native")
    assert not loaded & {"shockwave.job", "shockwave.runtime", "multiprocessing", "subprocess"}


def test_a_lazy_name_loads_its_module_on_first_use() -> None:
    assert "shockwave.sim" in _loaded_after("from shockwave import simulate")


@pytest.mark.parametrize("name", sorted(set(shockwave.__all__) - {"__version__"}))
def test_every_export_is_the_object_of_its_home_module(name: str) -> None:
    value = getattr(shockwave, name)
    home = importlib.import_module(value.__module__) if hasattr(value, "__module__") else None
    if home is not None and hasattr(home, name):
        assert getattr(home, name) is value
    assert name in dir(shockwave)


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = shockwave.no_such_name  # type: ignore[attr-defined]
    from shockwave import market  # a submodule, not an export

    assert market.solve is shockwave.solve


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_the_guides_import_only_what_the_front_door_offers() -> None:
    guides = sorted((ROOT / "docs").glob("*.md"))
    if (ROOT / "README.md").exists():  # CI runs the suite from a copy without the README
        guides.append(ROOT / "README.md")
    assert guides, "the test suite runs beside the repository's docs/"
    seen = 0
    for guide in guides:
        for block in _python_blocks(guide):
            for names in re.findall(r"^\s*from shockwave import ([^\n#]+)", block, flags=re.M):
                for name in (n.strip() for n in names.strip("() ").split(",") if n.strip()):
                    seen += 1
                    known = name in shockwave.__all__ or find_spec(f"shockwave.{name}")
                    assert known, f"{guide.name}: 'from shockwave import {name}'"
    assert seen >= 10


@pytest.mark.parametrize("guide", ["simulator.md", "shockwave.md"])
def test_the_first_simulation_example_of_a_guide_runs(
    guide: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "traces").symlink_to(ROOT / "traces")
    monkeypatch.chdir(tmp_path)
    block = _python_blocks(ROOT / "docs" / guide)[0]
    assert "from shockwave import" in block
    exec(compile(block, guide, "exec"), {"__name__": "__guide__"})
