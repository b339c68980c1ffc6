"""HTTP calls into an engine whose server shares one event loop with the iteration loop.

The paper's engines served HTTP on the same asyncio loop that ran their iterations: FastChat's
vLLM worker (uvicorn, and vLLM 0.1.4's ``AsyncLLMEngine``, whose ``engine_step`` runs
``LLMEngine.step()`` on the loop) and Parrot's engine server (uvicorn, and an engine loop that
awaits ``asyncio.sleep(1e-6)`` and then runs one iteration). While an iteration runs no call
is served, and between two iterations the loop turns only about once, so a call into a busy
engine waits for several iteration ends. ``calibrate/tools/fastchat_worker_hops.py`` counts
them (``calibrate/measurements/fastchat_worker_hops``, steady from 20 ms to 1 s iterations):

* FastChat 0.2.32 + vLLM 0.1.4, one LLM request (``/model_details``, ``/count_token``, then
  ``/worker_generate``): its prompt is scheduled at the **6th** iteration end after the first
  call (1 if it were scheduled as soon as the running iteration ended), and its answer leaves
  **1** iteration end after the iteration that finished it;
* a server with Parrot's loop structure: each call's job is scheduled at the **3rd** end after
  it was sent; the answer leaves before the next end.

When the engine is idle the calls are served at once. :class:`FrontDoor` keeps the calls that
are still in the door (``held``: due at an iteration count) and the answers not yet out
(``replies``); :class:`~parrotsim.sim.model.engine.Engine` counts iteration ends
(``Engine.iterations``), releases what is due at each end, and never fast-forwards past a due
count.
"""

from __future__ import annotations

from heapq import heappop, heappush

from parrotsim.sim.model.sequence import Sequence

#: FastChat 0.2.32's worker over vLLM 0.1.4: iteration ends past the first before a call is
#: scheduled, and between its last iteration and its answer (measured, see module docstring)
FASTCHAT_ADMIT_WAITS, FASTCHAT_REPLY_WAITS = 5, 1
#: Parrot's engine server: iteration ends past the first before each request's job is
#: scheduled (Fill of the constant prefix, Fill of the rest, Generate: one request each)
PARROT_REQUEST_WAITS = 2


class FrontDoor:
    """Calls waiting to get in and answers waiting to get out, by iteration count due."""

    __slots__ = ("held", "replies", "_order")

    def __init__(self) -> None:
        self.held: list[tuple[int, int, Sequence]] = []  # heap of (due, order, seq)
        self.replies: list[tuple[int, int, Sequence]] = []  # heap of (due, order, seq)
        self._order = 0

    def __len__(self) -> int:
        return len(self.held)

    def hold(self, seq: Sequence, due: int) -> None:
        """``seq`` may be scheduled once the engine has ended ``due`` iterations in all."""
        self._order += 1
        heappush(self.held, (due, self._order, seq))

    def answer_later(self, seq: Sequence, due: int) -> None:
        """``seq``'s answer leaves once the engine has ended ``due`` iterations in all."""
        self._order += 1
        heappush(self.replies, (due, self._order, seq))

    def next_due(self) -> int | None:
        """The smallest iteration count anything is due at (None: nothing waits)."""
        dues = [h[0][0] for h in (self.held, self.replies) if h]
        return min(dues) if dues else None

    def admit(self, ended: int | None = None) -> list[Sequence]:
        """Calls due by ``ended`` iterations (all of them with None), in arrival order."""
        return _pop_due(self.held, ended)

    def answers(self, ended: int | None = None) -> list[Sequence]:
        """Answers due by ``ended`` iterations (all of them with None)."""
        return _pop_due(self.replies, ended)


def _pop_due(heap: list[tuple[int, int, Sequence]], ended: int | None) -> list[Sequence]:
    out = []
    while heap and (ended is None or heap[0][0] <= ended):
        out.append(heappop(heap))
    out.sort(key=lambda item: item[1])
    return [seq for _, _, seq in out]
