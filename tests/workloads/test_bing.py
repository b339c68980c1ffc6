"""Bing Copilot (Figs 15, 16): prompt and output lengths exactly as the artifact used them."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from pydantic import ValidationError

from parrotsim.workloads.app import Text, prompt_tokens, validate_apps
from parrotsim.workloads.bing import BingCopilot, prompt_lengths, sampled_outputs

RNG = np.random.default_rng(0)


def _shared_prompts(parrot_data):
    return [int(v) for v in (parrot_data / "bing_chat_dataset_prompt_len.txt").read_text().split()]


def test_tables_match_facts(parrot_data):
    assert prompt_lengths() == _shared_prompts(parrot_data)
    with open(parrot_data / "bing_sampled_token_nums.csv") as f:
        assert sampled_outputs() == [int(r["output_len"]) for r in csv.DictReader(f)]
    assert len(prompt_lengths()) == 288 and len(sampled_outputs()) == 64


def test_fig15_sampled_requests(parrot_data):
    # the artifact: np.random.seed(2023); np.random.shuffle(list of token-id lists); first 64
    lists = [[n] for n in _shared_prompts(parrot_data)]
    np.random.RandomState(2023).shuffle(lists)
    expected_prompts = [x[0] for x in lists[:64]]
    apps = validate_apps(BingCopilot(batch_size=16).build(RNG))
    assert [a.app_id for a in apps] == [f"bing-{i}" for i in range(64)]
    assert [prompt_tokens(a, a.calls[0]) for a in apps] == expected_prompts
    assert [a.calls[0].output_tokens for a in apps] == sampled_outputs()
    assert min(sampled_outputs()) == 183 and max(sampled_outputs()) == 800
    assert all(a.arrival == 0.0 and a.kind == "bing" for a in apps)
    assert all(a.calls[0].prompt[0] == Text("bing/system", 5107) for a in apps)
    assert len({a.calls[0].prompt[1].content_id for a in apps}) == 64


def test_fig16_all_prompts_fixed_output(parrot_data):
    apps = BingCopilot(requests="all", output_len=480, batch_size=64).build(RNG)
    assert [prompt_tokens(a, a.calls[0]) for a in apps] == _shared_prompts(parrot_data)
    assert {a.calls[0].output_tokens for a in apps} == {480}


def test_bad_configs():
    with pytest.raises(ValidationError, match="output_len"):
        BingCopilot(requests="all")
    with pytest.raises(ValidationError, match="shortest prompt"):
        BingCopilot(shared_prefix=6000)
