"""How much of a fork group's shared prefix the paged kernel reads from L2 instead of HBM.

Fig 18's artifact run (MetaGPT, 16 files, A100, LLaMA-13B) took 248.8 s with Parrot's engine on
the paged kernel and 214.5 s with its shared-prefix kernel: in rounds of 16 sequences forking a
~5,000-token prefix, the paged kernel over the shared pages cost about 4 ms a step more than
reading the prefix once. The simulator prices it from the H200's measured grid (paged over
shared pages saves 30-34 % against private pages, kernels/results/session9), which puts it 26
ms a step more. One explanation: programs of different sequences that are resident at once
walk the same prefix pages at about the same time, so all but the first read hit in L2 - more
of them the more programs fit on the GPU at once. The Triton no-split kernel in session 9 (64
tokens a step, 4 warps) saved only 13-18 %.

This sweeps the no-split kernel's tile (tokens a step, warps, stages: how many programs are
resident at once) and the split-KV kernel over B sequences sharing a P-token prefix (whole pages)
plus S private tokens each, against B private sequences of P + S tokens, on LLaMA-13B heads (40
KV heads, head dim 128, one layer), and sets both against the bytes floors: the prefix read once
plus the suffixes (shared), every sequence's whole context (private); ``prefix_reads_equiv`` is
how many prefix reads at the floor rate the shared time pays for once the suffixes are read (1:
once, B: once a sequence; an upper bound, as the kernel's shortfall from the floor counts too).
Writes ``l2_dedup.csv``.
GPU only::

    python -m parrotsim.kernels.bench_l2_dedup --out DIR [--budget-s 90]
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels.bench_cases import private_batch, shared_batch, tok_bytes
from parrotsim.kernels.bench_util import CsvLog, RandomKV, Timer, measure_bandwidth
from parrotsim.kernels.paged_decode import paged_decode_attention

HEADS, HEAD_DIM = 40, 128  # LLaMA-13B: query heads = KV heads
PREFIX, SUFFIX = 4864, 256  # Fig 18's reviewer rounds: ~4,860 cached tokens, ~350 new
BATCHES = (16, 8, 32, 64)
#: no-split tiles (tokens a step, warps, stages), the session-9 emulation of vLLM 0.1.4 first
TILES = [(64, 4, 1), (16, 1, 1), (16, 2, 1), (32, 2, 1), (32, 4, 1), (64, 2, 1), (64, 4, 2),
         (128, 4, 1), (128, 8, 1)]
FIELDS = ["kernel", "batch", "prefix", "suffix", "block_n", "warps", "stages", "shared_us",
          "private_us", "shared_over_private", "shared_floor_us", "private_floor_us",
          "shared_pct_of_floor", "prefix_reads_equiv"]


def floors(b: int, bw_tbs: float) -> tuple[float, float]:
    """Microseconds to stream the prefix once plus the suffixes, and every whole context."""
    per_tok = tok_bytes(HEADS, HEAD_DIM)
    shared = (PREFIX + b * SUFFIX) * per_tok / (bw_tbs * 1e6)
    private = b * (PREFIX + SUFFIX) * per_tok / (bw_tbs * 1e6)
    return shared, private


def run(out: Path, budget_s: float, reps: int) -> None:
    dev = torch.device("cuda")
    timer, kv = Timer(dev), RandomKV(dev)
    bw = measure_bandwidth(timer, dev)["floor_TBs"]
    log = CsvLog(out / "l2_dedup.csv", FIELDS)
    t0 = time.time()
    for b in BATCHES:
        sb = shared_batch(kv, PREFIX, [SUFFIX] * b, HEADS, 1, HEAD_DIM)
        pb = private_batch(kv, [PREFIX + SUFFIX] * b, HEADS, 1, HEAD_DIM)
        shared = (sb.q, sb.k, sb.v, *sb.paged_tables())
        private = (pb.q, pb.k, pb.v, pb.tables, pb.lens)
        fs, fp = floors(b, bw)
        configs = [("no_split", dict(num_splits=1, block_n=n, num_warps=w, num_stages=s))
                   for n, w, s in TILES] + [("split_kv", {})]
        for kernel, kw in configs:
            if time.time() - t0 > budget_s:
                print(f"budget {budget_s:.0f}s reached", flush=True)
                return
            try:
                sh = timer(partial(paged_decode_attention, *shared, **kw), reps=reps)
                pr = timer(partial(paged_decode_attention, *private, **kw), reps=reps)
            except Exception as exc:  # a tile that does not compile: note it, go on
                print(f"{kernel} {kw} B={b}: {exc!r}", flush=True)
                continue
            # prefix reads at the floor rate the shared time pays for, after the suffixes: 1 =
            # read once, b = once a sequence (the kernel's own shortfall counts as reads too)
            prefix_us = fp * PREFIX / (PREFIX + SUFFIX) / b
            reads = max(0.0, (sh - (fs - prefix_us)) / prefix_us) if prefix_us else float("nan")
            log.add(kernel=kernel, batch=b, prefix=PREFIX, suffix=SUFFIX,
                    block_n=kw.get("block_n", ""), warps=kw.get("num_warps", ""),
                    stages=kw.get("num_stages", ""), shared_us=sh, private_us=pr,
                    shared_over_private=sh / pr, shared_floor_us=fs, private_floor_us=fp,
                    shared_pct_of_floor=100 * fs / sh, prefix_reads_equiv=reads)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=90.0)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    run(args.out, args.budget_s, args.reps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
