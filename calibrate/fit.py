"""Fit a cost profile to raw calibration measurements (CPU; no torch).

    python -m parrotsim.calibrate.fit RAW_DIR --out calibrate/profiles/h200_llama-7b.yaml

reads ``RAW_DIR/raw.csv`` and ``RAW_DIR/env.json`` (written by :mod:`parrotsim.calibrate.measure`) and:

1. ``linear``: the measured linear-part times vs tokens, as measured (not made monotone: a
   count where cuBLAS picks a slow tile costs more than larger ones, :func:`fit_linear`);
2. ``decode_paged_grid``: one layer's paged kernel times the layers on the measured (batch x
   context) grid (:mod:`parrotsim.calibrate.pagedgrid`), which the cost model uses; and, for tools that
   need one curve, ``decode_paged``: least squares on a piecewise-linear curve in KV tokens
   read (plus a cost per sequence in ``decode_per_seq_s`` when there is no grid);
3. ``prefill_attention``: likewise, a piecewise-linear curve in work = sum new*(ctx+(new+1)/2);
4. ``shared_prefix``: the shared-prefix kernel minus the paged kernel's share for the suffixes,
   on the (prefix tokens x batch) grid;
5. whole forward passes, training part only: weighted least squares of the relative residual on
   a fixed overhead, a cost per token (added to ``linear``), a cost per decode and scales of the
   two attention curves, which covers embedding, rotary/KV-cache writes, LM head and the
   difference between kernels timed alone and inside the model.

It writes the profile and, beside it, ``<profile>.forward.csv`` with every forward pass
(training and held-out), so ``parrotsim validate`` can report held-out error without a GPU.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from parrotsim.calibrate import curvefit as cf
from parrotsim.calibrate import validate as val
from parrotsim.calibrate.correct import correct, prefill_work
from parrotsim.calibrate.grids import batch_kind, heldout_flags
from parrotsim.calibrate.pagedgrid import fit_paged_grid, paged_waves
from parrotsim.calibrate.roofline import GPUS, MODELS
from parrotsim.sim.model.costmodel import paged_grid_time
from parrotsim.sim.model.profile import SCHEMA_VERSION, Profile, dump_profile, parse_profile
from parrotsim.sim.model.profile_parts import (
    Calibration,
    Curve,
    Curves,
    Extent,
    GpuSpec,
    Grid2D,
    ModelSpec,
)

TINY = ModelSpec(name="tiny", layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16,
                 intermediate=176, vocab=256, params=125248)


def load_raw(raw_dir: Path) -> tuple[list[dict], dict]:
    """Rows of ``raw.csv`` (numbers converted; empty fields dropped) and ``env.json``."""
    rows = []
    with (raw_dir / "raw.csv").open() as f:
        for r in csv.DictReader(f):
            row: dict = {}
            for k, v in r.items():
                if v in ("", None):
                    continue
                row[k] = v if k in ("section", "prefills", "case", "status") else float(v)
            rows.append(row)
    return rows, json.loads((raw_dir / "env.json").read_text())


def _ok(rows: list[dict], section: str) -> list[dict]:
    return [r for r in rows if r["section"] == section and r.get("status") == "ok"]


def fit_linear(rows: list[dict]) -> Curve:
    """The linear part's median times at the measured token counts, interpolated between them.
    Not made non-decreasing: pooling a cuBLAS spike (448 tokens slower than 512 on LLaMA-3-8B
    shapes) with its larger neighbours would misprice both (kernels/results/session14)."""
    pts = sorted((int(r["tokens"]), r["us_median"] * 1e-6) for r in _ok(rows, "linear"))
    return Curve(x=[p[0] for p in pts], seconds=[p[1] for p in pts])


def fit_paged(rows: list[dict], layers: int, per_sequence: bool = True
              ) -> tuple[Curve, float, float]:
    """Paged curve vs KV tokens, the per-sequence cost (0 unless ``per_sequence``), and the
    fit's RMS relative error."""
    pts = _ok(rows, "paged")
    kv = np.array([r["batch"] * r["ctx"] for r in pts])
    b = np.array([r["batch"] for r in pts])
    y = np.array([r["us_median"] * 1e-6 * layers for r in pts])
    knots = cf.log_knots(kv.min(), kv.max(), 0.5)
    vals, extra = cf.fit_piecewise(kv, y, knots, extra=b if per_sequence else None)
    per_seq = float(extra[0]) if per_sequence else 0.0
    if per_seq < 0:
        vals, _ = cf.fit_piecewise(kv, y, knots)
        per_seq = 0.0
    vals = cf.isotonic(np.maximum(vals, 0))
    pred = cf.hat_basis(kv, knots) @ vals + per_seq * b
    return Curve(x=knots.tolist(), seconds=vals.tolist()), per_seq, _rms(pred, y)


