"""The paper's headline claims (experiments.md section 11) next to the simulated values.

Each claim is a ratio of two series at one x (or the mean ratio over a figure's x values):
how many times lower Parrot's latency is, or how many times higher its sustainable rate. A
simulated value within 15 % of the paper's counts as reproduced. A ratio that uses a point where
the simulated Parrot engine ran short of KV blocks (which the paper's engine did not survive) is
still computed, and flagged in the ``note`` column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

TOLERANCE = 0.15


@dataclass(frozen=True)
class Claim:
    """``slower / faster`` of ``metric`` in ``figure`` (at ``x``, or mean over x)."""

    figure: str
    text: str
    paper: float
    slower: str
    faster: str
    x: object = None
    panel: str = ""


C = Claim
CLAIMS = [
    C("fig11a", "chain summary, output 25: Parrot vs Baseline (vLLM)", 1.38, "baseline_vllm",
      "parrot", 25),
    C("fig11a", "chain summary, output 25: Parrot vs Baseline (HF)", 1.88, "baseline_hf",
      "parrot", 25),
    C("fig11b", "chain summary, mean over chunk sizes: Parrot vs Baseline (vLLM)", 1.2,
      "baseline_vllm", "parrot"),
    C("fig11b", "chain summary, mean over chunk sizes: Parrot vs Baseline (HF)", 1.66,
      "baseline_hf", "parrot"),
    C("fig12a", "chain summary with background at 3.5 req/s", 2.38, "baseline_vllm", "parrot",
      3.5),
    C("fig12b", "25 concurrent chain summaries, mean JCT", 1.68, "baseline_vllm", "parrot", 25),
    C("fig14a", "map-reduce, output 100", 2.37, "baseline_vllm", "parrot", 100),
    C("fig14b", "map-reduce, mean over chunk sizes", 2.0, "baseline_vllm", "parrot"),
    C("fig15", "Bing, batch 8: vs Baseline w/ Sharing", 1.1, "baseline_with_sharing", "parrot",
      8),
    C("fig15", "Bing, batch 64: vs Baseline w/ Sharing", 1.7, "baseline_with_sharing", "parrot",
      64),
    C("fig15", "Bing, batch 8: vs Baseline w/o Sharing", 1.8, "baseline_without_sharing",
      "parrot", 8),
    C("fig15", "Bing, batch 16: vs Baseline w/o Sharing", 2.4, "baseline_without_sharing",
      "parrot", 16),
    C("fig16a", "Bing per token, batch 32, output 200", 1.44, "baseline_with_sharing", "parrot",
      200),
    C("fig16a", "Bing per token, batch 32, output 800", 1.58, "baseline_with_sharing", "parrot",
      800),
    C("fig16b", "Bing per token, batch 64, output 100", 1.44, "baseline_with_sharing", "parrot",
      100),
    C("fig16b", "Bing per token, batch 64, output 480", 1.84, "baseline_with_sharing", "parrot",
      480),
    C("fig17", "GPTs sustainable rate: Parrot vs Baseline (vLLM)", 12.0, "parrot",
      "baseline_vllm", panel="sustainable rate"),
    C("fig17", "GPTs sustainable rate: Parrot vs Parrot w/o Scheduling", 3.0, "parrot",
      "parrot_without_affinity", panel="sustainable rate"),
    C("fig17", "GPTs sustainable rate: Parrot vs Parrot w/ PagedAttention", 2.4, "parrot",
      "parrot_paged_attention", panel="sustainable rate"),
    C("fig18a", "MetaGPT, 16 files: vs Baseline (Latency)", 11.7, "baseline_latency", "parrot",
      16),
    C("fig18a", "MetaGPT, 16 files: vs Baseline (Throughput)", 2.45, "baseline_throughput",
      "parrot", 16),
    C("fig18a", "MetaGPT, 16 files: shared-prefix kernel vs PagedAttention", 1.2,
      "parrot_paged_attention", "parrot", 16),
    # The paper: "Parrot achieves a 2.45x speedup over the throughput-centric baseline ... 2.35x
    # comes from the prefix sharing and an additional 1.2x from the kernel ... when the number of
    # files is 16" (parrot-seed.txt, Fig 18a; experiments.md section 11). So 2.35x is one part of
    # the 2.45x over Baseline (Throughput) at 16 files: sharing without the kernel, i.e. Baseline
    # (Throughput) vs Parrot w/ PagedAttention (Parrot's sharing, vLLM's kernel), and the 1.2x is
    # Parrot w/ PagedAttention vs Parrot (the claim above). It is not Parrot w/o Sharing vs w/
    # PagedAttention: w/o Sharing does not run at 16 files (out of KV blocks in the artifact and
    # in the paper: "would hit the GPU memory ceiling"). The paper's parts do not multiply to its
    # whole (2.35 x 1.2 = 2.82, not 2.45); each is compared as the paper states it.
    C("fig18a", "MetaGPT, 16 files: prefix sharing (Parrot w/ PagedAttention) vs Baseline "
      "(Throughput)", 2.35, "baseline_throughput", "parrot_paged_attention", 16),
    C("fig19", "chat normalized latency vs Baseline (Latency)", 5.5, "baseline_latency",
      "parrot", panel="chat normalized latency"),
    C("fig19", "chat normalized latency vs Baseline (Throughput)", 1.23, "baseline_throughput",
      "parrot", panel="chat normalized latency"),
    C("fig19", "chat decode time vs Baseline (Latency)", 1.0, "baseline_latency", "parrot",
      panel="chat decode time"),
    C("fig19", "chat decode time vs Baseline (Throughput)", 1.72, "baseline_throughput",
      "parrot", panel="chat decode time"),
    C("fig19", "map-reduce JCT vs Baseline (Latency)", 3.7, "baseline_latency", "parrot",
      panel="map-reduce JCT"),
    C("fig19", "map-reduce JCT vs Baseline (Throughput)", 1.05, "baseline_throughput", "parrot",
      panel="map-reduce JCT"),
]


def _points(tidy: pd.DataFrame, claim: Claim, series: str) -> tuple[pd.Series, pd.Series]:
    rows = tidy[(tidy["figure"] == claim.figure) & (tidy["panel"] == claim.panel)
                & (tidy["series"] == series)]
    rows = rows.set_index(rows["x"].astype(str))
    return rows["value"], rows["oom"].astype(bool)


def evaluate(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: paper value, simulated value, and whether it is within 15 %."""
    rows = []
    for c in CLAIMS:
        (slow, slow_oom), (fast, fast_oom) = _points(tidy, c, c.slower), _points(tidy, c, c.faster)
        if c.figure == "fig19":  # one bar per system: compare the two systems' bars
            keys_slow, keys_fast = [c.slower], [c.faster]
        elif c.x is None:
            keys_slow = keys_fast = list(slow.index.intersection(fast.index))
        else:
            keys_slow = keys_fast = [str(c.x)]
        pairs = [(a, b) for a, b in zip(keys_slow, keys_fast, strict=True)
                 if a in slow.index and b in fast.index]
        sim = float(np.mean([slow[a] / fast[b] for a, b in pairs])) if pairs else np.nan
        oom = any(slow_oom[a] or fast_oom[b] for a, b in pairs)
        within = bool(np.isfinite(sim) and abs(sim / c.paper - 1) <= TOLERANCE)
        rows.append({"figure": c.figure, "claim": c.text, "paper": c.paper,
                     "simulated": round(sim, 3) if np.isfinite(sim) else np.nan,
                     "within_15pct": within,
                     "note": "simulated Parrot engine ran short of KV blocks" if oom else ""})
    return pd.DataFrame(rows)
