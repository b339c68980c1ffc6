"""GPU calibration harness: time every grid of :mod:`parrotsim.calibrate.grids` and write raw measurements.

    python -m parrotsim.calibrate.measure --model llama-7b --out RAW_DIR [--quick] [--sections ...]

writes ``RAW_DIR/raw.csv`` (one row per grid point, appended as it is measured, so a run cut
short still leaves its data) and ``RAW_DIR/env.json`` (GPU, memory, library versions, date,
the kernels' tuning table, the compute capability and the paged kernel's occupancy on it, grids,
bandwidth and GEMM rate measured in the same run, seconds per section; with ``--quick`` too).
It needs torch, triton and ``kernels/`` but neither pydantic nor ``sim/``: fitting happens on
any machine with ``python -m parrotsim.calibrate.fit`` (or ``parrotsim calibrate --fit-from
RAW_DIR``).
"""

from __future__ import annotations

import argparse
import csv
import gc
import hashlib
import json
import platform
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import torch
import triton

from parrotsim.calibrate import grids, sections, sections_model
from parrotsim.calibrate.grids import FIELDS
from parrotsim.calibrate.timing import StatTimer
from parrotsim.kernels.bench_util import measure_ceilings
from parrotsim.kernels.llama import LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE
from parrotsim.kernels.occupancy import paged_occupancy
from parrotsim.kernels.tuning_table import PROFILES_DIR, table_path

GIB = 1 << 30


def environment(dev: torch.device, model: str, quick: bool) -> dict:
    props = torch.cuda.get_device_properties(dev)
    env = {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / GIB, 2),
           "sms": props.multi_processor_count, "torch": torch.__version__,
           "triton": triton.__version__, "cuda": str(torch.version.cuda),
           "python": platform.python_version(), "model": model, "quick": quick,
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        q = "driver_version,clocks.sm,clocks.mem"
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
            text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    env["grids"] = {
        "linear": grids.linear_grid(quick), "paged": grids.paged_grid(quick),
        "shared": grids.shared_grid(quick), "paged_shared": grids.shared_grid(quick),
        "prefill": grids.prefill_grid(quick)}
    env["kernel_table"] = kernel_table_note(props.name)
    env["capability"] = f"{props.major}.{props.minor}"
    try:  # the fit's skewed-batch term needs it (curves.decode_paged_waves)
        cfg = LlamaConfig.preset(model)
        env["paged_occupancy"] = paged_occupancy(cfg.num_kv_heads, cfg.num_heads, cfg.head_dim,
                                                 (props.major, props.minor))
    except Exception as exc:  # an unknown capability, no cuobjdump: the profile goes without
        env.setdefault("errors", {})["paged_occupancy"] = repr(exc)
    return env


def kernel_table_note(device_name: str) -> str:
    """Which tuning table the kernels choose splits and tiles from on this GPU: its path, rows
    and the first 12 hex digits of its sha256, or that there is none (the built-in heuristics)."""
    path = table_path(device_name)
    if not path.is_file():
        where = f"calibrate/profiles/{path.name}" if path.parent == PROFILES_DIR else path
        return f"none ({where} absent: built-in split and tile heuristics)"
    data = path.read_bytes()
    rows = max(data.count(b"\n") - 1, 0)
    return f"{path.name}, {rows} rows, sha256 {hashlib.sha256(data).hexdigest()[:12]}"


def model_pages(cfg: LlamaConfig, quick: bool, reserve_gib: float = 14.0) -> int:
    """KV pages for the forward grid: what it needs, at most what fits beside the weights."""
    page_bytes = 2 * cfg.num_layers * PAGE_SIZE * cfg.num_kv_heads * cfg.head_dim * 2
    free, _ = torch.cuda.mem_get_info()
    fits = int((free - 2 * cfg.num_params() - reserve_gib * GIB) // page_bytes)
    need = grids.forward_pages(grids.forward_grid(quick, 1 << 40), PAGE_SIZE)
    return max(64, min(fits, need))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["llama-7b", "llama-13b", "llama3-8b", "tiny"],
                    required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true",
                    help="fewer grid points over the same extent (about half the time)")
    ap.add_argument("--sections", default=",".join(grids.SECTIONS),
                    help="comma-separated subset of " + ",".join(grids.SECTIONS))
    ap.add_argument("--no-ceilings", action="store_true", help="skip the bandwidth/GEMM probe")
    args = ap.parse_args(argv)
    want = set(args.sections.split(","))
    dev = torch.device("cuda")
    torch.manual_seed(0)
    cfg = LlamaConfig.preset(args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment(dev, args.model, args.quick)
    env["command"] = "python -m parrotsim.calibrate.measure " + " ".join(argv or sys.argv[1:])
    env["seconds"] = {}
    timer = StatTimer(dev, target_s=0.25 if args.quick else 0.4,
                      min_reps=3 if args.quick else 5, max_reps=20 if args.quick else 40)
    raw = (args.out / "raw.csv").open("w", newline="")
    writer = csv.DictWriter(raw, FIELDS, extrasaction="ignore")
    writer.writeheader()

    def section(name: str, rows) -> None:
        t0 = time.time()
        try:
            for row in rows:
                writer.writerow(row)
                raw.flush()
        except Exception as exc:  # keep the other sections' data; the error is recorded
            traceback.print_exc()
            env.setdefault("errors", {})[name] = repr(exc)
            gc.collect()
            torch.cuda.empty_cache()
        env["seconds"][name] = round(time.time() - t0, 1)
        (args.out / "env.json").write_text(json.dumps(env, indent=1))

    if not args.no_ceilings and args.model != "tiny":  # the profile records these rates
        t0 = time.time()
        try:
            env["ceilings"] = {k: round(v, 3) for k, v in
                               measure_ceilings(timer, dev, 2).items()}
        except Exception as exc:
            env.setdefault("errors", {})["ceilings"] = repr(exc)
        env["seconds"]["ceilings"] = round(time.time() - t0, 1)
        print("ceilings:", env.get("ceilings"), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
    for name in ("paged", "shared", "paged_shared", "prefill"):
        if name in want:
            section(name, getattr(sections, name)(cfg, timer, dev, args.quick))
    if want & {"linear", "forward", "overhead"}:
        pages = model_pages(cfg, args.quick)
        env["model_kv_pages"] = pages
        model = LlamaModel(cfg, num_pages=pages, device=dev, prefill_backend="triton")
        model.k_cache.normal_()
        model.v_cache.normal_()
        env["model_memory_gib"] = round(torch.cuda.memory_allocated() / GIB, 2)
        if "overhead" in want:
            section("overhead", sections_model.overhead(model, timer))
        if "linear" in want:
            section("linear", sections_model.linear(model, timer, args.quick))
        if "forward" in want:
            section("forward", sections_model.forward(model, timer, args.quick))
    raw.close()
    env["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 2)
    (args.out / "env.json").write_text(json.dumps(env, indent=1))
    print(f"done: {sum(env['seconds'].values()):.0f} s; raw data in {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
