"""Timing, ceilings and result tables for :mod:`parrotsim.kernels.bench` (GPU only).

Off the GPU, :class:`CpuTimer` stands in (wall time of plain calls) so the drivers run end to
end under the Triton interpreter. :class:`RandomKV` and :class:`CsvLog` serve the shape sweeps
(``tune``, ``bench_shapes``, ``bench_era``).

Timing: the op is captured in a CUDA graph (no launch gaps from Python) and replayed ``reps``
times; before every replay a 256 MiB buffer is zeroed so the 60 MiB L2 holds nothing of the
op's inputs; CUDA events bracket the replay alone; the median is reported.
"""

from __future__ import annotations

import csv
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
import triton
import triton.language as tl

FLUSH_BYTES = 256 << 20


class Timer:
    """Median time of an op with the L2 flushed between repetitions."""

    def __init__(self, device: torch.device) -> None:
        self.flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def __call__(self, fn: Callable[[], object], reps: int = 40, graph: bool = True) -> float:
        """Median microseconds of ``fn()`` over ``reps`` replays (graph-captured if ``graph``)."""
        return statistics.median(self.replays(self.prepare(fn, graph), reps))

    @staticmethod
    def prepare(fn: Callable[[], object], graph: bool = True) -> Callable[[], object]:
        """Warm ``fn`` up and return what to replay: ``fn`` itself, or its captured CUDA graph
        (captured on a side stream, then replayed once)."""
        fn()
        torch.cuda.synchronize()
        if not graph:
            return fn
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        g.replay()
        return g.replay

    def replays(self, op: Callable[[], object], reps: int) -> list[float]:
        """Microseconds of ``reps`` replays of ``op``, each after an L2 flush, sorted."""
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.flush.zero_()
            starts[i].record()
            op()
            ends[i].record()
        torch.cuda.synchronize()
        return sorted(1e3 * s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


@triton.jit
def _read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * BLOCK * ITERS
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, 0))


READ_MAX = 1 << 30  # bytes: the largest read :class:`Reader` times


class Reader:
    """The streaming-read kernel over the first ``n`` bytes of a fixed buffer (READ_MAX)."""

    def __init__(self, dev: torch.device, max_bytes: int = READ_MAX) -> None:
        self.x = torch.zeros(max_bytes // 2, dtype=torch.bfloat16, device=dev)
        self.out = torch.empty(max_bytes // (2 * 4096 * 8) + 1, dtype=torch.float32, device=dev)

    def op(self, nbytes: float):
        """The read of ``nbytes`` (None if over the buffer)."""
        n = int(nbytes) // 2
        if n > self.x.numel() or n < 1:
            return None
        return partial(_read_kernel[(triton.cdiv(n, 4096 * 8),)], self.x, self.out, n,
                       BLOCK=4096, ITERS=8, num_warps=8)


def measure_ceilings(timer: Timer, device: torch.device, gib: int = 4) -> dict[str, float]:
    """Streaming-read bandwidth (best of a Triton read kernel at several tilings and torch.sum),
    copy bandwidth (read + write counted) in TB/s, and the bf16 GEMM rate (8192^3, random
    data) in TFLOP/s."""
    n = (gib << 30) // 2
    x = torch.randn(n, dtype=torch.bfloat16, device=device)
    res: dict[str, float] = {}
    for block, iters, warps in [(4096, 8, 8), (8192, 4, 8), (2048, 16, 4), (16384, 2, 16)]:
        out = torch.empty(triton.cdiv(n, block * iters), dtype=torch.float32, device=device)
        grid = (out.numel(),)
        us = timer(partial(_read_kernel[grid], x, out, n, BLOCK=block, ITERS=iters,
                           num_warps=warps), reps=15)
        res[f"read_triton_{block}x{iters}_w{warps}_TBs"] = 2 * n / us / 1e6
    us = timer(partial(torch.sum, x, dtype=torch.float32), reps=15)
    res["read_torch_sum_TBs"] = 2 * n / us / 1e6
    y = torch.empty_like(x)
    us = timer(partial(y.copy_, x), reps=15)
    res["copy_rw_TBs"] = 4 * n / us / 1e6
    del x, y
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device)
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device)
    us = timer(partial(torch.matmul, a, b), reps=15)
    res["gemm_bf16_8192_TFLOPs"] = 2 * 8192 ** 3 / us / 1e6
    res["stream_read_TBs"] = max(v for k, v in res.items() if k.startswith("read_"))
    return res


