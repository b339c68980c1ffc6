"""The replay is the simulator's model with real engine iterations: with a fake clock and a
forward pass that lasts the cost model's iteration time it produces the simulator's per-call
times - for chats, app DAGs with either client, prefix caches and the shared-prefix kernel."""

import numpy as np
import pytest

from parrotsim.api import run_config
from parrotsim.calibrate.replay.executor import Replay
from parrotsim.sim.harness.simulation import simulate
from parrotsim.sim.model.metrics import CALL_COLUMNS

from .helpers import config, cost_model_replay

TIMES = ["sent", "arrived", "dispatched", "engine_arrived", "admitted", "first_token",
         "last_fill", "finished", "returned"]


@pytest.mark.parametrize("rate,capacity,network", [
    (2.0, None, "none"),        # light, no preemption
    (12.0, 2048, "none"),       # KV-saturated: preemptions by recompute
    (6.0, 4096, "measured"),    # round trips: arrivals at sent + rtt/2
])
def test_same_per_call_times_as_the_simulator(rate, capacity, network):
    cfg = config(rate=rate, capacity=capacity, network=network, n=60, seed=2)
    real = cost_model_replay(cfg).run()
    sim = simulate(cfg)
    a, b = real.calls[CALL_COLUMNS], sim.calls[CALL_COLUMNS]
    assert a.drop(columns=TIMES).equals(b.drop(columns=TIMES))
    assert np.abs(a[TIMES].to_numpy() - b[TIMES].to_numpy()).max() < 1e-9
    if capacity == 2048:
        assert a["preemptions"].sum() > 0
    for col in ("iterations", "peak_kv_blocks", "kv_blocks"):
        assert real.engines[col].iloc[0] == sim.engines[col].iloc[0]
    assert real.summary["mean_jct"] == pytest.approx(sim.summary["mean_jct"], rel=1e-12)
    it = real.iterations
    assert len(it) == real.engines["iterations"].iloc[0]
    assert np.allclose(it["wall_s"], it["model_s"], rtol=1e-9, atol=1e-12)
    assert it["prefill_seqs"].sum() == len(a) + a["preemptions"].sum()  # one fill per admission


PARROT_ENGINE = {"policy": "parrot", "scheduler": "fifo", "max_batch_size": 256,
                 "max_num_batched_tokens": 2560, "max_total_tokens": 8192,
                 "num_kv_cache_blocks": 1200}
def _bing(kernel: str) -> dict:
    """Fig 16's shape on one engine: 64 calls fork one 5107-token system prompt, 8 slots."""
    return dict(
        workload={"kind": "bing", "requests": "sampled", "output_len": 40},
        network={"model": "none"},
        cluster={"engines": 1, "profile": "h200_llama-7b", "prefix_cache": True,
                 "kernel": kernel,
                 "engine": {**PARROT_ENGINE, "max_num_batched_tokens": 8192,
                            "max_total_tokens": 65536, "num_kv_cache_blocks": 3000},
                 "scheduler": {"policy": "slots", "slots": 8}})


DAGS = {
    # Fig 11's shape: a refine chain, Parrot client (server-side dependencies), prefix cached
    "chain_parrot": dict(
        workload={"kind": "chain_summary", "doc_set": "arxiv_march_10", "chunk_size": 1024,
                  "output_len": 25, "docs": [3]},
        client={"kind": "parrot"},
        cluster={"engines": 1, "profile": "h200_llama-7b", "prefix_cache": True,
                 "engine": PARROT_ENGINE,
                 "scheduler": {"policy": "parrot", "max_requests_per_engine": 128,
                               "tokens_capacity": 8192}}),
    # Fig 14's shape: map-reduce, LangChain client (gather, then reduce), vLLM 0.1.4
    "map_reduce_langchain": dict(
        workload={"kind": "map_reduce", "doc_set": "arxiv_march_10", "chunk_size": 1024,
                  "output_len": 25, "docs": [3]},
        cluster={"engines": 1, "profile": "h200_llama-7b",
                 "engine": {"policy": "vllm", "capacity_tokens": 4096,
                            "max_num_batched_tokens": 8000}}),
    # ... and with the Parrot client and the DAG-aware manager
    "map_reduce_parrot": dict(
        workload={"kind": "map_reduce", "doc_set": "arxiv_march_10", "chunk_size": 1024,
                  "output_len": 25, "docs": [3]},
        client={"kind": "parrot"},
        cluster={"engines": 1, "profile": "h200_llama-7b", "engine": PARROT_ENGINE,
                 "scheduler": {"policy": "parrot", "dag_aware": True,
                               "max_requests_per_engine": 128, "tokens_capacity": 8192}}),
    # Fig 16's shape: one 5107-token system prompt forked by every call, shared-prefix kernel
    "bing_shared_prefix": _bing("shared_prefix"),
    # the same with the paged kernel over the shared pages: the profile's paged_shared_prefix
    # grid costs the forked groups, but the GPU must still run the paged kernel
    "bing_paged": _bing("paged"),
}


