"""What explains the gap between a replayed run and the simulator (no GPU).

    python -m parrotsim.calibrate.replay.attribute REAL_DIR [--decode-bench CSV]

Two analyses per ``REAL_DIR/runs/<name>``, both re-running the replay loop
(:class:`~parrotsim.calibrate.replay.executor.Replay`) on a fake clock (vLLM runs: no
shared-prefix groups):

* **re-drive**: each iteration lasts what the real one lasted (the clock jumps to the next
  real iteration's start), so the policy sees the real timing; ``identical`` counts the
  iterations whose batch equals the real log's (when all do, the loop reproduced the real
  schedule). It also yields each decode batch's contexts: the table gives the real GPU time
  over the cost model's (``gpu_s / model_s``) by the batch's imbalance, longest context over
  mean context (the cost model costs a batch as ``n`` sequences of the mean context, plus the
  longest sequence's excess where the profile has ``decode_paged_waves``).
* **what-if**: iteration times from the cost model, then with the real loop's measured
  corrections added one at a time: (B) host time per iteration (mean ``wall - gpu + post``
  of decode and of prefill iterations), (C) decode GPU time over the model (median ratio per
  decode batch size), (D) the eager prefill's launch floor (an iteration with prompts lasts at
  least the median host time of issuing its launches). Each step prints the per-request errors
  against the real run. The corrections are measured on the same run (in-sample): this
  attributes the gap, it does not predict it.

``--decode-bench CSV`` prints a :mod:`~parrotsim.calibrate.replay.decode_bench` table with the
cost model's time of each case (``over_model``: measured / model).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.calibrate.replay.compare import KEY, replayed_runs, request_errors
from parrotsim.calibrate.replay.executor import FakeClock, Replay
from parrotsim.calibrate.replay.skew import model_for
from parrotsim.calibrate.replay.tables import batch_of
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.profile import load_profile

STEPS = ("A cost model (= simulator)", "B + host time", "C + decode GPU excess",
         "D + prefill launch floor")


def _load(run_dir: Path) -> tuple[RunConfig, pd.DataFrame, pd.DataFrame]:
    """The run's config, calls and iterations (``model_s`` as the config's profile charges
    it now, skewed-batch excess included where the profile has it)."""
    meta = json.loads((run_dir / "meta.json").read_text())
    cfg = RunConfig.model_validate(meta["config"])
    it = pd.read_parquet(run_dir / "iterations.parquet")
    it = it.assign(model_s=model_for(it, meta, load_profile(cfg.cluster.profile)))
    return cfg, pd.read_parquet(run_dir / "calls.parquet"), it


def redrive(run_dir: Path) -> tuple[int, int, pd.DataFrame]:
    """(identical batches, iterations, decode batches with ``imbalance`` and ``ratio``)."""
    cfg, _, it = _load(run_dir)
    nxt = np.append(it["start"].to_numpy(np.float64)[1:], np.inf)
    ends = it["end"].to_numpy(np.float64)
    clock, spread, count = FakeClock(), {}, [0]

    def forward(batch, prefills, decodes, shared_pages):
        i = count[0]
        count[0] += 1
        if batch.decodes and not batch.prefills:
            kv = np.array([s.kv_tokens for s in batch.decodes])
            spread[i] = (kv.max() / kv.mean(), len(kv) * int(kv.max()))
        # the real iteration's start to the next one's (the last: to its end); an
        # iteration the real log lacks takes a nanosecond (iterations must take time)
        target = (nxt[i] if np.isfinite(nxt[i]) else ends[i]) if i < len(nxt) else -np.inf
        clock.t = max(target, clock.t + 1e-9)
    got = Replay(cfg, forward, clock).run().iterations
    n = min(len(got), len(it))
    same = int((got[KEY].iloc[:n].to_numpy() == it[KEY].iloc[:n].to_numpy()).all(axis=1).sum())
    dec = it.loc[list(spread)].assign(imbalance=pd.Series({i: v[0] for i, v in spread.items()}))
    dec["ratio"] = dec["gpu_s"] / dec["model_s"]
    # where the real time falls between the model (0: the mean context, plus the skewed-batch
    # excess where the profile has one) and the model as if every sequence had the longest
    # context (1): without the excess, the longest program's share of the kernel
    cost = CostModel(load_profile(cfg.cluster.profile), cfg.cluster.engine.runtime)
    at_longest = np.array([cost.iteration_time(batch_of((), n, spread[i][1]))
                           for i, n in zip(dec.index, dec["decode_seqs"], strict=True)])
    dec["toward_longest"] = (dec["gpu_s"] - dec["model_s"]) / (at_longest - dec["model_s"])
    return same, len(it), dec


def what_if(run_dir: Path) -> list[dict[str, float]]:
    """Per-request errors of the fake-clock replay after each step of :data:`STEPS`."""
    cfg, real, it = _load(run_dir)
    pre = it["prefill_seqs"] > 0
    host = it["wall_s"] - it["gpu_s"] + it["post_s"]
    h_dec, h_pre = float(host[~pre].mean()), float(host[pre].mean())
    dec = it[~pre]
    by_n = (dec["gpu_s"] / dec["model_s"]).groupby(dec["decode_seqs"]).median().to_dict()
    overall = float((dec["gpu_s"] / dec["model_s"]).median())
    floor = float(it.loc[pre, "launch_s"].median())
    out = []
    for step in range(len(STEPS)):
        clock = FakeClock()
        replay = Replay(cfg, None, clock)
        cost = CostModel(replay.profile, cfg.cluster.engine.runtime)

        def forward(batch, prefills, decodes, shared_pages, step=step, clock=clock, cost=cost):
            t = cost.iteration_time(batch)
            if batch.prefills:
                t = (max(t, floor) if step >= 3 else t) + (h_pre if step >= 1 else 0.0)
            else:
                t = t * (by_n.get(len(batch.decodes), overall) if step >= 2 else 1.0)
                t += h_dec if step >= 1 else 0.0
            clock.advance(t)
        replay.device.forward = forward
        res = replay.run()
        out.append({"step": STEPS[step], **request_errors(real, res.calls),
                    "preemptions": float(res.calls["preemptions"].sum()),
                    "h_dec_ms": h_dec * 1e3, "h_pre_ms": h_pre * 1e3,
                    "gpu_ratio": overall, "floor_ms": floor * 1e3})
    return out


def bench_table(path: Path, profile: str = "h200_llama-7b") -> pd.DataFrame:
    """``decode_bench``'s CSV with the cost model's time of each case and the ratio."""
    d = pd.read_csv(path)
    cost = CostModel(load_profile(profile))
    d["model_us"] = [cost.iteration_time(batch_of((), n, kv)) * 1e6
                     for n, kv in zip(d["real_rows"], d["kv_tokens"], strict=True)]
    d["over_model"] = d["us_median"] / d["model_us"]
    return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parrotsim.calibrate.replay.attribute",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("real_dir", type=Path, nargs="?")
    ap.add_argument("--decode-bench", type=Path, help="also show a decode_bench CSV against "
                    "the cost model")
    args = ap.parse_args(argv)
    if args.decode_bench:
        print(bench_table(args.decode_bench).round(3).to_string(index=False))
    if args.real_dir is None:
        return 0
    for run in replayed_runs(args.real_dir):
        real = pd.read_parquet(run / "calls.parquet")
        same, n, dec = redrive(run)
        print(f"\n== {run.name}: re-driven batches identical to the real log: {same} of {n}; "
              f"real preemptions {real['preemptions'].sum()}")
        dec = dec[dec["decode_seqs"] >= 2]
        bins = pd.cut(dec["imbalance"], [1, 1.5, 2, 2.5, 3, 4, 100], include_lowest=True)
        table = dec.groupby(bins, observed=True).agg(
            batches=("ratio", "size"), median_seqs=("decode_seqs", "median"),
            toward_longest=("toward_longest", "median"),
            gpu_over_model=("ratio", "median"))
        print("decode batches of >= 2 sequences by max/mean context:\n"
              + table.round(3).to_string())
        skew = dec[dec["imbalance"] > 1.5]
        by_n = skew.groupby(pd.cut(skew["decode_seqs"], [1, 4, 8, 12, 16, 24, 64, 256]),
                            observed=True).agg(batches=("ratio", "size"),
                                               toward_longest=("toward_longest", "median"),
                                               gpu_over_model=("ratio", "median"))
        print("... those with max/mean > 1.5 by sequences (the kernel's waves grow with them):\n"
              + by_n.round(3).to_string())
        rows = what_if(run)
        r0 = rows[0]
        print(f"what-if (host decode {r0['h_dec_ms']:.3f} ms, prefill {r0['h_pre_ms']:.3f} ms;"
              f" decode GPU/model median {r0['gpu_ratio']:.3f}; prefill floor "
              f"{r0['floor_ms']:.2f} ms):")
        for r in rows:
            print(f"  {r['step']:28s} E2E median err {r['e2e_median_err'] * 100:5.1f} %, "
                  f"mean {r['e2e_mean_bias'] * 100:+6.1f} %, p90 {r['e2e_p90_bias'] * 100:+6.1f} %"
                  f" | TTFT median err {r['ttft_median_err'] * 100:5.1f} %, mean "
                  f"{r['ttft_mean_bias'] * 100:+6.1f} % | TPOT median err "
                  f"{r['tpot_median_err'] * 100:5.1f} %, mean {r['tpot_mean_bias'] * 100:+6.1f} %"
                  f" | preemptions {r['preemptions']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
