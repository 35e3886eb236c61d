"""Sweeps as Ray tasks: every cell equals ``shockwave simulate``, as on the process pool."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.sweep.sources import FileTrace
from shockwave.sweep.spec import load_spec
from tests.sweep.cases import (
    AloneResults,
    metrics_of,
    result_rows,
)

ray = pytest.importorskip("ray")


def test_an_address_nothing_listens_at_is_refused_at_once(
    equality_spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not ray.is_initialized()
    argv = ["sweep", str(equality_spec), "--out", str(tmp_path), "--ray", "--ray-address"]
    assert main([*argv, "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "--ray: cannot reach the Ray cluster at 127.0.0.1:1" in err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """A local Ray instance of two CPUs (two cells at a time on the 2-core CI machine)."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


def test_every_cell_of_a_ray_sweep_equals_shockwave_simulate(
    ray_instance: None,
    equality_spec: Path,
    alone: AloneResults,
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert main(["sweep", str(equality_spec), "--out", str(out), "--ray"]) == 0
    rows = result_rows(out)
    assert len(rows) == 54 and all(r["status"] == "ok" for r in rows)
    for row in rows:
        assert metrics_of(row) == alone(row), row["key"]
    # the cells ran in Ray's workers, which read the files the driver shipped them
    assert all(not r["host"].endswith(f":{os.getpid()}") for r in rows)
    for trace in load_spec(equality_spec).traces:
        if isinstance(trace.source, FileTrace):
            shipped = Path(tempfile.gettempdir()) / "shockwave-sweep" / trace.source.file.sha256
            assert (shipped / Path(trace.source.file.path).name).read_bytes() == Path(
                trace.source.file.path
            ).read_bytes()
