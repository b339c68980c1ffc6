"""vLLM 0.1.4 scheduling on hand-built states: prefill priority, token budget, caps, preemption."""

import pytest

from parrotsim.policies.engine.vllm import REQUEST_TRACKING_S, VllmConfig, VllmPolicy
from parrotsim.sim.harness.config import RunConfig
from parrotsim.sim.harness.simulation import IgnoredCallsWarning, simulate
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.workloads.app import Text, single_call_app
from tests.policies.vllm_engine_reference import ReferenceVllmPolicy
from tests.sim.helpers import seq, state


def policy(**kw) -> VllmPolicy:
    return VllmConfig(**kw).make()


def test_prefill_has_priority_over_decodes():
    p = policy()
    st = state(1000, seq(100, 10))
    b1 = p.schedule(st)
    assert [n for _, n in b1.prefills] == [100] and not b1.decodes
    b1.prefills[0][0].generated = 1
    st.waiting.append(seq(50, 10))
    b2 = p.schedule(st)
    assert [n for _, n in b2.prefills] == [50] and not b2.decodes  # decodes wait
    b3 = p.schedule(st)
    assert not b3.prefills and len(b3.decodes) == 2


def test_token_budget_stops_admission_fcfs():
    p = policy(max_num_batched_tokens=250)
    st = state(1000, seq(100, 5), seq(100, 5), seq(100, 5), seq(10, 5))
    b = p.schedule(st)
    assert [n for _, n in b.prefills] == [100, 100]
    assert len(st.waiting) == 2  # FCFS: the small 4th request does not jump the queue


def test_max_num_seqs_caps_running():
    p = policy(max_num_seqs=2)
    st = state(1000, seq(10, 5), seq(10, 5), seq(10, 5))
    assert len(p.schedule(st).prefills) == 2 and len(st.waiting) == 1


def test_capacity_cap_sets_blocks_and_watermark_blocks_admission():
    cfg = VllmConfig(capacity_tokens=4096)
    assert cfg.kv_blocks(10**6, 16) == 256
    p = cfg.make()
    st = state(256, seq(4000, 5))  # 250 blocks; watermark int(0.01*256) = 2 -> 6 free is fine
    assert p.schedule(st).prefills
    st2 = state(256, seq(4060, 5))  # 254 blocks leave 2 = watermark: ok; 4070 -> 255 blocks no
    assert p.schedule(st2).prefills
    st3 = state(256, seq(4070, 5))
    assert p.schedule(st3).empty


def test_capacity_truncates_long_prompts():
    p = policy(capacity_tokens=4096)
    s = seq(5000, 100)
    p.accept(s)
    assert s.prompt_len == 4096 - 100 - 100 == s.fill_target


def test_decode_preempts_newest_by_recompute_when_blocks_run_out():
    p = policy()
    old, new = seq(16, 50, arrived=0.0), seq(16, 50, arrived=1.0)
    st = state(2, old, new)
    b = p.schedule(st)  # both prompts fit exactly (1 block each, watermark 0)
    assert len(b.prefills) == 2
    for s, _ in b.prefills:
        s.filled, s.generated = 16, 1
    b = p.schedule(st)  # no free block: the newest is preempted, the oldest decodes
    assert b.decodes == [old]
    assert list(st.waiting) == [new] and new.ctx is None and new.preemptions == 1
    assert new.fill_target == 17  # prompt + the generated token are recomputed
    assert st.kv.used_blocks == 2


def test_stable_decode_steps_bounded_by_first_finish_and_memory():
    p = policy()
    a, b = seq(10, 20), seq(10, 5)
    st = state(100, a, b)
    batch = p.schedule(st)
    for s, _ in batch.prefills:
        s.filled, s.generated = 10, 1
    batch = p.schedule(st)
    assert p.stable_decode_steps(st, batch) == 4  # b has 4 tokens left
    st2 = state(3, seq(15, 100), seq(15, 100))
    batch = p.schedule(st2)
    for s, _ in batch.prefills:
        s.filled, s.generated = 15, 1
    batch = p.schedule(st2)  # each at 16 tokens; 1 block free
    assert p.stable_decode_steps(st2, batch) == 1


def test_only_sequences_with_a_full_last_block_need_the_pool_to_keep_one():
    """vLLM checks one free block before each sequence appends (in FCFS order); only the
    16-token sequence takes one. With 1 block left the check fails at the second sequence and
    the newest is preempted; with 2 left nobody is."""
    for blocks, survivors in ((4, 2), (5, 3)):
        p = policy()
        full, part, small = (seq(16, 50, arrived=0.0), seq(10, 50, arrived=1.0),
                             seq(5, 50, arrived=2.0))
        st = state(blocks, full, part, small)
        for s, n in p.schedule(st).prefills:
            s.filled, s.generated = n, 1
        b = p.schedule(st)
        assert b.decodes == [full, part, small][:survivors]
        assert small.preemptions == (1 if survivors == 2 else 0)


