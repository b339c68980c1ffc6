"""Build the SimPy model of one run from its :class:`~parrotsim.sim.harness.config.RunConfig` and run it.

Randomness comes from one ``numpy.random.SeedSequence(seed)`` spawned into independent streams
(workload, network), so two policies compared under the same seed see the same apps and the
same round trips (common random numbers). The run ends when every foreground app has received
its final outputs. It never hangs: a workload without apps is an error, and a run that runs
out of events before its apps finished raises :class:`StalledRun`. A run whose iterations went
past the extent its profile's calibration measured (``Profile.calibration.extent``) ends with
one :class:`~parrotsim.sim.model.profile.ExtrapolationWarning` naming the axes and how far.
"""

from __future__ import annotations

import gc
import itertools
import warnings
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import simpy
from simpy.core import StopSimulation

from parrotsim.sim.harness.arrival_process import ArrivalProcess, can_start_lazily
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.feasibility import engine_limits
from parrotsim.sim.harness.outcome import StalledRun, run_result
from parrotsim.sim.model.call_log import CallLog
from parrotsim.sim.model.client import LangChainClient
from parrotsim.sim.model.cluster_policy import CallInfo, EngineLoad
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine, IterationRecorder
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.manager import Manager, plain_sequence
from parrotsim.sim.model.metrics import RunResult
from parrotsim.sim.model.network import Network
from parrotsim.sim.model.parrot_client import ParrotClient
from parrotsim.sim.model.prefix_cache import PrefixCache
from parrotsim.sim.model.profile import (
    ExtrapolationWarning,
    Profile,
    load_profile,
    past_extent_message,
)
from parrotsim.sim.model.sequence import Sequence
from parrotsim.sim.model.stale_timers import stale_timers
from parrotsim.workloads.app import App, validate_apps
from parrotsim.workloads.app_stream import AppsThenStream, SingleCallApps

#: makes engine ``i`` of a run; called as ``Engine`` is (the real-GPU replay passes a subclass
#: whose iterations run a forward pass, :mod:`parrotsim.calibrate.replay.real_engine`)
EngineFactory = Callable[..., Engine]


Apps = list[App] | SingleCallApps | AppsThenStream


def build_apps(cfg: RunConfig) -> Apps:
    """The run's apps, generated from the workload stream of its seed and validated: a list,
    a :class:`~parrotsim.workloads.app_stream.SingleCallApps` stream whose apps are made
    as they arrive, or a few apps then such a stream (``AppsThenStream``)."""
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed).spawn(2)[0])
    return _validated(cfg.workload.build(rng))


def _validated(apps: Apps) -> Apps:
    if isinstance(apps, SingleCallApps | AppsThenStream):
        return apps.validate()
    return validate_apps(apps)


def simulate(cfg: RunConfig, apps: Apps | None = None,
             profile: Profile | None = None, validate: bool = True,
             recorder: IterationRecorder | None = None, env: simpy.Environment | None = None,
             make_engine: EngineFactory = Engine) -> RunResult:
    """Run one simulation; ``apps`` overrides the workload and ``profile`` the cluster's cost
    profile (for tests and fitting). Given ``apps`` are validated unless ``validate`` is False
    (for apps that came from :func:`build_apps`, which validates). ``recorder`` is told every
    engine iteration (:mod:`parrotsim.sim.harness.timeline`); it does not change the run.

    ``env`` and ``make_engine`` let the same model run elsewhere than on a fresh simulated
    clock: the GPU replay passes an environment that follows the wall clock and engines whose
    iterations last as long as a real forward pass (everything else - clients, network,
    manager, policies, KV accounting - is this model's own).

    A stream of apps run on a fresh clock is started lazily (each app made and started when it
    arrives, :mod:`parrotsim.sim.harness.arrival_process`; behind an ``AppsThenStream``'s
    front apps, which start up front), with the same events and results as starting every app
    up front, which is what a list of apps gets; only a background stream's calls due after the
    run's end, which the up-front start logged at set-up, are never made."""
    with _rare_collections():
        return _simulate(cfg, apps, profile, validate, recorder, env, make_engine)


