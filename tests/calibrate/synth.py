"""Synthetic raw calibration data from known curves (what parrotsim.calibrate.measure would write)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from parrotsim.calibrate import grids
from parrotsim.calibrate.fit import prefill_work
from parrotsim.calibrate.grids import FIELDS

LAYERS = 32  # llama-7b
OVERHEAD_S = 1e-4


def linear_s(t: float) -> float:
    return 4e-3 + 2e-5 * t


SLOW_BATCH, SLOW_FACTOR = 16, 1.2  # one batch size runs slower per KV token (a tail wave)


def paged_layer_us(b: float, kv: float) -> float:
    """Not a function of KV tokens alone: batch 16 reads each KV token 20 % slower."""
    return 2.0 + 0.004 * kv * (SLOW_FACTOR if b == SLOW_BATCH else 1.0) + 0.05 * b


def prefill_layer_us(work: float) -> float:
    return 1e-4 * work


def shared_layer_us(b: float, prefix: float, suffix: float) -> float:
    return 1.0 + 0.002 * prefix + paged_layer_us(b, b * suffix)


def paged_shared_layer_us(b: float, prefix: float, suffix: float) -> float:
    """The paged kernel over shared pages: the prefix costs 0.004 us per token for the first
    sequence and a quarter of that for each other (L2), plus the suffixes' paged time."""
    return 0.5 + 0.004 * prefix * (1 + 0.25 * (b - 1)) + paged_layer_us(b, b * suffix)


def forward_s(p: dict) -> float:
    chunks = grids.parse_prefills(p["prefills"])
    t = OVERHEAD_S + linear_s(sum(n for n, _ in chunks) + p["decodes"])
    if chunks:
        t += LAYERS * 1e-6 * prefill_layer_us(sum(prefill_work(n, c) for n, c in chunks))
    if p["decodes"]:
        b, pre = p["decodes"], p["prefix"]
        kv = b * (p["decode_ctx"] + 1 - pre)
        t += LAYERS * 1e-6 * paged_layer_us(b, kv)
        if pre:
            t += LAYERS * 1e-6 * (1.0 + 0.002 * pre)
    return t


def write_raw(out: Path, quick: bool = False) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in grids.linear_grid(quick):
        rows.append({"section": "linear", **p, "us": 1e6 * linear_s(p["tokens"])})
    for p in grids.paged_grid(quick):
        rows.append({"section": "paged", **p,
                     "us": paged_layer_us(p["batch"], p["batch"] * p["ctx"])})
    for p in grids.shared_grid(quick):
        rows.append({"section": "shared", **p,
                     "us": shared_layer_us(p["batch"], p["prefix"], p["suffix"])})
    for p in grids.shared_grid(quick):
        rows.append({"section": "paged_shared", **p,
                     "us": paged_shared_layer_us(p["batch"], p["prefix"], p["suffix"])})
    for p in grids.prefill_grid(quick):
        rows.append({"section": "prefill", **p,
                     "us": prefill_layer_us(prefill_work(p["new"], p["ctx"], p["chunks"]))})
    for p in grids.forward_grid(quick, 200_000):
        rows.append({"section": "forward", **p, "us": 1e6 * forward_s(p)})
    rows.append({"section": "linear", "tokens": 99999, "status": "oom"})
    with (out / "raw.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            us = r.pop("us", None)
            if us is not None:
                r.update(status="ok", us_median=us, us_p20=us * 0.99, us_p80=us * 1.01, reps=10)
            w.writerow(r)
    env = {"gpu": "NVIDIA H200", "gpu_memory_gib": 139.8, "sms": 132, "model": "llama-7b",
           "torch": "synthetic", "date": "2026-01-01T00:00:00", "quick": quick,
           "grids": {"linear": grids.linear_grid(quick)}, "seconds": {}}
    (out / "env.json").write_text(json.dumps(env))
    return out
