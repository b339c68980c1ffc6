"""Draw one paper figure from its tidy rows (matplotlib, Agg backend, PNG).

No axis clips data: each panel's y range holds every finite value of its rows (out-of-memory
points included) and zero, and a panel with negative values (Fig 13: apps Parrot slowed) draws
its bars below a zero line. A point whose run ran out of KV memory is a cross at zero in its
series' own colour, with a legend entry "<series>: out of memory". A ``spread`` panel (Figs
12a, 17, 19) draws the mean of its seeds with error bars from the tidy ``lo``/``hi`` columns
(10th-90th percentile of the per-seed values), said in its legend; Fig 17 marks each series'
interpolated crossing of the threshold with a triangle on the threshold line. Each figure is
titled with the paper's caption (``parrotsim.reports.spec.title``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from parrotsim.reports.derive import RATE_CROSSING, SUSTAINABLE_PANEL  # noqa: E402
from parrotsim.reports.spec import (  # noqa: E402
    FIG17_THRESHOLD_MS,
    SERIES_LABELS,
    SPREAD_QUANTILES,
    Panel,
    title,
)

COLORS = {
    "parrot": "#d62728", "parrot_paged_attention": "#ff7f0e", "parrot_without_sharing": "#bcbd22",
    "parrot_without_affinity": "#e377c2", "baseline_vllm": "#1f77b4", "baseline_hf": "#7f7f7f",
    "baseline_with_sharing": "#1f77b4", "baseline_without_sharing": "#17becf",
    "baseline_latency": "#1f77b4", "baseline_throughput": "#2ca02c",
}
OOM_SUFFIX = ": out of memory"


def draw(figure: str, panels: list[Panel], tidy: pd.DataFrame, out: Path) -> Path:
    """Write ``out/<figure>.png`` with one subplot per panel (``tidy``: rows as in figures.csv,
    also read back with ``pd.read_csv``, where an empty panel name becomes NaN)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        rows = tidy[(tidy["figure"] == figure) & (tidy["panel"].fillna("") == panel.panel)]
        if panel.kind == "bar":
            _bars(ax, rows, panel)
        else:
            rates = tidy[(tidy["figure"] == figure)
                         & (tidy["panel"].fillna("") == SUSTAINABLE_PANEL)]
            _lines(ax, rows, panel, rates)
        ax.set_xlabel(panel.x_name)
        ax.set_ylabel(panel.ylabel)
        values = rows["value"]
        if panel.spread and "hi" in rows:  # the whiskers, and room above them for the legend
            values = pd.concat([values, rows["lo"], rows["hi"], 1.3 * rows["hi"]])
        _fit_y(ax, values)
        ax.grid(alpha=0.3)
        if panel.panel:
            ax.set_title(panel.panel, fontsize=10)
    caption = textwrap.fill(title(figure), 52 * len(panels), break_on_hyphens=False)
    fig.suptitle(caption, fontsize=10)
    fig.tight_layout()
    path = out / f"{figure}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _fit_y(ax, values: pd.Series) -> None:
    """Widen the y range to hold every finite value and zero; draw a zero line below data."""
    v = values.to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    lo, hi = ax.get_ylim()
    vmin, vmax = (min(0.0, v.min()), max(0.0, v.max())) if v.size else (0.0, 0.0)
    pad = 0.05 * ((vmax - vmin) or 1.0)
    lo = min(lo, vmin - pad) if vmin < 0 else 0.0
    ax.set_ylim(lo, max(hi, vmax + pad))
    if lo < 0:
        ax.axhline(0, color="black", lw=0.8, zorder=2.5)


def _oom_mark(ax, xs: list[float], color, label: str) -> None:
    """Crosses at zero for out-of-memory points, in the series' colour, with a legend entry."""
    ax.plot(xs, np.zeros(len(xs)), "x", color=color, ms=9, mew=2, clip_on=False, zorder=3,
            label=label + OOM_SUFFIX)


def _legend(ax) -> None:
    """The legend, each "<series>: out of memory" entry right after its series' entry."""
    handles, labels = ax.get_legend_handles_labels()
    entries = dict(zip(labels, handles, strict=True))
    order = [lb for lb in labels if not lb.endswith(OOM_SUFFIX)]
    for lb in labels:
        if lb.endswith(OOM_SUFFIX):
            base = lb.removesuffix(OOM_SUFFIX)
            order.insert(order.index(base) + 1 if base in order else len(order), lb)
    ax.legend([entries[lb] for lb in order], order, fontsize=7)


