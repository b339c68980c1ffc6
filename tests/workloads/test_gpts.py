"""GPTs (Fig 17): the four apps' tokens exactly, mixed 1:1:1:1, Poisson arrivals."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from parrotsim.workloads.app import Text, validate_apps
from parrotsim.workloads.gpts import Gpts, gpts_apps


def test_table_matches_facts(parrot_data):
    facts = json.loads((parrot_data / "gpts_top4.json").read_text())
    assert [(a.name, a.system_tokens, a.query_tokens, a.output_tokens, a.share)
            for a in gpts_apps()] == [(f["app_name"], f["prompt_length"], f["query_length"],
                                       f["output_length"], f["percentage"]) for f in facts]


def test_requests_carry_the_apps_tokens():
    apps = validate_apps(Gpts(num_requests=400, rate=8).build(np.random.default_rng(3)))
    table = {a.app: a for a in gpts_apps()}
    counts = Counter(a.app_id.split("-")[1] for a in apps)
    assert counts == {name: 100 for name in table}
    for i, app in enumerate(apps):
        _, name, idx = app.app_id.split("-")
        g = table[name]
        assert int(idx) == i and app.kind == "gpts"
        system, query = app.calls[0].prompt
        assert system == Text(f"gpts/{name}/system", g.system_tokens)
        assert query == Text(f"gpts/{name}/query/{i}", g.query_tokens)
        assert app.calls[0].output_tokens == g.output_tokens
    times = np.array([a.arrival for a in apps])
    assert np.all(np.diff(times) > 0)
    assert abs(times[-1] / len(times) - 1 / 8) < 0.03  # mean gap 1/rate


def test_seeds_and_popularity_mix():
    cfg = Gpts(num_requests=50, rate=2)
    assert cfg.build(np.random.default_rng(5)) == cfg.build(np.random.default_rng(5))
    a, b = cfg.build(np.random.default_rng(5)), cfg.build(np.random.default_rng(6))
    assert [x.arrival for x in a] != [x.arrival for x in b]
    apps = Gpts(num_requests=4000, mix="popularity").build(np.random.default_rng(0))
    share = Counter(a.app_id.split("-")[1] for a in apps)
    assert abs(share["image_generation"] / 4000 - 0.40) < 0.03
