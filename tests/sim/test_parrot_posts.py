"""The Parrot client's posting on hand-built apps: stage after stage, call after call, and no
event for an answer that starts nothing."""

import numpy as np
import simpy

from parrotsim.sim.model.network import Network, NetworkConfig
from parrotsim.sim.model.parrot_client import ParrotClient, ParrotClientConfig
from parrotsim.workloads.summarization import chain_summary_app, map_reduce_app

RTT = 0.25  # s, constant


def posted(app, stagger_s: float = 0.001):
    """Post ``app`` with a constant round trip and nothing behind the manager: the time each
    call was posted, the time the server registered it, and how many events ran."""
    env = simpy.Environment()
    registered: dict[str, float] = {}
    network = Network(NetworkConfig(model="constant", rtt_ms=RTT * 1000), np.random.default_rng(0))
    uid = iter(range(10**6))
    client = ParrotClient(env, ParrotClientConfig(stagger_s=stagger_s), network,
                          lambda info: registered.setdefault(info.call, env.now),
                          lambda _s: None, lambda: next(uid))
    client.start(app)
    events = 0
    while env.peek() < float("inf"):
        env.step()
        events += 1
    session = client.sessions[app.app_id]
    sent = {name: info.sent for name, info in session.infos.items()}
    return sent, session.posted, events


def test_a_later_stage_is_posted_when_the_last_post_of_the_stage_before_is_answered():
    app = map_reduce_app("mr", 0.0, "arxiv_march_10", 0, 1024, 50)
    maps = [c.name for c in app.calls if c.name != "reduce"]
    sent, posted_calls, _ = posted(app)
    last_map = max(sent[m] for m in maps)
    assert np.isclose(last_map, (len(maps) - 1) * 0.001)
    assert np.isclose(sent["reduce"], last_map + RTT)
    assert posted_calls == {c.name for c in app.calls}


def test_sequential_posts_wait_for_the_previous_answer():
    app = chain_summary_app("ch", 0.0, "arxiv_march_10", 0, 1024, 50)
    sent, _, _ = posted(app)
    times = [sent[c.name] for c in app.calls]
    assert np.allclose(np.diff(times), RTT)


def test_posts_queue_only_the_events_that_do_something():
    """A map-reduce app: its start; a staggered post for every call of a stage but the first
    (posted at once); a registration per call; an answer per map (the reduce follows them),
    none for the reduce."""
    app = map_reduce_app("mr", 0.0, "arxiv_march_10", 0, 1024, 50)
    maps = len(app.calls) - 1
    _, _, events = posted(app)
    assert events == 1 + (maps - 1) + (maps + 1) + maps
    chain = chain_summary_app("ch", 0.0, "arxiv_march_10", 0, 1024, 50)
    _, _, events = posted(chain)
    # sequential (posted in turn, not staggered): the start, each call's registration, and
    # the answers of every call but the last (each answer posts the next)
    k = len(chain.calls)
    assert events == 1 + k + (k - 1)
