"""``shockwave sweep report DIR``: Markdown tables and PNG figures of a sweep's results.

Written into ``DIR/report/``: ``report.md`` and, with matplotlib (``shockwave[plots]``), the
figures it links (:mod:`shockwave.sweep.figures`). Every file is replaced atomically.

The cells are grouped by what they share but the policy: a **table per trace** (and cluster size,
mechanics, simulation settings and seed), one row per policy and parameter setting, each metric
with its ratio to the baseline policy's in the same group, as the paper's figures show them
(the baseline: ``--baseline``, else the spec's ``baseline``, else ``gavel`` when swept, else the
first policy). Generated traces drawn with several seeds also get a table **over seeds**: per
policy setting, the mean of the per-seed ratios and their range. Wall time is a measurement,
shown apart from the metrics and never as a ratio. Failed cells are listed with their error.

Typed cells (a cluster of several GPU types) are grouped by their cluster
(``v100:12,p100:12,k80:12``) where homogeneous ones are by their GPUs; their tables add the
utilisation of each type, and a metric the heterogeneous simulator does not report (the 99th
percentile JCT) reads ``n/a``.

When the directory has a manifest (``sweep.json``, written by ``shockwave sweep``), the report
covers the cells of the sweep last run there, in its order; otherwise every recorded cell. The
tables over seeds come first, then one per trace.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from shockwave.atomic import atomic_write_text
from shockwave.sweep.cells import SIMULATION_DEFAULTS, TYPED_SIMULATION_DEFAULTS
from shockwave.sweep.dataset import read_results
from shockwave.sweep.runner import read_manifest

#: The metrics of the tables: (column, title, format, scale).
METRICS: tuple[tuple[str, str, str, float], ...] = (
    ("makespan", "makespan (s)", "{:,.0f}", 1.0),
    ("avg_jct", "avg JCT (s)", "{:,.0f}", 1.0),
    ("p99_jct", "p99 JCT (s)", "{:,.0f}", 1.0),
    ("worst_ftf", "worst rho", "{:.3f}", 1.0),
    ("unfair_fraction", "unfair %", "{:.1f}", 100.0),
    ("utilization", "util %", "{:.1f}", 100.0),
)
#: The columns that make a group (a table): everything but the policy and its parameters
#: (and ``cluster`` after ``gpus`` where the results hold typed cells).
GROUP_COLUMNS = ("trace", "gpus", "mechanics", "simulation", "seed")


def _with_cluster(frame: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """``columns``, with ``cluster`` after ``gpus`` when ``frame`` has typed cells."""
    out = list(columns)
    if "cluster" in frame.columns:
        out.insert(out.index("gpus") + 1, "cluster")
    return out


def _cluster_of(row: pd.Series | dict[str, Any]) -> str | None:
    value = row.get("cluster")
    return value if isinstance(value, str) else None


def _where(gpus: Any, cluster: Any) -> str:
    """``32 GPUs``, or the typed cluster."""
    return cluster if isinstance(cluster, str) else f"{gpus} GPUs"


@dataclass(frozen=True)
class Group:
    """The cells of one table: ``rows`` ordered as the sweep ran them; ``baseline`` the row
    the ratios are to (``None`` when the baseline policy did not run here)."""

    title: str
    slug: str
    rows: pd.DataFrame
    baseline: pd.Series | None


def write_report(
    directory: str | Path, *, baseline: str | None = None, figures: bool = True
) -> list[Path]:
    """Write ``report.md`` (and the figures) into ``directory/report``; return the paths.

    Raises:
        FileNotFoundError: when ``directory`` holds no sweep results.
        ValueError: for a ``baseline`` that did not run, or a corrupt manifest.
    """
    root = Path(directory)
    frame, manifest = _results(root)
    policies = [str(p) for p in (manifest or {}).get("policies", [])] or _ordered(frame.policy)
    chosen = _baseline(baseline, manifest, policies, frame)
    groups = _groups(frame[frame.status == "ok"], chosen)
    families = _families(frame[frame.status == "ok"], chosen)
    out = root / "report"
    out.mkdir(exist_ok=True)
    images: dict[str, list[str]] = {}
    written: list[Path] = []
    plot_note = ""
    if figures:
        try:
            from shockwave.sweep.figures import family_figure, group_figures
        except ModuleNotFoundError:
            plot_note = "Figures need matplotlib: `pip install 'shockwave[plots]'`, then rerun."
        else:
            for group in groups:
                paths = group_figures(group.rows, group.title, out / group.slug, _config_label)
                images[group.slug] = [p.name for p in paths]
                written.extend(paths)
            for title, slug, table in families:
                path = family_figure(table, title, out / f"{slug}-ratios.png")
                images[slug] = [path.name]
                written.append(path)
    name = str((manifest or {}).get("name", root.name))
    expected = len((manifest or {}).get("keys", [])) or len(frame)
    text = render_markdown(name, frame, groups, families, chosen, images, expected, plot_note)
    report = out / "report.md"
    atomic_write_text(report, text)
    return [report, *written]


def _results(root: Path) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    frame = read_results(root).to_pandas()
    manifest = read_manifest(root)
    order = {k: i for i, k in enumerate(frame.key)}
    if manifest is not None:
        keys = [str(k) for k in manifest.get("keys", [])]  # type: ignore[attr-defined]
        order = {k: i for i, k in enumerate(keys)}
        frame = frame[frame.key.isin(order)]
        if frame.empty:
            raise FileNotFoundError(2, "no results of the sweep last run here", str(root))
    frame = frame.assign(_order=frame.key.map(order)).sort_values("_order", kind="stable")
    return frame.reset_index(drop=True), manifest


def _ordered(values: pd.Series) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


def _baseline(
    asked: str | None, manifest: dict[str, Any] | None, policies: list[str], frame: pd.DataFrame
) -> str:
    ran = set(frame.policy[frame.status == "ok"])
    if asked is not None:
        if asked not in ran:
            raise ValueError(
                f"--baseline {asked}: no successful cell of that policy here "
                f"(policies: {', '.join(sorted(ran)) or 'none'})"
            )
        return asked
    if manifest is not None and manifest.get("baseline"):
        return str(manifest["baseline"])
    return "gavel" if "gavel" in policies else policies[0]


def _config_label(row: pd.Series) -> str:
    """``policy`` or ``policy k=v, ...`` for a row's policy setting."""
    parameters = json.loads(row.parameters)
    if not parameters:
        return str(row.policy)
    return f"{row.policy} " + ", ".join(f"{k}={v}" for k, v in parameters.items())


