"""An example plugin (see experiments/README.md): a cluster scheduler and an engine policy
defined outside parrotsim, used by ``example_plugin.yaml``.

* ``least_tokens`` (cluster): each queued call goes to the engine with the fewest tokens
  (prompt + output) reserved by its unfinished calls, counting the calls it sends now.
* ``vllm_small`` (engine): vLLM 0.1.4's scheduler with at most ``max_num_seqs`` sequences in
  an iteration (default 8 instead of 256).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from parrotsim.policies.engine.vllm import VllmConfig
from parrotsim.sim.model.cluster_policy import (
    CallInfo,
    ClusterPolicy,
    ClusterPolicyConfig,
    EngineLoad,
    register_cluster_policy,
)
from parrotsim.sim.model.engine_policy import register_engine_policy


@register_cluster_policy
class LeastTokensConfig(ClusterPolicyConfig):
    """No knobs; ``policy: least_tokens`` in YAML."""

    policy: Literal["least_tokens"] = "least_tokens"

    def make(self, num_engines: int) -> LeastTokens:
        return LeastTokens()


class LeastTokens(ClusterPolicy):
    def dispatch(self, queue: list[CallInfo], engines: list[EngineLoad],
                 now: float) -> list[tuple[CallInfo, int]]:
        load = [e.reserved_tokens for e in engines]
        out = []
        for call in queue:
            best = load.index(min(load))  # ties go to the first engine
            load[best] += call.tokens
            out.append((call, best))
        return out


@register_engine_policy
class SmallBatchConfig(VllmConfig):
    """vLLM with a small batch: every vLLM knob, another default for ``max_num_seqs``."""

    policy: Literal["vllm_small"] = "vllm_small"
    max_num_seqs: int = Field(default=8, gt=0)
