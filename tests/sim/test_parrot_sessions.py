"""The Parrot client keeps a session only while its app can still be reached: once every call
of an app has ended the session is dropped, so memory follows the apps in flight."""

import numpy as np
import simpy

from parrotsim.sim.model.network import Network, NetworkConfig
from parrotsim.sim.model.parrot_client import ParrotClient, ParrotClientConfig
from parrotsim.workloads.summarization import map_reduce_app


def serve(apps, fail: set[str] = frozenset()):
    """Run ``apps`` through a client whose service completes each submitted call 1 s later
    (rejects it at once when its name is in ``fail``): the client, the apps reported done."""
    env = simpy.Environment()
    network = Network(NetworkConfig(model="constant", rtt_ms=250), np.random.default_rng(0))
    uid = iter(range(10**6))
    done = []
    holder = []

    def submit(info):
        client = holder[0]
        if info.call in fail:
            client.on_failed(info)
            return
        env.timeout(1.0).callbacks.append(lambda _e: client.on_done(info, None))

    client = ParrotClient(env, ParrotClientConfig(readiness="complete"), network, submit,
                          lambda s: done.append(s.app.app_id), lambda: next(uid))
    holder.append(client)
    for app in apps:
        client.start(app)
    env.run()
    return client, done


def test_a_finished_app_leaves_no_session():
    apps = [map_reduce_app(f"mr{i}", 2.0 * i, "arxiv_march_10", 0, 1024, 50) for i in range(3)]
    client, done = serve(apps)
    assert done == ["mr0", "mr1", "mr2"]
    assert client.sessions == {}
    assert client.log.in_flight == 0


def test_a_failed_app_with_calls_never_sent_keeps_its_session():
    """A rejected map: the app fails, its other maps still end (no lookup of a dropped
    session), the reduce is never submitted, so the session stays."""
    app = map_reduce_app("mr", 0.0, "arxiv_march_10", 0, 1024, 50)
    client, done = serve([app], fail={"map_0"})
    assert done == ["mr"]
    assert set(client.sessions) == {"mr"}
