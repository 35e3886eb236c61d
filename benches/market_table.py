"""Regenerate the market-solver tables of ``benches/README.md``.

    python benches/market_table.py            # print the tables
    python benches/market_table.py --write    # and replace them in benches/README.md
    python benches/market_table.py --policy-only
    python benches/market_table.py --types-only --write   # GPU types against one type and Clarabel

The measurements live in the installed package (:mod:`shockwave.bench.market_table`, ``shockwave
bench market``, which also writes them as JSON); this script puts its tables between the README's
markers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shockwave.atomic import atomic_write_text
from shockwave.bench import market_table

START, END = "<!-- market-table:start -->", "<!-- market-table:end -->"
POLICY_START, POLICY_END = "<!-- market-policy-warm:start -->", "<!-- market-policy-warm:end -->"
TYPES_START, TYPES_END = "<!-- market-types:start -->", "<!-- market-types:end -->"


def replace_block(content: str, text: str, start: str, end: str) -> str:
    before, _, rest = content.partition(start)
    _, _, after = rest.partition(end)
    return before + text + after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the tables in README.md")
    parser.add_argument(
        "--clarabel-max-jobs",
        type=int,
        default=1000,
        help="skip Clarabel above this many jobs (default 1000: it takes minutes at 10,000)",
    )
    only = parser.add_mutually_exclusive_group()
    only.add_argument(
        "--policy-only", action="store_true", help="only the policy markets' warm-start table"
    )
    only.add_argument("--types-only", action="store_true", help="only the table with GPU types")
    parser.add_argument(
        "--types",
        type=int,
        default=3,
        metavar="K",
        help="GPU types of the table with types (default 3)",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="alternated pairs per size of the typed table"
    )
    args = parser.parse_args()
    machine = market_table.machine()
    blocks = []
    if not (args.policy_only or args.types_only):
        records = market_table.solver_records(clarabel_max_jobs=args.clarabel_max_jobs)
        table = market_table.solver_table(records, machine)
        blocks.append((f"{START}\n\n{table}\n{END}", START, END))
    if not args.types_only:
        table = market_table.policy_table(market_table.policy_records(), machine)
        blocks.append((f"{POLICY_START}\n\n{table}\n{POLICY_END}", POLICY_START, POLICY_END))
    if not args.policy_only:
        typed = market_table.typed_records(
            types=args.types, clarabel_max_jobs=args.clarabel_max_jobs, repeats=args.repeats
        )
        table = market_table.typed_table(typed, machine)
        blocks.append((f"{TYPES_START}\n\n{table}\n{TYPES_END}", TYPES_START, TYPES_END))
    for text, _, _ in blocks:
        print(text)
    if args.write:
        readme = Path(__file__).with_name("README.md")
        content = readme.read_text()
        for text, start, end in blocks:
            if start not in content:
                raise SystemExit(f"{readme}: no {start} marker")
            content = replace_block(content, text, start, end)
        atomic_write_text(readme, content)


if __name__ == "__main__":
    main()
