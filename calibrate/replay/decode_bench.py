"""Why graph-replayed decode steps of the replay take longer than the cost profile says (GPU).

    python -m parrotsim.calibrate.replay.decode_bench --out decode_bench.csv

The replay's decode steps ran over the profile's prediction (median GPU / model 1.05 to 1.10
per run, up to 1.16 at some batch sizes; ``calibrate/replay/data/sharegpt_vllm``). The profile was measured on batches of equal
contexts with block tables as wide as the context, L2 flushed before each replay; the replay
runs batches of unequal contexts, tables padded to the longest possible sequence (which sets
the KV-split count of the captured graph), rows padded to a graph bucket, and no flush. This
times one 7B decode step (CUDA-graph replay, CUDA events, median of 40) per case, for batch
sizes and mean contexts the replay saw:

* ``equal_tight``: equal contexts, tight tables (the calibration's conditions; ``_flush``: L2
  flushed before each replay, as the calibration did);
* ``equal_wide``: the same with tables padded to the replay's width (``--width`` pages);
* ``unequal_tight`` / ``unequal_wide``: contexts drawn uniformly between 5 % and 195 % of the
  mean, scaled to the equal case's total, tight or wide tables;
* ``equal_wide_minus2`` and ``equal_wide_minus2_pad``: two sequences fewer, unpadded and
  padded back to the batch size with one-token dummies (the replay's bucket padding).

``python -m parrotsim.calibrate.replay.attribute --decode-bench CSV`` adds the cost model's
time of each case (from ``real_rows`` and ``kv_tokens``), without a GPU.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import numpy as np
import torch

from parrotsim.calibrate.replay.chunks import Chunk
from parrotsim.calibrate.replay.forward_batch import to_forward_batch
from parrotsim.kernels.llama import DecodeGraph, LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE
from parrotsim.kernels.paged_decode import choose_num_splits

#: (decode sequences, mean context) pairs the replay's logs show often
POINTS = ((4, 590), (8, 510), (12, 430), (16, 480), (20, 390))


def contexts(b: int, mean: int, equal: bool, rng: np.random.Generator) -> list[int]:
    if equal:
        return [mean] * b
    x = rng.uniform(0.05, 1.95, size=b)
    ctx = np.maximum(16, np.rint(x / x.mean() * mean)).astype(int)
    ctx[np.argmax(ctx)] += b * mean - int(ctx.sum())  # the same total as equal contexts
    return [int(c) for c in ctx]


def time_case(model: LlamaModel, ctxs: list[int], width: int | None, rows: int,
              flush: torch.Tensor | None, reps: int = 40) -> list[float]:
    nxt, chunks = 0, []
    for c in ctxs:
        n = -(-(c + 1) // PAGE_SIZE)
        chunks.append(Chunk(np.array([7]), c, list(range(nxt, nxt + n))))
        nxt += n
    w = width or max(len(ch.table) for ch in chunks)
    fb = to_forward_batch([], chunks, model.device, w, rows, scratch=model.k_cache.shape[1] - 1)
    g = DecodeGraph(model, fb)
    for _ in range(5):
        g.run()
    a = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    z = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush is not None:
            flush.zero_()
        a[i].record()
        g.run()
        z[i].record()
    torch.cuda.synchronize()
    us = sorted(x.elapsed_time(y) * 1e3 for x, y in zip(a, z, strict=True))
    del g
    return us


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--width", type=int, default=128, help="the replay's table width (pages)")
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    model = LlamaModel(LlamaConfig.preset("llama-7b"), 2048, dev, prefill_backend="triton")
    gen = torch.Generator(device=dev).manual_seed(1)
    model.k_cache.normal_(generator=gen)
    model.v_cache.normal_(generator=gen)
    flush = torch.empty(64 << 20, dtype=torch.int32, device=dev)  # 256 MiB
    rng = np.random.default_rng(0)
    rows = []
    with args.out.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["case", "real_rows", "rows", "width", "kv_tokens", "max_ctx", "splits",
                      "us_median", "us_p20", "us_p80"])
        for b, mean in POINTS:
            unequal = contexts(b, mean, False, rng)
            cases = [("equal_tight", [mean] * b, None, b, None),
                     ("equal_tight_flush", [mean] * b, None, b, flush),
                     ("equal_wide", [mean] * b, args.width, b, None),
                     ("unequal_tight", unequal, None, b, None),
                     ("unequal_wide", unequal, args.width, b, None),
                     ("equal_wide_minus2", [mean] * (b - 2), args.width, b - 2, None),
                     ("equal_wide_minus2_pad", [mean] * (b - 2), args.width, b, None)]
            for name, ctxs, width, nrows, fl in cases:
                us = time_case(model, ctxs, width, nrows, fl)
                w = width or -(-(max(ctxs) + 1) // PAGE_SIZE)
                splits = choose_num_splits(nrows * model.cfg.num_kv_heads, w * PAGE_SIZE, dev)
                q = statistics.quantiles(us, n=5)
                row = [name, len(ctxs), nrows, w, sum(ctxs) + len(ctxs), max(ctxs), splits,
                       round(statistics.median(us), 1), round(q[0], 1), round(q[3], 1)]
                out.writerow(row)
                f.flush()
                rows.append(row)
                print(*row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
