"""Engine batching policies; importing this package registers every policy."""

from parrotsim.policies.engine import hf, vllm  # noqa: F401
from parrotsim.policies.engine import parrot as _parrot  # noqa: F401
from parrotsim.sim.model.engine_policy import (
    ENGINE_POLICIES,
    EnginePolicy,
    EnginePolicyConfig,
    EngineState,
)

__all__ = ["ENGINE_POLICIES", "EnginePolicy", "EnginePolicyConfig", "EngineState"]