class Tables:
    """Rows of named result tables, written as results.csv and results.md under ``out``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.rows: dict[str, list[dict]] = {}

    def add(self, table: str, **row: object) -> None:
        """Append a row (and print it, for the device log)."""
        self.rows.setdefault(table, []).append(row)
        print(f"[{table}] " + ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()), flush=True)

    def write(self, header: str = "") -> None:
        """Write results.csv (all tables, long format) and results.md (one table each)."""
        with open(self.out / "results.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["table", "key", "value", "row"])
            for name, rows in self.rows.items():
                for i, row in enumerate(rows):
                    for k, v in row.items():
                        w.writerow([name, k, v, i])
        lines = [header, ""] if header else []
        for name, rows in self.rows.items():
            keys = list(dict.fromkeys(k for r in rows for k in r))
            lines += [f"## {name}", "", "| " + " | ".join(keys) + " |",
                      "|" + "---|" * len(keys)]
            lines += ["| " + " | ".join(_fmt(r.get(k, "")) for k in keys) + " |" for r in rows]
            lines.append("")
        (self.out / "results.md").write_text("\n".join(lines))


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


class CpuTimer:
    """Stand-in for :class:`Timer` off the GPU (Triton interpreter runs of the drivers): the
    median wall time of ``reps`` plain calls after one warm-up call (no graph, no flush)."""

    def __init__(self, reps: int = 1) -> None:
        self.reps = reps

    def __call__(self, fn: Callable[[], object], reps: int = 1, graph: bool = True) -> float:
        """Median microseconds of ``min(reps, self.reps)`` calls of ``fn``."""
        fn()
        times = []
        for _ in range(max(1, min(reps, self.reps))):
            t = time.perf_counter()
            fn()
            times.append(1e6 * (time.perf_counter() - t))
        return statistics.median(times)


class RandomKV:
    """Random bf16 K and V pools reused by every shape of a sweep: ``cache(pages, hkv, d)``
    returns views [pages, 16, hkv, d] of two flat buffers (grown, never shrunk, so a sweep
    allocates and fills its largest cache once instead of per shape)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.k = self.v = torch.empty(0, dtype=torch.bfloat16, device=device)

    def cache(self, pages: int, hkv: int, d: int, page: int = 16
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V caches of ``pages`` pages of random values."""
        n = pages * page * hkv * d
        if n > self.k.numel():
            self.k = self.v = None
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            self.k = torch.empty(n, dtype=torch.bfloat16, device=self.device).normal_()
            self.v = torch.empty(n, dtype=torch.bfloat16, device=self.device).normal_()
        shape = (pages, page, hkv, d)
        return self.k[:n].view(shape), self.v[:n].view(shape)


class CsvLog:
    """A flat CSV written row by row (flushed), so a run cut short keeps its rows."""

    def __init__(self, path: Path, fields: list[str]) -> None:
        self.path, self.fields = path, fields
        with open(path, "w", newline="") as f:
            csv.writer(f).writerow(fields)

    def add(self, **row: object) -> None:
        """Append one row (missing fields empty) and echo it."""
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([f"{v:.6g}" if isinstance(v, float) else v
                                    for v in (row.get(k, "") for k in self.fields)])
        print(f"[{self.path.stem}] " + ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()),
              flush=True)


def measure_bandwidth(timer: Timer | CpuTimer, device: torch.device, gib: float = 2.0
                      ) -> dict[str, float]:
    """Streaming rates of this run in TB/s: the Triton read kernel at its two best tilings on
    the H200 (session 4), a torch copy (read + write bytes counted), and ``floor_TBs`` = the
    best of them, which the shape sweeps divide bytes by. Off the GPU a 64 MiB copy stands in."""
    if device.type != "cuda":
        x = torch.ones(32 << 20, dtype=torch.bfloat16)
        us = timer(partial(x.clone))
        return {"copy_rw_TBs": 4 * x.numel() / us / 1e6, "floor_TBs": 4 * x.numel() / us / 1e6}
    n = int(gib * (1 << 30)) // 2
    x = torch.randn(n, dtype=torch.bfloat16, device=device)
    res: dict[str, float] = {}
    for block, iters, warps in [(16384, 2, 16), (4096, 8, 8)]:
        out = torch.empty(triton.cdiv(n, block * iters), dtype=torch.float32, device=device)
        us = timer(partial(_read_kernel[(out.numel(),)], x, out, n, BLOCK=block, ITERS=iters,
                           num_warps=warps), reps=15)
        res[f"read_triton_{block}x{iters}_w{warps}_TBs"] = 2 * n / us / 1e6
    y = torch.empty_like(x)
    us = timer(partial(y.copy_, x), reps=15)
    res["copy_rw_TBs"] = 4 * n / us / 1e6
    res["floor_TBs"] = max(res.values())
    return res
