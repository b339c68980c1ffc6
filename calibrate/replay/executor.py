"""The serving loop of one engine on one GPU, driven by the simulator's own objects.

:class:`Replay` builds the run's apps with :func:`~parrotsim.sim.harness.simulation.build_apps`,
its calls with the simulator's client (:mod:`.calls`), the engine state as
``EngineState(KVCache(...))`` sized as a simulation sizes it, and the policy as
``cfg.cluster.engine.make()``. Then, one real iteration at a time (no fast-forward):

1. calls whose engine arrival (``sent + rtt/2``, seconds since ``t0``) has passed on the clock
   join the waiting queue (``policy.accept``, ``seq.arrived`` = that arrival, as
   ``Engine.submit``); with nothing runnable the loop sleeps until the next arrival;
2. ``policy.schedule(state)`` picks the batch (admitting, allocating, preempting);
3. the page allocator gives every running context ``ctx.blocks`` physical pages, and the
   batch becomes prefill / decode chunks (:mod:`.chunks`);
4. ``forward(batch, prefills, decodes)`` runs it and returns when its results are ready;
5. tokens are emitted and sequences finished as the simulator's engine does (:mod:`.emit`),
   then ``policy.on_iteration_end`` is told and the dead contexts' pages come back.

An iteration starts at step 2 (``admitted``) and ends when the forward pass returns
(``first_token``, ``finished``); the log keeps the CPU time of steps 2-3 (``sched_s``), the
forward's wall and GPU time, and the bookkeeping after it (``post_s``, before the next start).
The clock and the forward function are injected: the GPU replay passes the wall clock and
:class:`parrotsim.calibrate.replay.gpu.GpuForward`; tests pass a fake clock and a forward that
advances it by the cost model's iteration time.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable

from parrotsim.calibrate.replay.calls import client_calls, engine_arrival
from parrotsim.calibrate.replay.chunks import Chunk, TokenIds, batch_chunks
from parrotsim.calibrate.replay.clock import FakeClock, WallClock
from parrotsim.calibrate.replay.emit import emit
from parrotsim.calibrate.replay.pages import PageAllocator
from parrotsim.calibrate.replay.tables import ReplayResult, make_result
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import build_apps
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.manager import plain_sequence
from parrotsim.sim.model.profile import Profile, load_profile
from parrotsim.sim.model.request import CallInfo
from parrotsim.sim.model.sequence import Batch, Sequence
from parrotsim.workloads.app import App

#: runs one iteration and returns when its outputs are ready: (GPU s, input-building host s,
#: launching host s), or None when not measured
ForwardFn = Callable[[Batch, list[Chunk], list[Chunk]], "tuple[float, float, float] | None"]


def check_supported(cfg: RunConfig) -> None:
    """Raise ``NotImplementedError`` for what this first increment does not replay."""
    c = cfg.cluster
    if c.engines != 1:
        raise NotImplementedError("the replay runs one engine on one GPU (cluster.engines: 1)")
    if c.prefix_cache or c.kernel != "paged":
        raise NotImplementedError("prefix caches and the shared-prefix kernel are not replayed")


class Replay:
    """One run of ``cfg`` replayed through ``forward`` on ``clock``."""

    def __init__(self, cfg: RunConfig, forward: ForwardFn, clock: WallClock | FakeClock,
                 profile: Profile | None = None, apps: list[App] | None = None,
                 vocab: int = 32000) -> None:
        check_supported(cfg)
        self.cfg, self.forward, self.clock = cfg, forward, clock
        self.profile = profile or load_profile(cfg.cluster.profile)
        self.apps = build_apps(cfg) if apps is None else apps
        self.calls: list[CallInfo] = client_calls(cfg, self.apps)
        engine = cfg.cluster.engine
        bs = cfg.cluster.block_size
        self.kv = KVCache(engine.kv_blocks(self.profile.kv_capacity_tokens(), bs), bs)
        self.state = EngineState(self.kv)
        self.policy = engine.make()
        self.pages = PageAllocator(self.kv.num_blocks)
        self.ids = TokenIds(vocab, seed=cfg.seed)
        self.injected: dict[int, float] = {}  # uid -> when the loop queued the call
        self.log: list[tuple] = []

    def max_context(self) -> int:
        """Most tokens one sequence can hold (prompt plus output, before any truncation)."""
        return max([c.prompt_len + c.output_len for c in self.calls], default=1)

    def run(self) -> ReplayResult:
        """Replay every call; returns the tables (times in seconds since ``t0``)."""
        state, policy, clock, pages = self.state, self.policy, self.clock, self.pages
        pending = deque(sorted(self.calls, key=lambda c: (engine_arrival(c), c.uid)))
        threshold = gc.get_threshold()
        gc.collect()
        gc.set_threshold(50_000, 20, 100)  # as simulate(): rare cycle scans
        clock.start()
        try:
            while True:
                now = clock.now()
                while pending and engine_arrival(pending[0]) <= now:
                    self._submit(pending.popleft(), now)
                if not state.waiting and not state.running:
                    if not pending:
                        break
                    clock.sleep_until(engine_arrival(pending[0]))
                    continue
                start = clock.now()
                batch = policy.schedule(state)
                if batch.empty:
                    if not pending:
                        raise RuntimeError("the policy scheduled nothing and no call is due")
                    clock.sleep_until(engine_arrival(pending[0]))
                    continue
                pages.sync([s.ctx for s in state.running])
                prefills, decodes = batch_chunks(batch, pages, self.ids, self.kv.block_size)
                shape = _shape(batch, policy)
                ready = clock.now()
                timing = self.forward(batch, prefills, decodes)
                end = clock.now()
                finished = emit(state, policy, batch, start, end, self._finished)
                policy.on_iteration_end(state, batch, 1, finished)
                pages.release_dead()
                self.log.append((start, ready, end, clock.now(), timing, *shape,
                                 self.kv.used_blocks, len(state.waiting)))
        finally:
            gc.set_threshold(*threshold)
        return make_result(self)

    def _submit(self, info: CallInfo, now: float) -> None:
        """The call reaches the engine (``Manager.arrive`` + dispatch + ``Engine.submit``)."""
        t = engine_arrival(info)
        seq = plain_sequence(info, None)
        seq.engine_id = 0
        info.arrived = info.dispatched = t
        info.engine = 0
        info.seq = seq
        self.policy.accept(seq)
        seq.arrived = t
        self.state.waiting.append(seq)
        self.injected[info.uid] = now

    def _finished(self, seq: Sequence, end: float) -> None:
        info = seq.request
        info.returned = end + info.rtt / 2


def _shape(batch: Batch, policy) -> tuple:
    """Batch composition: prompt chunks as ((new, kv tokens), ...), prefill tokens and
    sequences, decode sequences, the KV tokens they read, and the policy's host time."""
    chunks = tuple((n, s.kv_tokens) for s, n in batch.prefills)
    host = policy.host_time(batch) if chunks else 0.0
    return (chunks, sum(n for n, _ in chunks), len(chunks), len(batch.decodes),
            sum([s.kv_tokens for s in batch.decodes]), host)
