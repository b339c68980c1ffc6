"""GPU timing and progress for the calibration harness (imports torch: GPU path only).

Timing follows ``parrotsim.kernels.bench_util`` (and METHOD.md): the op is warmed up, captured in a CUDA
graph and replayed; a 256 MiB buffer is zeroed before every replay so L2 holds none of the op's
inputs; CUDA events bracket each replay; we keep the median and the 20th/80th percentiles.
The number of replays adapts to the op's length (``max_reps`` for short ops, at least
``min_reps``) so that one grid point costs about ``target_s`` of device time.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import torch

from parrotsim.kernels.bench_util import Timer


class StatTimer(Timer):
    """:class:`parrotsim.kernels.bench_util.Timer` returning (median, p20, p80, reps) in microseconds."""

    def __init__(self, device: torch.device, target_s: float = 0.4, min_reps: int = 5,
                 max_reps: int = 40) -> None:
        super().__init__(device)
        self.target_s, self.min_reps, self.max_reps = target_s, min_reps, max_reps

    def stats(self, fn: Callable[[], object], graph: bool = True) -> tuple[float, float, float,
                                                                             int]:
        op = self.prepare(fn, graph)  # warm-up (compilation, handles, allocator), capture
        op()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        op()
        b.record()
        torch.cuda.synchronize()
        once_s = max(a.elapsed_time(b) / 1e3, 1e-6)
        reps = int(min(self.max_reps, max(self.min_reps, self.target_s / once_s)))
        us = self.replays(op, reps)
        q = statistics.quantiles(us, n=5) if len(us) >= 2 else [us[0]] * 4
        return statistics.median(us), q[0], q[3], reps


class Progress:
    """A text progress bar, one line per measured point (readable in a log file too)."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done, self.t0 = total, label, 0, time.time()

    def step(self, what: str, result: str) -> None:
        self.done += 1
        filled = int(20 * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (20 - filled)
        print(f"[{bar}] {self.done:3d}/{self.total} {self.label} {what}: {result} "
              f"({time.time() - self.t0:.0f} s)", file=sys.stdout, flush=True)


def measure_point(timer: StatTimer, make: Callable[[], Callable[[], object]], graph: bool = True
                  ) -> dict:
    """Build the op with ``make()`` and time it; an out-of-memory error is recorded, not raised."""
    try:
        fn = make()
        med, p20, p80, reps = timer.stats(fn, graph=graph)
        return {"status": "ok", "us_median": round(med, 3), "us_p20": round(p20, 3),
                "us_p80": round(p80, 3), "reps": reps}
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return {"status": "oom"}
    except RuntimeError as exc:  # e.g. CUDA graph capture failing for lack of memory
        if "out of memory" not in str(exc).lower():
            raise
        torch.cuda.empty_cache()
        return {"status": "oom"}
