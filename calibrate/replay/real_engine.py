"""The simulator's engine with real iterations: each batch runs a forward pass on the GPU.

:class:`RealEngine` is :class:`parrotsim.sim.model.engine.Engine` with one method replaced,
``_next_iteration``: instead of sleeping for the cost model's time it maps the batch's contexts
to physical KV pages (:mod:`.pages`), builds the forward pass's inputs (:mod:`.chunks`), runs
``forward`` and ends the iteration when the forward returns, on the replay's clock. Everything
else is the simulator's own code, unchanged: the policy's ``schedule``/``on_iteration_end``,
admission, preemption and KV accounting, token emission and finishing, prefix caches, and -
around the engine - the manager, cluster policy, clients (app DAGs, round trips as real
timeouts) and metrics (see :mod:`.executor`).

Differences from the simulated engine, each deliberate:

* no fast-forward: every decode iteration is a real forward pass (a stretch of one step that a
  new arrival never cuts: it waits for the iteration in progress, as in a real engine);
* an iteration starts when the clock reads it (after the previous iteration's bookkeeping),
  not at the previous iteration's end, so host time between iterations is real;
* the policy's modelled host time (vLLM's request tracking) is not added: what the loop spends
  on the host is measured, not modelled;
* shared-prefix decode: the kernel serves one prefix per batch (as Parrot's own did); a batch
  whose decodes do not all share one cached prefix runs the paged kernel, and the log counts it.

Times are seconds since the replay's ``t0``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from parrotsim.calibrate.replay.chunks import Chunk, TokenIds, batch_chunks
from parrotsim.calibrate.replay.pages import PageAllocator
from parrotsim.sim.model.engine import Engine, InFlight
from parrotsim.sim.model.sequence import Batch

#: runs one iteration and returns when its outputs are ready: (GPU s, input-building host s,
#: launching host s, 1 if a CUDA graph ran else 0), or None when not measured;
#: ``shared_pages``: leading block-table pages every decode shares (0: the paged kernel)
ForwardFn = Callable[[Batch, list[Chunk], list[Chunk], int],
                     "tuple[float, float, float, int] | None"]


class Clock(Protocol):
    def now(self) -> float: ...

    def catch_up(self, t: float) -> None: ...


class OneIteration:
    """The 'stretch' of a real decode iteration: one step of ``first`` seconds, never cut."""

    __slots__ = ("first",)

    def __init__(self, seconds: float) -> None:
        self.first = seconds

    def steps_until(self, elapsed: float, limit: int) -> int:
        return limit

    def duration(self, steps: int) -> float:
        return self.first


@dataclass(slots=True)
class IterationRecord:
    """One real iteration: ``start`` (schedule begins), ``ready`` (inputs built, forward
    called), ``end`` (forward returned), ``post`` (the engine's next look at its queue: the
    bookkeeping after ``end`` is done); ``timing`` from the forward; the batch's shape."""

    start: float
    ready: float
    end: float
    timing: tuple[float, float, float, int] | None
    chunks: tuple[tuple[int, int], ...]  # prompt chunks as (new tokens, KV tokens after)
    decode_seqs: int
    decode_kv_tokens: int  # whole contexts, shared prefixes included
    decode_max_ctx: int  # the longest decode's context
    shared: tuple[tuple[int, int], ...]  # shared-prefix groups (prefix tokens, sequences)
    shared_pages: int
    used_blocks: int
    waiting: int
    post: float | None = None


@dataclass
class Device:
    """What the real engines of one replay share: the forward pass, the clock, token ids and
    the iteration log."""

    forward: ForwardFn
    clock: Clock
    ids: TokenIds
    log: list[IterationRecord] = field(default_factory=list)
    fallbacks: int = 0  # decode batches the shared-prefix kernel could not serve


class RealEngine(Engine):
    """An :class:`~parrotsim.sim.model.engine.Engine` whose iterations are real (see module
    docstring); ``device`` is keyword-only, the rest is ``Engine``'s signature."""

    def __init__(self, *args, device: Device, **kwargs) -> None:
        kwargs["fast_forward"] = False
        super().__init__(*args, **kwargs)
        self.device = device
        self.pages = PageAllocator(self.kv.num_blocks)

    def _next_iteration(self) -> None:
        dev, state = self.device, self.state
        dev.clock.catch_up(self.env.now)
        start = dev.clock.now()
        if dev.log and dev.log[-1].post is None:
            dev.log[-1].post = start
        batch = self.policy.schedule(state) if state.waiting or state.running else None
        if batch is None or (not batch.prefills and not batch.decodes):
            self._idle = True
            return
        self.pages.sync([s.ctx for s in state.running])
        prefills, decodes = batch_chunks(batch, self.pages, dev.ids, self.kv.block_size)
        groups, _ = self._shared_groups(batch)
        shared_pages = self._one_shared_prefix(batch, groups)
        ready = dev.clock.now()
        timing = dev.forward(batch, prefills, decodes, shared_pages)
        end = dev.clock.now()
        kvs = [s.kv_tokens for s in batch.decodes]
        dev.log.append(IterationRecord(
            start, ready, end, timing, tuple((n, s.kv_tokens) for s, n in batch.prefills),
            len(kvs), sum(kvs), max(kvs, default=0), tuple(groups), shared_pages,
            self.kv.used_blocks, len(state.waiting)))
        if not end > start:
            self._stopped_clock(batch, end - start)
        stretch = None if batch.prefills else OneIteration(end - start)
        self._work = InFlight(start, end, batch, stretch, 1)
        self._wake_at(end)

    def _one_shared_prefix(self, batch: Batch, groups: list) -> int:
        """Pages of the one cached prefix that every decode of ``batch`` forks (0 when the
        paged kernel serves the batch)."""
        if not groups or self.kernel != "shared_prefix":  # the paged kernel (over shared
            return 0  # pages: groups only change the cost model's time, not the GPU's kernel)
        if len(groups) == 1 and groups[0][1] == len(batch.decodes):
            return len(self.pages.table(batch.decodes[0].ctx.parent))
        self.device.fallbacks += 1
        return 0
