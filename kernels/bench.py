"""GPU benchmark of the kernels package, one device command:

    python -m parrotsim.kernels.bench --out DIR [--sections ceil,correct,paged,shared,prefill,llama,
                                       tune_cascade,tune_gemv,tune_prefill,decode_step]
    python -m parrotsim.kernels.bench --out DIR --shapes "GxBxPxS[r];..."|default|FILE.csv

``--shapes`` runs only the shape sweep of :mod:`parrotsim.kernels.bench_shapes` (floor, % of
floor, a plain read of the same bytes, paged / shared-prefix / torch SDPA times and speedups per
shape) into DIR/shapes.csv and prints issue 18's targets over it
(``python -m parrotsim.kernels.bench_shapes DIR/shapes.csv`` prints them again).

Measures the ceilings first (streaming read, copy, bf16 GEMM), checks every kernel against its
fp32 reference at real shapes, then times (CUDA graph replays, L2 flushed between repetitions,
median): paged decode on unshared KV, shared-prefix vs paged-over-shared-pages, prefill
attention, and the LLaMA forward pass; ``decode_step`` compares one-token decode step variants
(:mod:`parrotsim.kernels.bench_decode`); ``tune_*`` sections sweep the v3 kernels and measure the
GEMM rate burst vs sustained (:mod:`parrotsim.kernels.bench_tuning`), ``diag_*`` are run-2 diagnostics.
Writes DIR/results.md, DIR/results.csv, DIR/env.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
import traceback
from pathlib import Path

import torch
import triton

from parrotsim.kernels import (
    bench_attention,
    bench_decode,
    bench_diag,
    bench_llama,
    bench_shapes,
    bench_tuning,
)
from parrotsim.kernels.bench_util import Tables, Timer, measure_bandwidth, measure_ceilings

SHARED_CONFIGS = (
    [(b, 6000, 256, 1) for b in (8, 16, 32, 64, 256)]
    + [(64, 1000, 256, 1), (64, 16000, 256, 1), (64, 6000, 256, 4), (64, 6000, 256, 8),
       (256, 6000, 256, 4), (16, 6000, 256, 8)]
)
ALL = "ceil,correct,paged,shared,prefill,llama"


def main() -> None:
    """Parse arguments, run the chosen sections, write the tables (also after a failure)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sections", default=ALL)
    ap.add_argument("--shapes", help="shape list: 'GxBxPxS[r];...' (comma lists multiply), "
                    "'default' (issue 18's table) or a CSV with columns G,B,P,S[,ragged]")
    ap.add_argument("--reps", type=int, default=20, help="replays per timing (--shapes)")
    args = ap.parse_args()
    shapes = None
    if args.shapes:
        try:
            shapes = bench_shapes.parse_shapes(args.shapes)
        except (ValueError, KeyError) as e:
            ap.error(f"--shapes: {e}")
    args.out.mkdir(parents=True, exist_ok=True)
    sections = args.sections.split(",")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    if shapes is not None:
        timer = Timer(dev)
        bw = measure_bandwidth(timer, dev)
        print(f"bandwidth (TB/s): {json.dumps(bw)}", flush=True)
        print(bench_shapes.run(args.out / "shapes.csv", timer, dev, shapes, bw["floor_TBs"],
                               float("inf"), args.reps))
        with open(args.out / "shapes.csv", newline="") as f:
            print(bench_shapes.summary(list(csv.DictReader(f))))
        return
    props = torch.cuda.get_device_properties(dev)
    env = {"gpu": props.name, "sms": props.multi_processor_count,
           "l2_bytes": getattr(props, "L2_cache_size", None), "torch": torch.__version__,
           "triton": triton.__version__, "cuda": torch.version.cuda}
    tables, timer = Tables(args.out), Timer(dev)
    t0 = time.time()
    ceil = {"stream_read_TBs": 4.2, "gemm_bf16_8192_TFLOPs": 790.0}
    steps = [
        ("ceil", lambda: ceil.update(measure_ceilings(timer, dev))),
        ("correct", lambda: bench_attention.correctness(tables, dev)),
        ("paged", lambda: bench_attention.paged_unshared(tables, timer, ceil["stream_read_TBs"],
                                                         dev)),
        ("shared", lambda: bench_attention.shared_prefix(tables, timer, ceil["stream_read_TBs"],
                                                         dev, SHARED_CONFIGS)),
        ("prefill", lambda: bench_attention.prefill(tables, timer, dev)),
        ("llama", lambda: bench_llama.run(tables, timer, ceil, dev)),
        ("diag_cascade", lambda: bench_diag.cascade(tables, timer, dev)),
        ("diag_prefill", lambda: bench_diag.prefill_pieces(tables, timer, dev)),
        ("diag_gemv", lambda: bench_diag.gemv(tables, timer, ceil["stream_read_TBs"], dev)),
        ("tune_cascade", lambda: bench_tuning.cascade(tables, timer, ceil["stream_read_TBs"],
                                                      dev)),
        ("tune_gemv", lambda: bench_tuning.gemv_tiles(tables, timer, ceil["stream_read_TBs"],
                                                      dev)),
        ("tune_prefill", lambda: bench_tuning.prefill_rates(
            tables, timer, ceil["gemm_bf16_8192_TFLOPs"], dev)),
        ("decode_step", lambda: bench_decode.run(tables, timer, ceil, dev)),  # last: it runs
        # opt-in experiments (L2 self-prefetch)
    ]
    for name, fn in steps:
        if name not in sections:
            continue
        t = time.time()
        try:
            fn()
        except Exception:  # keep the other sections' results
            traceback.print_exc()
            tables.add("errors", section=name, error=traceback.format_exc(limit=3)[-300:])
        env[f"seconds_{name}"] = round(time.time() - t, 1)
        print(f"== {name} done in {time.time() - t:.1f}s (total {time.time() - t0:.1f}s)",
              flush=True)
        torch.cuda.empty_cache()
        env["ceilings"] = ceil
        (args.out / "env.json").write_text(json.dumps(env, indent=1))
        tables.write(f"# parrotsim.kernels.bench on {props.name}\n\nceilings: {json.dumps(ceil)}")


if __name__ == "__main__":
    main()