@pytest.mark.parametrize("name", list(DAGS))
def test_dags_prefixes_and_parrot_give_the_simulators_times(name):
    cfg = run_config(**DAGS[name], seed=1)
    replay = cost_model_replay(cfg)
    real = replay.run()
    sim = simulate(cfg)
    a, b = real.calls[CALL_COLUMNS], sim.calls[CALL_COLUMNS]
    assert len(a) == len(b) > 1
    assert a.drop(columns=TIMES).equals(b.drop(columns=TIMES))
    assert np.abs(a[TIMES].to_numpy() - b[TIMES].to_numpy()).max() < 1e-9
    assert np.abs(real.apps["latency"] - sim.apps["latency"]).max() < 1e-9
    assert real.engines["peak_kv_blocks"].iloc[0] == sim.engines["peak_kv_blocks"].iloc[0]
    it = real.iterations
    assert np.allclose(it["wall_s"], it["model_s"], rtol=1e-9, atol=1e-12)
    if name == "bing_shared_prefix":  # every decode batch forks the one prefix
        decodes = it[it["decode_seqs"] > 1]
        assert len(decodes) and (decodes["shared_pages"] == -(-5107 // 16)).all()
        assert real.engines["shared_kernel_grouped"].iloc[0] == 0
    if name == "bing_paged":  # groups priced by the grid, served by the paged kernel
        assert (it["shared_groups"] > 0).any()
        assert (it["shared_pages"] == 0).all()
    if name == "chain_parrot":
        assert a["cached_len"].gt(0).any()  # the refine template's head was forked


def test_chunks_address_the_new_positions():
    seen = []

    def check(replay, batch, prefills, decodes):
        for (seq, n), c in zip(batch.prefills, prefills, strict=True):
            assert len(c.token_ids) == n and c.ctx_len == seq.filled
            assert len(c.table) == seq.ctx.blocks
        for seq, c in zip(batch.decodes, decodes, strict=True):
            assert len(c.token_ids) == 1 and c.ctx_len == seq.kv_tokens - 1
            assert len(c.table) * 16 >= c.ctx_len + 1
        seen.append(len(decodes))
    cost_model_replay(config(rate=12.0, n=30), check).run()
    assert max(seen) > 1


def test_unsupported_runs_are_refused():
    with pytest.raises(NotImplementedError):
        Replay(config().model_copy(update={"cluster": config().cluster.model_copy(
            update={"engines": 2})}), None, None)
    with pytest.raises(NotImplementedError):
        Replay(config(request_tracking=True), None, None)


def test_a_call_vllm_gives_up_on_ends_as_in_the_simulator():
    """vLLM 0.1.4's prompt limit on the real loop: a call preempted by recompute whose refill
    outgrows max_num_batched_tokens ends with the tokens it has, at the simulator's times."""
    from parrotsim.workloads.app import Text, single_call_app

    outputs = (200, 200)
    apps = [single_call_app(f"a-{i}", 0.001 * i, [Text(f"p{i}", tokens=250)], out)
            for i, out in enumerate(outputs)]
    cfg = run_config(workload={"kind": "sharegpt", "num_requests": len(outputs)},
                     client={"kind": "langchain", "chat_template": "none"},
                     cluster={"engines": 1, "profile": "h200_llama-7b",
                              "engine": {"policy": "vllm", "capacity_tokens": 640,
                                         "max_num_batched_tokens": 300}},
                     network={"model": "none"})
    replay = cost_model_replay(cfg)
    replay.apps = apps
    with pytest.warns(UserWarning, match="given up on"):
        sim = simulate(cfg, apps=apps)
    real = replay.run()
    a, b = real.calls[CALL_COLUMNS], sim.calls[CALL_COLUMNS]
    assert a.drop(columns=TIMES).equals(b.drop(columns=TIMES))
    assert np.abs(a[TIMES].to_numpy() - b[TIMES].to_numpy()).max() < 1e-9
    assert b["output_len"].tolist()[-1] < outputs[-1] and real.engines["ignored_calls"].iloc[0] == 1


def test_a_call_given_up_on_with_nothing_else_to_run_ends_at_once(monkeypatch):
    """The policy gives up on a waiting call and has nothing to run: the real loop ends it at
    once and schedules again, as the simulator's engine does (a stand-in policy that gives up
    on every call's first admission)."""
    from parrotsim.policies.engine.vllm import VllmPolicy
    from parrotsim.sim.model.sequence import Batch

    schedule = VllmPolicy.schedule

    def give_up_first(self, state):
        if state.waiting and state.waiting[0].preemptions == 0 and not state.running:
            seq = state.waiting.popleft()
            seq.preemptions = 1  # marks it; the stand-in gives up once per call
            return Batch(ignored=(seq,))
        return schedule(self, state)

    monkeypatch.setattr(VllmPolicy, "schedule", give_up_first)
    cfg = config(rate=0.5, n=3, capacity=None, seed=1)
    with pytest.warns(UserWarning, match="given up on"):
        sim = simulate(cfg)
    real = cost_model_replay(cfg).run()
    a, b = real.calls[CALL_COLUMNS], sim.calls[CALL_COLUMNS]
    assert a.drop(columns=TIMES).equals(b.drop(columns=TIMES))
    assert np.abs(a[TIMES].to_numpy() - b[TIMES].to_numpy()).max() < 1e-9
    assert (b["output_len"] == 0).all() and real.engines["ignored_calls"].iloc[0] == 3
