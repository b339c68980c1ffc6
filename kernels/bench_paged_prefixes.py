"""Does the paged kernel's L2 reuse of shared prefix pages survive several prefixes?

    python -m parrotsim.kernels.bench_paged_prefixes --out DIR [--reps 20]

The profile's ``paged_shared_prefix`` grid was measured with every row forking *one* prefix:
the split-KV programs of rows that read the same pages run together, so most prefix reads
after the first hit L2. In a GPTs batch the rows fork one of four system prompts and arrive
interleaved. Per case (LLaMA-7B heads: 32 query and KV heads, head dim 128; ``batch`` rows
forking ``k`` of the GPTs prompts 7437 / 1116 / 1694 / 2031 tokens round-robin, each with
``suffix`` own tokens) it times the paged kernel (CUDA-graph replays, L2 flushed before each,
:class:`parrotsim.kernels.bench_util.Timer`) over block tables that point at:

* ``interleaved_us``: the shared prefix pages, rows in round-robin order (as a batch arrives);
* ``sorted_us``: the same rows ordered by prefix (rows of one prefix adjacent);
* ``distinct_us``: private copies of each row's prefix (same lengths, nothing to reuse).

``reuse`` = 1 - interleaved / distinct: the share of the no-reuse time that L2 reuse saves.
Writes ``paged_prefixes.csv`` and prints it. Off the GPU it runs a tiny case (interpreter).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import torch

from parrotsim.kernels.bench_util import CpuTimer, CsvLog, RandomKV, Timer
from parrotsim.kernels.paged_decode import paged_decode_attention

PAGE = 16
PROMPTS = (7437, 1116, 1694, 2031)  # the GPTs apps' system prompts (tokens)
CASES = [(b, k, s) for b in (16, 40, 80) for k in (1, 2, 4) for s in (100, 400)]
FIELDS = ["batch", "prefixes", "suffix", "interleaved_us", "sorted_us", "distinct_us",
          "interleaved_over_sorted", "reuse"]


def _pages(n: int) -> int:
    return -(-n // PAGE)


def tables(batch: int, k: int, suffix: int, prompts: tuple[int, ...], dev: torch.device,
           distinct: bool) -> tuple[torch.Tensor, torch.Tensor, list[int], int]:
    """Block tables [batch, width] (rows fork prompt ``row % k``), lengths, each row's prompt,
    and the pages used."""
    pre = [_pages(p) for p in prompts[:k]]
    which = [r % k for r in range(batch)]
    width = max(pre) + _pages(suffix)
    t = torch.zeros(batch, width, dtype=torch.int32)
    nxt = 0 if distinct else sum(pre)
    starts = torch.tensor([0, *pre]).cumsum(0).tolist()
    for r, p in enumerate(which):
        if distinct:
            t[r, :pre[p]] = torch.arange(nxt, nxt + pre[p])
            nxt += pre[p]
        else:
            t[r, :pre[p]] = torch.arange(starts[p], starts[p] + pre[p])
        t[r, pre[p]:pre[p] + _pages(suffix)] = torch.arange(nxt, nxt + _pages(suffix))
        nxt += _pages(suffix)
    lens = torch.tensor([pre[p] * PAGE + suffix for p in which], dtype=torch.int32)
    return t.to(dev), lens.to(dev), which, nxt


def run_case(timer, kv: RandomKV, batch: int, k: int, suffix: int, reps: int, h: int, d: int,
             prompts: tuple[int, ...] = PROMPTS) -> dict:
    dev = kv.device
    shared, lens, which, used = tables(batch, k, suffix, prompts, dev, distinct=False)
    private, lens_p, _, used_p = tables(batch, k, suffix, prompts, dev, distinct=True)
    kc, vc = kv.cache(max(used, used_p) + 1, h, d)
    q = torch.randn(batch, h, d, dtype=torch.bfloat16, device=dev)
    order = sorted(range(batch), key=lambda r: which[r])
    row = {"batch": batch, "prefixes": k, "suffix": suffix,
           "interleaved_us": timer(partial(paged_decode_attention, q, kc, vc, shared, lens),
                                   reps=reps),
           "sorted_us": timer(partial(paged_decode_attention, q[order], kc, vc, shared[order],
                                      lens[order]), reps=reps),
           "distinct_us": timer(partial(paged_decode_attention, q, kc, vc, private, lens_p),
                                reps=reps)}
    row["interleaved_over_sorted"] = row["interleaved_us"] / row["sorted_us"]
    row["reuse"] = 1 - row["interleaved_us"] / row["distinct_us"]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = dev.type == "cuda"
    cases, h, d = (CASES, 32, 128) if gpu else ([(4, 2, 17)], 2, 32)
    prompts = PROMPTS if gpu else (37, 20)
    args.out.mkdir(parents=True, exist_ok=True)
    timer, kv, t0 = Timer(dev) if gpu else CpuTimer(), RandomKV(dev), time.time()
    log = CsvLog(args.out / "paged_prefixes.csv", FIELDS)
    for b, k, s in cases:
        log.add(**run_case(timer, kv, b, k, s, args.reps, h, d, prompts))
    print(f"bench_paged_prefixes: {len(cases)} cases in {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
