"""The tables of a replayed run, with the simulator's columns, and how they are stored.

* ``calls``, ``apps``: the simulator's own tables (:mod:`parrotsim.sim.model.metrics`): the
  replay *is* the simulator's model, with real engine iterations (:mod:`.executor`);
* ``engines``: the simulator's engine table (``busy_time``: the sum of iteration wall times;
  ``extrapolated``: 0, the real engine never asks the cost model) plus ``gpu_time`` (sum of
  CUDA-event times), ``shared_kernel_grouped`` (decode batches that the several-prefix
  kernel served: several forked groups, or decodes outside the one group) and ``model_extrapolated`` (cost-model evaluations of the replayed
  batches past the profile's measured range);
* ``iterations``: one row per iteration: ``start``/``end`` (s since t0), ``wall_s`` = end -
  start, ``sched_s`` (schedule + page mapping + chunk building), ``forward_s`` (the forward
  call, synchronized), ``gpu_s`` (CUDA events around it), ``build_s`` / ``launch_s`` (host
  time of that call building its device inputs / issuing its launches), ``graph`` (1: a CUDA
  graph replay, 0: eager, -1: not measured), ``post_s`` (emission
  and bookkeeping - the rest of the model's events - before the engine looks at its queue
  again), the batch (``prefill_tokens``, ``prefill_seqs``, ``decode_seqs``,
  ``decode_kv_tokens`` read by decodes (shared prefixes counted per sequence),
  ``decode_max_ctx`` the longest decode's context,
  ``prefill_kv_tokens`` held by the prefilled sequences, ``shared_groups`` and
  ``shared_pages``: the prefix pages the shared-prefix kernel read once, summed over groups), ``used_blocks``, ``waiting``
  and ``model_s``: the cost model's time for exactly this batch (what the simulator would
  charge for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.kv_cache import Context
from parrotsim.sim.model.metrics import RunResult
from parrotsim.sim.model.sequence import Batch, Sequence

if TYPE_CHECKING:
    from parrotsim.calibrate.replay.executor import Replay

nan = float("nan")
TABLES = ("calls", "apps", "engines", "iterations")
ITERATION_COLUMNS = [
    "iteration", "start", "end", "wall_s", "sched_s", "forward_s", "gpu_s", "build_s",
    "launch_s", "post_s", "graph",
    "prefill_tokens", "prefill_seqs", "decode_seqs", "decode_kv_tokens", "decode_max_ctx",
    "prefill_kv_tokens",
    "shared_groups", "shared_pages", "used_blocks", "waiting", "model_s",
]


class ReplayResult(RunResult):
    """A :class:`~parrotsim.sim.model.metrics.RunResult` with the iteration log."""

    def __init__(self, calls, apps, engines, summary, iterations: pd.DataFrame) -> None:
        super().__init__(calls, apps, engines, summary)
        self.iterations = iterations


def batch_of(chunks: tuple, decodes: int, decode_kv: int, longest: int | None = None) -> Batch:
    """A batch of stand-in sequences with the logged KV sizes (for the cost model): the
    decodes share ``decode_kv`` tokens evenly or, given the ``longest`` context, one holds
    that many and the others share the rest (the cost model needs only the count, the total
    and the longest)."""
    def seq(kv: int) -> Sequence:
        s = Sequence(0, "", "", 0, 0)
        s.ctx = Context(None)
        s.ctx.tokens = kv
        return s
    first = []
    if longest is not None and decodes > 1:
        first, decodes, decode_kv = [seq(longest)], decodes - 1, decode_kv - longest
    per, rest = divmod(decode_kv, decodes) if decodes else (0, 0)
    return Batch(prefills=[(seq(kv), n) for n, kv in chunks],
                 decodes=first + [seq(per + (i < rest)) for i in range(decodes)])


def longest_read(shared: tuple[tuple[int, int], ...], decodes: int, longest: int,
                 whole: bool = False) -> int | None:
    """The most KV tokens the paged kernel reads for one decode of a logged batch: its
    longest context (``whole``: the paged kernel over shared pages reads whole contexts),
    less the prefix when one group holds every decode (the replay's shared-prefix kernel
    serves one prefix); None (unknown) for other grouped batches."""
    if not shared or whole:
        return longest
    if len(shared) == 1 and shared[0][1] == decodes:
        return longest - shared[0][0]
    return None


def iteration_table(replay: Replay) -> tuple[pd.DataFrame, int]:
    """The iteration log, and the cost model's extrapolation count over it."""
    cluster = replay.cfg.cluster
    cost = CostModel(replay.profile, cluster.engine.runtime, kernel=cluster.kernel,
                     paged_kernel=cluster.paged_kernel)
    rows = []
    for i, r in enumerate(replay.device.log):
        shared = list(r.shared)
        shared_tokens = sum(p * n for p, n in shared)
        model = cost.iteration_time(batch_of(r.chunks, r.decode_seqs, r.decode_kv_tokens,
                                             r.decode_max_ctx), shared, shared_tokens,
                                    longest_read(r.shared, r.decode_seqs, r.decode_max_ctx,
                                                 cost.group_waves))
        gpu, build, launch, graph = (nan, nan, nan, -1) if r.timing is None else r.timing
        post = r.end if r.post is None else r.post
        rows.append((i, r.start, r.end, r.end - r.start, r.ready - r.start, r.end - r.ready,
                     gpu, build, launch, post - r.end, graph, sum(n for n, _ in r.chunks),
                     len(r.chunks), r.decode_seqs, r.decode_kv_tokens, r.decode_max_ctx,
                     sum(kv for _, kv in r.chunks), len(shared), r.shared_pages, r.used_blocks,
                     r.waiting, model))
    return pd.DataFrame(rows, columns=ITERATION_COLUMNS), cost.extrapolated


def make_result(replay: Replay, sim: RunResult) -> ReplayResult:
    """The simulator's own tables of the replayed run (``sim``), with the engine's GPU time,
    the batches the several-prefix kernel served and the iteration log added."""
    iters, extrapolated = iteration_table(replay)
    engines = sim.engines.copy()
    engines["gpu_time"] = float(iters["gpu_s"].sum())
    engines["shared_kernel_grouped"] = replay.device.grouped
    engines["model_extrapolated"] = extrapolated
    return ReplayResult(sim.calls, sim.apps, engines, sim.summary, iters)


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
