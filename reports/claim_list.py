"""The paper's headline claims (experiments.md section 11): which two series of which figure
each compares, and the paper's ratio.

A claim reads ``slower / faster``: how many times lower Parrot's latency is (or, in Fig 17, how
many times higher its sustainable rate: ``slower`` is then the series with the higher rate), at
one x or as the mean ratio over a figure's x values. :func:`parrotsim.reports.claims.evaluate`
sets the simulated ratio beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from parrotsim.reports.derive import SUSTAINABLE_PANEL


@dataclass(frozen=True)
class Claim:
    """``slower / faster`` of ``metric`` in ``figure`` (at ``x``, or mean over x); ``id`` keys
    the claim's hand-written note in ``claim_notes.NOTES``."""

    id: str
    figure: str
    text: str
    paper: float
    slower: str
    faster: str
    x: object = None
    panel: str = ""


C = Claim
CLAIMS = [
    C("fig11a.vllm_out25", "fig11a", "chain summary, output 25: Parrot vs Baseline (vLLM)", 1.38,
      "baseline_vllm", "parrot", 25),
    C("fig11a.hf_out25", "fig11a", "chain summary, output 25: Parrot vs Baseline (HF)", 1.88,
      "baseline_hf", "parrot", 25),
    C("fig11b.vllm_mean", "fig11b",
      "chain summary, mean over chunk sizes: Parrot vs Baseline (vLLM)", 1.2, "baseline_vllm",
      "parrot"),
    C("fig11b.hf_mean", "fig11b", "chain summary, mean over chunk sizes: Parrot vs Baseline (HF)",
      1.66, "baseline_hf", "parrot"),
    C("fig12a.bg35", "fig12a", "chain summary with background at 3.5 req/s", 2.38,
      "baseline_vllm", "parrot", 3.5),
    C("fig12b.apps25", "fig12b", "25 concurrent chain summaries, mean JCT", 1.68, "baseline_vllm",
      "parrot", 25),
    C("fig14a.out100", "fig14a", "map-reduce, output 100", 2.37, "baseline_vllm", "parrot", 100),
    C("fig14b.mean", "fig14b", "map-reduce, mean over chunk sizes", 2.0, "baseline_vllm",
      "parrot"),
    C("fig15.shared_b8", "fig15", "Bing, batch 8: vs Baseline w/ Sharing", 1.1,
      "baseline_with_sharing", "parrot", 8),
    C("fig15.shared_b64", "fig15", "Bing, batch 64: vs Baseline w/ Sharing", 1.7,
      "baseline_with_sharing", "parrot", 64),
    C("fig15.noshare_b8", "fig15", "Bing, batch 8: vs Baseline w/o Sharing", 1.8,
      "baseline_without_sharing", "parrot", 8),
    C("fig15.noshare_b16", "fig15", "Bing, batch 16: vs Baseline w/o Sharing", 2.4,
      "baseline_without_sharing", "parrot", 16),
    C("fig16a.out200", "fig16a", "Bing per token, batch 32, output 200", 1.44,
      "baseline_with_sharing", "parrot", 200),
    C("fig16a.out800", "fig16a", "Bing per token, batch 32, output 800", 1.58,
      "baseline_with_sharing", "parrot", 800),
    C("fig16b.out100", "fig16b", "Bing per token, batch 64, output 100", 1.44,
      "baseline_with_sharing", "parrot", 100),
    C("fig16b.out480", "fig16b", "Bing per token, batch 64, output 480", 1.84,
      "baseline_with_sharing", "parrot", 480),
    # Fig 17, the paper: Parrot sustains 12x the baseline's rate; "when Parrot's affinity
    # scheduling policy is disabled ... Parrot sustains only 3x higher request rates compared to
    # the baseline" (so 3x is w/o Scheduling vs the baseline; Parrot vs w/o Scheduling, 12/3 = 4,
    # is derived, not stated, and left out); the kernel gives 2.4x over w/ PagedAttention.
    C("fig17.vs_vllm", "fig17", "GPTs sustainable rate: Parrot vs Baseline (vLLM)", 12.0,
      "parrot", "baseline_vllm", panel=SUSTAINABLE_PANEL),
    C("fig17.wo_sched_vs_vllm", "fig17",
      "GPTs sustainable rate: Parrot w/o Scheduling vs Baseline (vLLM)", 3.0,
      "parrot_without_affinity", "baseline_vllm", panel=SUSTAINABLE_PANEL),
    C("fig17.vs_paged", "fig17", "GPTs sustainable rate: Parrot vs Parrot w/ PagedAttention", 2.4,
      "parrot", "parrot_paged_attention", panel=SUSTAINABLE_PANEL),
    C("fig18a.vs_latency", "fig18a", "MetaGPT, 16 files: vs Baseline (Latency)", 11.7,
      "baseline_latency", "parrot", 16),
    C("fig18a.vs_throughput", "fig18a", "MetaGPT, 16 files: vs Baseline (Throughput)", 2.45,
      "baseline_throughput", "parrot", 16),
    C("fig18a.kernel", "fig18a", "MetaGPT, 16 files: shared-prefix kernel vs PagedAttention", 1.2,
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
    C("fig18a.sharing", "fig18a",
      "MetaGPT, 16 files: prefix sharing (Parrot w/ PagedAttention) vs Baseline (Throughput)",
      2.35, "baseline_throughput", "parrot_paged_attention", 16),
    C("fig19.chat_norm_vs_latency", "fig19", "chat normalized latency vs Baseline (Latency)", 5.5,
      "baseline_latency", "parrot", panel="chat normalized latency"),
    C("fig19.chat_norm_vs_throughput", "fig19",
      "chat normalized latency vs Baseline (Throughput)", 1.23, "baseline_throughput", "parrot",
      panel="chat normalized latency"),
    C("fig19.decode_vs_latency", "fig19", "chat decode time vs Baseline (Latency)", 1.0,
      "baseline_latency", "parrot", panel="chat decode time"),
    C("fig19.decode_vs_throughput", "fig19", "chat decode time vs Baseline (Throughput)", 1.72,
      "baseline_throughput", "parrot", panel="chat decode time"),
    C("fig19.mr_vs_latency", "fig19", "map-reduce JCT vs Baseline (Latency)", 3.7,
      "baseline_latency", "parrot", panel="map-reduce JCT"),
    C("fig19.mr_vs_throughput", "fig19", "map-reduce JCT vs Baseline (Throughput)", 1.05,
      "baseline_throughput", "parrot", panel="map-reduce JCT"),
]
