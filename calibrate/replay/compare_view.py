"""How :mod:`parrotsim.calibrate.replay.compare` shows its rows: the printed table (metrics
as rows, runs as columns) and the scatter plot of simulated vs real per-request latency."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def plot(lat: pd.DataFrame, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for name, g in lat.groupby("run", sort=False):
        ax.scatter(g["e2e_real"], g["e2e_sim"], s=6, alpha=0.6, label=name)
    lo = max(1e-3, float(lat[["e2e_real", "e2e_sim"]].min().min()))
    hi = float(lat[["e2e_real", "e2e_sim"]].max().max())
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="sim = real")
    ax.set(xscale="log", yscale="log", xlabel="real E2E latency (s)",
           ylabel="simulated E2E latency (s)", title="per request: simulator vs H200 replay")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


#: (label, column, scale, format) of the printed table; percentages are of the real value
SHOWN = [
    ("apps compared", "apps", 1, "{:.0f}"),
    ("app latency |sim-real|/real median/mean %", ("app_median_err", "app_mean_err"), 100,
     "{:.1f}/{:.1f}"),
    ("app latency mean real/sim (s), error %", ("app_real_mean", "app_sim_mean",
     "app_mean_bias"), (1, 1, 100), "{:.3f}/{:.3f}, {:+.1f}"),
    ("normalized latency real/sim (ms/token), error %", ("norm_real", "norm_sim", "norm_bias"),
     (1e3, 1e3, 100), "{:.2f}/{:.2f}, {:+.1f}"),
    ("requests compared", "requests", 1, "{:.0f}"),
    *[(f"{m.upper()} |sim-real|/real median/mean/p90 %", (f"{m}_median_err", f"{m}_mean_err",
       f"{m}_p90_err"), 100, "{:.1f}/{:.1f}/{:.1f}") for m in ("e2e", "ttft", "tpot")],
    *[(f"{m.upper()} mean real/sim ({u}), error of mean %",
       (f"{m}_real_mean", f"{m}_sim_mean", f"{m}_mean_bias"), (k, k, 100),
       "{:.3f}/{:.3f}, {:+.1f}") for m, u, k in (("e2e", "s", 1), ("ttft", "ms", 1e3),
                                                 ("tpot", "ms", 1e3))],
    *[(f"{m.upper()} p90 real/sim ({u}), error of p90 %",
       (f"{m}_real_p90", f"{m}_sim_p90", f"{m}_p90_bias"), (k, k, 100),
       "{:.3f}/{:.3f}, {:+.1f}") for m, u, k in (("e2e", "s", 1), ("ttft", "ms", 1e3),
                                                 ("tpot", "ms", 1e3))],
    ("iterations real/sim", ("real_iterations", "sim_iterations"), 1, "{:.0f}/{:.0f}"),
    ("busy s real/sim", ("real_busy_s", "sim_busy_s"), 1, "{:.1f}/{:.1f}"),
    ("preemptions real/sim", ("real_preemptions", "sim_preemptions"), 1, "{:.0f}/{:.0f}"),
    ("peak KV blocks real/sim", ("real_peak_kv_blocks", "sim_peak_kv_blocks"), 1,
     "{:.0f}/{:.0f}"),
    *[(f"{n} iters: n, wall/GPU/model ms", (f"iter_{n}_n", f"iter_{n}_wall_ms",
       f"iter_{n}_gpu_ms", f"iter_{n}_model_ms"), 1, "{:.0f}, {:.3f}/{:.3f}/{:.3f}")
      for n in ("decode", "prefill")],
    *[(f"{n} iters: model vs wall, GPU, cycle median %", (
        f"iter_{n}_model_vs_wall_median_err", f"iter_{n}_model_vs_gpu_median_err",
        f"iter_{n}_model_vs_cycle_median_err"), 100, "{:.1f}, {:.1f}, {:.1f}")
      for n in ("all", "decode", "prefill")],
    ("host ms per iteration decode/prefill", ("iter_decode_host_ms", "iter_prefill_host_ms"),
     1, "{:.3f}/{:.3f}"),
    ("sum model / sum wall - 1 %", "iter_model_vs_wall_total_bias", 100, "{:+.1f}"),
    ("order-matched iterations, median err %", ("iter_matched", "iter_matched_median_err"),
     (1, 100), "{:.0f}, {:.1f}"),
]


def format_table(rows: list[dict]) -> str:
    out = {}
    for label, cols, scale, fmt in SHOWN:
        cols = (cols,) if isinstance(cols, str) else cols
        scales = scale if isinstance(scale, tuple) else (scale,) * len(cols)
        out[label] = [fmt.format(*(r[c] * k for c, k in zip(cols, scales, strict=True)))
                      for r in rows]
    return pd.DataFrame(out, index=[r["run"] for r in rows]).T.to_string()