#: allocations (net of frees) between two collections of the youngest generation during a run
GC_YOUNG_THRESHOLD = 1_000_000


@contextmanager
def _rare_collections():
    """Run with rare garbage collections: a run allocates millions of short-lived objects
    that reference counting frees, and frequent cycle scans over the long-lived apps and
    requests cost ~10 % of the run time. A young collection walks every object still alive
    since the last one - on a big cluster the ~100,000 objects of the ~7,000 calls in flight,
    at ~0.5 us each in cold memory (28 ms a collection at 1,024 engines) - however rarely it
    comes, so it comes only every :data:`GC_YOUNG_THRESHOLD` allocations; the model makes
    almost no cyclic garbage during a run (a few hundred objects) for that to hold back. The
    previous thresholds are restored afterwards; the finished run's object graph, cyclic
    garbage once the run returns, is then freed by the collection the restored threshold
    triggers (0.13 s after a GPTs run on 256 engines), not inside the run: compare settings
    with ``bench/gc_threshold.py``, which counts it."""
    before = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _simulate(cfg: RunConfig, apps: Apps | None, profile: Profile | None,
              validate: bool, recorder: IterationRecorder | None = None,
              env: simpy.Environment | None = None,
              make_engine: EngineFactory = Engine) -> RunResult:
    profile = profile or load_profile(cfg.cluster.profile)
    streams = np.random.SeedSequence(cfg.seed).spawn(2)
    if apps is None:
        apps = build_apps(cfg)
    elif validate:
        apps = _validated(apps)
    if not apps:
        raise ValueError("the workload has no apps: nothing to simulate")
    env = simpy.Environment() if env is None else env
    engine_cfg = cfg.cluster.engine
    limits = engine_limits(cfg, profile)
    manager_ref: list[Manager] = []

    def on_finish(seq, t):
        manager_ref[0].engine_finished(seq, t)

    engines = []
    loads = [EngineLoad(i) for i in range(cfg.cluster.engines)]
    # one profile for every engine: prompt chunks and decode rows are costed once a run
    prefill_memo: dict = {}
    decode_rows: dict = {}
    chunk_memo: dict = {}
    for i in range(cfg.cluster.engines):
        kv = KVCache(limits.kv_blocks, limits.block_size)
        cache = (PrefixCache(kv, loads[i].prefixes, cfg.cluster.prefix_ttl_s,
                             cfg.cluster.prefix_lifetime)
                 if cfg.cluster.prefix_cache else None)
        cost = CostModel(profile, engine_cfg.runtime, prefill_memo, decode_rows,
                         kernel=cfg.cluster.kernel, paged_kernel=cfg.cluster.paged_kernel,
                         chunk_memo=chunk_memo)
        engines.append(make_engine(env, i, engine_cfg.make(), cost, kv, on_finish,
                                   kernel=cfg.cluster.kernel,
                                   one_prefix_per_batch=cfg.cluster.one_prefix_per_batch,
                                   fast_forward=cfg.cluster.fast_forward, prefix_cache=cache,
                                   recorder=recorder, limits=limits))
    client_ref: list = []
    pipelined = cfg.client.kind == "parrot" and cfg.client.readiness == "dispatched"
    manager = Manager(env, engines, cfg.cluster.scheduler.make(len(engines)),
                      on_done=lambda info, seq: client_ref[0].on_done(info, seq),
                      make_sequence=sharing_sequence if cfg.cluster.prefix_cache
                      else plain_sequence, loads=loads,
                      on_dispatch=(lambda info, seq: client_ref[0].on_dispatch(info, seq))
                      if pipelined else None,
                      on_reject=lambda info: client_ref[0].on_failed(info))
    manager_ref.append(manager)

    front, stream = _front_and_stream(apps)
    lazy = stream is not None and can_start_lazily(env)
    foreground = [sum(1 for a in front if not a.background)
                  + (len(stream) if stream is not None and not stream.background else 0)]
    ends = np.full(len(apps), np.nan)  # by app rank: when the app completed at its client
    all_done = env.event()

    keeps_for_apps = cfg.cluster.prefix_cache and cfg.cluster.prefix_lifetime == "app"

    def on_app_done(run) -> None:
        if not run.failed:
            ends[run.seq] = run.end
        if keeps_for_apps:
            for engine in engines:
                engine.prefix_cache.app_ended(run.app.app_id)
        if not run.app.background:
            foreground[0] -= 1
            if foreground[0] == 0:
                all_done.succeed()

    uid = itertools.count()
    log = CallLog()
    network = Network(cfg.network, np.random.default_rng(streams[1]))
    if cfg.client.kind == "parrot":
        client = ParrotClient(env, cfg.client, network, manager.arrive, on_app_done,
                              lambda: next(uid), notify_engine=lambda i: engines[i].notify(),
                              log=log)
    else:
        client = LangChainClient(env, cfg.client, network, manager.arrive, on_app_done,
                                 lambda: next(uid), share_prefixes=cfg.cluster.prefix_cache,
                                 log=log)
    client_ref.append(client)
    for app in front:
        client.start(app)
    if lazy:
        arrivals = ArrivalProcess(env, stream, client.start)
        arrivals.begin()
    else:
        arrivals = None
        for app in stream if stream is not None else ():
            client.start(app)
    if foreground[0]:  # as env.run(until=all_done), but a stall is told apart from the end
        all_done.callbacks.append(StopSimulation.callback)
    env.run()
    stale_timers(env).settle()
    if foreground[0]:
        raise StalledRun(env.now, foreground[0], len(apps), engines)
    result = run_result(apps, ends, log, engines,
                        profile.model.kv_bytes_per_token * cfg.cluster.block_size, env.now)
    result.events = next(env._eid)  # SimPy's event counter
    if arrivals is not None:  # as many as the up-front start: the events its clients queued
        result.events += arrivals.client_events()
    _warn_past_extent(profile, engines)
    ignored = sum(e.ignored_calls for e in engines)
    if ignored:
        warnings.warn(f"{ignored} call(s) were given up on by their engine and returned with "
                      "the tokens generated so far (vLLM 0.1.4: a sequence preempted by "
                      "recompute outgrew max_num_batched_tokens); their output_len in the calls "
                      "table is what they got", IgnoredCallsWarning, stacklevel=3)
    return result


