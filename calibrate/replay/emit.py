"""What happens to a batch's sequences when a real iteration ends: the simulator's own
:mod:`parrotsim.sim.model.emission`, for an engine without a prefix cache and one iteration at
a time (a decode-only batch is a stretch of one step).

``tests/replay/test_executor.py`` pins the executor against the simulator itself.
"""

from __future__ import annotations

from collections.abc import Callable

from parrotsim.sim.model.emission import end_decode_stretch, end_prefill_iteration, release
from parrotsim.sim.model.engine_policy import EnginePolicy, EngineState
from parrotsim.sim.model.sequence import Batch, Sequence

FinishCallback = Callable[[Sequence, float], None]


def emit(state: EngineState, policy: EnginePolicy, batch: Batch, start: float, end: float,
         on_finish: FinishCallback) -> list[Sequence]:
    """Emit the tokens of ``batch`` (one iteration from ``start`` to ``end``); returns the
    sequences that finished, in the order the simulator finishes them."""
    finished: list[Sequence] = []

    def finish(seq: Sequence, at: float) -> None:
        release(state, seq, at)
        finished.append(seq)
        on_finish(seq, at)

    def no_prefix_cache(seq: Sequence, at: float) -> None:
        raise NotImplementedError("shared-prefix fills need a prefix cache")

    if batch.prefills:
        end_prefill_iteration(batch, start, end, policy.prefill_emits_token, finish,
                              no_prefix_cache)
    else:
        end_decode_stretch(state.kv, batch, 1, end, end, finish)
    return finished
