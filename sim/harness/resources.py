"""How much memory a run will need, estimated from its expanded config before it starts.

A run holds its calls in flight (the clients' records, the engines' sequences, SimPy's
events), a compact row of about 250 B per call that ended (``CallLog``'s columns), and, for
workloads built as lists, every app object; then its tables. Apps of a stream (ShareGPT, GPTs)
are made as they arrive. So its peak grows with the calls that are in flight at once, which
no config field tells before the run: a cluster that keeps up holds few (300,000 chats on 192
engines peaked at 382 MiB, 826 B per call above the base; a million chats at 64 and
1,024 engines at 787 MB and 954 MB by ``bench/sim_scale.py``), an overloaded one queues
nearly all. :func:`estimate` prices every call at the worst case measured: it counts the apps
and calls of the run's workload without building it at full size (:func:`workload_size`) and
prices them with constants measured by ``bench/memory_estimate.py``: the peak RSS of 11 runs,
each simulated in a fresh Python 3.11 process with its tables written as Parquet (ShareGPT,
GPTs, MetaGPT and the mixed workload's listed chats, 1 to 300,000 calls on 1 to 256 engines, on
the project's shared 2-core machine); per call, after the base and the engines, the runs of
10,000 calls or more measured 826 B (the 300,000 chats) to 3,344 B (40,000 listed chats at
200 req/s on 32 engines, overloaded); before calls were logged as columns and apps made as
they arrived, every run held every call, 2.6 to 4.1 kB each. So:

* :data:`BASE_BYTES`: 140 MiB, the process with the simulator imported (a one-call run peaks
  at 138 MiB);
* :data:`CALL_BYTES`: 3,400 B per call (the largest per-call figure measured);
* :data:`ENGINE_BYTES`: 32 kB per engine.

The estimate is meant to catch absurd sizes (10^9 requests, a background rate of 10^6/s)
before they allocate, not to predict RSS closely: with these constants it was 1 % to 43 % over
the measured peaks, except for streams that the cluster keeps up with: 2.9x over the 300,000
chats (1.09 GiB for 382 MiB), about 4x over the million-chat runs. :func:`check_memory` compares the sum of the largest
estimates that can run at once (one per worker) with a limit, by default 80 % of the memory
available when the sweep starts (``MemAvailable`` of ``/proc/meminfo``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from parrotsim.core.errors import UsageError
from parrotsim.sim.harness.config import RunConfig
from parrotsim.workloads.app_stream import total_calls

BASE_BYTES = 140 * 2**20
CALL_BYTES = 3_400
ENGINE_BYTES = 32_000
DEFAULT_FRACTION = 0.8
SHIPPED = "parrotsim.workloads."
#: a scalable workload is built at most this many apps per knob to count calls per app
SAMPLE = 16


class MemoryLimitError(UsageError):
    """A sweep whose runs would need more memory than the limit (exit status 2)."""


@dataclass(frozen=True)
class RunSize:
    """What one run holds: apps, calls and engines, and the estimated peak bytes."""

    apps: int
    calls: int
    engines: int

    @property
    def bytes(self) -> float:
        return BASE_BYTES + self.calls * CALL_BYTES + self.engines * ENGINE_BYTES


def estimate(config: RunConfig) -> RunSize:
    """The size of a run of ``config`` (see module docstring)."""
    apps, calls = workload_size(config.workload)
    return RunSize(apps, calls, config.cluster.engines)


def workload_size(workload: Any) -> tuple[int, int]:
    """Apps and calls of a workload. Workloads whose size is a knob (requests, tasks, chats,
    a background arrival rate) are built at a small size and scaled; every other shipped
    workload is bounded by its data (documents, a trace file) and is built once to be counted.
    A plugin's workload counts as empty: its code is run only in the run's worker, where a
    crash takes down that run alone, so its runs are held to the limit by the base alone."""
    key = (type(workload), workload.model_dump_json())
    if key not in _sizes:
        _sizes[key] = _size(workload)
    return _sizes[key]


_sizes: dict[tuple[type, str], tuple[int, int]] = {}


def _size(workload: Any) -> tuple[int, int]:
    if not type(workload).__module__.startswith(SHIPPED):
        return 0, 0  # a plugin's workload: its build is not run outside its worker
    name = getattr(workload, "kind", "")
    if name in ("sharegpt", "gpts"):
        return _scaled(workload, "num_requests")
    if name == "metagpt":
        return _scaled(workload, "tasks")
    if name == "mixed":
        parts = [_scaled(workload.model_copy(update={"mr_apps": 0}), "num_chats")
                 if workload.num_chats else (0, 0),
                 _scaled(workload.model_copy(update={"num_chats": 0}), "mr_apps")
                 if workload.mr_apps else (0, 0)]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if name == "chain_with_background":
        apps, calls = _count(workload.model_copy(update={"background_rate": 0.0}))
        mean = workload.background_rate * workload.background_horizon
        extra = math.ceil(mean + 4 * math.sqrt(mean))  # Poisson arrivals: a high quantile
        return apps + extra, calls + extra
    return _count(workload)


def _scaled(workload: Any, knob: str) -> tuple[int, int]:
    n = int(getattr(workload, knob))
    small = min(n, SAMPLE)
    apps, calls = _count(workload.model_copy(update={knob: small}))
    return math.ceil(apps * n / small), math.ceil(calls * n / small)


def _count(workload: Any) -> tuple[int, int]:
    apps = workload.build(np.random.default_rng(0))
    return len(apps), total_calls(apps)


def available_memory() -> int | None:
    """Bytes of memory available to new processes now (None where it cannot be told)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def default_limit() -> tuple[float, str]:
    """80 % of the memory available now, and how it was chosen (inf where unknown)."""
    free = available_memory()
    if free is None:
        return math.inf, "no limit: the available memory is unknown here"
    return DEFAULT_FRACTION * free, (f"{100 * DEFAULT_FRACTION:.0f} % of the "
                                     f"{format_bytes(free)} available")


def check_memory(sizes: list[tuple[str, RunSize]], at_once: int, source: str,
                 limit: float | None = None) -> None:
    """Raise :class:`MemoryLimitError` when the ``at_once`` largest runs of ``sizes`` (each
    ``(labels, size)``) would need more than ``limit`` bytes together (None: the default)."""
    if not sizes:
        return
    how = "--max-memory"
    if limit is None:
        limit, how = default_limit()
        how += "; --max-memory to change"
    ranked = sorted(sizes, key=lambda item: item[1].bytes, reverse=True)
    together = sum(size.bytes for _, size in ranked[:max(1, at_once)])
    if together <= limit:
        return
    labels, big = ranked[0]
    runs = min(at_once, len(ranked))
    both = (f"; {runs} runs at once need about {format_bytes(together)}" if runs > 1 else "")
    raise MemoryLimitError(
        f"{source}: workload: the run {labels} needs about {format_bytes(big.bytes)} of memory "
        f"({big.apps:,} apps, {big.calls:,} calls, {big.engines:,} engines){both}, over the "
        f"limit of {format_bytes(limit)} ({how}); make the workload smaller"
        + (", run fewer at once (--jobs)" if runs > 1 else "") + " or raise --max-memory")


def format_bytes(n: float) -> str:
    """Bytes as a short binary size: ``7.45 GiB``."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"
