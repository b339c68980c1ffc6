"""The admission check (issue 21): a call no engine can ever run is rejected, never waited for.

The check must agree with what each policy really does: a call it rejects never finishes on an
empty engine, and (but for one documented vLLM case) a call it accepts does.
"""

from __future__ import annotations

import itertools

import pytest
import simpy

from parrotsim.policies.engine.hf import HfConfig
from parrotsim.policies.engine.parrot import ParrotEngineConfig
from parrotsim.policies.engine.vllm import VllmConfig
from parrotsim.sim.model.admission import admission_problem
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.engine import Engine
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Sequence
from tests.sim.helpers import a100_13b

POLICIES = {
    "vllm": VllmConfig(max_num_batched_tokens=40),
    "vllm_watermark": VllmConfig(max_num_batched_tokens=40, watermark=0.5),
    "parrot": ParrotEngineConfig(),
    "parrot_chunked": ParrotEngineConfig(fill_chunk_size=8, max_num_batched_tokens=8),
    "hf": HfConfig(),
}
GRID = list(itertools.product([1, 2, 5], [1, 16, 17, 33, 40, 41, 80], [1, 2, 16, 40]))


def finishes_alone(cfg, blocks: int, prompt: int, output: int) -> bool:
    """Whether one call finishes its whole output on an empty engine of ``blocks`` KV blocks
    (no check; a call vLLM gives up on, FINISHED_IGNORED, has not finished)."""
    env, done = simpy.Environment(), []
    engine = Engine(env, 0, cfg.make(), CostModel(a100_13b(), cfg.runtime),
                    KVCache(blocks, 16), lambda seq, t: done.append(seq))
    engine.submit(Sequence(0, "app", "call", prompt, output))
    env.run(until=1e4)
    return bool(done) and engine.ignored_calls == 0


@pytest.mark.parametrize("name", list(POLICIES))
def test_check_agrees_with_the_policy(name):
    cfg = POLICIES[name]
    for blocks, prompt, output in GRID:
        limits = cfg.limits(blocks, 16)
        problem = admission_problem(limits, prompt, output)
        finished = finishes_alone(cfg, blocks, prompt, output)
        case = (name, blocks, prompt, output, problem)
        assert not (problem and finished), case  # never rejects a call that could finish
        if problem is None and not finished:
            # vLLM alone: a decode step keeps one block free; the call that needs the last
            # block preempts itself and waits for a wake-up that another call's arrival would
            # bring (so it is not "never"); alone, the run ends in StalledRun instead
            assert name.startswith("vllm") and limits.blocks(prompt + output - 1) == blocks, case


def test_reasons_name_the_limit():
    vllm = VllmConfig().limits(10_000, 16)
    assert "longer than the 8000 tokens one iteration fills" in admission_problem(vllm, 9000, 10)
    assert admission_problem(ParrotEngineConfig().limits(10_000, 16), 9000, 10) is None
    assert "holds no" not in admission_problem(VllmConfig().limits(1, 16), 300, 10)
    assert admission_problem(HfConfig().limits(2, 16), 16, 17).startswith(
        "its prompt and output need 3 KV blocks of 16 tokens at once; the engine has 2")
    parrot = ParrotEngineConfig().limits(10, 16)
    assert admission_problem(parrot, 150, 10) is None
    assert admission_problem(parrot, 150, 11) == (
        "its context grows to 161 tokens, 11 KV blocks of 16 tokens; the engine has 10")


def test_vllm_truncation_is_not_a_rejection():
    """vLLM 0.1.4 with a capacity cuts long prompts to capacity - output - 100 tokens."""
    capped = VllmConfig(capacity_tokens=4096)
    limits = capped.limits(capped.kv_blocks(10**6, 16), 16)
    assert admission_problem(limits, 5000, 100) is None  # runs as 3896 prompt tokens
    uncapped = VllmConfig().limits(256, 16)  # the same 4096 tokens of KV, no truncation
    assert "needs 313 KV blocks" in admission_problem(uncapped, 5000, 100)


def test_shared_prefix_blocks_count():
    limits = ParrotEngineConfig().limits(4, 16)
    assert admission_problem(limits, 40, 8, cached=0) is None  # 48 tokens: 3 blocks
    # a 20-token prefix takes 2 blocks of its own (a fork starts in a fresh block)
    assert admission_problem(limits, 40, 8, cached=20) is None  # 2 + 2 blocks
    assert "5 KV blocks" in admission_problem(limits, 40, 13, cached=20)  # 2 + 3 blocks
