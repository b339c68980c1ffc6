"""Compare replayed runs with the simulator (no GPU).

    python -m parrotsim.calibrate.replay.compare REAL_DIR [--profile P] [--out DIR]
        [--bounds REAL_DIR/bounds.yaml] [--host-from OTHER_REAL_DIR ...]

For each ``REAL_DIR/runs/<name>`` (written by ``python -m parrotsim.calibrate.replay``) the
run's stored config is simulated (``--profile`` replaces its cost profile; fast-forward on)
and the two are compared:

* per app (joined on ``app_id``): latency (last output returned - arrival), median / mean
  of ``|sim - real| / real`` and the error of the mean; the paper's normalized latency (mean
  of E2E / output tokens) real and simulated;
* per request (calls joined on app and call): E2E latency (``returned - sent``), TTFT
  (``first_token - engine_arrived``) and TPOT (``(finished - first_token) / (output - 1)``,
  calls of more than one output token): median / mean / p90 over requests of
  ``|sim - real| / real``, and the signed error of the mean and of the p90
  (``(sim - real) / real``);
* per iteration, two ways: (1) the cost model on the real batches: each logged iteration's
  ``model_s`` (the simulator's time for exactly that batch; with ``--profile``, plus that
  profile's runtime terms) against its wall time, its GPU time and its cycle (wall plus the
  bookkeeping after it, which is what a runtime's host terms stand for); (2) by order: the simulator stepped one iteration at a time (fast-forward off, same
  per-call times) against the real log, iteration ``i`` with iteration ``i``, for as long as
  the two batches are identical (prefill tokens and sequences, decode sequences, decode KV
  tokens); ``iter_matched`` says how many were;
* preemptions, peak KV blocks, iterations and busy time side by side, and the real loop's
  host time per iteration (``wall - gpu + post``: schedule, page mapping, input building,
  launching, and the bookkeeping after the forward; idle waits excluded).

Writes ``compare.csv`` (one row per run) and ``compare_latency.png`` (simulated vs real
per-request E2E latency) into ``--out`` (default ``REAL_DIR``), prints a table and, per run,
which of issue 14's targets are met (:mod:`.targets`). With ``--bounds`` it exits 1 when a run
breaks a bound of that file (the CI gate on the committed replays). The host is a property
of the machine a replay ran on (its host time per iteration drifts 20-40 % between leases), so
``--host-from`` scores a replay with host terms measured on replays of another workload from
the same lease (:func:`.runtime_fit.fitted_profile`, written to ``OUT/host_profile.yaml``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.calibrate.replay.compare_view import format_table, plot
from parrotsim.calibrate.replay.runtime_fit import fitted_profile
from parrotsim.calibrate.replay.skew import model_for
from parrotsim.calibrate.replay.targets import ISSUE_TARGETS, broken, load_bounds
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.model.profile import dump_profile, load_profile
from parrotsim.sim.model.profile_parts import Runtime

KEY = ["prefill_tokens", "prefill_seqs", "decode_seqs", "decode_kv_tokens"]


def request_metrics(calls: pd.DataFrame) -> pd.DataFrame:
    """E2E latency, TTFT and TPOT of every returned call, indexed by (app_id, call)."""
    done = calls[calls["returned"] >= 0].set_index(["app_id", "call"])
    out = pd.DataFrame({"e2e": done["returned"] - done["sent"],
                        "ttft": done["first_token"] - done["engine_arrived"]})
    multi = done["output_len"] > 1
    out["tpot"] = ((done["finished"] - done["first_token"]) / (done["output_len"] - 1)
                   ).where(multi)
    return out


def request_errors(real: pd.DataFrame, sim: pd.DataFrame) -> dict[str, float]:
    """Per-request relative errors of the simulated calls against the real ones."""
    r, s = request_metrics(real), request_metrics(sim)
    r, s = r.align(s, join="inner", axis=0)
    out: dict[str, float] = {"requests": float(len(r))}
    for m in ("e2e", "ttft", "tpot"):
        ok = r[m].notna() & s[m].notna() & (r[m] > 0)
        a, b = r.loc[ok, m], s.loc[ok, m]
        rel = (b - a).abs() / a
        out[f"{m}_median_err"] = float(rel.median())
        out[f"{m}_mean_err"] = float(rel.mean())
        out[f"{m}_p90_err"] = float(rel.quantile(0.9))
        out[f"{m}_real_mean"] = float(a.mean())
        out[f"{m}_sim_mean"] = float(b.mean())
        out[f"{m}_mean_bias"] = float(b.mean() / a.mean() - 1)
        out[f"{m}_real_p90"] = float(a.quantile(0.9))
        out[f"{m}_sim_p90"] = float(b.quantile(0.9))
        out[f"{m}_p90_bias"] = float(b.quantile(0.9) / a.quantile(0.9) - 1)
    return out


def app_errors(real: pd.DataFrame, sim: pd.DataFrame) -> dict[str, float]:
    """Per-app latency errors (apps joined on ``app_id``; apps that finished in both)."""
    r = real.set_index("app_id")["latency"]
    s = sim.set_index("app_id")["latency"]
    r, s = r.align(s, join="inner")
    ok = r.notna() & s.notna() & (r > 0)
    r, s = r[ok], s[ok]
    rel = (s - r).abs() / r
    return {"apps": float(len(r)), "app_median_err": float(rel.median()),
            "app_mean_err": float(rel.mean()), "app_real_mean": float(r.mean()),
            "app_sim_mean": float(s.mean()), "app_mean_bias": float(s.mean() / r.mean() - 1)}


def normalized_latency(calls: pd.DataFrame) -> float:
    """The paper's normalized latency: mean over calls of E2E latency / output tokens (s)."""
    done = calls[calls["returned"] >= 0]
    return float(((done["returned"] - done["sent"]) / done["output_len"]).mean())


