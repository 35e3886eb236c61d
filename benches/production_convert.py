"""Streaming benchmark of ``shockwave trace convert --from helios`` (issue 15).

    python benches/production_convert.py                        # 100,000 and 1,000,000 rows
    python benches/production_convert.py --rows 1000000 --keep  # one size, keep the files

For each size, a Helios-schema ``cluster_log.csv`` with Helios-like statistics is written
(:mod:`shockwave.traces.production.synthetic`, seed 0, one month of submissions), then converted
by the command line in a fresh process: ``shockwave trace convert --from helios DIR -o
OUT.jsonl``. Reported: rows, jobs kept, input and output sizes, wall time of the conversion
(process start to exit, imports included), rows per second, CPU time, and the peak resident
memory of the converting process (``wait4``'s ``ru_maxrss``). Bounded memory shows as a peak that
does not grow with the rows. Target: 1,000,000 rows in <= 60 s and <= 1 GB.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shockwave.traces.production.synthetic import write_helios_like

CONVERT = "import sys; from shockwave.cli import main; sys.exit(main(sys.argv[1:]))"


def measure(rows: int, directory: Path) -> dict[str, float]:
    """Write a ``rows``-row file in ``directory``, convert it; return the measurements."""
    trace = directory / "cluster_log.csv"
    output = directory / "converted.jsonl"
    started = time.perf_counter()
    write_helios_like(trace, rows, seed=0, days=30.0)
    generated = time.perf_counter() - started
    argv = [sys.executable, "-c", CONVERT, "trace", "convert", "--from", "helios",
            str(directory), "-o", str(output)]  # fmt: skip
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    printed = child.stdout.read() if child.stdout else ""
    if status != 0:
        raise SystemExit(f"the conversion failed ({status}):\n{printed}")
    kept = next(int(line.split()[1].replace(",", "")) for line in printed.splitlines()
                if line.startswith("wrote "))  # fmt: skip
    return {
        "rows": rows,
        "kept": kept,
        "input_mb": trace.stat().st_size / 1e6,
        "output_mb": output.stat().st_size / 1e6,
        "generate_s": generated,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rows_per_s": rows / wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # Linux: kilobytes
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="rows (repeatable)")
    parser.add_argument("--directory", type=Path, help="where to write (default: a temporary)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    args = parser.parse_args()
    sizes = args.rows or [100_000, 1_000_000]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print("| rows | jobs kept | input (MB) | output (MB) | wall (s) | rows/s | CPU (s) | "
          "peak RSS (MB) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for rows in sizes:
        base = args.directory or Path(tempfile.mkdtemp(prefix="shockwave-bench-"))
        directory = base / f"helios-{rows}"
        directory.mkdir(parents=True, exist_ok=True)
        try:
            m = measure(rows, directory)
        finally:
            if not args.keep:
                shutil.rmtree(directory, ignore_errors=True)
        print(f"| {m['rows']:,.0f} | {m['kept']:,.0f} | {m['input_mb']:.0f} | "
              f"{m['output_mb']:.0f} | {m['wall_s']:.1f} | {m['rows_per_s']:,.0f} | "
              f"{m['cpu_s']:.1f} | {m['peak_rss_mb']:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
