"""Small replay runs on a fake clock whose forward pass lasts the cost model's time."""

from __future__ import annotations

from parrotsim.api import run_config
from parrotsim.calibrate.replay.executor import FakeClock, Replay
from parrotsim.sim.model.costmodel import CostModel


def config(rate: float = 8.0, n: int = 40, capacity: int | None = 2048, seed: int = 0,
           network: str = "none", **engine):
    eng = {"policy": "vllm", **engine}
    if capacity is not None:
        eng["capacity_tokens"] = capacity
    return run_config(workload={"kind": "sharegpt", "num_requests": n, "rate": rate},
                      cluster={"engines": 1, "profile": "h200_llama-7b", "engine": eng},
                      network={"model": network}, seed=seed)


def cost_model_replay(cfg, check=None) -> Replay:
    """A replay whose forward advances a fake clock by exactly the simulator's iteration time
    (plus the policy's host time for prompt-filling iterations, as the simulator's engine);
    ``check(replay, batch, prefills, decodes)`` runs inside each forward."""
    clock = FakeClock()
    replay = Replay(cfg, None, clock)
    cost = CostModel(replay.profile, cfg.cluster.engine.runtime, kernel=cfg.cluster.kernel,
                     paged_kernel=cfg.cluster.paged_kernel)

    def forward(batch, prefills, decodes, shared_pages):
        if check is not None:
            check(replay, batch, prefills, decodes)
        engine = replay.engines[0]
        groups, shared_tokens = engine._shared_groups(batch)
        longest = engine._excess_longest(batch, groups) if groups else None
        t = cost.iteration_time(batch, groups, shared_tokens, longest)
        if batch.prefills:
            t += engine.policy.host_time(batch)
        clock.advance(t)
    replay.device.forward = forward
    return replay
