"""One GPU command for the decode-attention work of issues 18 and 16:

    python -m parrotsim.kernels.session --out $OUT [--budget-s 450]

Parts, in order, each time-boxed (a part stops between points when its budget is spent; a
part that fails is logged and the next one runs):

1. ``tune``    -> ``kernel_table.csv``: the GPU's tuning table (:mod:`parrotsim.kernels.tune`);
   the later parts run with it (``$PARROTSIM_KERNEL_TABLE``). Copy it to
   ``calibrate/profiles/<gpu>_kernels.csv`` to make it the default.
2. ``shapes``  -> ``shapes.csv``: the issue-18 shape table (:mod:`parrotsim.kernels.bench_shapes`).
3. ``era``     -> ``era_paged.csv``: vLLM 0.1.4 no-split vs split-KV paged decode on the
   calibration's batch x context grid, LLaMA-7B and 13B heads (:mod:`parrotsim.kernels.bench_era`).
4. ``parrot``  -> ``parrot2023.csv``: Parrot's 2023 shared-prefix kernel vs ours vs paged on the
   calibration's batch x prefix x suffix grid, LLaMA-7B heads.

Also ``session.txt``: device, versions, bandwidths, each part's seconds, counts and errors.
Five files, all directly under ``--out``. ``--tiny`` (and any run without CUDA; set
``TRITON_INTERPRET=1``) runs every part on tiny shapes and small heads with a wall-clock
timer: the CPU check of the whole path.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from pathlib import Path

import torch
import triton

from parrotsim.kernels import bench_era, bench_shapes, tune
from parrotsim.kernels.bench_util import CpuTimer, Timer, measure_bandwidth
from parrotsim.kernels.tuning_table import ENV_VAR

BUDGETS = {"tune": 150.0, "shapes": 150.0, "era": 55.0, "parrot": 55.0}
TINY_SHAPES = "1,4x2x40x0,16;4x3x24x8r"
TINY_HEADS = (8, 32)


def _parts(out: Path, timer, dev: torch.device, bw: float, tiny: bool, reps: int) -> dict:
    """Name -> callable(budget_s) returning a small dict of counts."""
    hq, d = TINY_HEADS if tiny else (bench_shapes.HQ, bench_shapes.D)
    shapes = bench_shapes.parse_shapes(TINY_SHAPES if tiny else "default")
    era_kw = ({"models": {"tiny": TINY_HEADS}, "grid": ([1, 2], [64])} if tiny else {})
    parrot_kw = ({"model": "tiny", "heads": TINY_HEADS, "grid": ([2], [300], [16])}
                 if tiny else {})
    return {
        "tune": lambda s: tune.run(out / "kernel_table.csv", timer, dev, s, tiny, reps),
        "shapes": lambda s: bench_shapes.run(out / "shapes.csv", timer, dev, shapes, bw, s,
                                             reps, hq, d),
        "era": lambda s: bench_era.era_paged(out / "era_paged.csv", timer, dev, s, reps,
                                             **era_kw),
        "parrot": lambda s: bench_era.parrot_shared(out / "parrot2023.csv", timer, dev, s,
                                                    reps, **parrot_kw),
    }


def main(argv: list[str] | None = None) -> None:
    """Run the four parts within ``--budget-s`` seconds in all; write ``session.txt``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=450.0, help="all parts together")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--parts", default=",".join(BUDGETS), help="subset of " + ",".join(BUDGETS))
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tiny = args.tiny or dev.type != "cuda"
    timer = Timer(dev) if dev.type == "cuda" else CpuTimer()
    torch.manual_seed(0)
    os.environ[ENV_VAR] = str(args.out / "kernel_table.csv")  # later parts use the new table
    info: dict = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                  "torch": torch.__version__, "triton": triton.__version__, "tiny": tiny,
                  "budget_s": args.budget_s, "reps": args.reps, "parts": {}}

    def save() -> None:
        info["total_s"] = round(time.time() - t0, 1)
        (args.out / "session.txt").write_text(json.dumps(info, indent=1, default=str) + "\n")

    try:
        info["bandwidth_TBs"] = measure_bandwidth(timer, dev)
    except Exception:  # noqa: BLE001 - floors then use the H200's session-4 stream read
        info["bandwidth_TBs"] = {"floor_TBs": 4.648, "error": traceback.format_exc(limit=2)}
    bw = info["bandwidth_TBs"]["floor_TBs"]
    print(f"session: {info['device']}, floor bandwidth {bw:.3f} TB/s", flush=True)
    names = [n for n in args.parts.split(",") if n]
    if set(names) - set(BUDGETS):
        ap.error(f"--parts: unknown {sorted(set(names) - set(BUDGETS))}")
    parts = _parts(args.out, timer, dev, bw, tiny, args.reps)
    for i, name in enumerate(names):
        left = args.budget_s - (time.time() - t0) - 10.0 * (len(names) - i - 1)
        budget = max(5.0, min(BUDGETS[name], left))
        t = time.time()
        print(f"== {name}: budget {budget:.0f}s (elapsed {t - t0:.0f}s)", flush=True)
        try:
            res = {"result": parts[name](budget)}
        except Exception:  # noqa: BLE001 - keep the other parts
            traceback.print_exc()
            res = {"error": traceback.format_exc(limit=4)[-1500:]}
        res["seconds"] = round(time.time() - t, 1)
        info["parts"][name] = res
        print(f"== {name} done in {res['seconds']}s: {res.get('result', 'FAILED')}", flush=True)
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        save()
    save()
    print(f"session: total {info['total_s']}s, files in {args.out}", flush=True)


if __name__ == "__main__":
    main()
