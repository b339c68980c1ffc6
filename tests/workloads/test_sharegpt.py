"""ShareGPT chat lengths reproduce the filtered ShareGPT percentiles (workload-stats.md 1.2)."""

from __future__ import annotations

import numpy as np
import pytest

from parrotsim.workloads.app import validate_apps
from parrotsim.workloads.sharegpt import ShareGptChat, sample_lengths

# p10 / p50 / p90 of the 15,485 filtered first-turn pairs (LLaMA tokens, BOS included)
PROMPT_PCT = (12, 113, 692)
OUTPUT_PCT = (12, 149, 578)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_percentiles_within_5_percent(seed):
    prompts, outputs = sample_lengths(np.random.default_rng(seed), 20_000)
    for got, want in zip(np.percentile(prompts, [10, 50, 90]), PROMPT_PCT, strict=True):
        assert abs(got - want) <= 0.05 * want
    for got, want in zip(np.percentile(outputs, [10, 50, 90]), OUTPUT_PCT, strict=True):
        assert abs(got - want) <= 0.05 * want
    assert prompts.min() >= 4 and outputs.min() >= 4
    assert prompts.max() <= 1024 and (prompts + outputs).max() <= 2048


def test_percentiles_match_the_lengths_file(trace_dir):
    data = np.loadtxt(trace_dir / "sharegpt_first_turn_lengths_llama.csv", delimiter=",",
                      skiprows=1, dtype=int)
    assert len(data) == 15_485
    assert np.allclose(np.percentile(data[:, 1], [10, 50, 90]), PROMPT_PCT, rtol=0.01)
    assert np.allclose(np.percentile(data[:, 2], [10, 50, 90]), OUTPUT_PCT, rtol=0.01)


def test_apps_and_seeds():
    cfg = ShareGptChat(num_requests=200, rate=10, arrival="gamma", burstiness=0.5)
    a = validate_apps(cfg.build(np.random.default_rng(4)))
    assert a == cfg.build(np.random.default_rng(4))
    b = cfg.build(np.random.default_rng(5))
    assert [x.arrival for x in a] != [x.arrival for x in b]
    assert all(x.kind == "chat" and len(x.calls) == 1 for x in a)
    const = ShareGptChat(num_requests=5, rate=2, arrival="constant", start=1.0)
    assert [x.arrival for x in const.build(np.random.default_rng(0))] == [1, 1.5, 2, 2.5, 3]