def _lines(ax, rows: pd.DataFrame, panel: Panel, rates: pd.DataFrame) -> None:
    for series, group in rows.groupby("series", sort=False):
        group = group.sort_values("x")
        x = group["x"].astype(float).to_numpy()
        y = group["value"].to_numpy()
        oom = group["oom"].astype(bool).to_numpy()
        label = SERIES_LABELS.get(series, series)
        (line,) = ax.plot(x[~oom], y[~oom], marker="o", ms=4, label=label,
                          color=COLORS.get(series))
        if panel.spread:
            lo, hi = (group[c].to_numpy(dtype=float)[~oom] for c in ("lo", "hi"))
            ax.errorbar(x[~oom], y[~oom], yerr=[y[~oom] - lo, hi - y[~oom]], fmt="none",
                        ecolor=line.get_color(), elinewidth=0.8, capsize=2)
        if oom.any():
            _oom_mark(ax, list(x[oom]), line.get_color(), label)
    if panel.figure == "fig17":
        ax.axhline(FIG17_THRESHOLD_MS, color="gray", ls="--", lw=1,
                   label=f"{FIG17_THRESHOLD_MS:g} ms/token (sustained)")
        _crossings(ax, rates)
    if panel.spread:  # one legend entry for every series' whiskers
        ax.errorbar([], [], yerr=[], fmt="none", ecolor="black", elinewidth=0.8, capsize=2,
                    label=spread_label(rows))
    _legend(ax)


def _crossings(ax, rates: pd.DataFrame) -> None:
    """Fig 17: a triangle on the threshold line at each series' interpolated crossing rate
    (``rates``: the sustainable-rate rows; bounds are not marked)."""
    for row in rates[rates["metric"] == RATE_CROSSING].itertuples(index=False):
        ax.plot([float(row.value)], [FIG17_THRESHOLD_MS], "v", ms=7, mec="black", mew=0.6,
                color=COLORS.get(row.series, "gray"), zorder=4)


def _bars(ax, rows: pd.DataFrame, panel: Panel) -> None:
    if panel.x == "variant":  # one bar per system
        labels = [SERIES_LABELS.get(s, s) for s in rows["series"]]
        ax.bar(range(len(rows)), rows["value"],
               color=[COLORS.get(s, "gray") for s in rows["series"]])
        ax.set_xticks(range(len(rows)), labels, rotation=20, fontsize=7, ha="right")
        if panel.spread:
            _spread(ax, rows)
        return
    xs = list(dict.fromkeys(sorted(rows["x"].tolist(), key=float)))
    series = list(dict.fromkeys(rows["series"]))
    width = 0.8 / max(1, len(series))
    any_oom = False
    for i, s in enumerate(series):
        group = rows[rows["series"] == s].set_index("x")
        color, label = COLORS.get(s, "#555555"), SERIES_LABELS.get(s, s)
        pos, heights, oom = [], [], []
        for j, x in enumerate(xs):
            if x not in group.index:
                continue
            at = j + (i - (len(series) - 1) / 2) * width
            if bool(group.loc[x, "oom"]):
                oom.append(at)
            else:
                pos.append(at)
                heights.append(group.loc[x, "value"])
        ax.bar(pos, heights, width, color=color, label=label)
        if oom:
            _oom_mark(ax, oom, color, label)
            any_oom = True
    ax.set_xticks(range(len(xs)), [f"{float(x):g}" for x in xs],  # 4.0 -> 4
                  fontsize=7 if len(xs) > 12 else None)
    if len(series) > 1 or any_oom:
        _legend(ax)


def _spread(ax, rows: pd.DataFrame) -> None:
    """Error bars from each bar's ``lo``/``hi`` (quantiles of its per-run values), with a legend
    entry saying what they are and over how many seeds."""
    value = rows["value"].to_numpy(dtype=float)
    lo, hi = rows["lo"].to_numpy(dtype=float), rows["hi"].to_numpy(dtype=float)
    ax.errorbar(range(len(rows)), value, yerr=[value - lo, hi - value], fmt="none",
                ecolor="black", elinewidth=1, capsize=4, label=spread_label(rows))
    ax.legend(fontsize=7, loc="upper right")


def spread_label(rows: pd.DataFrame) -> str:
    """What a spread panel's error bars are: the seeds its points average (when all alike)."""
    seeds = rows["seeds"].dropna() if "seeds" in rows else pd.Series(dtype=float)
    n = f" {int(seeds.min())}" if len(seeds) and seeds.min() == seeds.max() else ""
    q0, q1 = (round(100 * q) for q in SPREAD_QUANTILES)
    return f"mean of{n} seeds; error bars: {q0}th-{q1}th percentile"
