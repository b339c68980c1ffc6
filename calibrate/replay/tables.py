"""The tables of a replayed run, with the simulator's columns, and how they are stored.

* ``calls``: :data:`~parrotsim.sim.model.metrics.CALL_COLUMNS` from the simulator's own
  :func:`~parrotsim.sim.model.metrics.call_table`, plus ``injected`` (when the loop moved the
  call into the waiting queue: its engine arrival rounded up to the next poll between
  iterations). The client is emulated: ``sent`` is the call's send time as the simulator's
  client sets it (the app's arrival for a dependency-free call) and ``returned`` is
  ``finished + rtt/2`` (with ``network.model: none``: sent = arrived, returned = finished);
* ``apps``: the simulator's per-app columns (``end``: last output returned);
* ``engines``: :func:`~parrotsim.sim.model.metrics.engine_table`'s columns (``busy_time``: the
  sum of iteration wall times; ``extrapolated``: cost-model evaluations of the replayed batches
  past the profile's measured range) plus ``gpu_time`` (sum of CUDA-event times);
* ``iterations``: one row per iteration: ``start``/``end`` (s since t0), ``wall_s`` = end -
  start, ``sched_s`` (schedule + page mapping + chunk building), ``forward_s`` (the forward
  call, synchronized), ``gpu_s`` (CUDA events around it), ``build_s`` / ``launch_s`` (host
  time of that call building its device inputs / issuing its launches), ``post_s`` (emission and bookkeeping
  before the next iteration may start), the batch (``prefill_tokens``, ``prefill_seqs``,
  ``decode_seqs``, ``decode_kv_tokens`` read by decodes, ``prefill_kv_tokens`` held by the
  prefilled sequences), ``used_blocks``, ``waiting`` and ``model_s``: the cost model's time for
  exactly this batch (what the simulator would charge for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pandas as pd

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.kv_cache import Context
from parrotsim.sim.model.metrics import RunResult, call_table, engine_table, summarize
from parrotsim.sim.model.sequence import Batch, Sequence

if TYPE_CHECKING:
    from parrotsim.calibrate.replay.executor import Replay

nan = float("nan")
TABLES = ("calls", "apps", "engines", "iterations")
ITERATION_COLUMNS = [
    "iteration", "start", "end", "wall_s", "sched_s", "forward_s", "gpu_s", "build_s",
    "launch_s", "post_s",
    "prefill_tokens", "prefill_seqs", "decode_seqs", "decode_kv_tokens", "prefill_kv_tokens",
    "used_blocks", "waiting", "model_s",
]


class ReplayResult(RunResult):
    """A :class:`~parrotsim.sim.model.metrics.RunResult` with the iteration log."""

    def __init__(self, calls, apps, engines, summary, iterations: pd.DataFrame) -> None:
        super().__init__(calls, apps, engines, summary)
        self.iterations = iterations


def batch_of(chunks: tuple, decodes: int, decode_kv: int) -> Batch:
    """A batch of stand-in sequences with the logged KV sizes (for the cost model)."""
    def seq(kv: int) -> Sequence:
        s = Sequence(0, "", "", 0, 0)
        s.ctx = Context(None)
        s.ctx.tokens = kv
        return s
    per, rest = divmod(decode_kv, decodes) if decodes else (0, 0)
    return Batch(prefills=[(seq(kv), n) for n, kv in chunks],
                 decodes=[seq(per + (i < rest)) for i in range(decodes)])


def iteration_table(replay: Replay) -> tuple[pd.DataFrame, int]:
    """The iteration log, and the cost model's extrapolation count over it."""
    cost = CostModel(replay.profile, replay.cfg.cluster.engine.runtime)
    rows = []
    for i, (start, ready, end, post, gpu, chunks, ptok, pseq, dseq, dkv, host, used,
            waiting) in enumerate(replay.log):
        model = cost.iteration_time(batch_of(chunks, dseq, dkv)) + host
        gpu, build, launch = (nan, nan, nan) if gpu is None else gpu
        rows.append((i, start, end, end - start, ready - start, end - ready, gpu, build,
                     launch, post - end, ptok, pseq, dseq, dkv,
                     sum(kv for _, kv in chunks), used, waiting, model))
    return pd.DataFrame(rows, columns=ITERATION_COLUMNS), cost.extrapolated


def make_result(replay: Replay) -> ReplayResult:
    calls = call_table(replay.calls)
    calls["injected"] = [replay.injected.get(c.uid, -1.0) for c in replay.calls]
    iters, extrapolated = iteration_table(replay)
    ends: dict[str, float] = {}
    by_app: dict[str, dict] = {}
    for c in replay.calls:
        by_app.setdefault(c.app_id, {})[c.call] = c
    for app in replay.apps:
        outs = [c for c in app.calls if c.output in app.outputs]
        got = [by_app[app.app_id][c.name].returned for c in outs]
        ends[app.app_id] = max(got) if got and min(got) >= 0 else nan
    apps = pd.DataFrame([{
        "app_id": a.app_id, "kind": a.kind, "background": a.background, "arrival": a.arrival,
        "end": ends[a.app_id], "calls": len(a.calls)} for a in replay.apps],
        columns=["app_id", "kind", "background", "arrival", "end", "calls"])
    apps["latency"] = apps["end"] - apps["arrival"]
    engine = SimpleNamespace(
        engine_id=0, busy_time=float(iters["wall_s"].sum()), iterations=len(iters),
        batched_seqs=int((iters["prefill_seqs"] + iters["decode_seqs"]).sum()), kv=replay.kv,
        cost=SimpleNamespace(extrapolated=extrapolated), policy=replay.policy)
    end = float(apps["end"].max()) if len(apps) else 0.0
    engines = engine_table([engine], replay.profile.model.kv_bytes_per_token
                           * replay.cfg.cluster.block_size, end)
    engines["gpu_time"] = float(iters["gpu_s"].sum())
    return ReplayResult(calls, apps, engines, summarize(calls, apps, engines), iters)


def compact(df: pd.DataFrame) -> pd.DataFrame:
    """The iteration log's durations (``*_s``) as float32 and counts as int32."""
    df = df.copy()
    for col in df.columns:
        if col.endswith("_s"):
            df[col] = df[col].astype("float32")
        elif df[col].dtype.kind == "i":
            df[col] = df[col].astype("int32")
    return df


def store(result: ReplayResult, out: Path, meta: dict) -> None:
    """Write ``out/{calls,apps,engines,iterations}.parquet`` and ``out/meta.json``; ``meta``
    must hold the run's ``config`` (``model_dump(mode="json")``) for ``compare``."""
    out.mkdir(parents=True, exist_ok=True)
    for table in TABLES:
        df = getattr(result, table)
        df = compact(df) if table == "iterations" else df
        df.to_parquet(out / f"{table}.parquet", index=False, compression="zstd")
    (out / "meta.json").write_text(json.dumps({**meta, "summary": result.summary}, indent=1,
                                              default=str))
