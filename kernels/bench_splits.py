"""Paged decode kernel: time against the KV split count, to see what the split choice leaves.

    python -m parrotsim.kernels.bench_splits --out splits.csv [--groups 1,4,8]
        [--batches 32,48,100,200] [--contexts 500,3000,12000] [--reps 10] [--budget-s 200]

For each (G, batch, context) of uniform private batches (Hq = 32, D = 128), the paged kernel
(:func:`parrotsim.kernels.paged_decode.paged_decode_attention`) with the default 64 x 4 warps x
3 stages tile at every split count of :data:`SPLITS` that leaves each split >= 64 tokens, and
torch SDPA on the contiguous gather of the same pages. Each row: ``us``, the bytes floor
(K/V + q/o bytes over the streaming rate measured in the run), ``pct_floor``, ``programs``
(batch x KV heads x splits) and ``waves`` = programs / SMs. The split count the untuned
heuristic (:func:`~parrotsim.kernels.paged_decode.choose_num_splits`) and the tuning table
(:func:`~parrotsim.kernels.paged_decode.choose_config`) pick are marked, so the table says how
much a better choice would buy at each shape. Off the GPU it runs tiny shapes under the Triton
interpreter (a check of the driver, not a measurement).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from parrotsim.kernels._common import num_sms
from parrotsim.kernels.bench_cases import private_batch, tok_bytes
from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer, measure_bandwidth
from parrotsim.kernels.paged_decode import (
    choose_config,
    choose_num_splits,
    paged_decode_attention,
)

SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32)
FIELDS = ["G", "B", "P", "splits", "programs", "waves", "us", "floor_us", "pct_floor",
          "heuristic", "table", "sdpa_us", "bw_TBs"]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def sweep_shape(timer, kv: RandomKV, g: int, b: int, p: int, bw: float, reps: int,
                hq: int, d: int, log: CsvLog) -> None:
    """One row per split count for B sequences of P tokens at group size G, plus SDPA."""
    pb = private_batch(kv, [p] * b, hq, g, d)
    hkv = hq // g
    floor = (b * p * tok_bytes(hkv, d) + 2 * b * hq * d * 2) / bw / 1e6
    width = pb.tables.shape[1] * 16
    heur = choose_num_splits(b * hkv, width, kv.device)
    table = choose_config(b, hkv, g, width, kv.device).splits
    k, v = pb.contiguous()
    q = pb.q.view(b, hkv, g, d)  # the G query heads of a KV head as G query rows
    sdpa = timer(partial(F.scaled_dot_product_attention, q, k[:, :, :p], v[:, :, :p]),
                 reps=reps)
    for s in SPLITS:
        if s > 1 and p / s < 64:
            break
        us = timer(partial(paged_decode_attention, pb.q, pb.k, pb.v, pb.tables, pb.lens,
                           num_splits=s), reps=reps)
        programs = b * hkv * s
        log.add(G=g, B=b, P=p, splits=s, programs=programs,
                waves=round(programs / num_sms(kv.device), 3), us=us, floor_us=floor,
                pct_floor=100 * floor / us, heuristic=int(s == heur), table=int(s == table),
                sdpa_us=sdpa, bw_TBs=bw)
    del pb


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--groups", default="1,4,8")
    ap.add_argument("--batches", default="32,48,100,200")
    ap.add_argument("--contexts", default="500,3000,12000")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=200.0)
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = dev.type == "cuda"
    timer = Timer(dev) if gpu else CpuTimer()
    hq, d = (32, 128) if gpu else (8, 32)
    groups, batches, contexts = (_ints(args.groups), _ints(args.batches), _ints(args.contexts)
                                 ) if gpu else ([1, 4], [2], [160])
    bw = measure_bandwidth(timer, dev)["floor_TBs"]
    torch.manual_seed(0)
    kv, log, t0 = RandomKV(dev), CsvLog(args.out, FIELDS), time.time()
    for p in contexts:
        for b in batches:
            for g in groups:
                if time.time() - t0 > args.budget_s:
                    print(f"splits: budget {args.budget_s:.0f}s reached", flush=True)
                    return
                sweep_shape(timer, kv, g, b, p, bw, args.reps, hq, d, log)


if __name__ == "__main__":
    main()