def _settings_label(simulation: str, seed: int, typed: bool = False) -> str:
    defaults = TYPED_SIMULATION_DEFAULTS if typed else SIMULATION_DEFAULTS
    changed = {k: v for k, v in json.loads(simulation).items() if defaults.get(k) != v}
    parts = [f"{k}={v}" for k, v in changed.items()]
    if seed:
        parts.append(f"seed {seed}")
    return ", ".join(parts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:80] or "trace"


def _pick_baseline(rows: pd.DataFrame, baseline: str) -> pd.Series | None:
    candidates = rows[rows.policy == baseline]
    if candidates.empty:
        return None
    defaults = candidates[candidates.parameters == "{}"]
    chosen: pd.Series = (defaults if not defaults.empty else candidates).iloc[0]
    return chosen


def _groups(frame: pd.DataFrame, baseline: str) -> list[Group]:
    groups = []
    slugs: set[str] = set()
    for values, rows in frame.groupby(
        _with_cluster(frame, GROUP_COLUMNS), sort=False, dropna=False
    ):
        named = dict(zip(_with_cluster(frame, GROUP_COLUMNS), values, strict=True))
        trace, gpus, mechanics = named["trace"], named["gpus"], named["mechanics"]
        cluster = _cluster_of(named)
        extra = _settings_label(str(named["simulation"]), int(str(named["seed"])), bool(cluster))
        title = f"{trace}, {_where(gpus, cluster)}, {mechanics} mechanics" + (
            f", {extra}" if extra else ""
        )
        size = cluster.replace(":", "x") if cluster else f"{gpus}g"
        slug = _slug(f"{trace}-{size}-{mechanics}-{extra}")
        while slug in slugs:
            slug += "-x"
        slugs.add(slug)
        groups.append(Group(title, slug, rows, _pick_baseline(rows, baseline)))
    return groups


def _families(frame: pd.DataFrame, baseline: str) -> list[tuple[str, str, pd.DataFrame]]:
    """Tables over generator seeds: (title, slug, one row per setting with mean ratios)."""
    out = []
    seeded = frame[frame.trace_seed.notna()]
    keys = _with_cluster(frame, ["trace_family", "gpus", "mechanics", "simulation", "seed"])
    for values, rows in seeded.groupby(keys, sort=False, dropna=False):
        named = dict(zip(keys, values, strict=True))
        family, gpus, mechanics = named["trace_family"], named["gpus"], named["mechanics"]
        simulation, seed, cluster = named["simulation"], named["seed"], _cluster_of(named)
        if rows.trace_seed.nunique() < 2:
            continue
        ratios = []
        for _, per_seed in rows.groupby("trace_seed", sort=False):
            base = _pick_baseline(per_seed, baseline)
            if base is None:
                continue
            for _, row in per_seed.iterrows():
                entry: dict[str, Any] = {"setting": _config_label(row)}
                for column, _, _, _ in METRICS:
                    entry[column] = float(row[column])
                    entry[f"{column}_ratio"] = _ratio(float(row[column]), float(base[column]))
                ratios.append(entry)
        if not ratios:
            continue
        table = pd.DataFrame(ratios)
        seeds = sorted(int(s) for s in rows.trace_seed.unique())
        extra = _settings_label(str(simulation), int(seed), bool(cluster))
        title = (
            f"{family}, {_where(gpus, cluster)}, {mechanics} mechanics, over seeds "
            f"{', '.join(map(str, seeds))}" + (f", {extra}" if extra else "")
        )
        size = cluster.replace(":", "x") if cluster else f"{gpus}g"
        out.append((title, _slug(f"{family}-{size}-{mechanics}-{extra}-seeds"), table))
    return out


