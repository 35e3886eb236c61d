"""Benchmarks a user can run from an installed package (``shockwave bench``).

* ``shockwave bench scale``: the scale suite (:mod:`shockwave.bench.scale`): generated traces of
  thousands of jobs and GPUs under Shockwave and baselines, wall time, peak memory and metrics;
* ``shockwave bench market``: the market-solver table (:mod:`shockwave.bench.market_table`):
  both methods cold and warm against Clarabel, and warm starts on the policy's markets.

Each prints a table and writes the measurements as JSON (``-o FILE``). The pytest-benchmark files
of the repository's ``benches/`` time the same code.
"""

from __future__ import annotations
