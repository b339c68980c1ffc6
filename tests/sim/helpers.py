"""Hand-built engine states and profiles for policy and engine tests."""

from __future__ import annotations

from policies.engine.base import EngineState
from sim.kv_cache import KVCache
from sim.roofline import GPUS, MODELS, roofline_profile
from sim.sequence import Sequence

_uid = iter(range(10**9))


def seq(prompt: int, output: int, arrived: float = 0.0, **kw) -> Sequence:
    s = Sequence(next(_uid), "app", "call", prompt, output, **kw)
    s.arrived = arrived
    return s


def state(blocks: int, *waiting: Sequence) -> EngineState:
    st = EngineState(KVCache(blocks, 16))
    st.waiting.extend(waiting)
    return st


def a100_13b():
    return roofline_profile(GPUS["a100-80gb"], MODELS["llama-13b"], name="test")
