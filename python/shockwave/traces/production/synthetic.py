"""Helios-schema files of any size with Helios-like statistics, for benchmarks and tests.

The real traces cannot be bundled (and the project's machines cannot download them), so the
streaming benchmark and the month-long simulation test read files written here: the Helios
``cluster_log.csv`` schema (header row, ``YYYY-MM-DD HH:MM:SS`` times, ``duration`` = end - start)
with the features the conversion has to cope with, in proportions chosen here (not measured on
Helios):

* arrivals over ``days`` days, Poisson with a daily cycle (three times busier at the peak than at
  the trough), and bursts: 3 % of submissions start a burst of a geometric number (mean 10) of
  identical jobs from one user within seconds (a hyper-parameter sweep);
* 25 % CPU-only jobs (``gpu_num`` 0); GPU jobs of 1 GPU (62 %), 2 (8 %), 3 (1 %), 4 (9 %),
  6 (0.5 %), 8 (12 %), 16 (4 %), 32 (2 %), 64 (1 %) and 128 (0.5 %);
* states COMPLETED 62 %, CANCELLED 20 %, FAILED 16 %, TIMEOUT 1 %, NODE_FAIL 1 %; 40 % of
  cancelled jobs never start (no start or end time, ``duration`` 0);
* heavy-tailed run times: log-normal, median 10 minutes, sigma 2.2 (failed jobs five times
  shorter), between 1 s and 50 days;
* 300 users (a few submit most jobs), each in one of 16 virtual clusters.

The same ``seed`` and sizes give the same bytes.
"""

from __future__ import annotations

import csv
import math
from os import PathLike

import numpy as np

from shockwave.atomic import atomic_writer
from shockwave.traces.production.fields import Where, format_datetime, parse_datetime

HEADER = (
    "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
    "start_time", "end_time", "duration", "queue",
)  # fmt: skip
GANG_SIZES = (0, 1, 2, 3, 4, 6, 8, 16, 32, 64, 128)
GANG_MIX = (
    0.25,
    *(0.75 * q for q in (0.62, 0.08, 0.01, 0.09, 0.005, 0.12, 0.04, 0.02, 0.01, 0.005)),
)
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
STATE_MIX = (0.62, 0.20, 0.16, 0.01, 0.01)
USERS = 300
VCS = 16
BURST_START = 0.03
BURST_MEAN = 10
_CHUNK = 8192


def write_helios_like(
    path: str | PathLike[str],
    rows: int,
    *,
    seed: int = 0,
    start: str = "2020-04-01 00:00:00",
    days: float = 30.0,
) -> None:
    """Write ``rows`` jobs in the Helios ``cluster_log.csv`` schema to ``path`` (atomically,
    streamed: memory does not grow with ``rows``).

    Args:
        path: the file to write.
        rows: jobs (data rows), >= 1.
        seed: the random seed.
        start: the first possible submission, ``YYYY-MM-DD HH:MM:SS``.
        days: the span of submissions, days (> 0).
    """
    if rows < 1 or not days > 0:
        raise ValueError(f"rows must be >= 1 and days > 0, got {rows} and {days}")
    origin = parse_datetime(start, Where("start"), "start")
    span = days * 86_400.0
    random = np.random.default_rng(seed)
    gang_mix = np.asarray(GANG_MIX) / sum(GANG_MIX)
    vc_names = [f"vc{k:02d}{'abcdefghijklmnop'[k]}" for k in range(VCS)]
    clock = 0.0
    burst_left = 0
    burst: list[str] = []
    written = 0
    with atomic_writer(path) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        while written < rows:
            n = min(_CHUNK, rows - written)
            gaps = random.exponential(span / rows, n)
            cycle = random.random(n)
            bursts = random.random(n) < BURST_START
            burst_sizes = random.geometric(1 / BURST_MEAN, n)
            gangs = random.choice(len(GANG_SIZES), size=n, p=gang_mix)
            states = random.choice(len(STATES), size=n, p=STATE_MIX)
            never = random.random(n) < 0.4
            durations = np.exp(random.normal(math.log(600.0), 2.2, n))
            queues = np.exp(random.normal(math.log(30.0), 2.0, n))
            users = (USERS * random.random(n) ** 3).astype(np.int64)
            for i in range(n):
                if burst_left > 0:
                    burst_left -= 1
                    clock += float(cycle[i]) * 3
                    row = burst
                else:
                    # thinning-free daily cycle: gaps shrink at the peak (rate 3x the trough)
                    phase = math.sin(2 * math.pi * (clock / 86_400.0 - 0.375))
                    clock += float(gaps[i]) * 2 / (2 + phase)
                    state = STATES[states[i]]
                    gpus = GANG_SIZES[gangs[i]]
                    length = float(durations[i]) * (0.2 if state == "FAILED" else 1.0)
                    run = min(max(round(length), 1), 50 * 86_400)
                    if state == "CANCELLED" and never[i]:
                        run = -1
                    user = int(users[i])
                    row = [
                        f"u{user:04d}", vc_names[user % VCS], str(gpus),
                        str(max(1, 4 * gpus) if gpus else 1 + i % 8), str(max(1, -(-gpus // 8))),
                        state, str(run), str(round(float(queues[i]))),
                    ]  # fmt: skip
                    if bursts[i]:
                        burst, burst_left = row, int(burst_sizes[i]) - 1
                submit = origin + math.floor(clock)
                user_name, vc, gpus_text, cpus, nodes, state_name, seconds_text, queue = row
                seconds = int(seconds_text)
                if seconds < 0:
                    start_text = end_text = ""
                    duration = "0"
                else:
                    begin = submit + int(queue)
                    start_text = format_datetime(begin)
                    end_text = format_datetime(begin + seconds)
                    duration = seconds_text
                writer.writerow([
                    written + 1, user_name, vc, gpus_text, cpus, nodes, state_name,
                    format_datetime(submit), start_text, end_text, duration, queue,
                ])  # fmt: skip
                written += 1
