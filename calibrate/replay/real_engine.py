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
* shared-prefix decode: a batch whose decodes all fork one cached prefix runs the one-prefix
  kernel; a batch with several forked groups (or decodes outside its one group) runs the
  several-prefix kernel (:mod:`parrotsim.kernels.grouped_prefix_decode`: a prefix pass per
  group, one paged pass over every row's own tokens), which is what the cost model composes.

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
#: the last argument: leading block-table pages every decode shares (0: the paged kernel), or
#: a :data:`PrefixLayout` (the decodes ordered group by group, then the rest)
ForwardFn = Callable[[Batch, list[Chunk], list[Chunk], "int | PrefixLayout"],
                     "tuple[float, float, float, int] | None"]

#: forked groups of a decode batch for the several-prefix kernel: (prefix pages, rows) each
PrefixLayout = tuple[tuple[int, int], ...]


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
    grouped: int = 0  # decode batches served by the several-prefix kernel


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
        if batch is not None and self._only_gives_up(batch, start):
            self._next_iteration()
            return
        if batch is None or (not batch.prefills and not batch.decodes):
            self._idle = True
            return
        self.pages.sync([s.ctx for s in state.running])
        prefills, decodes = batch_chunks(batch, self.pages, dev.ids, self.kv.block_size)
        groups, _ = self._shared_groups(batch)
        shared = self._prefix_layout(batch, groups, decodes)
        if isinstance(shared, tuple):
            decodes, layout = shared
            shared, shared_pages = layout, sum(p for p, _ in layout)
        else:
            shared_pages = shared
        ready = dev.clock.now()
        timing = dev.forward(batch, prefills, decodes, shared)
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

    def _prefix_layout(self, batch: Batch, groups: list, decodes: list[Chunk]
                       ) -> int | tuple[list[Chunk], PrefixLayout]:
        """How the decode kernel serves ``batch``'s forked groups: 0 (the paged kernel), the
        pages of the one cached prefix every decode forks, or - with several groups, or one
        that not every decode joins - the decode chunks reordered group by group (groups in
        the order of their first decode, then the decodes in no group) with each group's
        (prefix pages, rows), for the several-prefix kernel. Groups are the simulator's own
        (:meth:`_shared_groups`: a prefix forked by at least two decodes)."""
        if not groups or self.kernel != "shared_prefix":  # the paged kernel (over shared
            return 0  # pages: groups only change the cost model's time, not the GPU's kernel)
        if len(groups) == 1 and groups[0][1] == len(batch.decodes):
            return len(self.pages.table(batch.decodes[0].ctx.parent))
        members: dict[object, list[int]] = {}
        for i, s in enumerate(batch.decodes):
            if s.prefix_ctx is not None and s.cached_len > 0:
                members.setdefault(s.prefix_ctx, []).append(i)
        ordered: list[Chunk] = []
        layout = []
        grouped: set[int] = set()
        for prefix, rows in members.items():
            if len(rows) < 2:
                continue
            pages = len(self.pages.table(prefix))  # its pages lead each member's table
            layout.append((pages, len(rows)))
            ordered += [decodes[i] for i in rows]
            grouped.update(rows)
        if len(layout) != len(groups):
            raise RuntimeError(f"engine {self.engine_id}: {len(layout)} prefix groups found "
                               f"for the simulator's {len(groups)}")
        ordered += [c for i, c in enumerate(decodes) if i not in grouped]
        self.device.grouped += 1
        return ordered, tuple(layout)
