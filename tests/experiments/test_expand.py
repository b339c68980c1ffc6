"""Sweep expansion (variants x axes x seeds, exclusions, labels) and run keys."""

from __future__ import annotations

import pytest

import parrotsim.sim.harness.store
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.experiment import expand, experiment_from_data, load_experiment
from parrotsim.sim.harness.store import run_key


def test_expansion_labels_and_configs(tiny):
    runs = expand(load_experiment(tiny))
    assert len(runs) == 2 * 3 * 2
    assert list(runs[0].labels) == ["variant", "cluster.engines", "cluster.scheduler.policy",
                                    "seed"]
    combos = {(r.labels["variant"], r.labels["cluster.engines"],
               r.labels["cluster.scheduler.policy"], r.labels["seed"]) for r in runs}
    assert ("capped", 1, "round_robin", 0) not in combos  # excluded
    assert ("uncapped", 2, "round_robin", 1) in combos
    for r in runs:
        c = r.config
        assert c.cluster.engines == r.labels["cluster.engines"]
        assert c.cluster.scheduler.policy == r.labels["cluster.scheduler.policy"]
        assert c.seed == r.labels["seed"]
        assert c.cluster.engine.capacity_tokens == (4096 if r.labels["variant"] == "capped"
                                                    else None)
        assert c.workload.num_requests == 20
    assert len({r.key for r in runs}) == len(runs)


def test_no_variants_no_sweep():
    exp = experiment_from_data({"name": "one", "run": {"workload": {"kind": "sharegpt"}}})
    (run,) = expand(exp)
    assert run.labels == {"variant": "base", "seed": 0}
    assert exp.label_names == ["variant", "seed"]


def test_override_replaces_whole_value():
    exp = experiment_from_data({
        "name": "x",
        "run": {"workload": {"kind": "sharegpt"},
                "cluster": {"engine": {"policy": "vllm", "capacity_tokens": 4096}}},
        "variants": {"hf": {"cluster.engine": {"policy": "hf"}}}})
    assert expand(exp)[0].config.cluster.engine.policy == "hf"


def test_sweep_over_list_values_and_seeds():
    exp = experiment_from_data({
        "name": "x", "run": {"workload": {"kind": "sharegpt", "num_requests": 5}},
        "sweep": {"workload.rate": [1, 2.5]}, "seeds": [3, 4, 5]})
    runs = expand(exp)
    assert [(r.labels["workload.rate"], r.labels["seed"]) for r in runs] == [
        (1, 3), (1, 4), (1, 5), (2.5, 3), (2.5, 4), (2.5, 5)]


def test_key_ignores_order_and_defaults():
    explicit = RunConfig.model_validate({"workload": {"kind": "sharegpt"}}).model_dump()
    reordered = dict(reversed(list(explicit.items())))
    reordered["workload"] = dict(reversed(list(explicit["workload"].items())))
    keys = {run_key(RunConfig.model_validate(d)) for d in
            ({"workload": {"kind": "sharegpt"}}, explicit, reordered)}
    assert len(keys) == 1


def test_key_changes_with_any_field_version_and_profile(monkeypatch):
    base = {"workload": {"kind": "sharegpt"}}
    key = run_key(RunConfig.model_validate(base))
    changed = [
        {"workload": {"kind": "sharegpt", "rate": 5.5}},
        {"workload": {"kind": "sharegpt"}, "seed": 1},
        {"workload": {"kind": "sharegpt"}, "cluster": {"engines": 2}},
        {"workload": {"kind": "sharegpt"}, "cluster": {"profile": "a100-80gb_llama-7b"}},
        {"workload": {"kind": "sharegpt"}, "cluster": {"scheduler": {"policy": "round_robin"}}},
    ]
    keys = {run_key(RunConfig.model_validate(d)) for d in changed}
    assert key not in keys and len(keys) == len(changed)
    monkeypatch.setattr(parrotsim.sim.harness.store, "__version__", "999")
    assert run_key(RunConfig.model_validate(base)) != key


def test_key_changes_with_profile_content(monkeypatch):
    cfg = RunConfig.model_validate({"workload": {"kind": "sharegpt"}})
    key = run_key(cfg)
    monkeypatch.setattr(parrotsim.sim.harness.store, "profile_hash", lambda name: "0" * 16)
    assert run_key(cfg) != key


def test_file_key_order_does_not_matter(write_yaml):
    a = write_yaml("name: a\nrun:\n  workload: {kind: sharegpt, rate: 2, num_requests: 7}\n"
                   "  cluster: {engines: 2}\n", "a.yaml")
    b = write_yaml("name: b\nrun:\n  cluster: {engines: 2}\n"
                   "  workload: {num_requests: 7, rate: 2.0, kind: sharegpt}\n", "b.yaml")
    assert expand(load_experiment(a))[0].key == expand(load_experiment(b))[0].key


@pytest.mark.parametrize("exclude, left", [
    ([{"variant": "a"}], 2), ([{"seed": 1}], 2), ([{"variant": "a", "seed": 1}], 3),
    ([{"variant": "a"}, {"variant": "b", "seed": 0}], 1)])
def test_exclude(exclude, left):
    exp = experiment_from_data({
        "name": "x", "run": {"workload": {"kind": "sharegpt"}},
        "variants": {"a": {}, "b": {"workload.rate": 2}}, "seeds": [0, 1], "exclude": exclude})
    assert len(expand(exp)) == left
