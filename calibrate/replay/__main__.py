"""Replay every run of an experiment file on the GPU, in wall-clock time.

    python -m parrotsim.calibrate.replay EXPERIMENT.yaml --out DIR [--eager] [--num-requests N]
        [--profile NAME]

writes ``DIR/runs/<name>/{calls,apps,engines,iterations}.parquet`` (the simulator's columns,
see :mod:`parrotsim.calibrate.replay.tables`) and ``DIR/runs/<name>/meta.json`` (labels, the
run's whole config, timings) for each run, and ``DIR/meta.json`` (GPU, library versions,
command, date, model set-up times). ``<name>`` is made of the run's labels (``rate-3_seed-0``).
One model (random bf16 weights of the profile's model) serves all runs; it is warmed up and its
decode graphs captured before the first run's ``t0``. Needs a CUDA GPU, torch and triton.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from parrotsim.calibrate.replay.chunks import TokenIds
from parrotsim.calibrate.replay.executor import Replay
from parrotsim.calibrate.replay.tables import store
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.experiment import ExpandedRun, load_experiment


def run_name(run: ExpandedRun) -> str:
    """``[variant_]axis-value_..._seed-N`` from the labels (last segment of each axis)."""
    parts = [] if run.labels["variant"] == "base" else [str(run.labels["variant"])]
    parts += [f"{k.split('.')[-1]}-{v}" for k, v in run.labels.items()
              if k not in ("variant", "seed")]
    parts.append(f"seed-{run.labels['seed']}")
    return re.sub(r"[^A-Za-z0-9_.-]", "", "_".join(parts))


def with_overrides(cfg: RunConfig, n: int | None, profile: str | None = None) -> RunConfig:
    """``cfg`` with ``workload.num_requests`` and ``cluster.profile`` replaced where given (the
    profile gives the logged model time and the SM count of the skewed-batch excess, so a
    replay on another GPU names that GPU's profile)."""
    if n is None and profile is None:
        return cfg
    data = cfg.model_dump(mode="json")
    if n is not None:
        data["workload"]["num_requests"] = n
    if profile is not None:
        data["cluster"]["profile"] = profile
    return RunConfig.model_validate(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("experiment", help="experiment file (or shipped name)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--eager", action="store_true", help="no CUDA graphs for decode steps")
    ap.add_argument("--num-requests", type=int, help="override workload.num_requests")
    ap.add_argument("--profile", help="override cluster.profile (the GPU's own, e.g. h100_llama-7b)")
    args = ap.parse_args(argv)
    import torch
    import triton

    from parrotsim.calibrate.replay.gpu import GpuForward

    exp = load_experiment(args.experiment)
    plans = []
    for run in exp.runs:
        cfg = with_overrides(run.config, args.num_requests, args.profile)
        plans.append((run, cfg, Replay(cfg, None)))
    pages = max(r.limits.kv_blocks for _, _, r in plans)
    width = max(r.table_width() for _, _, r in plans)
    models = {r.profile.model.name for _, _, r in plans}
    if len(models) != 1:
        raise SystemExit(f"one model per replay file, got {sorted(models)}")
    shared = any(cfg.cluster.kernel == "shared_prefix" for _, cfg, _ in plans)
    prefixes = sorted({n for _, cfg, r in plans if cfg.cluster.kernel == "shared_prefix"
                       for n in r.shared_prefix_pages()})
    t = time.perf_counter()
    gpu = GpuForward(models.pop(), pages, width, graphs=not args.eager,
                     decode_attention="shared_prefix" if shared else "paged")
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__, "cuda": str(torch.version.cuda),
            "python": platform.python_version(), "experiment": exp.name,
            "command": "python -m parrotsim.calibrate.replay " + " ".join(argv or sys.argv[1:]),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "model": gpu.cfg.name, "kv_pages": pages, "table_width": width,
            "graphs": list(gpu.buckets), "init_s": round(time.perf_counter() - t, 2)}
    meta["shared_prefix_pages"] = prefixes
    meta["capture_s"] = round(gpu.capture(tuple(prefixes)), 2)
    meta["warmup_s"] = round(gpu.warmup(), 2)
    print(f"model ready: {meta}", flush=True)
    meta["runs"] = {}
    for run, cfg, replay in plans:
        name = run_name(run)
        replay.device.forward = gpu
        replay.device.ids = TokenIds(gpu.cfg.vocab_size, seed=cfg.seed)
        before, captured = dict(gpu.calls), gpu.captured_s
        t = time.perf_counter()
        result = replay.run()
        wall = time.perf_counter() - t
        it = result.iterations
        waves = replay.profile.curves.decode_paged_waves  # the logged model_s include it
        info = {"labels": run.labels, "key": run.key, "config": cfg.model_dump(mode="json"),
                "model_s_paged_waves": waves.model_dump() if waves is not None else None,
                "model_s_suffix_waves": True,  # shared-prefix suffixes carry the excess too
                "wall_s": round(wall, 2), "forward_calls": {k: gpu.calls[k] - before.get(k, 0)
                                                           for k in gpu.calls},
                "capture_off_clock_s": round(gpu.captured_s - captured, 2)}
        store(result, args.out / "runs" / name, info)
        meta["runs"][name] = {"wall_s": info["wall_s"], "iterations": len(it)}
        s = result.summary
        print(f"{name}: {wall:.1f} s, {len(it)} iterations, mean latency "
              f"{s['mean_request_latency']:.3f} s, TPOT {s['latency_per_output_token']:.2f} ms, "
              f"preemptions {s['preemptions']:.0f}; per iteration: wall "
              f"{it.wall_s.mean() * 1e3:.3f} ms, GPU {it.gpu_s.mean() * 1e3:.3f}, sched "
              f"{it.sched_s.mean() * 1e3:.3f}, post {it.post_s.mean() * 1e3:.3f}, model "
              f"{it.model_s.mean() * 1e3:.3f}", flush=True)
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
