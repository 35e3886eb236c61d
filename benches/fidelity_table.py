"""Print the fidelity table of ``docs/simulator.md`` (markdown).

The canonical 120-job trace with ``tacc_throughputs.json`` on 32 GPUs: every baseline under both
mechanics next to the original authors' results (``tests/data/canonical_results.json``).

    python benches/fidelity_table.py > /tmp/fidelity.md
"""

from __future__ import annotations

import json

import numpy as np

from shockwave.policies import ORIGINAL_NAMES, POLICIES
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from simulator_workloads import ROOT, canonical

#: Reruns of the original with today's libraries (reference notes 4.5 and 4.7): not in the
#: authors' result files.
RERUNS = {
    "fifo": {"makespan": 33_308.0, "avg_jct": 10_816.0},
    "allox": {"makespan": 32_629.0, "avg_jct": 9_973.0, "cluster_util": 0.605,
              "worst_ftf": 4.963, "unfair_fraction_pct": 27.5},
}  # fmt: skip


def main() -> None:
    reference = json.loads((ROOT / "tests/data/canonical_results.json").read_text())["policies"]
    workload = canonical()
    print(
        "| policy (original) | source | makespan (s) | avg JCT (s) | worst rho | unfair % "
        "| utilisation | jobs with the original's JCT |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in POLICIES:
        original = ORIGINAL_NAMES[name]
        theirs = reference.get(original)
        rows = []
        if theirs is not None:
            rows.append(("original (authors)", theirs, None))
        if name in RERUNS:
            rows.append(("original (rerun)", RERUNS[name], None))
        for mechanics in ("gavel", "exact"):
            result = simulate(workload, name, SimulationConfig(gpus=32, mechanics=mechanics))
            ours = {
                "makespan": result.makespan,
                "avg_jct": result.avg_jct,
                "worst_ftf": result.worst_ftf,
                "unfair_fraction_pct": 100 * result.unfair_fraction,
                "cluster_util": result.utilization,
            }
            same = None
            if theirs is not None and mechanics == "gavel":
                same = int(np.sum(np.abs(np.array(result.jct) - theirs["jct_list"]) < 1e-6))
            rows.append((f"ours, {mechanics}", ours, same))
        base = theirs or RERUNS.get(name)
        for source, row, same in rows:
            cells = [f"`{name}` ({original})", source]
            for key, fmt in (
                ("makespan", "{:,.0f}"),
                ("avg_jct", "{:,.0f}"),
                ("worst_ftf", "{:.3f}"),
                ("unfair_fraction_pct", "{:.1f}"),
                ("cluster_util", "{:.4f}"),
            ):
                if key not in row:
                    cells.append("-")
                    continue
                text = fmt.format(row[key])
                if base is not None and key in base and row is not base and source != "ours, exact":
                    if key == "unfair_fraction_pct":
                        text += f" ({row[key] - base[key]:+.1f} pt)"
                    else:
                        text += f" ({100 * (row[key] / base[key] - 1):+.2f} %)"
                cells.append(text)
            cells.append("-" if same is None else f"{same}/120")
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