def fit_prefill(rows: list[dict], layers: int, heads: int, sms: int
                ) -> tuple[Curve, Grid2D, float]:
    """Prefill attention: a throughput curve vs summed work, fitted on the points that launch
    at least two waves of 128-query-row programs, and the grid of one chunk alone vs (new
    tokens, context tokens); the cost model takes the larger. Returns both and the composed
    model's RMS relative error on every measured point."""
    pts = _ok(rows, "prefill")
    w = np.array([prefill_work(r["new"], r["ctx"], r.get("chunks", 1)) for r in pts])
    y = np.array([r["us_median"] * 1e-6 * layers for r in pts])
    progs = np.array([r.get("chunks", 1) * np.ceil(r["new"] / 128) * heads for r in pts])
    wide = progs >= 2 * sms
    if wide.sum() < 3:
        wide[:] = True
    knots = cf.supported_knots(cf.log_knots(w[wide].min(), w[wide].max(), 0.5), w[wide])
    vals, _ = cf.fit_piecewise(w[wide], y[wide], knots)
    vals[0] = 0.0  # a throughput curve: no work, no time (small chunks are on the grid)
    vals = cf.isotonic(np.maximum(vals, 0))
    curve = Curve(x=knots.tolist(), seconds=vals.tolist())
    single = [r for r in pts if r.get("chunks", 1) == 1]
    news = sorted({int(r["new"]) for r in single})
    ctxs = sorted({int(r["ctx"]) for r in single})
    g = np.full((len(news), len(ctxs)), np.nan)
    for r in single:  # a chunk wide enough for two waves is the throughput curve's: no floor
        narrow = np.ceil(r["new"] / 128) * heads < 2 * sms
        g[news.index(int(r["new"])), ctxs.index(int(r["ctx"]))] = (
            r["us_median"] * 1e-6 * layers if narrow else 0.0)
    for i in range(len(news)):  # points that ran out of memory: from their row
        ok = ~np.isnan(g[i])
        g[i] = np.interp(ctxs, np.array(ctxs)[ok], g[i][ok])
    grid = Grid2D(x=[float(n) for n in news], y=[float(c) for c in ctxs], seconds=g.tolist())
    pred = [max(cf.curve_at(wi, knots, vals), _grid_at(grid, r["new"], r["ctx"]))
            for wi, r in zip(w, pts, strict=True)]
    return curve, grid, _rms(np.array(pred), y)


def _grid_at(g: Grid2D, x: float, y: float) -> float:
    ix = cf.hat_basis(np.array([x]), g.x)[0]
    iy = cf.hat_basis(np.array([y]), g.y)[0]
    return float(ix @ np.asarray(g.seconds) @ iy)


def fit_shared(rows: list[dict], layers: int, paged: Callable[[int, float], float]
               ) -> tuple[Grid2D, float]:
    """Prefix part of the shared-prefix kernel on a (prefix, batch) grid; RMS relative error of
    the composed prediction (prefix part + ``paged(sequences, KV tokens)`` for the suffixes)
    on the measured kernel."""
    pts = _ok(rows, "shared")
    pre = sorted({int(r["prefix"]) for r in pts})
    bat = sorted({int(r["batch"]) for r in pts})
    acc: dict[tuple[int, int], list[float]] = {}
    total = {}
    for r in pts:
        b, suffix = r["batch"], r["batch"] * r["suffix"]
        t = r["us_median"] * 1e-6 * layers
        rest = paged(int(b), suffix)
        acc.setdefault((int(r["prefix"]), int(b)), []).append(t - rest)
        total[(int(r["prefix"]), int(b), r["suffix"])] = (t, rest)
    grid = np.full((len(pre), len(bat)), np.nan)
    for (p, b), v in acc.items():
        grid[pre.index(p), bat.index(b)] = max(0.0, float(np.mean(v)))
    for i in range(len(pre)):  # fill points that ran out of memory from their row
        ok = ~np.isnan(grid[i])
        grid[i] = np.interp(bat, np.array(bat)[ok], grid[i][ok]) if ok.any() else 0.0
    seconds = [[0.0] * len(bat)] + grid.tolist()
    pred = [grid[pre.index(p), bat.index(b)] + rest for (p, b, _), (_, rest) in total.items()]
    meas = [t for t, _ in total.values()]
    return Grid2D(x=[0.0] + [float(p) for p in pre], y=[float(b) for b in bat],
                  seconds=seconds), _rms(np.array(pred), np.array(meas))


