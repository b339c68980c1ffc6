"""Host time of one decode iteration of Parrot's built-in engine outside the forward pass.

Every iteration, Parrot's engine (the artifact's ``parrot/engine/builtin``, at commit e8541c4)
rebuilds the attention metadata of every running job from scratch: for each Generate job
``attn_func.init_iteration_state`` calls ``job.context.get_context_block_ids()`` and
``get_context_slot_ids()``, which return **one entry per context token** (``BlockContext``
keeps a block id and a slot id per token, and a forked context returns its parent's list plus
its own, concatenated), takes every 16th entry for the block table, pads the tables and copies
them to the GPU; ``builtin_runner.run_iter`` allocates each job's next slot, gathers the input
ids, samples the batch at once (one ``multinomial``, one ``.cpu().tolist()``) and hands each
job its token (``put_token``, ``check_stop``). So the host time grows with the batch and with
the context tokens of the batch, and the GPU idles through it.

Parrot is not on PyPI and its repository cannot be fetched on the machines this project uses,
so this script does **not** import it: it re-creates those per-job operations on the same data
layout (per-token block and slot lists, forks as parent + own lists), written here after the
files named above, with Parrot's batched sampler arithmetic (logits matmul, softmax,
``multinomial``) on a CUDA GPU. Left out: Parrot's engine scheduler (``engine/scheduler.py``)
and the asyncio plumbing around the iteration; ``xformers``' attention-bias object for the
(empty) fill part.

Run on a CUDA machine::

    python calibrate/tools/parrot_iteration_host.py OUT_DIR

It prints, per kernel layout (``shared``: the shared-prompts attention function with every job
forked from one prefix; ``paged``: the paged one, each job its own context), context length and
batch, the median wall time of an iteration (30 after 5 warm-up) and a least-squares fit
``a + b * batch + c * context tokens of the batch``; OUT_DIR/parrot_iteration_host.csv has
the rows.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
import time
from pathlib import Path

import numpy as np
import torch

HIDDEN, VOCAB, BLOCK = 4096, 32000, 16


class Context:
    """A ``BlockContext``'s bookkeeping: a block id and a slot id per token, a parent."""

    def __init__(self, parent: Context | None, free_blocks: list[int]) -> None:
        self.parent, self.free = parent, free_blocks
        self.block_ids: list[int] = []
        self.slot_ids: list[int] = []
        self.token_ids: list[int] = []

    def allocate_one(self) -> None:
        if len(self.block_ids) % BLOCK == 0:
            block = self.free.pop()
            self.block_ids.append(block)
            self.slot_ids.append(block * BLOCK)
        else:
            self.block_ids.append(self.block_ids[-1])
            self.slot_ids.append(self.slot_ids[-1] + 1)

    def this_len(self) -> int:
        return len(self.block_ids)

    def context_len(self) -> int:
        return self.this_len() + (self.parent.context_len() if self.parent else 0)

    def context_block_ids(self) -> list[int]:
        return (self.parent.context_block_ids() if self.parent else []) + self.block_ids

    def context_slot_ids(self) -> list[int]:
        return (self.parent.context_slot_ids() if self.parent else []) + self.slot_ids


class Job:
    """A Generate job: its context, an output queue, a length limit."""

    def __init__(self, ctx: Context, max_len: int) -> None:
        self.context, self.max_len = ctx, max_len
        self.queue: asyncio.Queue[int] = asyncio.Queue()
        self.gen_length = 0
        self.temperature, self.top_p, self.stop_ids = 1.0, 1.0, [2]

    def put_token(self, token: int) -> None:
        self.queue.put_nowait(token)
        self.context.token_ids.append(token)
        self.gen_length += 1

    def check_stop(self) -> bool:
        return self.context.token_ids[-1] in self.stop_ids or self.gen_length >= self.max_len


def _pad(x: list[int], n: int) -> list[int]:
    return x + [0] * (n - len(x))


