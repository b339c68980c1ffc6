"""The calls of a run, made by the simulator's own client code.

:func:`client_calls` registers every app with a
:class:`~parrotsim.sim.model.client.LangChainClient` on a SimPy environment that never runs:
``start()`` sends each call without dependencies at its app's arrival, which builds its
:class:`~parrotsim.sim.model.request.CallInfo` exactly as a simulation does (uid, prompt tokens
with the chat template, hints, the round trip drawn from the network stream of the run's seed).
The pending SimPy events (deliveries to the manager) are never processed: the replay delivers
each call itself at ``sent + rtt / 2`` of the wall clock, as the simulator's network would.

Calls that wait for other calls' outputs are never sent by ``start()``; this first increment
replays only apps whose calls have no dependencies (chat, single-call apps) and raises
``NotImplementedError`` otherwise.
"""

from __future__ import annotations

import itertools

import numpy as np
import simpy

from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.model.client import LangChainClient
from parrotsim.sim.model.network import Network
from parrotsim.sim.model.request import CallInfo
from parrotsim.workloads.app import App


def client_calls(cfg: RunConfig, apps: list[App]) -> list[CallInfo]:
    """Every call of ``apps``, in the simulator's send (uid) order."""
    if cfg.client.kind != "langchain":
        raise NotImplementedError(f"client {cfg.client.kind!r}: the replay drives LangChain "
                                  "clients only")
    streams = np.random.SeedSequence(cfg.seed).spawn(2)
    network = Network(cfg.network, np.random.default_rng(streams[1]))
    uid = itertools.count()
    client = LangChainClient(simpy.Environment(), cfg.client, network, lambda info: None,
                             lambda run: None, lambda: next(uid),
                             share_prefixes=cfg.cluster.prefix_cache)
    for app in apps:
        client.start(app)
    total = sum(len(a.calls) for a in apps)
    if len(client.requests) != total:
        raise NotImplementedError(f"{total - len(client.requests)} calls depend on other "
                                  "calls' outputs: the replay runs dependency-free apps only")
    return client.requests


def engine_arrival(info: CallInfo) -> float:
    """When the call reaches the engine: its send plus half its round trip (the simulator's
    network; 0 with ``network.model: none``)."""
    return info.sent + info.rtt / 2