def _rms(pred: np.ndarray, meas: np.ndarray) -> float:
    return float(np.sqrt(np.mean(cf.rel_errors(pred, meas) ** 2)))


def forward_points(rows: list[dict]) -> list[dict]:
    """Measured forward passes with their batch kind and train/held-out split."""
    pts = []
    for r in rows:
        if r["section"] != "forward" or r.get("status") != "ok":
            continue
        pts.append({"prefills": r.get("prefills", ""), "decodes": int(r.get("decodes", 0)),
                    "decode_ctx": int(r.get("decode_ctx", 0)), "prefix": int(r.get("prefix", 0)),
                    "measured_s": r["us_median"] * 1e-6, "p20_s": r["us_p20"] * 1e-6,
                    "p80_s": r["us_p80"] * 1e-6})
    for p, held in zip(pts, heldout_flags(pts), strict=True):
        p["kind"] = batch_kind(p)
        p["split"] = "heldout" if held else "train"
    return pts


def gpu_spec(env: dict) -> GpuSpec:
    base = GPUS["h200"] if "H200" in env.get("gpu", "") else None
    mem = float(env.get("gpu_memory_gib", base.memory_gib if base else 80))
    if base is not None:
        return base.model_copy(update={"name": env["gpu"], "memory_gib": mem})
    ceil = env.get("ceilings", {})
    return GpuSpec(name=env.get("gpu", "unknown"), memory_gib=mem,
                   hbm_tb_s=ceil.get("stream_read_TBs", 1.0),
                   bf16_tflops=ceil.get("gemm_bf16_8192_TFLOPs", 100.0))


def extent(rows: list[dict]) -> Extent:
    """The largest quantity measured (``ok``) along each axis of the kernel grids."""
    def top(section: str, key: str) -> int:
        return int(max((r[key] for r in _ok(rows, section)), default=1))
    return Extent(batch_tokens=top("linear", "tokens"), prefill_chunk_tokens=top("prefill", "new"),
                  prefill_context=top("prefill", "ctx"), decode_batch=top("paged", "batch"),
                  decode_context=top("paged", "ctx"), shared_prefix=top("shared", "prefix"),
                  shared_batch=top("shared", "batch"))


def calibration(rows: list[dict], env: dict) -> Calibration:
    """The run's extent and the bandwidth and GEMM rate its probe measured (when it ran)."""
    ceil = env.get("ceilings", {})
    return Calibration(extent=extent(rows), stream_read_tb_s=ceil.get("stream_read_TBs"),
                       gemm_bf16_tflops=ceil.get("gemm_bf16_8192_TFLOPs"))


def raw_path(raw_dir: Path, out: Path | None) -> str:
    """``raw_dir`` as the profile records it: relative to the folder of the profile ``out``
    (so a profile and its raw measurements move together), as given when ``out`` is None."""
    if out is None:
        return str(raw_dir)
    return Path(os.path.relpath(raw_dir.resolve(), out.resolve().parent)).as_posix()


def _environment(env: dict, raw_dir: str, skipped: list[str]) -> dict[str, str]:
    keep = ("gpu", "gpu_memory_gib", "sms", "torch", "triton", "cuda", "python", "nvidia_smi",
            "date", "quick", "command", "model_kv_pages", "max_memory_gib", "kernel_table")
    out = {k: str(env[k]) for k in keep if k in env}
    if "ceilings" in env:
        c = env["ceilings"]
        out["measured_ceilings"] = (f"stream read {c.get('stream_read_TBs', 0):.2f} TB/s, "
                                    f"bf16 GEMM {c.get('gemm_bf16_8192_TFLOPs', 0):.0f} TFLOP/s")
    out["grid"] = json.dumps({k: len(v) for k, v in env.get("grids", {}).items()})
    out["seconds_per_section"] = json.dumps(env.get("seconds", {}))
    out["raw_measurements"] = raw_dir
    out["skipped_points"] = "; ".join(skipped) or "none"
    if env.get("errors"):
        out["errors"] = json.dumps(env["errors"])
    return out


