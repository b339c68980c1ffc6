"""Hand-built engine states and profiles for policy and engine tests."""

from __future__ import annotations

from parrotsim.calibrate.roofline import GPUS, MODELS, roofline_profile
from parrotsim.sim.model.engine_policy import EngineState
from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.sequence import Sequence

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