def with_runtime(iters: pd.DataFrame, runtime: Runtime) -> pd.Series:
    """The logged kernel-only ``model_s`` with a profile's runtime terms applied (what the
    simulator charges for each real batch: host terms included)."""
    pre = iters["prefill_seqs"] > 0
    per_seq = runtime.overhead_per_seq_s * (iters["prefill_seqs"] + iters["decode_seqs"])
    decode = runtime.overhead_s + runtime.scale * iters["model_s"]
    prefill = runtime.prefill_overhead_s + np.maximum(
        runtime.prefill_scale * iters["model_s"], runtime.prefill_launch_floor_s)
    return decode.where(~pre, prefill) + per_seq


def model_errors(iters: pd.DataFrame, runtime: Runtime | None = None) -> dict[str, float]:
    """The cost model on the real batches, and the real loop's host time per iteration.
    ``runtime``: terms to add to the logged kernel-only model times; the model (with them)
    is then also compared with each iteration's cycle (wall plus the bookkeeping after)."""
    out: dict[str, float] = {}
    iters = iters.assign(cycle_s=iters["wall_s"] + iters["post_s"])
    if runtime is not None:
        iters = iters.assign(model_s=with_runtime(iters, runtime))
    pre = iters["prefill_seqs"] > 0
    for name, sel in (("all", slice(None)), ("decode", ~pre), ("prefill", pre)):
        it = iters[sel]
        out[f"iter_{name}_n"] = float(len(it))
        for ref in ("wall", "gpu", "cycle"):
            rel = (it["model_s"] - it[f"{ref}_s"]).abs() / it[f"{ref}_s"]
            out[f"iter_{name}_model_vs_{ref}_median_err"] = float(rel.median())
        out[f"iter_{name}_wall_ms"] = float(it["wall_s"].mean() * 1e3)
        out[f"iter_{name}_gpu_ms"] = float(it["gpu_s"].mean() * 1e3)
        out[f"iter_{name}_model_ms"] = float(it["model_s"].mean() * 1e3)
        host = it["wall_s"] - it["gpu_s"] + it["post_s"]
        out[f"iter_{name}_host_ms"] = float(host.mean() * 1e3)
    out["iter_model_vs_wall_total_bias"] = float(iters["model_s"].sum()
                                                 / iters["wall_s"].sum() - 1)
    return out


def sim_iterations(cfg: RunConfig) -> pd.DataFrame:
    """The simulator's iterations, stepped one at a time, with the real log's batch keys."""
    rows = []

    def record(engine, start, end, batch, steps):
        rows.append((start, end, sum(n for _, n in batch.prefills), len(batch.prefills),
                     len(batch.decodes), sum(s.kv_tokens for s in batch.decodes)))
    data = cfg.model_dump(mode="json")
    data["cluster"]["fast_forward"] = False
    simulate(RunConfig.model_validate(data), recorder=record)
    df = pd.DataFrame(rows, columns=["start", "end", *KEY])
    df["wall_s"] = df["end"] - df["start"]
    return df


def order_matched(real: pd.DataFrame, sim: pd.DataFrame) -> dict[str, float]:
    """Iteration i against iteration i while the batches are identical."""
    n = min(len(real), len(sim))
    same = (real[KEY].iloc[:n].to_numpy() == sim[KEY].iloc[:n].to_numpy()).all(axis=1)
    k = int(np.argmin(same)) if not same.all() else n
    a, b = real["wall_s"].iloc[:k].to_numpy(), sim["wall_s"].iloc[:k].to_numpy()
    rel = np.abs(b - a) / a
    return {"iter_matched": float(k),
            "iter_matched_median_err": float(np.median(rel)) if k else float("nan"),
            "iter_matched_sum_bias": float(b.sum() / a.sum() - 1) if k else float("nan")}


