"""Scale suite: generated traces of thousands of jobs and GPUs under Shockwave and baselines.

    python benches/scale_suite.py --output benches/scale_results.md
    python benches/scale_suite.py --sizes 1000:256 --policies shockwave,fifo   # a subset

The suite lives in the installed package (:mod:`shockwave.bench.scale`, ``shockwave bench
scale``); this script runs it and writes its Markdown table (``--output``) as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from shockwave.cli import main as shockwave


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if "--output" in arguments:  # this script's name for the Markdown table
        arguments[arguments.index("--output")] = "--markdown"
    return shockwave(["bench", "scale", *arguments])


if __name__ == "__main__":
    sys.exit(main())