def test_request_tracking_costs_host_time_on_prefill_iterations_only():
    per_prompt, per_token = REQUEST_TRACKING_S
    off, on = policy(), policy(request_tracking=True)
    st = state(1000, seq(100, 5), seq(300, 5))
    prefill = on.schedule(st)
    assert on.host_time(prefill) == pytest.approx(2 * per_prompt + 400 * per_token)
    assert off.host_time(prefill) == 0.0
    for s, n in prefill.prefills:
        s.filled += n
        s.generated = 1
    decode = on.schedule(st)
    assert decode.decodes and on.host_time(decode) == 0.0


def test_request_tracking_delays_the_first_token_by_the_decode_time():
    app = single_call_app("a-0", 0.0, [Text("p", tokens=1000)], 5)

    def first_token(tracking: bool) -> float:
        cfg = RunConfig.model_validate({
            "workload": {"kind": "sharegpt", "num_requests": 1},
            "client": {"kind": "langchain", "chat_template": "none"},
            "cluster": {"engine": {"policy": "vllm", "request_tracking": tracking}}})
        return float(simulate(cfg, apps=[app]).calls["first_token"].iloc[0])

    per_prompt, per_token = REQUEST_TRACKING_S
    assert first_token(True) - first_token(False) == pytest.approx(per_prompt + 1000 * per_token)


def test_preempting_step_visits_only_the_sequences_that_take_a_block_and_the_victims():
    """Prompts of 10, 16, 20, 32, 40 tokens in 10 blocks (9 used): the 16- and 32-token
    sequences take a block on the next step, 1 is free. Served in FCFS order, the 16 takes the
    last block; the 20 then finds none and the newest (40) is preempted; the 32 takes one of
    its blocks. As the per-sequence reference decides, but the survivors whose last block had
    room (10, 20) are not written to: the ledger holds their step."""
    outcomes = []
    for policy in (VllmConfig().make(), ReferenceVllmPolicy(VllmConfig())):
        seqs = [seq(n, 50, arrived=float(i)) for i, n in enumerate((10, 16, 20, 32, 40))]
        st = EngineState(KVCache(10, 16), eager=False)
        st.waiting.extend(seqs)
        for s, n in policy.schedule(st).prefills:
            s.filled, s.generated = n, 1
        b = policy.schedule(st)
        outcomes.append(([seqs.index(s) for s in b.decodes], [seqs.index(s) for s in st.waiting],
                         st.kv.used_blocks, st.kv.peak_blocks, seqs[4].preemptions))
        if b.ledger is not None:
            assert [seqs[i].ctx.tokens for i in (0, 2)] == [10, 20]  # untouched
            st.ledger.sync_all()
        assert [s.ctx.tokens for s in seqs[:4]] == [11, 17, 21, 33]
    assert outcomes[0] == outcomes[1] == ([0, 1, 2, 3], [4], 8, 10, 1)


def test_a_recomputed_sequence_longer_than_the_token_budget_is_ignored():
    """vLLM 0.1.4's prompt limit: a waiting sequence whose refill (prompt plus the tokens it
    generated before its preemption) exceeds max_num_batched_tokens is FINISHED_IGNORED: off
    the queue, the admission pass ends there; the next pass admits the rest."""
    p = policy(max_num_batched_tokens=100)
    long, short = seq(90, 50), seq(10, 5)
    long.generated, long.fill_target, long.preemptions = 20, 110, 1  # as preempt() leaves it
    st = state(1000, long, short)
    b = p.schedule(st)
    assert b.ignored == (long,) and b.empty and list(st.waiting) == [short]
    b2 = p.schedule(st)
    assert [n for _, n in b2.prefills] == [10] and b2.ignored == ()


def test_an_ignored_sequence_ends_with_its_tokens_instead_of_stalling_the_engine():
    """Two 250-token prompts of 200 output tokens on 40 KV blocks with a 300-token budget: the
    newer is preempted once both outgrow the blocks (at about 70 tokens generated), and its
    refill (over 300 tokens) can never be admitted. vLLM returns it with what it generated, at
    the end of the iteration that gave it up; the older call completes. (Before: the engine
    went idle with it waiting, and the run ended in StalledRun.)"""
    apps = [single_call_app(f"a-{i}", 0.001 * i, [Text(f"p{i}", tokens=250)], 200)
            for i in range(2)]
    cfg = RunConfig.model_validate({
        "workload": {"kind": "sharegpt", "num_requests": 2},
        "client": {"kind": "langchain", "chat_template": "none"},
        "cluster": {"engine": {"policy": "vllm", "capacity_tokens": 640,
                               "max_num_batched_tokens": 300}}})
    with pytest.warns(IgnoredCallsWarning, match="1 call"):
        result = simulate(cfg, apps=apps)
    calls = result.calls.set_index("app_id")
    old, new = calls.loc["a-0"], calls.loc["a-1"]
    assert old.output_len == 200 and old.preemptions == 0
    assert new.preemptions == 1 and 250 + new.output_len > 300 and new.output_len < 200
    assert old.first_token < new.finished < old.finished
    assert result.engines["ignored_calls"].tolist() == [1]
