"""Lazy arrivals: apps of a stream made and started as they arrive, the run unchanged."""

import numpy as np
import pytest
import simpy

from parrotsim.sim.harness.arrival_process import ArrivalProcess, can_start_lazily
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import build_apps, simulate
from parrotsim.sim.model.client import LangChainClient, LangChainClientConfig
from parrotsim.sim.model.network import Network, NetworkConfig
from parrotsim.workloads.app import App, Call, Ref, Text
from parrotsim.workloads.app_stream import AppsThenStream, SingleCallApps

CASES = {
    "poisson, measured round trips": {
        "workload": {"kind": "sharegpt", "num_requests": 400, "rate": 30.0},
        "cluster": {"engines": 3}},
    "constant arrivals, no network (ties)": {
        "workload": {"kind": "sharegpt", "num_requests": 200, "rate": 4.0,
                     "arrival": "constant"},
        "network": {"model": "none"}, "cluster": {"engines": 2}},
    "parrot client": {
        "workload": {"kind": "gpts", "num_requests": 120, "rate": 6.0},
        "client": {"kind": "parrot"},
        "cluster": {"engines": 2, "profile": "a6000_llama-7b", "prefix_cache": True,
                    "kernel": "shared_prefix", "engine": {"policy": "parrot"},
                    "scheduler": {"policy": "parrot"}}},
}


@pytest.mark.parametrize("raw", CASES.values(), ids=CASES.keys())
def test_a_stream_runs_as_the_list_of_its_apps_started_up_front(raw):
    cfg = RunConfig.model_validate(raw)
    apps = build_apps(cfg)
    assert isinstance(apps, SingleCallApps)
    lazy, upfront = simulate(cfg, apps=apps), simulate(cfg, apps=list(apps))
    for name in ("calls", "apps", "engines"):
        a, b = getattr(lazy, name), getattr(upfront, name)
        assert a.equals(b) and (a.dtypes == b.dtypes).all(), name
    assert lazy.summary.keys() == upfront.summary.keys()
    assert lazy.events == upfront.events


def test_each_app_is_made_when_it_arrives_and_starts_before_events_of_its_time():
    env = simpy.Environment()
    made, order = [], []
    arrivals = np.array([0.0, 1.0, 1.0, 2.5])
    stream = SingleCallApps(arrivals, np.ones(4, int), np.ones(4, int), app_id="a-{}".format,
                            prompt=lambda i: made.append((i, env.now)) or (Text("t", 1),),
                            kind="x")

    def start(app):  # what a client does: queue an event of the arrival's time
        env.timeout(0.0).callbacks.append(lambda _e: order.append(app.app_id))

    def other(_e):  # an event queued during the run, for t = 1.0 like apps 1 and 2
        env.timeout(0.5).callbacks.append(lambda _e: order.append("other"))

    env.timeout(0.5).callbacks.append(other)
    assert can_start_lazily(env) is False  # a NORMAL event is queued already
    env = simpy.Environment()
    env.process(x for x in ())  # an URGENT initialisation queued at set-up does not tie
    assert can_start_lazily(env)
    process = ArrivalProcess(env, stream, start)
    process.begin()
    env.timeout(0.5).callbacks.append(other)
    env.run()
    assert made == [(0, 0.0), (1, 1.0), (2, 1.0), (3, 2.5)]
    assert order == ["a-0", "a-1", "a-2", "other", "a-3"]  # as if all had started at t = 0
    assert process.client_events() == 4


def chain(app_id: str, arrival: float) -> App:
    return App(app_id, arrival, (Call("c0", (Text("p", 5),), "v0", 3),
                                 Call("c1", (Ref("v0"),), "v1", 3)), outputs=("v1",))


def test_the_client_drops_an_app_once_it_ended_and_none_of_its_calls_is_out():
    env = simpy.Environment()
    seen = []

    def submit(info):  # a service that answers every call a second later
        seen.append((info.call, set(client.runs), client.log.in_flight))
        env.timeout(1.0).callbacks.append(lambda _e: client.on_done(info, None))

    client = LangChainClient(env, LangChainClientConfig(chat_template="none"),
                             Network(NetworkConfig(model="none"), np.random.default_rng(0)),
                             submit, lambda run: None, iter(range(99)).__next__)
    client.start(chain("a", 0.0))
    client.start(chain("b", 1.5))
    env.run()
    assert seen == [("c0", {"a", "b"}, 2), ("c1", {"a", "b"}, 2), ("c0", {"a", "b"}, 2),
                    ("c1", {"b"}, 1)]
    assert client.runs == {} and client.log.in_flight == 0
    assert client.log.table()["app_id"].tolist() == ["a", "b", "a", "b"]


FIG12A_LIKE = {
    "langchain + vllm": {
        "workload": {"kind": "chain_with_background", "docs": [0], "background_rate": 3.0},
        "cluster": {"engines": 1, "profile": "a100-80gb_llama-13b",
                    "engine": {"policy": "vllm", "capacity_tokens": 4096}}},
    "parrot": {
        "workload": {"kind": "chain_with_background", "docs": [1], "background_rate": 2.0,
                     "submit": "concurrent"},
        "client": {"kind": "parrot", "cache_prefix": False},
        "cluster": {"engines": 1, "profile": "a100-80gb_llama-13b",
                    "engine": {"policy": "parrot", "scheduler": "fifo_v2",
                               "max_num_batched_tokens": 2560, "max_total_tokens": 4096},
                    "scheduler": {"policy": "parrot", "app_fifo": True}}},
}


@pytest.mark.parametrize("raw", FIG12A_LIKE.values(), ids=FIG12A_LIKE.keys())
def test_apps_then_a_background_stream_run_as_the_list_of_their_apps(raw):
    """Fig 12a's chain then its background stream: the chain starts up front, the background
    apps as they arrive, and every event falls as when all start up front. The up-front start
    also logged, at set-up, the background calls due after the chain's end (the run stops
    there); lazily those never exist, and the calls are logged in the order they are sent."""
    cfg = RunConfig.model_validate(raw)
    apps = build_apps(cfg)
    assert isinstance(apps, AppsThenStream) and apps.stream.background
    env = simpy.Environment()
    lazy, upfront = simulate(cfg, apps=apps, env=env), simulate(cfg, apps=list(apps))
    assert lazy.apps.equals(upfront.apps) and lazy.engines.equals(upfront.engines)
    due = upfront.calls[upfront.calls["sent"] < env.now]  # the run stopped at env.now
    if cfg.client.kind == "langchain":  # it logs a call when it starts the app
        assert len(due) < len(upfront.calls)
    key = ["app_id", "call"]
    assert lazy.calls.sort_values(key).reset_index(drop=True).equals(
        due.sort_values(key).reset_index(drop=True))
    for metric in ("mean_jct", "makespan", "calls", "preemptions", "peak_kv_memory"):
        assert lazy.summary[metric] == upfront.summary[metric], metric
