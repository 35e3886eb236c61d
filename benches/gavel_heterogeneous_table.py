"""Ours vs Gavel's own simulator on heterogeneous clusters: the table of ``docs/simulator.md``.

The references (``tests/data/gavel/references.json.gz``) are what Gavel's unmodified simulator
(github.com/stanford-futuredata/gavel, commit c4fa400, MIT licence) computed, 360 s rounds, seed
0, ECOS: ``T2`` (the tuning set: the 200-job trace of issue 22 on 12:12:12) and the held-out sets
``H1``-``H4`` (traces from Gavel's ``generate_trace.py`` with other seeds, rates and sizes, on
other clusters), never used to tune. Run::

    python benches/gavel_heterogeneous_table.py [--sets T2,H1] [--policies gavel,fifo] [--json F]

prints a Markdown table (makespan, average JCT, their relative errors, the jobs whose JCT equals
Gavel's to 1e-6 s, the lease-extension share; wall seconds per run on stderr) and optionally
writes JSON.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "gavel"


def load_references() -> dict[str, Any]:
    with gzip.open(DATA / "references.json.gz", "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def run_set(name: str, policies: list[str] | None) -> list[dict[str, Any]]:
    from shockwave.heterogeneous import (
        GAVEL_NAMES,
        load_typed_trace,
        resolve_typed_policy,
        simulate_heterogeneous,
    )

    refs = load_references()["sets"][name]
    jobs = load_typed_trace(
        DATA / refs["trace"], DATA / "simulation_throughputs.json.gz", refs["cluster"]
    )
    rows = []
    for gavel_name, ref in refs["policies"].items():
        if gavel_name not in GAVEL_NAMES:
            continue
        ours = resolve_typed_policy(gavel_name) if gavel_name != "fifo" else "fifo-agnostic"
        if policies and ours not in policies:
            continue
        started = time.perf_counter()
        result = simulate_heterogeneous(jobs, ours)
        expected = np.array([np.nan if v is None else v for v in ref["jct"]], dtype=np.float64)
        same = np.abs(result.jct - expected) <= 1e-6
        same |= np.isnan(result.jct) & np.isnan(expected)
        rows.append({
            "set": name, "role": refs["role"], "cluster": refs["cluster"], "policy": ours,
            "gavel_policy": gavel_name, "makespan": result.makespan,
            "gavel_makespan": ref["makespan"], "avg_jct": result.avg_jct,
            "gavel_avg_jct": ref["avg_jct"],
            "makespan_error": result.makespan / ref["makespan"] - 1.0,
            "avg_jct_error": result.avg_jct / ref["avg_jct"] - 1.0,
            "same_jct": int(same.sum()), "jobs": int(expected.shape[0]),
            "lease_extension_share": result.lease_extension_share,
            "gavel_lease_extension_share": ref.get("lease_extension_pct", float("nan")) / 100.0,
            "seconds": time.perf_counter() - started,
        })  # fmt: skip
        print(_row(rows[-1]), f"{rows[-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
    return rows


def _row(r: dict[str, Any]) -> str:
    return (
        f"| {r['set']} ({r['cluster']}) | `{r['policy']}` ({r['gavel_policy']}) | "
        f"{r['gavel_makespan']:,.0f} | {r['makespan']:,.0f} | {100 * r['makespan_error']:+.2f} % | "
        f"{r['gavel_avg_jct']:,.0f} | {r['avg_jct']:,.0f} | {100 * r['avg_jct_error']:+.2f} % | "
        f"{r['same_jct']}/{r['jobs']} | {100 * r['gavel_lease_extension_share']:.2f} % | "
        f"{100 * r['lease_extension_share']:.2f} % |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="T2,H1,H2,H3,H4")
    parser.add_argument("--policies", default="")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    policies = [p for p in args.policies.split(",") if p] or None
    rows = []
    for name in args.sets.split(","):
        rows += run_set(name, policies)
    print("| set (cluster) | policy (Gavel's) | Gavel makespan (s) | ours | error | "
          "Gavel avg JCT (s) | ours | error | jobs with Gavel's JCT | lease ext. Gavel | "
          "ours |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(_row(r))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
