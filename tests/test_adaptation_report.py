"""The committed accuracy report is what its script generates today."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from shockwave.traces import load_workload

REPO = Path(__file__).resolve().parent.parent


def test_accuracy_report_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "adaptation_accuracy", REPO / "benches" / "adaptation_accuracy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    jobs = load_workload(module.TRACE, module.THROUGHPUTS).jobs
    committed = (REPO / "docs" / "adaptation_accuracy.md").read_text()
    assert module.report(jobs) == committed, (
        "docs/adaptation_accuracy.md is stale: regenerate it with "
        "`python benches/adaptation_accuracy.py --output docs/adaptation_accuracy.md`"
    )
