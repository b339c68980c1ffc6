"""Is a decode batch over several shared prefixes the sum of its parts? One device command:

    python -m parrotsim.kernels.bench_grouped --out DIR [--reps 10]

The simulator costs a batch with k forked groups as sum over groups of the prefix part of the
shared-prefix kernel plus one paged pass over every row's own tokens. Per case (LLaMA-7B heads:
32 query heads, head dim 128, G=1; k groups of ``rows`` sequences, GPTs-like system prompts of
7437 / 3500 / 2000 / 700 tokens, ``suffix`` own tokens per sequence) it times, CUDA-graph
replays with L2 flushed (:class:`parrotsim.kernels.bench_util.Timer`):

* ``grouped_us``: :func:`~parrotsim.kernels.grouped_prefix_decode.grouped_shared_prefix_decode_attention`;
* ``sum_us``: the simulator's composition from single-prefix measurements of the same run: for
  every group, the shared-prefix kernel over the group ("separate" mode) less the paged kernel
  over the group's suffixes, plus the paged kernel over every row's suffixes;
* ``fallback_us``: the paged kernel over block tables that point at the shared prefix pages
  (what the replay's executor runs for such a batch today).

Writes ``grouped.csv`` and prints it. Off the GPU it runs a tiny case under the interpreter.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer
from parrotsim.kernels.grouped_prefix_decode import (
    PrefixGroup,
    grouped_shared_prefix_decode_attention,
)
from parrotsim.kernels.paged_decode import paged_decode_attention
from parrotsim.kernels.shared_prefix_decode import shared_prefix_decode_attention

PAGE = 16
PROMPTS = (7437, 3500, 2000, 700)  # GPTs-like system prompts (tokens)
CASES = [(k, rows, s) for k in (1, 2, 4) for rows in (8, 16, 32) for s in (64, 256)]
FIELDS = ["groups", "rows_per_group", "suffix", "batch", "grouped_us", "sum_us",
          "grouped_over_sum", "fallback_us", "speedup_vs_fallback", "err"]


def _pages(n: int) -> int:
    return -(-n // PAGE)


def case_tensors(kv: RandomKV, k: int, rows: int, suffix: int, hq: int, d: int,
                 prompts: tuple[int, ...] = PROMPTS) -> dict:
    """q, caches, groups, suffix tables/lengths, and the fallback's whole-context tables."""
    dev, b = kv.device, k * rows
    pre = [_pages(p) for p in prompts[:k]]
    per_seq = _pages(suffix)
    kc, vc = kv.cache(sum(pre) + b * per_seq + 1, hq, d)
    starts = torch.tensor([0, *pre], device=dev).cumsum(0).tolist()
    groups = [PrefixGroup(torch.arange(starts[i], starts[i] + pre[i], dtype=torch.int32,
                                       device=dev), prompts[i], i * rows, rows) for i in range(k)]
    first = starts[k]
    tables = (first + torch.arange(b * per_seq, dtype=torch.int32, device=dev)).view(b, per_seq)
    lens = torch.full((b,), suffix, dtype=torch.int32, device=dev)
    q = torch.randn(b, hq, d, dtype=torch.bfloat16, device=dev)
    whole = torch.zeros(b, max(pre) + per_seq, dtype=torch.int32, device=dev)
    for g, n in zip(groups, pre, strict=True):  # prompts of whole pages only in the fallback
        whole[g.first:g.first + g.rows, :n] = g.pages
        whole[g.first:g.first + g.rows, n:n + per_seq] = tables[g.first:g.first + g.rows]
    full = torch.tensor([_pages(g.prefix_len) * PAGE for g in groups for _ in range(rows)],
                        dtype=torch.int32, device=dev) + suffix
    return {"q": q, "k": kc, "v": vc, "groups": groups, "tables": tables, "lens": lens,
            "whole": whole, "whole_lens": full}


def run_case(timer, kv: RandomKV, k: int, rows: int, suffix: int, reps: int, hq: int,
             d: int, prompts: tuple[int, ...] = PROMPTS) -> dict:
    t = case_tensors(kv, k, rows, suffix, hq, d, prompts)
    q, kc, vc, tables, lens = t["q"], t["k"], t["v"], t["tables"], t["lens"]
    grouped = partial(grouped_shared_prefix_decode_attention, q, kc, vc, t["groups"], tables,
                      lens)
    total = timer(partial(paged_decode_attention, q, kc, vc, tables, lens), reps=reps)
    for g in t["groups"]:
        r = slice(g.first, g.first + g.rows)
        total += timer(partial(shared_prefix_decode_attention, q[r], kc, vc, g.pages,
                               g.prefix_len, tables[r], lens[r], mode="separate"), reps=reps)
        total -= timer(partial(paged_decode_attention, q[r], kc, vc, tables[r], lens[r]),
                       reps=reps)
    row = {"groups": k, "rows_per_group": rows, "suffix": suffix, "batch": k * rows,
           "grouped_us": timer(grouped, reps=reps), "sum_us": total,
           "fallback_us": timer(partial(paged_decode_attention, q, kc, vc, t["whole"],
                                        t["whole_lens"]), reps=reps)}
    row["grouped_over_sum"] = row["grouped_us"] / row["sum_us"]
    row["speedup_vs_fallback"] = row["fallback_us"] / row["grouped_us"]
    ref = torch.cat([shared_prefix_decode_attention(
        q[g.first:g.first + g.rows], kc, vc, g.pages, g.prefix_len,
        tables[g.first:g.first + g.rows], lens[g.first:g.first + g.rows], mode="separate")[0]
        for g in t["groups"]])
    row["err"] = float((grouped()[0].float() - ref.float()).abs().max())
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args(argv)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = dev.type == "cuda"
    cases, hq, d = (CASES, 32, 128) if gpu else ([(2, 2, 17)], 4, 32)
    prompts = PROMPTS if gpu else (37, 20)
    args.out.mkdir(parents=True, exist_ok=True)
    timer, kv, t0 = Timer(dev) if gpu else CpuTimer(), RandomKV(dev), time.time()
    log = CsvLog(args.out / "grouped.csv", FIELDS)
    for k, rows, s in cases:
        log.add(**run_case(timer, kv, k, rows, s, args.reps, hq, d, prompts))
    print(f"bench_grouped: {len(cases)} cases in {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
