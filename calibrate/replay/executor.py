"""A run replayed on a real engine: the simulator's whole model on a wall clock.

:class:`Replay` runs :func:`parrotsim.sim.harness.simulation.simulate` itself - the same apps
(``build_apps``, the run's seed), clients (LangChain or Parrot, app DAGs released as outputs
return, round trips from the run's network stream), manager and cluster policy, engine policy,
KV cache and prefix caches - with two things swapped in:

* the environment: :class:`WallClockEnvironment`, SimPy's real-time environment, so that an
  event at ``t`` happens when the wall clock reads ``t`` seconds since ``t0`` (a call is sent
  at its app's arrival, a round trip is a real wait);
* the engine: :class:`~parrotsim.calibrate.replay.real_engine.RealEngine`, whose iterations
  run ``forward`` (:class:`parrotsim.calibrate.replay.gpu.GpuForward` on the GPU) and last as
  long as it does.

So the real run and the simulated one differ only in how long each iteration takes and in
the host time around it; any other divergence is a bug of one of the two (tests pin this with
a fake forward that lasts the cost model's time: the per-call times then equal the
simulator's). One engine per run: the lent machine has one GPU, and several engines would take
turns on it.

Tests use :class:`FakeClock` and a plain SimPy environment instead of the wall clock.
"""

from __future__ import annotations

import time

import simpy
from simpy.core import EmptySchedule, Environment

from parrotsim.calibrate.replay.chunks import TokenIds
from parrotsim.calibrate.replay.real_engine import Device, ForwardFn, RealEngine
from parrotsim.calibrate.replay.tables import ReplayResult, make_result
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.feasibility import engine_limits
from parrotsim.sim.harness.simulation import build_apps, simulate
from parrotsim.sim.model.profile import Profile, load_profile
from parrotsim.workloads.app import App, prompt_tokens, var_lengths
from parrotsim.workloads.prefix_hash import shared_prefix

SPIN_S = 5e-4  # the last half millisecond before an event is waited for by spinning


class WallClockEnvironment(simpy.rt.RealtimeEnvironment):
    """SimPy's real-time environment (one simulated second per second, late events allowed)
    whose ``t0`` is the start of :meth:`run`; it spins the last :data:`SPIN_S` before each
    event instead of sleeping (a sleep overshoots by ~0.1 ms)."""

    def __init__(self) -> None:
        super().__init__(initial_time=0.0, factor=1.0, strict=False)

    def run(self, until=None):
        self.sync()
        return super().run(until)

    def pause(self, seconds: float) -> None:
        """Take ``seconds`` of host work that is not the engine's (a CUDA-graph capture) off
        the clock: every later reading is that much earlier."""
        self.real_start += seconds

    def wall(self) -> float:
        """The wall clock, in seconds since ``t0``."""
        return time.monotonic() - self.real_start

    def step(self) -> None:
        t = self.peek()
        if t == float("inf"):
            raise EmptySchedule
        while True:
            left = t - self.wall()
            if left <= 0:
                break
            if left > SPIN_S:
                time.sleep(left - SPIN_S)
        Environment.step(self)


class WallClock:
    """The replay's clock on the GPU: the environment's wall clock."""

    def __init__(self, env: WallClockEnvironment) -> None:
        self.env = env

    def now(self) -> float:
        return self.env.wall()

    def catch_up(self, t: float) -> None:
        """The wall clock is never behind the events it serves."""


class FakeClock:
    """A clock that stands still until a fake forward :meth:`advance`-s it (tests)."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def catch_up(self, t: float) -> None:
        self.t = max(self.t, t)

    def advance(self, dt: float) -> None:
        self.t += dt


def check_supported(cfg: RunConfig) -> None:
    """Raise ``NotImplementedError`` for what the replay cannot run for real."""
    if cfg.cluster.engines != 1:
        raise NotImplementedError("the replay runs one engine on one GPU (cluster.engines: 1)")
    if getattr(cfg.cluster.engine, "request_tracking", False):
        raise NotImplementedError("vLLM's request tracking is a modelled host cost; the replay "
                                  "measures its own host time (set request_tracking: false)")


def max_context(apps: list[App], template_tokens: int) -> int:
    """Most tokens one call can hold: its prompt (chat template included) plus its output."""
    most = 1
    for app in apps:
        lengths = var_lengths(app)
        for call in app.calls:
            most = max(most, prompt_tokens(app, call, lengths) + template_tokens
                       + call.output_tokens)
    return most


class Replay:
    """One run of ``cfg`` on a real engine whose iterations run ``forward``; ``clock`` None
    means the wall clock (on the GPU), a :class:`FakeClock` a test's simulated one."""

    def __init__(self, cfg: RunConfig, forward: ForwardFn | None,
                 clock: FakeClock | None = None, profile: Profile | None = None,
                 apps: list[App] | None = None, vocab: int = 32000) -> None:
        check_supported(cfg)
        self.cfg, self.fake = cfg, clock
        self.profile = profile or load_profile(cfg.cluster.profile)
        self.apps = build_apps(cfg) if apps is None else apps
        self.limits = engine_limits(cfg, self.profile)
        self.device = Device(forward, clock, TokenIds(vocab, seed=cfg.seed))
        self.engines: list[RealEngine] = []

    def table_width(self) -> int:
        """Block-table width in pages that every sequence of the run fits (plus one page per
        forked level's padding)."""
        most = max_context(self.apps, self.cfg.client.template_tokens())
        return -(-most // self.limits.block_size) + 2

    def shared_prefix_pages(self) -> tuple[int, ...]:
        """Page counts of the prefixes the run's calls may fork (graphs are captured for
        them), as the clients find them (:func:`~parrotsim.workloads.prefix_hash.shared_prefix`),
        padded to a page."""
        bs = self.limits.block_size
        found = {shared_prefix(a, c) for a in self.apps for c in a.calls}
        return tuple(sorted({-(-p[1] // bs) for p in found if p is not None}))

    def run(self) -> ReplayResult:
        """Replay every call; returns the tables (times in seconds since ``t0``)."""
        if self.engines:
            raise RuntimeError("a Replay runs once")
        if self.fake is None:
            env = WallClockEnvironment()
            self.device.clock = WallClock(env)
            if hasattr(self.device.forward, "pause_clock"):  # GpuForward: lazy graph captures
                self.device.forward.pause_clock = env.pause
        else:
            env = simpy.Environment()

        def make_engine(*args, **kwargs) -> RealEngine:
            engine = RealEngine(*args, device=self.device, **kwargs)
            self.engines.append(engine)
            return engine
        result = simulate(self.cfg, self.apps, self.profile, validate=False, env=env,
                          make_engine=make_engine)
        return make_result(self, result)
