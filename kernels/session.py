"""One GPU command for the decode-attention work of issues 18 and 16:

    python -m parrotsim.kernels.session --out $OUT [--budget-s 420]

Parts, in order, each in its own process (a crash or a sticky CUDA error ends that part only)
and time-boxed (a part stops between points when its budget is spent, and its process is
killed ``GRACE_S`` later; a part that fails is logged in ``session.txt`` and the next one runs):

1. ``tune``    -> ``kernel_table.csv``: the GPU's tuning table (:mod:`parrotsim.kernels.tune`);
   the later parts run with it (``$PARROTSIM_KERNEL_TABLE``). Copy it to
   ``calibrate/profiles/<gpu>_kernels.csv`` to make it the default.
2. ``shapes``  -> ``shapes.csv``: the issue-18 shape table (:mod:`parrotsim.kernels.bench_shapes`).
3. ``era``     -> ``era_paged.csv``: vLLM 0.1.4 no-split vs split-KV paged decode on the
   calibration's batch x context grid, LLaMA-7B and 13B heads (:mod:`parrotsim.kernels.bench_era`).
4. ``parrot``  -> ``parrot2023.csv``: Parrot's 2023 shared-prefix kernel vs ours vs paged on the
   calibration's batch x prefix x suffix grid, LLaMA-7B heads.
5. ``era_shared`` -> ``era_shared_pages.csv``: the no-split (and split-KV) paged kernel over a
   fork group's shared prefix pages against private pages of the same lengths, LLaMA-7B and
   13B heads.

Also ``session.txt``: device, versions, bandwidths, each part's seconds, counts and errors.
Six files, all directly under ``--out``. ``--tiny`` (and any run without CUDA; set
``TRITON_INTERPRET=1``) runs every part on tiny shapes and small heads with a wall-clock
timer: the CPU check of the whole path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch
import triton

from parrotsim.kernels import bench_era, bench_shapes, tune
from parrotsim.kernels.bench_util import CpuTimer, Timer, measure_bandwidth
from parrotsim.kernels.tuning_table import ENV_VAR

# tune: the 207-point grid of tune.py took 130 s on an H100 (kernels/results/session14)
BUDGETS = {"tune": 330.0, "shapes": 140.0, "era": 55.0, "parrot": 55.0, "era_shared": 150.0}
GRACE_S = 60.0  # past its budget a part finishes its point; then its process is killed
RESERVE_S = 15.0  # kept per later part when the total budget runs short
TINY_SHAPES = "1,4x2x40x0,16;4x3x24x8r"
TINY_HEADS = (8, 32)


def _parts(out: Path, timer, dev: torch.device, bw: float, tiny: bool, reps: int) -> dict:
    """Name -> callable(budget_s) returning a small dict of counts."""
    hq, d = TINY_HEADS if tiny else (bench_shapes.HQ, bench_shapes.D)
    shapes = bench_shapes.parse_shapes(TINY_SHAPES if tiny else "default")
    era_kw = ({"models": {"tiny": TINY_HEADS}, "grid": ([1, 2], [64])} if tiny else {})
    era_shared_kw = ({"models": {"tiny": TINY_HEADS}, "grid": ([2], [300], [16])}
                     if tiny else {})
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
        "era_shared": lambda s: bench_era.era_shared_pages(out / "era_shared_pages.csv", timer,
                                                           dev, s, reps, **era_shared_kw),
    }


def _run_part(args, name: str) -> None:
    """Child mode (``--part NAME``): run one part in this process, write ``part_NAME.json``."""
    t0 = time.time()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tiny = args.tiny or dev.type != "cuda"
    timer = Timer(dev) if dev.type == "cuda" else CpuTimer()
    torch.manual_seed(0)
    res: dict = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                 "torch": torch.__version__, "triton": triton.__version__, "tiny": tiny}
    bw = 4.648  # the H200's session-4 stream read, if measuring fails
    if name == "shapes":  # the floors use the bandwidth measured here, in the same run
        try:
            res["bandwidth_TBs"] = measure_bandwidth(timer, dev)
            bw = res["bandwidth_TBs"]["floor_TBs"]
        except Exception:  # noqa: BLE001
            res["bandwidth_error"] = traceback.format_exc(limit=2)[-500:]
        print(f"shapes: floor bandwidth {bw:.3f} TB/s", flush=True)
    try:
        res["result"] = _parts(args.out, timer, dev, bw, tiny, args.reps)[name](args.budget_s)
    except Exception:  # noqa: BLE001 - reported to the parent, which runs the next part
        traceback.print_exc()
        res["error"] = traceback.format_exc(limit=4)[-1500:]
    res["seconds"] = round(time.time() - t0, 1)
    (args.out / f"part_{name}.json").write_text(json.dumps(res, default=str))


def _child_cmd(args, name: str, budget: float) -> list[str]:
    return [sys.executable, "-m", "parrotsim.kernels.session", "--out", str(args.out),
            "--part", name, "--budget-s", f"{budget:.0f}", "--reps", str(args.reps),
            *(["--tiny"] if args.tiny else [])]


def _spawn(args, name: str, budget: float) -> dict:
    """Run one part in a child process (a crash or a sticky CUDA error stays in it)."""
    part_file = args.out / f"part_{name}.json"
    part_file.unlink(missing_ok=True)
    try:
        rc = subprocess.run(_child_cmd(args, name, budget), timeout=budget + GRACE_S).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    if not part_file.is_file():
        return {"error": f"part process ended without a report (exit {rc}); rows written "
                         "before that stay in its CSV"}
    res = json.loads(part_file.read_text())
    part_file.unlink()
    return res


def main(argv: list[str] | None = None) -> None:
    """Run the parts one after another within ``--budget-s`` seconds in all (each in its own
    process, or all here with ``--in-process``); write ``session.txt``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=420.0, help="all parts together")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--parts", default=",".join(BUDGETS), help="subset of " + ",".join(BUDGETS))
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--in-process", action="store_true", help="no child processes")
    ap.add_argument("--part", help=argparse.SUPPRESS)  # child mode
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ[ENV_VAR] = str(args.out / "kernel_table.csv")  # later parts use the new table
    if args.part:
        return _run_part(args, args.part)
    names = [n for n in args.parts.split(",") if n]
    if set(names) - set(BUDGETS):
        ap.error(f"--parts: unknown {sorted(set(names) - set(BUDGETS))}")
    t0, total = time.time(), args.budget_s
    info: dict = {"budget_s": total, "reps": args.reps, "parts": {}}
    for i, name in enumerate(names):
        left = total - (time.time() - t0) - RESERVE_S * (len(names) - i - 1)
        budget = max(5.0, min(BUDGETS[name], left))
        print(f"== {name}: budget {budget:.0f}s (elapsed {time.time() - t0:.0f}s)", flush=True)
        if args.in_process:
            args.budget_s, args.part = budget, name
            _run_part(args, name)
            res = json.loads((args.out / f"part_{name}.json").read_text())
            (args.out / f"part_{name}.json").unlink()
        else:
            res = _spawn(args, name, budget)
        for key in ("device", "torch", "triton", "tiny", "bandwidth_TBs"):
            if key in res:
                info[key] = res.pop(key)
        info["parts"][name] = res
        print(f"== {name} done in {res.get('seconds', '?')}s: "
              f"{res.get('result', res.get('error', '')[-300:])}", flush=True)
        info["total_s"] = round(time.time() - t0, 1)
        (args.out / "session.txt").write_text(json.dumps(info, indent=1, default=str) + "\n")
    print(f"session: total {info.get('total_s')}s, files in {args.out}", flush=True)


if __name__ == "__main__":
    main()