def _ratio(value: float, base: float) -> float:
    return value / base if base != 0 and math.isfinite(base) else math.nan


def _cell(value: float, fmt: str, scale: float, ratio: float | None) -> str:
    if not math.isfinite(value):
        return "n/a"
    text = fmt.format(value * scale)
    if ratio is not None and math.isfinite(ratio):
        text += f" ({ratio:.2f}x)"
    return text


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows)
    return lines


def render_markdown(
    name: str,
    frame: pd.DataFrame,
    groups: Sequence[Group],
    families: Sequence[tuple[str, str, pd.DataFrame]],
    baseline: str,
    images: dict[str, list[str]],
    expected: int,
    plot_note: str,
) -> str:
    """The text of ``report.md``."""
    failed = frame[frame.status != "ok"]
    versions = ", ".join(sorted(set(frame.version)))
    lines = [
        f"# Sweep {name!r}",
        "",
        f"{len(frame)} of {expected} cells recorded ({len(failed)} failed); shockwave "
        f"{versions}. Ratios are to `{baseline}` in the same table (lower is better, utilisation "
        "aside). Wall time is a measurement of the machine, not a result.",
        "",
    ]
    if plot_note:
        lines += [plot_note, ""]
    header = ["policy", *(title for _, title, _, _ in METRICS), "wall (s)"]
    for title, slug, table in families:
        lines += [f"## {title}", "", "Mean over seeds (ratio: mean of the per-seed ratios, "
                  "and their range).", ""]  # fmt: skip
        body = []
        for setting, rows in table.groupby("setting", sort=False):
            cells = [str(setting)]
            for column, _, fmt, scale in METRICS:
                low, high = rows[f"{column}_ratio"].min(), rows[f"{column}_ratio"].max()
                mean = float(rows[f"{column}_ratio"].mean())
                average = float(rows[column].mean())
                text = fmt.format(average * scale) if math.isfinite(average) else "n/a"
                if math.isfinite(mean):
                    text += f" ({mean:.2f}x, {low:.2f}-{high:.2f})"
                cells.append(text)
            body.append(cells)
        lines += _markdown_table(header[:-1], body)
        lines += [""] + [f"![{image}]({image})" for image in images.get(slug, [])]
        lines.append("")
    for group in groups:
        lines += [f"## {group.title}", ""]
        body = []
        typed = _cluster_of(group.rows.iloc[0]) is not None
        for _, row in group.rows.iterrows():
            cells = [_config_label(row)]
            for column, _, fmt, scale in METRICS:
                ratio = None
                if group.baseline is not None and row.key != group.baseline.key:
                    ratio = _ratio(float(row[column]), float(group.baseline[column]))
                cells.append(_cell(float(row[column]), fmt, scale, ratio))
            if typed:
                cells.append(
                    ", ".join(f"{k} {100 * float(v):.1f}" for k, v in row.utilization_by_type)
                )
            cells.append(f"{float(row.timing_wall_seconds):.2f}")
            body.append(cells)
        columns = [*header[:-1], "util % by type", header[-1]] if typed else header
        lines += _markdown_table(columns, body)
        if group.baseline is None:
            lines += ["", f"(`{baseline}` did not run here: no ratios.)"]
        lines += [""] + [f"![{image}]({image})" for image in images.get(group.slug, [])]
        lines.append("")
    if not failed.empty:
        lines += ["## Failed cells", ""]
        listed = [
            [
                str(r.trace),
                _cluster_of(r) or str(r.gpus),
                _config_label(r),
                str(r.mechanics),
                str(r.error),
            ]
            for _, r in failed.iterrows()
        ]
        lines += _markdown_table(["trace", "GPUs", "policy", "mechanics", "error"], listed)
        lines.append("")
    return "\n".join(lines)


#: The label of a row's policy setting (used by the figures).
ConfigLabel = Callable[[pd.Series], str]
