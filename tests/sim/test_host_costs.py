"""Host time per context token (Parrot's engine) and the measured host costs in the fits."""

import pytest

from parrotsim.calibrate import facts
from parrotsim.calibrate import host_costs as host
from parrotsim.calibrate.interim import fit_runtimes, residuals
from parrotsim.sim.model.costmodel import CostModel
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.profile_parts import Runtime
from parrotsim.sim.model.sequence import Batch
from tests.sim.helpers import a100_13b, seq

PER_TOKEN = 20e-9


def _models():
    prof = a100_13b()
    plain = CostModel(prof, "parrot")
    prof = prof.model_copy(update={"runtimes": {"parrot": Runtime(
        overhead_per_context_token_s=PER_TOKEN)}})
    return plain, CostModel(prof, "parrot")


def test_each_decode_step_pays_for_every_context_token_of_the_batch():
    plain, cm = _models()
    for n, kv in ((1, 1200), (16, 16 * 3000), (64, 64 * 700)):
        got = cm.decode_times(n, kv, n, [], 5) - plain.decode_times(n, kv, n, [], 5)
        assert got == pytest.approx([PER_TOKEN * (kv + n * j) for j in range(5)], rel=1e-9)
        assert cm.decode_step(n, kv, n, []) == pytest.approx(cm.decode_times(n, kv, n, [], 1)[0])


def test_a_forked_prefix_counts_once_per_sequence():
    plain, cm = _models()
    groups = [(4000, 8)]  # 8 sequences fork a 4000-token prefix: kv holds their suffixes only
    got = cm.decode_times(8, 8 * 100, 8, groups, 1) - plain.decode_times(8, 8 * 100, 8, groups, 1)
    assert got[0] == pytest.approx(PER_TOKEN * (8 * 100 + 8 * 4000), rel=1e-9)


def test_the_stretch_closed_form_equals_the_sum_of_its_steps():
    _, cm = _models()
    for n, kv in ((3, 3 * 50), (32, 32 * 2000), (200, 200 * 9000)):  # across curve segments
        stretch = cm.decode_stretch(n, kv, n, [])
        for steps in (1, 7, 400, 3000):
            assert stretch.duration(steps) == pytest.approx(
                sum(stretch.step(j) for j in range(steps)), rel=1e-12)


def test_a_prompt_iteration_pays_for_the_chunks_contexts_and_the_decodes():
    plain, cm = _models()
    fill, dec = seq(500, 1), seq(300, 10)
    fill.ctx, dec.ctx = KVCache(100).create(), KVCache(100).create()
    fill.ctx.tokens, dec.ctx.tokens = 700, 300  # a 500-token chunk after 200 cached tokens
    batch = Batch(prefills=[(fill, 500)], decodes=[dec])
    extra = cm.iteration_time(batch) - plain.iteration_time(batch)
    assert extra == pytest.approx(PER_TOKEN * (700 + 300), rel=1e-9)


def test_the_fit_with_host_costs_keeps_the_one_prompt_facts_exact():
    bare = a100_13b()
    prof = fit_runtimes(bare, bing_fill=False, host_costs=True)
    assert prof.runtimes["vllm"].overhead_per_seq_s == host.VLLM_HOST_PER_SEQ_S
    assert prof.runtimes["parrot"].overhead_per_context_token_s == \
        host.PARROT_HOST_PER_CONTEXT_TOKEN_S
    res = residuals(prof, "llama-13b")
    for name in ("vllm_prompt_iteration", "parrot_prompt_iteration", "hf_prompt_iteration"):
        assert abs(res[name]) < 1e-9, name
    without = fit_runtimes(bare, bing_fill=False)
    assert without.runtimes["parrot"].prefill_overhead_s - \
        prof.runtimes["parrot"].prefill_overhead_s == pytest.approx(
            host.PARROT_HOST_PER_JOB_S + host.PARROT_HOST_PER_CONTEXT_TOKEN_S
            * facts.CHAIN_PROMPT_TOKENS)
    assert without.runtimes["vllm"].overhead_per_seq_s == 0.0
