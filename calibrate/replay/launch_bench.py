"""What an eager iteration's kernel launches cost the host, by decode-attention path (GPU).

    python -m parrotsim.calibrate.replay.launch_bench --out launch.csv [--repeats 30]

An iteration that fills prompt tokens runs eagerly (no CUDA graph): the host issues every
kernel of every layer, so a short one lasts as long as those launches take, whatever the GPU
does (the profile's ``prefill_launch_floor_s``). A Parrot-engine iteration mixes a short fill
(a call's query after its forked system prompt) with the running decodes, so its launches
include decode attention: the paged kernel's split-KV pass and merge, or, with the
shared-prefix kernel, one prefix pass per forked group on top. This times, on the replay's own
forward (:class:`~parrotsim.calibrate.replay.gpu.GpuForward`, LLaMA-7B, eager), the host time
of issuing the launches (``launch_s``) and the CUDA-event time (``gpu_s``) of:

* ``fill``: one 7-token chunk over a 1,024-token context, nothing else;
* ``fill+paged``: the same plus 24 decodes (contexts 1,500-2,400) by the paged kernel;
* ``fill+k groups``: the same 24 decodes forking k = 1..4 prefixes (1,024-7,168 tokens) by the
  several-prefix kernel.

It prints the medians and the runtime terms they give, as differences within one run (the
host's absolute speed drifts between machines; the differences are what the launches add):
``decode_launch_s`` = fill+paged - fill and ``group_launch_s`` = the least-squares slope of
fill+k groups over k = 0..4 (k = 0: fill+paged).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from parrotsim.calibrate.replay.chunks import Chunk
from parrotsim.calibrate.replay.forward_batch import to_forward_batch, to_grouped_forward_batch
from parrotsim.calibrate.replay.gpu import GpuForward
from parrotsim.kernels.llama_batch import PAGE_SIZE

PREFIXES = (7168, 1024, 2048, 4096)  # tokens: a GPTs-like spread of system prompts
DECODES = 24


def cases(pages_per_prefix: list[list[int]], own: list[list[int]]) -> dict[str, tuple]:
    """(prefills, decodes, layout) per case; ``own``: each decode's pages after its prefix."""
    one = np.zeros(1, dtype=np.int64)
    fill = [Chunk(np.zeros(7, dtype=np.int64), 1024, list(range(70, 70 + 65)))]
    out = {"fill": (fill, [], None)}
    plain = [Chunk(one, 1500 + 37 * i, list(range(200 + 160 * i, 200 + 160 * i + 160)))
             for i in range(DECODES)]
    out["fill+paged"] = (fill, plain, None)
    for k in range(1, len(PREFIXES) + 1):
        groups = []
        for g in range(k):
            rows = [i for i in range(DECODES) if i % k == g]
            pre = pages_per_prefix[g]
            groups.append((len(pre), [Chunk(one, len(pre) * PAGE_SIZE + 20 + 9 * i,
                                            pre + own[i]) for i in rows]))
        out[f"fill+{k} groups"] = (fill, groups, "grouped")
    return out


def time_cases(gpu: GpuForward, repeats: int) -> pd.DataFrame:
    """Median launch and GPU seconds of each case over ``repeats`` eager forwards."""
    base = 5000
    pages_per_prefix = []
    for tokens in PREFIXES:
        n = -(-tokens // PAGE_SIZE)
        pages_per_prefix.append(list(range(base, base + n)))
        base += n
    own = [list(range(base + 4 * i, base + 4 * i + 4)) for i in range(DECODES)]
    rows = []
    for name, (fill, decodes, kind) in cases(pages_per_prefix, own).items():
        for i in range(repeats + 5):
            fb = (to_grouped_forward_batch(fill, decodes, [], gpu.device, gpu.width, gpu.scratch)
                  if kind == "grouped" else
                  to_forward_batch(fill, decodes, gpu.device, gpu.width if decodes else None, 0,
                                   gpu.scratch))
            gpu_s, _, launch_s, _ = gpu._run(fb, None, 0.0)
            if i >= 5:
                rows.append({"case": name, "launch_s": launch_s, "gpu_s": gpu_s})
    return pd.DataFrame(rows)


def terms(table: pd.DataFrame) -> dict[str, float]:
    """``decode_launch_s`` and ``group_launch_s`` from the medians (see module docstring)."""
    med = table.groupby("case")["launch_s"].median()
    k = np.arange(len(PREFIXES) + 1)
    y = np.array([med["fill+paged"]] + [med[f"fill+{i} groups"] for i in k[1:]])
    slope = float(np.polyfit(k, y, 1)[0])
    return {"decode_launch_s": float(med["fill+paged"] - med["fill"]), "group_launch_s": slope}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="CSV of every timed forward")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--model", default="llama-7b")
    args = ap.parse_args(argv)
    gpu = GpuForward(args.model, 8000, 512, graphs=False, decode_attention="shared_prefix")
    table = time_cases(gpu, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    summary = table.groupby("case", sort=False)[["launch_s", "gpu_s"]].median() * 1e3
    print("median ms per eager forward (LLaMA-7B):")
    print(summary.round(3).to_string())
    print({k: round(v * 1e3, 4) for k, v in terms(table).items()}, "(ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
