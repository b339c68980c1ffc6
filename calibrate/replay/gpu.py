"""The replay's forward pass on the GPU: the project's LLaMA with random bf16 weights.

:class:`GpuForward` holds one :class:`parrotsim.kernels.llama.LlamaModel` (the Triton prefill
kernel for every prompt chunk and the paged decode kernel, as the calibration measured them)
with ``num_pages`` KV pages plus one scratch page. Decode-only iterations replay a CUDA graph
captured for the smallest batch-size bucket that holds them (rows padded with one-token dummy
sequences on the scratch page; block tables padded to ``table_width`` pages, so the graphs'
fixed KV-split counts come from that width); other iterations (prompt chunks, or more decodes
than the largest bucket) run the plain forward. ``graphs=False`` runs everything eagerly.

With ``decode_attention="shared_prefix"`` a decode batch whose rows all fork one cached prefix
of ``n`` pages runs the shared-prefix kernel (prefix read once, then each suffix); its graphs
are captured per (bucket, n) for the prefix sizes given to :meth:`capture`. A batch with
several forked groups runs the several-prefix kernel; its graphs are captured per shape (each
group's prefix pages and padded rows, the padded rows in no group) when a shape is first met,
and the capture's time is taken off the replay's clock (:attr:`GpuForward.pause_clock`).

Each call returns ``(gpu_s, build_s, launch_s, graph)``: the CUDA-event time from just before the
first launch to the end of the forward (device inputs already copied), the host time of
building and copying the inputs, the host time of issuing the launches (for an eager
forward, close to ``gpu_s`` when the loop is launch-bound), and 1 if a graph ran (else 0).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable

import numpy as np
import torch

from parrotsim.calibrate.replay.chunks import Chunk
from parrotsim.calibrate.replay.forward_batch import to_forward_batch, to_grouped_forward_batch
from parrotsim.calibrate.replay.real_engine import PrefixLayout
from parrotsim.kernels.llama import DecodeGraph, LlamaConfig, LlamaModel
from parrotsim.kernels.llama_batch import PAGE_SIZE, ForwardBatch
from parrotsim.sim.model.sequence import Batch

BUCKETS = (1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112,
           128, 160, 192, 224, 256)
#: rows of one forked group, and of the decodes in no group, in a grouped batch's graph
GROUP_BUCKETS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
PLAIN_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)


class GpuForward:
    """Forward passes of replay batches (see module docstring)."""

    def __init__(self, model: str, num_pages: int, table_width: int, graphs: bool = True,
                 buckets: tuple[int, ...] = BUCKETS, seed: int = 0,
                 device: str = "cuda", decode_attention: str = "paged") -> None:
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"  # else (tests: tiny model, CPU) no graphs, events
        self.cfg = LlamaConfig.preset(model)
        self.model = LlamaModel(self.cfg, num_pages + 1, self.device, seed=seed,
                                prefill_backend="triton", decode_attention=decode_attention)
        gen = torch.Generator(device=self.device).manual_seed(seed + 1)
        for cache in (self.model.k_cache, self.model.v_cache):  # never time on zeros
            cache.normal_(0.0, 1.0, generator=gen)
        self.scratch = num_pages
        self.width = table_width
        self.buckets = tuple(buckets) if graphs and self.cuda else ()
        self.graphs: dict[tuple[int, int], DecodeGraph] = {}  # (bucket, shared pages)
        self.ev = ((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   if self.cuda else None)
        self.calls = {"graph": 0, "eager": 0}
        self.captured_s = 0.0  # capturing grouped shapes' graphs during a run
        #: called with the seconds a capture took, to stop the replay's clock meanwhile
        self.pause_clock: Callable[[float], None] | None = None

    def capture(self, shared_pages: tuple[int, ...] = ()) -> float:
        """Capture a decode graph per bucket (and per bucket and shared prefix size in pages,
        for the shared-prefix kernel); returns the seconds it took."""
        t = time.perf_counter()
        sizes = (0, *shared_pages) if self.model.decode_attention == "shared_prefix" else (0,)
        for n in sorted(set(sizes)):
            for b in self.buckets:
                tpl = to_forward_batch([], [], self.device, self.width, pad_to=b,
                                       scratch=self.scratch, shared_pages=n)
                self.graphs[b, n] = DecodeGraph(self.model, tpl)
        self._sync()
        return time.perf_counter() - t

    def warmup(self, max_tokens: int = 8000) -> float:
        """Eager forwards of representative shapes (prompts of 1..8 chunks up to
        ``max_tokens`` tokens, decode batches) and one replay per graph; returns seconds."""
        t = time.perf_counter()
        pages = iter(range(self.scratch))

        def chunk(n: int, ctx: int = 0) -> Chunk:
            need = -(-(ctx + n) // PAGE_SIZE)
            ids = torch.randint(0, self.cfg.vocab_size, (n,)).numpy()
            return Chunk(ids, ctx, [next(pages, 0) for _ in range(need)])
        # prompt chunks of every size class (the Triton kernels specialize on them: a size
        # first met during a run compiles there, 1.3 s in one replay), alone and over a context
        shapes = [[1], [4], [8], [17], [40], [100], [333], [1024], [3, 500], [700, 700, 700],
                  [max_tokens // 8] * 8, [max_tokens - 100]]
        for ctx in (0, 300):
            for lens in shapes:
                if sum(lens) + ctx * len(lens) > max_tokens:
                    continue
                pages = iter(range(self.scratch))
                self._eager([chunk(n, ctx) for n in lens if n > 0], [])
        # eager decodes of every split count (the merge kernel specializes on it) and mixed
        # batches; Triton also specializes integer arguments on == 1 and % 16 == 0, so sizes
        # straddle those (a mixed batch first met in a run compiled for 0.28 s there)
        small = max_tokens < 1000
        for b in (1, 2) if small else (1, 2, 3, 4, 5, 9, 16, 17, 33):
            pages = iter(range(self.scratch))
            self._eager([], [chunk(1, 300 + i) for i in range(b)])
        for n in (16, 17) if small else (1, 16, 17, 512):
            for b in (1, 2) if small else (1, 2, 16, 17):
                for ctx in (0, 300):
                    pages = iter(range(self.scratch))
                    self._eager([chunk(n, ctx), chunk(n + 3, ctx)],
                                [chunk(1, 300 + i) for i in range(b)])
        for (b, n), g in self.graphs.items():
            pages = iter(range(self.scratch))
            g.run(to_forward_batch([], [chunk(1, 200 + 16 * n)], self.device, self.width, b,
                                   self.scratch, n))
        self._sync()
        return time.perf_counter() - t

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def _eager(self, prefills: list[Chunk], decodes: list[Chunk]) -> None:
        self.model.forward(to_forward_batch(prefills, decodes, self.device,
                                            self.width if decodes else None, 0, self.scratch))

    def __call__(self, batch: Batch, prefills: list[Chunk], decodes: list[Chunk],
                 shared_pages: int | PrefixLayout = 0) -> tuple[float, float, float, int]:
        if isinstance(shared_pages, tuple):
            return self._grouped(prefills, decodes, shared_pages)
        t0 = time.perf_counter()
        graph = None
        if decodes and not prefills and self.buckets and len(decodes) <= self.buckets[-1]:
            b = self.buckets[bisect.bisect_left(self.buckets, len(decodes))]
            graph = self.graphs.get((b, shared_pages))
        if graph is not None:
            fb = to_forward_batch([], decodes, self.device, self.width, b, self.scratch,
                                  shared_pages)
        else:
            if decodes and not prefills and self.buckets:
                self.calls["uncaptured"] = self.calls.get("uncaptured", 0) + 1
            fb = to_forward_batch(prefills, decodes, self.device,
                                  self.width if decodes else None, 0, self.scratch,
                                  shared_pages)
        return self._run(fb, graph, t0)

    def _grouped(self, prefills: list[Chunk], decodes: list[Chunk],
                 layout: PrefixLayout) -> tuple[float, float, float, int]:
        """A decode batch of several forked groups (the several-prefix kernel): a graph per
        shape (each group's rows padded to a bucket, its prefix pages; the other rows padded
        to a bucket), captured when a shape is first met with the replay's clock stopped."""
        groups, at = [], 0
        for pages, rows in layout:
            groups.append((pages, decodes[at:at + rows]))
            at += rows
        plain = decodes[at:]
        graph = None
        if not prefills and self.buckets and len(decodes) <= GROUP_BUCKETS[-1]:
            rows = [GROUP_BUCKETS[bisect.bisect_left(GROUP_BUCKETS, len(c))] for _, c in groups]
            extra = PLAIN_BUCKETS[bisect.bisect_left(PLAIN_BUCKETS, len(plain))]
            key = (tuple(zip([p for p, _ in groups], rows, strict=True)), extra)
            graph = self.graphs.get(key)
            if graph is None and sum(rows) + extra <= self.buckets[-1]:
                graph = self._capture_grouped(key)
        t0 = time.perf_counter()
        if graph is not None:
            fb = to_grouped_forward_batch([], groups, plain, self.device, self.width,
                                          self.scratch, rows, extra)
        else:
            fb = to_grouped_forward_batch(prefills, groups, plain, self.device, self.width,
                                          self.scratch)
        return self._run(fb, graph, t0)

    def _capture_grouped(self, key: tuple) -> DecodeGraph:
        """Capture the graph of one grouped shape; its time (with any Triton compile) is taken
        off the replay's clock through :attr:`pause_clock`."""
        t = time.perf_counter()
        shape, extra = key
        dummy = [(pages, [Chunk(np.zeros(1, dtype=np.int64), pages * PAGE_SIZE,
                                [*range(pages), self.scratch])]) for pages, _ in shape]
        tpl = to_grouped_forward_batch([], dummy, [], self.device, self.width, self.scratch,
                                       [n for _, n in shape], extra)
        graph = self.graphs[key] = DecodeGraph(self.model, tpl)
        self._sync()
        dt = time.perf_counter() - t
        self.captured_s += dt
        self.calls["captured"] = self.calls.get("captured", 0) + 1
        if self.pause_clock is not None:
            self.pause_clock(dt)
        return graph

    def _run(self, fb: ForwardBatch, graph: DecodeGraph | None,
             t0: float) -> tuple[float, float, float, int]:
        """Run ``fb`` (by ``graph`` when given); the timing tuple of :meth:`__call__`."""
        t1 = time.perf_counter()
        if self.ev is not None:
            self.ev[0].record()
        if graph is not None:
            graph.run(fb)
            self.calls["graph"] += 1
        else:
            self.model.forward(fb)
            self.calls["eager"] += 1
        ran_graph = int(graph is not None)
        if self.ev is None:
            return float("nan"), t1 - t0, time.perf_counter() - t1, ran_graph
        a, z = self.ev
        z.record()
        t2 = time.perf_counter()
        z.synchronize()
        return a.elapsed_time(z) / 1e3, t1 - t0, t2 - t1, ran_graph