def iteration(jobs: list[Job], shared: bool, hidden: torch.Tensor, emb: torch.Tensor,
              dev: torch.device) -> None:
    """One decode iteration's host work, as ``run_iter`` and ``init_iteration_state`` do it."""
    jobs.sort(key=lambda j: True)
    for job in jobs:
        job.context.allocate_one()
    # init_iteration_state (shared prompts: the prefix is jobs[0]'s parent)
    flash_len = jobs[0].context.parent.this_len() if shared and jobs[0].context.parent else 0
    flash_pad = (flash_len + BLOCK - 1) // BLOCK * BLOCK
    flash_table = jobs[0].context.context_block_ids()[:flash_pad:BLOCK] if shared else []
    tables, lens, slots, widest = [], [], [], 0
    for job in jobs:
        block_ids = job.context.context_block_ids()
        slot_ids = job.context.context_slot_ids()
        n = job.context.context_len()
        slots.append(slot_ids[-1:])
        tables.append(block_ids[flash_pad::BLOCK] if shared else block_ids[::BLOCK])
        lens.append(n - flash_len if shared else n)
        widest = max(widest, len(tables[-1]))
    torch.empty((0, 32, 128), dtype=torch.float16, device=dev)
    torch.empty((0, 32, 128), dtype=torch.float16, device=dev)
    tables = [_pad(t, widest) for t in tables]
    slots = [_pad(s, 1) for s in slots]
    if shared:
        torch.tensor(flash_table, dtype=torch.int32, device=dev)
    torch.tensor(tables, dtype=torch.int32, device=dev)
    torch.tensor(lens, dtype=torch.int32, device=dev)
    torch.tensor(slots, dtype=torch.int32, device=dev)
    torch.tensor([], dtype=torch.int64, device=dev)
    # run_iter: the inputs, the batched sampler, the tokens back to the jobs
    ids, pos = [], []
    for job in jobs:
        n = job.context.context_len()
        ids.append(job.context.token_ids[-1] if job.context.token_ids else 1)
        pos.append(n - 1)
    torch.tensor(ids, dtype=torch.int64, device=dev)
    torch.tensor(pos, dtype=torch.int64, device=dev)
    logits = torch.matmul(hidden[: len(jobs)], emb.t())
    # temperature and top-p are 1.0 here: Parrot's sampler checks and skips both
    assert not any([j.temperature != 1.0 for j in jobs]) and not any([j.top_p < 1.0 for j in jobs])
    probs = torch.softmax(logits, dim=-1, dtype=torch.float)
    tokens = torch.multinomial(probs, num_samples=1, replacement=True).squeeze(-1)
    tokens = tokens.cpu().tolist()
    for job, token in zip(jobs, tokens, strict=True):
        job.put_token(token)
        job.check_stop()


def measure(shared: bool, context: int, batch: int, warm: int, steps: int,
            hidden: torch.Tensor, emb: torch.Tensor, dev: torch.device) -> float:
    """Median seconds of a decode iteration of ``batch`` jobs of ``context`` tokens each
    (``shared``: all forked from one prefix of ``context - 64`` tokens)."""
    free = list(range(batch * (context // BLOCK + 8) + 64 * BLOCK, 0, -1))
    prefix = None
    if shared:
        prefix = Context(None, free)
        for _ in range(context - 64):
            prefix.allocate_one()
    jobs = []
    for _ in range(batch):
        ctx = Context(prefix, free)
        for _ in range(64 if shared else context):
            ctx.allocate_one()
        jobs.append(Job(ctx, 10**9))
    times = []
    for k in range(warm + steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        iteration(jobs, shared, hidden, emb, dev)
        torch.cuda.synchronize()
        if k >= warm:
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--batches", default="1,8,32,64,128,256")
    ap.add_argument("--contexts", default="500,2000,8000")
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU (the tables and the sampler's read-back are GPU copies)",
              file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    emb = (torch.randn(VOCAB, HIDDEN, device=dev) * 0.02).half()
    hidden = torch.randn(256, HIDDEN, device=dev).half()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"python {sys.version.split()[0]}", flush=True)
    rows = []
    for layout in ("shared", "paged"):
        for context in [int(c) for c in args.contexts.split(",")]:
            for batch in [int(b) for b in args.batches.split(",")]:
                s = measure(layout == "shared", context, batch, args.warm, args.steps,
                            hidden, emb, dev)
                rows.append({"layout": layout, "context": context, "batch": batch,
                             "iteration_ms": 1e3 * s})
                print(f"{layout:6s} context {context:5d} batch {batch:4d}: {1e3 * s:8.3f} ms",
                      flush=True)
        sel = [r for r in rows if r["layout"] == layout]
        a = np.array([[1.0, r["batch"], r["batch"] * r["context"]] for r in sel])
        coef, *_ = np.linalg.lstsq(a, np.array([r["iteration_ms"] for r in sel]), rcond=None)
        print(f"{layout:6s}: iteration ms = {coef[0]:.3f} + {1e3 * coef[1]:.1f} us x batch "
              f"+ {1e6 * coef[2]:.2f} ns x context tokens of the batch", flush=True)
    with open(args.out / "parrot_iteration_host.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