def compare_run(run_dir: Path, profile: str | None = None) -> tuple[dict, pd.DataFrame]:
    """The comparison row of one replayed run, and its per-request (real, sim) latencies."""
    meta = json.loads((run_dir / "meta.json").read_text())
    data = meta["config"]
    if profile:
        data["cluster"]["profile"] = profile
    data["cluster"]["fast_forward"] = True
    cfg = RunConfig.model_validate(data)
    real = {t: pd.read_parquet(run_dir / f"{t}.parquet")
            for t in ("calls", "engines", "iterations")}
    real["apps"] = pd.read_parquet(run_dir / "apps.parquet")
    real["iterations"] = real["iterations"].assign(  # the skewed-batch excess as cfg's profile
        model_s=model_for(real["iterations"], meta, load_profile(cfg.cluster.profile)))
    sim = simulate(cfg)
    row = {"run": run_dir.name, "profile": cfg.cluster.profile,
           **request_errors(real["calls"], sim.calls), **app_errors(real["apps"], sim.apps)}
    nl_real, nl_sim = normalized_latency(real["calls"]), normalized_latency(sim.calls)
    row.update(norm_real=nl_real, norm_sim=nl_sim, norm_bias=nl_sim / nl_real - 1)
    runtime = (load_profile(profile).runtime(cfg.cluster.engine.runtime)
               if profile else None)
    row.update(model_errors(real["iterations"], runtime))
    row.update(order_matched(real["iterations"], sim_iterations(cfg)))
    for name, df in (("real", real), ("sim", {"calls": sim.calls, "engines": sim.engines})):
        e = df["engines"].iloc[0]
        row[f"{name}_preemptions"] = float(df["calls"]["preemptions"].sum())
        row[f"{name}_peak_kv_blocks"] = float(e["peak_kv_blocks"])
        row[f"{name}_iterations"] = float(e["iterations"])
        row[f"{name}_busy_s"] = float(e["busy_time"])
    lat = request_metrics(real["calls"])[["e2e"]].merge(
        request_metrics(sim.calls)[["e2e"]], left_index=True, right_index=True,
        suffixes=("_real", "_sim"))
    return row, lat.assign(run=run_dir.name)


def replayed_runs(real_dir: Path) -> list[Path]:
    """The run folders of a replay, by workload rate."""
    runs = sorted((p for p in (real_dir / "runs").iterdir() if (p / "meta.json").is_file()),
                  key=lambda p: json.loads((p / "meta.json").read_text())["config"]
                  ["workload"].get("rate", 0))
    if not runs:
        raise SystemExit(f"no replayed runs under {real_dir / 'runs'}")
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay.compare",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("real_dir", type=Path, help="output folder of a replay")
    ap.add_argument("--profile", help="cost profile to simulate with (default: the run's)")
    ap.add_argument("--out", type=Path, help="where compare.csv and the plot go "
                    "(default: REAL_DIR)")
    ap.add_argument("--bounds", type=Path, help="a bounds file (calibrate/replay/targets.py): "
                    "exit 1 when a run breaks one; its profile is used unless --profile")
    ap.add_argument("--host-from", type=Path, nargs="+", metavar="DIR",
                    help="replays of another workload on the same lease: the profile's host "
                    "terms are measured on them (runtime_fit) and written to "
                    "OUT/host_profile.yaml, which the simulation then uses")
    args = ap.parse_args(argv)
    profile, bounds = (None, {}) if args.bounds is None else load_bounds(args.bounds)
    profile = args.profile or profile
    runs = replayed_runs(args.real_dir)
    out = args.out or args.real_dir
    if args.host_from:
        base = profile or json.loads((runs[0] / "meta.json").read_text())["config"][
            "cluster"]["profile"]
        fitted, _, _ = fitted_profile(args.host_from, load_profile(base), "host_profile")
        out.mkdir(parents=True, exist_ok=True)
        dump_profile(fitted, out / "host_profile.yaml")
        profile = str(out / "host_profile.yaml")
        print(f"host terms measured on {', '.join(map(str, args.host_from))}: {profile}")
    rows, lats = [], []
    for run in runs:
        row, lat = compare_run(run, profile)
        rows.append(row)
        lats.append(lat)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "compare.csv", index=False)
    plot(pd.concat(lats), out / "compare_latency.png")
    print(format_table(rows))
    print(f"\nwrote {out / 'compare.csv'} and {out / 'compare_latency.png'}")
    failed = 0
    for row in rows:
        missed = broken(row, ISSUE_TARGETS)
        print(f"{row['run']}: issue 14 targets met {len(ISSUE_TARGETS) - len(missed)} of "
              f"{len(ISSUE_TARGETS)}" + (f"; missed: {'; '.join(missed)}" if missed else ""))
        if bounds and (bad := broken(row, bounds)):
            failed += 1
            print(f"{row['run']}: BOUNDS BROKEN ({args.bounds}): {'; '.join(bad)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
