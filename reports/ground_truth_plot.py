"""The ground-truth parity plot: each printed artifact run against its simulated value.

Log-log, simulated (y) against real (x) per point of :func:`parrotsim.reports.ground_truth.compare`,
one marker per figure, one colour per GPU; the diagonal is a perfect match and the grey band
+-25 %. Points below the diagonal are simulated too fast. Seconds and ms-per-token values share
the axes (each point is compared only with itself).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from parrotsim.reports.ground_truth import A100, A6000  # noqa: E402

MARKERS = {"fig14": "o", "fig15": "s", "fig16": "^", "fig17": "D", "fig18": "v", "fig19": "P"}
GPU_COLORS = {A100: "#1f77b4", A6000: "#d62728"}
BAND = 0.25


def draw_parity(table: pd.DataFrame, out: Path) -> Path:
    """Write ``out`` (PNG) from the comparison ``table``; returns its path."""
    fig, ax = plt.subplots(figsize=(6.2, 5.4))
    lo = float(min(table["real"].min(), table["simulated"].min())) / 1.5
    hi = float(max(table["real"].max(), table["simulated"].max())) * 1.5
    line = np.geomspace(lo, hi, 50)
    ax.fill_between(line, line * (1 - BAND), line * (1 + BAND), color="#eee", zorder=0,
                    label=f"within {BAND:.0%}")
    ax.plot(line, line, color="#888", lw=1, zorder=1)
    for (figure, gpu), rows in table.groupby(["figure", "gpu"], sort=True):
        err = rows["error_pct"].abs().median()
        ax.scatter(rows["real"], rows["simulated"], marker=MARKERS.get(figure, "o"), s=30,
                   color=GPU_COLORS.get(gpu, "#555"), alpha=0.8, zorder=2,
                   label=f"{figure} ({gpu}): median |error| {err:.0f} %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("the artifact's printed run (s, or ms per token)")
    ax.set_ylabel("simulated (same unit)")
    median = table["error_pct"].abs().median()
    ax.set_title(f"Simulated vs the artifact's own runs: {len(table)} points, "
                 f"median |error| {median:.1f} %", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
