"""Engine batching policies; importing this package registers every policy."""

from policies.engine import hf, vllm  # noqa: F401
from policies.engine import parrot as _parrot  # noqa: F401
from policies.engine.base import ENGINE_POLICIES, EnginePolicy, EnginePolicyConfig, EngineState

__all__ = ["ENGINE_POLICIES", "EnginePolicy", "EnginePolicyConfig", "EngineState"]
