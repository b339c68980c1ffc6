"""Where a mixed forward pass spends its time: per-kernel GPU time of chosen forward batches.

A diagnostic written for the one calibration miss of the LLaMA-3-8B profile as first measured
(calibrate/measurements/h200_llama3-8b/README.md; mended by the dense linear grid): two
prompts (128 and 256 new tokens) with 64 decodes at 2,048 context measured 18.9 ms where that
profile, within 1-4 % on every other mixed batch, modelled 15.6 ms. Each
batch below is built as the calibration's forward grid builds it
(:func:`parrotsim.calibrate.sections_model._forward_batch`) on the model the calibration uses
(Triton prefill over the paged cache), timed as a CUDA graph with the L2 flushed
(:class:`~parrotsim.calibrate.timing.StatTimer`), then run eagerly under ``torch.profiler`` to
split the pass into kernels. Batches: the miss, its two halves alone, the same prompt tokens as
one prompt, and a mixed batch the profile fits; the miss again with SDPA prefill.

Writes ``totals.csv`` (batch, backend, graph-timed microseconds) and ``kernels.csv`` (batch,
backend, kernel name, calls and GPU microseconds per forward pass); part ``linear`` writes
``linear.csv``: the calibration's linear part (all layers without attention) timed every 16
tokens to 1,024 and every 64 to 2,048, to see where cuBLAS's tile choice makes it jump. GPU
only::

    python -m parrotsim.calibrate.forward_breakdown --model llama3-8b --out DIR \
        [--parts mixed,linear] [--batch 128@0;256@0+64x2048 ...]
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import torch

from parrotsim.calibrate import sections_model
from parrotsim.calibrate.grids import describe_forward, forward_pages, parse_prefills
from parrotsim.calibrate.sections_model import _forward_batch
from parrotsim.calibrate.timing import StatTimer
from parrotsim.kernels.llama import LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE

#: (prefills, decodes, decode context): the miss first
BATCHES = [("128@0;256@0", 64, 2048), ("128@0;256@0", 0, 0), ("", 64, 2048),
           ("384@0", 64, 2048), ("512@0", 32, 2048), ("256@0;128@0", 64, 2048)]
PROFILED_PASSES = 3
DENSE_TOKENS = list(range(16, 1025, 16)) + list(range(1088, 2049, 64))


def point(prefills: str, decodes: int, ctx: int) -> dict:
    """A forward-grid point in the calibration's own format."""
    return {"prefills": prefills, "decodes": decodes, "decode_ctx": ctx, "prefix": 0}


def parse_batch(spec: str) -> tuple[str, int, int]:
    """``"128@0;256@0+64x2048"`` -> ``("128@0;256@0", 64, 2048)``: prompt chunks (new tokens @
    context tokens, ``;``-separated), then ``+`` decodes ``x`` their context; either part may be
    left out (``"512@0"``, ``"+64x2048"``). Raises ValueError naming what is wrong."""
    prefills, _, dec = spec.strip().partition("+")
    try:
        chunks = parse_prefills(prefills)
        n, ctx = (int(x) for x in dec.split("x")) if dec else (0, 0)
    except ValueError:
        raise ValueError(f"batch {spec!r}: expected NEW@CTX[;NEW@CTX...][+DECODESxCTX], "
                         "e.g. 128@0;256@0+64x2048") from None
    if any(new <= 0 or c < 0 for new, c in chunks) or n < 0 or ctx < 0 or (dec and ctx == 0):
        raise ValueError(f"batch {spec!r}: token counts must be positive (contexts >= 0)")
    if not chunks and not n:
        raise ValueError(f"batch {spec!r} holds neither a prompt chunk nor a decode")
    return prefills, n, ctx


def kernel_times(model: LlamaModel, batch) -> dict[str, tuple[int, float]]:
    """Kernel name -> (calls, GPU microseconds) per forward pass, from ``torch.profiler``."""
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.inference_mode(), torch.profiler.profile(activities=acts) as prof:
        for _ in range(PROFILED_PASSES):
            model.forward(batch)
        torch.cuda.synchronize()
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for ev in prof.key_averages():
        us = getattr(ev, "self_device_time_total", 0.0)
        if us > 0:
            out[ev.key][0] += ev.count
            out[ev.key][1] += us
    return {k: (round(c / PROFILED_PASSES), t / PROFILED_PASSES) for k, (c, t) in out.items()}


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def linear_sweep(model: LlamaModel, timer: StatTimer, out: Path) -> None:
    """The linear part at :data:`DENSE_TOKENS` -> ``out/linear.csv``."""
    grid = [{"tokens": t} for t in DENSE_TOKENS]
    write_csv(out / "linear.csv", list(sections_model.linear(model, timer, False, grid=grid)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama3-8b")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--parts", default="mixed,linear", help="mixed and/or linear")
    ap.add_argument("--batch", action="append", metavar="SPEC",
                    help="a forward batch for part mixed, e.g. 128@0;256@0+64x2048 (repeat; "
                         "default: the LLaMA-3-8B miss and its neighbours)")
    args = ap.parse_args(argv)
    try:
        batches = [parse_batch(b) for b in args.batch] if args.batch else BATCHES
    except ValueError as exc:
        ap.error(str(exc))
    args.out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    cfg = LlamaConfig.preset(args.model)
    pages = (forward_pages([point(*b) for b in batches], PAGE_SIZE) if "mixed" in args.parts
             else 64)
    model = LlamaModel(cfg, num_pages=pages, device=dev, prefill_backend="triton")
    timer = StatTimer(dev)
    if "linear" in args.parts:
        linear_sweep(model, timer, args.out)
    if "mixed" in args.parts:
        mixed(model, timer, args.out, batches)
    return 0


def mixed(model: LlamaModel, timer: StatTimer, out: Path,
          batches: list[tuple[str, int, int]] = BATCHES) -> None:
    """``batches`` (default :data:`BATCHES`), then the first again with SDPA prefill ->
    ``out/totals.csv`` and ``out/kernels.csv``."""
    totals, kernels = [], []
    runs = [(b, "triton") for b in batches] + [(batches[0], "sdpa")]
    for (pre, dec, ctx), backend in runs:
        model.prefill_backend = backend
        p = point(pre, dec, ctx)
        batch = _forward_batch(model, p)
        med, p20, p80, reps = timer.stats(lambda b=batch: model.forward(b))
        name = describe_forward(p)
        totals.append({"batch": name, "prefill_backend": backend, "us_median": round(med, 1),
                       "us_p20": round(p20, 1), "us_p80": round(p80, 1), "reps": reps})
        per = kernel_times(model, batch)
        for k, (calls, us) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            kernels.append({"batch": name, "prefill_backend": backend, "kernel": k,
                            "calls": calls, "us": round(us, 1)})
        top = ", ".join(f"{k[:40]} {us / 1e3:.2f}" for k, (_, us) in
                        sorted(per.items(), key=lambda kv: -kv[1][1])[:4])
        print(f"{name} [{backend}]: {med / 1e3:.3f} ms graph; top kernels (ms): {top}",
              flush=True)
    write_csv(out / "totals.csv", totals)
    write_csv(out / "kernels.csv", kernels)


if __name__ == "__main__":
    raise SystemExit(main())