def _front_and_stream(apps: Apps) -> tuple[list[App], SingleCallApps | None]:
    """The apps started before the run, and the stream started as it arrives (or None)."""
    if isinstance(apps, SingleCallApps):
        return [], apps
    if isinstance(apps, AppsThenStream):
        return apps.front, apps.stream
    return apps, None


class IgnoredCallsWarning(UserWarning):
    """Some calls of a run ended early, with part of their output (``ignored_calls``)."""


def _warn_past_extent(profile: Profile, engines: list[Engine]) -> None:
    """One warning per run when its iterations went past the profile's measured extent."""
    beyond: dict[str, float] = {}
    for engine in engines:
        for axis, value in engine.cost.beyond.items():
            beyond[axis] = max(value, beyond.get(axis, 0))
    if beyond:
        warnings.warn(past_extent_message(profile, beyond), ExtrapolationWarning, stacklevel=4)


def sharing_sequence(info: CallInfo, engine: Engine) -> Sequence:
    """A sequence that forks the engine's cached context of its shared prefix (submitting the
    prefix fill first when the engine does not hold the prefix yet)."""
    seq = plain_sequence(info, engine)
    if info.shared_prefix is None or not 0 < info.shared_tokens < info.prompt_len:
        return seq
    parent, fill = engine.prefix_cache.acquire(info.shared_prefix, info.shared_tokens,
                                               engine.env.now, info.app_id)
    if fill is not None:
        fill.engine_id = engine.engine_id
        engine.submit(fill)
    seq.prefix_ctx = parent
    seq.cached_len = seq.filled = info.shared_tokens
    return seq
