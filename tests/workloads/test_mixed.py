"""Fig 19: 40 constant-rate chats plus 9 map-reduce apps in three bursts."""

from __future__ import annotations

import numpy as np

from parrotsim.workloads.app import prompt_tokens, validate_apps
from parrotsim.workloads.arxiv import chunk_facts
from parrotsim.workloads.mixed import MixedChatMapReduce


def test_fig19_schedule_and_hints():
    apps = validate_apps(MixedChatMapReduce().build(np.random.default_rng(0)))
    chats = [a for a in apps if a.kind == "chat"]
    mrs = [a for a in apps if a.kind == "map_reduce"]
    assert len(chats) == 40 and len(mrs) == 9
    assert [a.arrival for a in chats] == [float(i) for i in range(40)]
    assert all(a.calls[0].hints.max_requests_per_engine == 16 for a in chats)
    assert [a.arrival for a in mrs] == [15, 15.5, 16, 26, 26.5, 27, 37, 37.5, 38]
    n = chunk_facts("arxiv_march_10", 0, 1024).chunks
    for app in mrs:
        *maps, reduce = app.calls
        assert len(maps) == n == 75
        assert all(c.hints.max_requests_per_engine is None and c.output_tokens == 50
                   for c in maps)
        assert reduce.hints.max_requests_per_engine == 32
        assert prompt_tokens(app, reduce) == 33 + 75 * 50


def test_seeds_change_chat_lengths_not_schedule():
    cfg = MixedChatMapReduce(num_chats=10, mr_apps=2)
    a, b = cfg.build(np.random.default_rng(0)), cfg.build(np.random.default_rng(1))
    assert a == cfg.build(np.random.default_rng(0))
    assert [x.arrival for x in a] == [x.arrival for x in b]
    assert [x.calls[0].output_tokens for x in a[:10]] != [x.calls[0].output_tokens for x in b[:10]]
