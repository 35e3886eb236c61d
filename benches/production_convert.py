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

``--philly JOBS`` does the same for the Philly reader (one JSON array, streamed element by
element): a ``cluster_job_log`` of JOBS jobs, the ten jobs of the test fixture
(``tests/data/production/philly``) repeated with fresh ids, indented as a JSON dump.
"""

from __future__ import annotations

import argparse
import json
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


FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "data" / "production" / "philly"


def write_philly_like(path: Path, jobs: int) -> None:
    """A ``cluster_job_log`` of ``jobs`` jobs: the fixture's, repeated with fresh ids."""
    fixture = json.loads((FIXTURE / "cluster_job_log").read_text())
    with path.open("w", encoding="utf-8") as out:
        out.write("[\n")
        for number in range(jobs):
            job = {**fixture[number % len(fixture)], "jobid": f"application_{number}"}
            out.write(json.dumps(job, indent=1) + (",\n" if number < jobs - 1 else "\n"))
        out.write("]\n")


def measure(rows: int, directory: Path, source: str = "helios") -> dict[str, float]:
    """Write a ``rows``-row file in ``directory``, convert it; return the measurements."""
    trace = directory / ("cluster_log.csv" if source == "helios" else "cluster_job_log")
    output = directory / "converted.jsonl"
    started = time.perf_counter()
    if source == "helios":
        write_helios_like(trace, rows, seed=0, days=30.0)
    else:
        write_philly_like(trace, rows)
    generated = time.perf_counter() - started
    argv = [sys.executable, "-c", CONVERT, "trace", "convert", "--from", source,
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
    parser.add_argument("--philly", type=int, metavar="JOBS", help="a Philly-schema file instead")
    parser.add_argument("--directory", type=Path, help="where to write (default: a temporary)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    args = parser.parse_args()
    source = "helios" if args.philly is None else "philly"
    sizes = [args.philly] if args.philly is not None else args.rows or [100_000, 1_000_000]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print("| rows | jobs kept | input (MB) | output (MB) | wall (s) | rows/s | CPU (s) | "
          "peak RSS (MB) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for rows in sizes:
        base = args.directory or Path(tempfile.mkdtemp(prefix="shockwave-bench-"))
        directory = base / f"{source}-{rows}"
        directory.mkdir(parents=True, exist_ok=True)
        try:
            m = measure(rows, directory, source)
        finally:
            if not args.keep:
                shutil.rmtree(directory, ignore_errors=True)
        print(f"| {m['rows']:,.0f} | {m['kept']:,.0f} | {m['input_mb']:.0f} | "
              f"{m['output_mb']:.0f} | {m['wall_s']:.1f} | {m['rows_per_s']:,.0f} | "
              f"{m['cpu_s']:.1f} | {m['peak_rss_mb']:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