def build_profile(raw_dir: Path, name: str, out: Path | None = None
                  ) -> tuple[Profile, list[dict], dict]:
    """Fit the profile from ``raw_dir``; returns it, the forward points and fit diagnostics.
    ``out``: where the profile will be written (its raw path is recorded relative to it)."""
    rows, env = load_raw(raw_dir)
    model = TINY if env["model"] == "tiny" else MODELS[env["model"]]
    layers = model.layers
    linear = fit_linear(rows)
    grid, grid_rms, filled = fit_paged_grid(rows, layers)
    paged, per_seq, paged_rms = fit_paged(rows, layers, per_sequence=grid is None)
    prefill, prefill_grid, prefill_rms = fit_prefill(rows, layers, model.heads,
                                                      int(env.get("sms", 132)))
    if grid is not None:
        def paged_at(b: int, kv: float) -> float:
            return paged_grid_time(grid, b, kv)
    else:
        def paged_at(b: int, kv: float) -> float:
            return cf.curve_at(kv, paged.x, paged.seconds) + per_seq * b
    shared, shared_rms = fit_shared(rows, layers, paged_at)
    # the paged kernel over shared pages, decomposed the same way (optional section)
    over_shared = [{**r, "section": "shared"} for r in _ok(rows, "paged_shared")]
    paged_shared = fit_shared(over_shared, layers, paged_at)[0] if over_shared else None
    waves, waves_note = paged_waves(env, grid)
    curves = Curves(iteration_overhead_s=0.0, linear=linear, decode_paged=paged,
                    decode_per_seq_s=max(per_seq, 0.0), decode_paged_grid=grid,
                    decode_paged_waves=waves, shared_prefix=shared,
                    paged_shared_prefix=paged_shared, prefill_attention=prefill,
                    prefill_attention_grid=prefill_grid)
    skipped = [f"{r['section']} " + ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in r.items()
                                             if k not in ("section", "status"))
               for r in rows if r.get("status") != "ok"]
    environment = _environment(env, raw_path(raw_dir, out), skipped)
    if grid is not None:
        environment["decode_paged_grid_filled"] = ", ".join(filled) or "none"
        environment["decode_paged_waves"] = waves_note
    prof = Profile(schema_version=SCHEMA_VERSION, name=name, source="measured",
                   date=env.get("date", "")[:10], gpu=gpu_spec(env), model=model, dtype="bf16",
                   environment=environment, curves=curves,
                   calibration=calibration(rows, env))
    points = forward_points(rows)
    train = [p for p in points if p["split"] == "train"]
    prof, coef = correct(prof, train)
    diag = {"fit_paged_rms_rel": paged_rms, "fit_prefill_rms_rel": prefill_rms,
            "fit_shared_rms_rel": shared_rms}
    if grid is not None:
        diag["fit_paged_grid_rms_rel"] = grid_rms
    for split in ("train", "heldout"):
        summ = val.summarize(val.evaluate(prof, points, split))
        for kind, s in summ.items():
            diag[f"{split}_{kind}_median_abs"] = s["median"]
            diag[f"{split}_{kind}_worst_abs"] = s["worst"]
    desc = (f"{model.name} shapes (random bf16 weights) measured on the {env.get('gpu')} with "
            f"parrotsim's Triton kernels and cuBLAS, CUDA graphs, L2 flushed. Forward-pass "
            f"corrections: overhead {coef['overhead_s'] * 1e3:.3f} ms, "
            f"{coef['per_token_s'] * 1e6:+.3f} us/token, {coef['per_decode_s'] * 1e6:+.3f} "
            f"us/decode, prefill-attention scale {1 + coef['prefill_scale']:.3f}, "
            f"paged scale {1 + coef['paged_scale']:.3f}."
            + (" Paged decode attention: the measured (sequences x context) grid."
               if grid is not None else ""))
    fitted_to = [f"{len(_ok(rows, s))} {s} points" for s in ("linear", "paged", "shared",
                                                              "paged_shared", "prefill")
                 if s != "paged_shared" or over_shared]
    fitted_to.append(f"{len(train)} training forward passes "
                     f"({len(points) - len(train)} more held out)")
    prof = prof.model_copy(update={"description": desc, "fitted_to": fitted_to,
                                   "residuals": {k: round(v, 5) for k, v in diag.items()}})
    return prof, points, diag


def write_profile(prof: Profile, points: list[dict], out: Path) -> None:
    """Write ``out`` and its forward passes beside it (validated by reading back)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    dump_profile(prof, out)
    parse_profile(out.read_text(), str(out))
    val.write_points(val.points_path(out), points)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Fit a cost profile to raw calibration data.")
    ap.add_argument("raw_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="profile YAML to write")
    ap.add_argument("--name", help="profile name (default: the output file's stem)")
    args = ap.parse_args(argv)
    name = args.name or args.out.name.removesuffix(".yaml")
    prof, points, _ = build_profile(args.raw_dir, name, args.out)
    write_profile(prof, points, args.out)
    rows = val.evaluate(prof, points, "heldout")
    print(val.report(rows, val.summarize(rows)))
    print(f"wrote {args.out} and {val.points_path(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
