"""Where the simulator's error on a replayed run comes from: GPU time or host time (no GPU).

    python -m parrotsim.calibrate.replay.error_split REAL_DIR [REAL_DIR ...]
        [--profile h200_llama-7b-replay] [--all-policies]

For every run of the Parrot engine policy (``--all-policies``: every run) the run is re-driven
on a fake clock (each iteration lasts what the real one lasted, so the policy makes the same
batches; ``identical`` counts the iterations whose batch equals the log's) and each iteration
is costed by ``--profile`` as the simulator costs it now. The model's error on iteration ``i``
against its real cycle (wall time plus the bookkeeping after it) splits exactly in two:

* **GPU part** ``kernel_i - gpu_i``: the cost model's GPU time (no runtime terms) against the
  CUDA-event time of the forward;
* **host part** ``host_model_i - host_i``: the profile's runtime terms for that batch (the
  engine policy's ``runtimes`` block: fixed and per-sequence host time, prefill launch floor)
  against the measured host time ``wall + post - gpu`` = ``sched`` (schedule, page mapping,
  chunks) + ``build`` (device inputs) + ``launch`` (issuing the launches and waiting on the
  events: ``forward - gpu - build``) + ``post`` (emission, bookkeeping).

Per run it prints both parts summed over the iterations (per cent of the real busy time) and,
per request, summed over the iterations that overlap the request's life (sent to returned):
their mean over the mean real E2E latency is what each part contributes to the mean E2E error,
printed beside the error of a full simulation with the same profile. Where the batches are
identical the two agree closely (the Bing runs); where the schedule diverges (queueing,
round trips) the per-request sums are an attribution, not a prediction.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.calibrate.replay.compare import KEY, replayed_runs, request_errors, with_runtime
from parrotsim.calibrate.replay.executor import FakeClock, Replay
from parrotsim.calibrate.replay.tables import batch_of, longest_read
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.model.costmodel import CostModel

KERNEL_ONLY = "(kernel only)"  # a runtime no profile lists: no host terms
HOST_PARTS = ("sched_s", "build_s", "launch_wait_s", "post_s")


def run_config(run_dir: Path, profile: str | None) -> RunConfig:
    """The run's stored config, with ``profile`` as its cost profile when given, and
    fast-forward on (the simulator's; the replay steps one iteration at a time anyway)."""
    data = json.loads((run_dir / "meta.json").read_text())["config"]
    if profile:
        data["cluster"]["profile"] = profile
    data["cluster"]["fast_forward"] = True
    return RunConfig.model_validate(data)


def recost(run_dir: Path, profile: str | None = None) -> tuple[pd.DataFrame, int]:
    """The real iteration log with ``kernel_s`` (the cost model's GPU time of the re-driven
    batch), ``host_model_s`` (the runtime terms for it), ``host_s`` and its parts; and the
    count of re-driven batches identical to the log's (rows past the first difference keep
    the re-driven batch's cost, which is then an approximation)."""
    cfg = run_config(run_dir, profile)
    it = pd.read_parquet(run_dir / "iterations.parquet")
    nxt = np.append(it["start"].to_numpy(np.float64)[1:], np.inf)
    ends = it["end"].to_numpy(np.float64)
    clock = FakeClock()
    count = [0]

    def forward(batch, prefills, decodes, shared_pages):
        i = count[0]
        count[0] += 1
        target = (nxt[i] if np.isfinite(nxt[i]) else ends[i]) if i < len(nxt) else -np.inf
        clock.t = max(target, clock.t + 1e-9)
    replay = Replay(cfg, forward, clock)
    got = replay.run().iterations
    n = min(len(got), len(it))
    same = int((got[KEY].iloc[:n].to_numpy() == it[KEY].iloc[:n].to_numpy()).all(axis=1).sum())
    cluster = cfg.cluster
    cost = CostModel(replay.profile, KERNEL_ONLY, kernel=cluster.kernel,
                     paged_kernel=cluster.paged_kernel)
    kernel = []
    for r in replay.device.log[:n]:
        shared = list(r.shared)
        kernel.append(cost.iteration_time(
            batch_of(r.chunks, r.decode_seqs, r.decode_kv_tokens, r.decode_max_ctx), shared,
            sum(p * k for p, k in shared), longest_read(r.shared, r.decode_seqs,
                                                        r.decode_max_ctx)))
    it = it.iloc[:n].assign(kernel_s=kernel)
    runtime = replay.profile.runtime(cluster.engine.runtime)
    it["host_model_s"] = with_runtime(it.assign(model_s=it["kernel_s"]), runtime) - it["kernel_s"]
    it["cycle_s"] = it["wall_s"] + it["post_s"]
    it["host_s"] = it["cycle_s"] - it["gpu_s"]
    it["launch_wait_s"] = it["forward_s"] - it["gpu_s"] - it["build_s"]
    it["gpu_err_s"] = it["kernel_s"] - it["gpu_s"]
    it["host_err_s"] = it["host_model_s"] - it["host_s"]
    return it, same


def per_request(calls: pd.DataFrame, it: pd.DataFrame) -> pd.DataFrame:
    """Per returned call: real E2E and the GPU and host parts of the model's error summed
    over the iterations that overlap its life."""
    done = calls[calls["returned"] >= 0]
    start, end = it["start"].to_numpy(), it["end"].to_numpy()
    gpu, host = it["gpu_err_s"].to_numpy(), it["host_err_s"].to_numpy()
    rows = []
    for sent, ret in zip(done["sent"].to_numpy(), done["returned"].to_numpy(), strict=True):
        on = (end > sent) & (start < ret)
        rows.append((ret - sent, gpu[on].sum(), host[on].sum()))
    return pd.DataFrame(rows, columns=["e2e", "gpu_err", "host_err"])


def split_run(run_dir: Path, profile: str | None = None) -> dict[str, float]:
    """One run's split (see module docstring); fractions, not per cent."""
    it, same = recost(run_dir, profile)
    calls = pd.read_parquet(run_dir / "calls.parquet")
    req = per_request(calls, it)
    sim = simulate(run_config(run_dir, profile))
    busy = float(it["cycle_s"].sum())
    dec = it[it["prefill_seqs"] == 0]  # decode-only iterations
    out = {"iterations": float(len(it)), "identical": float(same), "busy_s": busy,
           "gpu_part": float(it["gpu_err_s"].sum()) / busy,
           "host_part": float(it["host_err_s"].sum()) / busy,
           "gpu_part_decode": float(dec["gpu_err_s"].sum()) / busy,
           "host_part_decode": float(dec["host_err_s"].sum()) / busy,
           "e2e_gpu_part": float(req["gpu_err"].mean() / req["e2e"].mean()),
           "e2e_host_part": float(req["host_err"].mean() / req["e2e"].mean()),
           "e2e_sim_bias": request_errors(calls, sim.calls)["e2e_mean_bias"],
           "dec_gpu_ms": float(dec["gpu_s"].mean() * 1e3),
           "dec_kernel_ms": float(dec["kernel_s"].mean() * 1e3),
           "dec_host_ms": float(dec["host_s"].mean() * 1e3),
           "dec_host_model_ms": float(dec["host_model_s"].mean() * 1e3),
           "dec_seqs": float(dec["decode_seqs"].mean())}
    out.update({f"dec_{p[:-2]}_ms": float(dec[p].mean() * 1e3) for p in HOST_PARTS})
    return out


def format_rows(rows: dict[str, dict[str, float]]) -> str:
    """The split of each run as a block of text, one line per quantity."""
    lines = {
        "iterations (identical re-driven)": lambda r: f"{r['iterations']:.0f} ({r['identical']:.0f})",
        "busy s (real cycles)": lambda r: f"{r['busy_s']:.2f}",
        "sum model - real, % of busy: GPU + host": lambda r: (
            f"{r['gpu_part'] * 100:+.1f} {r['host_part'] * 100:+.1f} = "
            f"{(r['gpu_part'] + r['host_part']) * 100:+.1f}"),
        "... of which decode-only iterations: GPU, host": lambda r: (
            f"{r['gpu_part_decode'] * 100:+.1f}, {r['host_part_decode'] * 100:+.1f}"),
        "mean E2E error, %: GPU + host (attributed)": lambda r: (
            f"{r['e2e_gpu_part'] * 100:+.1f} {r['e2e_host_part'] * 100:+.1f} = "
            f"{(r['e2e_gpu_part'] + r['e2e_host_part']) * 100:+.1f}"),
        "mean E2E error, % (simulated)": lambda r: f"{r['e2e_sim_bias'] * 100:+.1f}",
        "decode iters: seqs, GPU real/model ms": lambda r: (
            f"{r['dec_seqs']:.0f}, {r['dec_gpu_ms']:.3f}/{r['dec_kernel_ms']:.3f}"),
        "decode host real/model ms": lambda r: (
            f"{r['dec_host_ms']:.3f}/{r['dec_host_model_ms']:.3f}"),
        "decode host: sched/build/launch+wait/post ms": lambda r: "/".join(
            f"{r[f'dec_{p[:-2]}_ms']:.3f}" for p in HOST_PARTS),
    }
    width = max(len(k) for k in lines)
    return "\n".join(f"== {name}\n" + "\n".join(f"  {k:{width}s}  {f(r)}"
                                                 for k, f in lines.items())
                     for name, r in rows.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay.error_split",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("real_dirs", type=Path, nargs="+", help="replay output folders")
    ap.add_argument("--profile", default="h200_llama-7b-replay",
                    help="cost profile to cost the batches with (default: %(default)s)")
    ap.add_argument("--all-policies", action="store_true",
                    help="also the runs of other engine policies (default: parrot only)")
    args = ap.parse_args(argv)
    rows = {}
    for real in args.real_dirs:
        for run in replayed_runs(real):
            policy = run_config(run, None).cluster.engine.policy
            if policy == "parrot" or args.all_policies:
                rows[f"{real.as_posix().rstrip('/')}/{run.name}"] = split_run(run, args.profile)
    if not rows:
        raise SystemExit("no run of the Parrot engine policy (give --all-policies)")
    print(f"profile {args.profile}; model - real per iteration, split into GPU and host parts")
    print(format_rows(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
