"""Skewed decode batches on the paged split-KV kernel (GPU): the longest sequence's critical path.

    python -m parrotsim.kernels.bench_skew --out skew.csv            # H200, LLaMA-7B heads
    TRITON_INTERPRET=1 python -m parrotsim.kernels.bench_skew --out s.csv --tiny   # CPU check

One layer of :func:`~parrotsim.kernels.paged_decode.paged_decode_attention` as the calibration
calls it (``calibrate/sections.py``: private pages, tables as wide as the longest sequence, the
kernel's own split and tile choice), random bf16 KV, CUDA-graph replays with the L2 flushed
before each, CUDA events (:class:`~parrotsim.kernels.bench_util.Timer`); median, p20 and p80
microseconds per case. Rows (``kind``):

* ``skew``: ``n`` sequences, ``k`` of them ``longest`` tokens, the rest ``short``;
* ``mean``: ``n`` sequences of that batch's mean context (what the cost model charged before
  ``decode_paged_waves``);
* ``long``: ``n`` sequences of ``longest`` (the batch as slow as its longest);
* ``knee``: ``n`` sequences of ``KNEE_CONTEXT`` tokens with one split forced: ``n * kv_heads``
  programs, so the time steps up where they pass the GPU's slots (``sms * programs_per_sm``).

``OUT.json`` holds the device's SM count and the compiled kernel's registers per thread and
shared memory, and the programs per SM they allow (:mod:`parrotsim.kernels.occupancy`): the two
numbers ``curves.decode_paged_waves`` needs. ``python -m parrotsim.calibrate.replay.skew --bench OUT``
compares the rows with the cost model (no GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

import torch
import triton

from parrotsim.kernels._common import PAGE_SIZE, num_sms
from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer
from parrotsim.kernels.occupancy import SM_LIMITS, paged_occupancy
from parrotsim.kernels.paged_decode import choose_config, paged_decode_attention

FIELDS = ["kind", "n", "k_long", "longest", "short", "kv_tokens", "max_ctx", "splits",
          "programs", "us_median", "us_p20", "us_p80"]
BATCHES = (2, 4, 8, 12, 16, 24, 32, 48, 64)
LONGEST = (1024, 2048, 4096, 8192)
SHORT_SHARE = 8  # short sequences hold longest / 8 tokens
KNEE_CONTEXT = 2048
KNEE_BATCHES = tuple(range(1, 25)) + (28, 32)


def cases(batches: tuple[int, ...], longest: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """(n, k long sequences, longest, short) of the skew grid: one long sequence, and a
    quarter of the batch long where that is more than one."""
    out = []
    for n in batches:
        for long in longest:
            for k in sorted({1, max(1, n // 4)}):
                if k < n:
                    out.append((n, k, long, max(PAGE_SIZE, long // SHORT_SHARE)))
    return out


class Runner:
    """Times one layer's paged attention over batches of given contexts."""

    def __init__(self, heads: int, kv_heads: int, head_dim: int, device: torch.device,
                 reps: int) -> None:
        self.heads, self.kv_heads, self.d, self.dev, self.reps = heads, kv_heads, head_dim, \
            device, reps
        self.kv = RandomKV(device)
        self.timer = Timer(device) if device.type == "cuda" else CpuTimer()

    def time(self, ctxs: list[int], splits: int | None = None) -> tuple[float, float, float, int]:
        """(median, p20, p80 microseconds, splits) of one paged-attention call over ``ctxs``."""
        b, width = len(ctxs), max(-(-c // PAGE_SIZE) for c in ctxs)
        k, v = self.kv.cache(b * width + 1, self.kv_heads, self.d)
        q = torch.randn(b, self.heads, self.d, dtype=torch.bfloat16, device=self.dev)
        bt = torch.arange(b * width, dtype=torch.int32, device=self.dev).view(b, width)
        lens = torch.tensor(ctxs, dtype=torch.int32, device=self.dev)
        out = torch.empty_like(q)
        lse = torch.empty(b, self.heads, dtype=torch.float32, device=self.dev)
        if splits is None:
            splits = choose_config(b, self.kv_heads, self.heads // self.kv_heads,
                                   width * PAGE_SIZE, self.dev).splits
            kw = {}
        else:
            kw = {"num_splits": splits}

        def op():
            return paged_decode_attention(q, k, v, bt, lens, out=out, lse=lse, **kw)
        if isinstance(self.timer, CpuTimer):
            us = self.timer(op)
            return us, us, us, splits
        runs = self.timer.replays(self.timer.prepare(op), self.reps)
        q5 = statistics.quantiles(runs, n=5)
        return statistics.median(runs), q5[0], q5[3], splits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="CSV (OUT.json beside it)")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--tiny", action="store_true", help="CPU check under TRITON_INTERPRET=1: "
                    "2 heads of 16, batches 2-4, contexts of 64-128 tokens")
    args = ap.parse_args(argv)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batches, longest, knee = BATCHES, LONGEST, KNEE_BATCHES
    knee_ctx = KNEE_CONTEXT
    if args.tiny:
        args.heads, args.kv_heads, args.head_dim = 2, 2, 16
        batches, longest, knee, knee_ctx = (2, 4), (64, 128), (1, 2, 3), 64
    meta: dict[str, object] = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda"
                               else "cpu", "sms": num_sms(dev), "torch": torch.__version__,
                               "triton": triton.__version__,
                               "heads": args.heads, "kv_heads": args.kv_heads,
                               "head_dim": args.head_dim}
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        cap = (p.major, p.minor)
        blocks = SM_LIMITS.get(cap, SM_LIMITS[(9, 0)])["blocks"]  # torch does not report it
        limits = {"regs": p.regs_per_multiprocessor, "smem": p.shared_memory_per_multiprocessor,
                  "threads": p.max_threads_per_multi_processor, "blocks": blocks}
    else:
        cap, limits = (9, 0), SM_LIMITS[(9, 0)]
    if os.environ.get("TRITON_INTERPRET") != "1":  # the interpreter cannot compile for a GPU
        meta["occupancy"] = paged_occupancy(args.kv_heads, args.heads, args.head_dim, cap,
                                            limits)
    meta["limits"] = limits
    args.out.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    print(json.dumps(meta), flush=True)
    run = Runner(args.heads, args.kv_heads, args.head_dim, dev, args.reps)
    log = CsvLog(args.out, FIELDS)

    def add(kind: str, ctxs: list[int], k: int, long: int, short: int,
            splits: int | None = None) -> None:
        med, p20, p80, s = run.time(ctxs, splits)
        log.add(kind=kind, n=len(ctxs), k_long=k, longest=long, short=short,
                kv_tokens=sum(ctxs), max_ctx=max(ctxs), splits=s,
                programs=len(ctxs) * args.kv_heads * s, us_median=med, us_p20=p20, us_p80=p80)
    for n in knee:
        add("knee", [knee_ctx] * n, 0, knee_ctx, knee_ctx, splits=1)
    for n, k, long, short in cases(batches, longest):
        skew = [long] * k + [short] * (n - k)
        mean = round(sum(skew) / n)
        add("skew", skew, k, long, short)
        add("mean", [mean] * n, k, long, short)
        add("long", [long] * n, k, long, short)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
