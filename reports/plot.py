"""Draw one paper figure from its tidy rows (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from parrotsim.reports.spec import FIG17_THRESHOLD_MS, SERIES_LABELS, Panel  # noqa: E402

COLORS = {
    "parrot": "#d62728", "parrot_paged_attention": "#ff7f0e", "parrot_without_sharing": "#bcbd22",
    "parrot_without_affinity": "#e377c2", "baseline_vllm": "#1f77b4", "baseline_hf": "#7f7f7f",
    "baseline_with_sharing": "#1f77b4", "baseline_without_sharing": "#17becf",
    "baseline_latency": "#1f77b4", "baseline_throughput": "#2ca02c",
}


def draw(figure: str, panels: list[Panel], tidy: pd.DataFrame, out: Path) -> Path:
    """Write ``out/<figure>.png`` with one subplot per panel."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        rows = tidy[(tidy["figure"] == figure) & (tidy["panel"] == panel.panel)]
        if panel.kind == "bar":
            _bars(ax, rows, panel)
        else:
            _lines(ax, rows, panel)
        ax.set_xlabel(panel.x_name)
        ax.set_ylabel(panel.ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if panel.panel:
            ax.set_title(panel.panel, fontsize=10)
    fig.suptitle(figure, fontsize=11)
    fig.tight_layout()
    path = out / f"{figure}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _lines(ax, rows: pd.DataFrame, panel: Panel) -> None:
    for series, group in rows.groupby("series", sort=False):
        group = group.sort_values("x")
        x = group["x"].astype(float).to_numpy()
        y = group["value"].to_numpy()
        oom = group["oom"].astype(bool).to_numpy()
        color = COLORS.get(series)
        ax.plot(x[~oom], y[~oom], marker="o", ms=4, label=SERIES_LABELS.get(series, series),
                color=color)
        if oom.any():
            ax.plot(x[oom], np.zeros(oom.sum()), "x", color="red", ms=9, mew=2)
    if panel.figure == "fig17":
        ax.axhline(FIG17_THRESHOLD_MS, color="gray", ls="--", lw=1)
        ax.set_ylim(0, 300)
    ax.legend(fontsize=7)


def _bars(ax, rows: pd.DataFrame, panel: Panel) -> None:
    if panel.x == "variant":  # one bar per system
        labels = [SERIES_LABELS.get(s, s) for s in rows["series"]]
        ax.bar(range(len(rows)), rows["value"],
               color=[COLORS.get(s, "gray") for s in rows["series"]])
        ax.set_xticks(range(len(rows)), labels, rotation=20, fontsize=7, ha="right")
        return
    xs = list(dict.fromkeys(sorted(rows["x"].tolist(), key=float)))
    series = list(dict.fromkeys(rows["series"]))
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        group = rows[rows["series"] == s].set_index("x")
        for j, x in enumerate(xs):
            if x not in group.index:
                continue
            pos = j + (i - (len(series) - 1) / 2) * width
            if bool(group.loc[x, "oom"]):
                ax.plot(pos, 0, "x", color="red", ms=9, mew=2)
                continue
            ax.bar(pos, group.loc[x, "value"], width, color=COLORS.get(s, "#555555"),
                   label=SERIES_LABELS.get(s, s) if j == 0 else None)
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    if len(series) > 1:
        ax.legend(fontsize=7)
