"""What-if: the vLLM baseline pays vLLM 0.1.4's per-step detokenization (not shipped).

    python bench/detokenize_whatif.py A B [--figures fig17,fig19]

Charges every running sequence of a vLLM engine ``A + B * (tokens generated so far + 1)``
seconds per iteration on the engine's thread (``calibrate/measurements/vllm_detokenize``:
A, B = 2.97e-6, 0.2587e-6 with transformers 4.32, 13.56e-6, 6.598e-6 with 4.35), and prints
Fig 17's Baseline (vLLM) and Fig 19's baselines (5 seeds) against the artifact's runs, as
``bench/artifact_runs.py`` does. The cost is wired in by wrapping the vLLM policy's
``schedule`` / ``host_time`` and ``CostModel.decode_stretch`` with fast-forward off (every
decode iteration costed alone), so the shipped model is untouched; ``0 0`` reproduces the
shipped numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import artifact_runs  # noqa: E402

from parrotsim.policies.engine.vllm import VllmPolicy  # noqa: E402
from parrotsim.sim.model.costmodel import CostModel  # noqa: E402


def install(a: float, b: float) -> None:
    """Wrap the vLLM policy and the cost model so that vLLM iterations pay the cost."""
    last: dict = {}
    schedule, host_time, decode_stretch = (VllmPolicy.schedule, VllmPolicy.host_time,
                                           CostModel.decode_stretch)

    def cost(seqs) -> float:
        return sum(a + b * (s.generated + 1) for s in seqs)

    def scheduled(self, state):
        last["batch"] = batch = schedule(self, state)
        return batch

    def host(self, batch):
        return host_time(self, batch) + cost(s for s, _ in batch.prefills)

    def stretch(self, *args, **kwargs):
        st = decode_stretch(self, *args, **kwargs)
        batch = last.pop("batch", None)
        if batch is not None and batch.decodes and not batch.prefills:
            extra = cost(batch.decodes)
            st.first += extra
            st._a0 += extra
            st.fixed += extra
        return st

    VllmPolicy.schedule, VllmPolicy.host_time = scheduled, host
    CostModel.decode_stretch = stretch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=float, help="seconds per sequence per iteration")
    ap.add_argument("b", type=float, help="seconds per generated token per sequence per iteration")
    ap.add_argument("--figures", default="fig17,fig19")
    args = ap.parse_args()
    install(args.a, args.b)
    overrides = [(["cluster", "fast_forward"], False)]  # one decode iteration per stretch
    figures = args.figures.split(",")
    if "fig17" in figures:
        real = pd.read_csv(artifact_runs.DATA / "fig17_normalized_latency.csv")
        want = {(r.series, float(r.rate)): r.normalized_latency_ms for r in real.itertuples()
                if r.series == "baseline_vllm"}
        artifact_runs.compare("Fig 17 Baseline (vLLM), normalized latency (ms/token)",
                              "paper/fig17", want, "workload.rate", "normalized_latency",
                              overrides, False)
    if "fig19" in figures:
        artifact_runs.fig19(overrides, 5, False)


if __name__ == "__main__":
    main()
