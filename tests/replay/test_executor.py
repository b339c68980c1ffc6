"""The replay loop reuses the simulator's semantics: with a fake clock and a forward pass that
lasts the cost model's iteration time it produces the simulator's per-call times."""

import numpy as np
import pytest

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
        Replay(config().model_copy(update={"cluster": config().cluster.model_copy(
            update={"prefix_cache": True})}), None, None)
