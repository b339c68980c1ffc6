"""One LLM call as the service sees it: the single record a call keeps from its client's send
to the return of its output.

The client fills in what the app says about the call (tokens, hints, DAG annotations); the
cluster scheduler reads those (see :mod:`parrotsim.sim.model.cluster_policy`); the model stamps
the call's times and placement as it travels. The engine serves it as a
:class:`~parrotsim.sim.model.sequence.Sequence`, which points back at this record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from parrotsim.sim.model.sequence import Sequence

Objective = Literal["latency", "throughput"]


@dataclass(slots=True, eq=False)
class CallInfo:
    """A call (token counts in tokens, times in simulated seconds, -1: not yet).

    What the scheduler reads: ``prefix_keys[i]`` is the PrefixHash of the prompt up to its
    ``i``-th semantic-variable boundary and ``prefix_lens[i]`` that prefix's length;
    ``shared_prefix`` is the key of the prefix the call may fork from an engine's prefix cache
    (``None``: no sharing). ``objective`` and ``task_group`` come from performance-objective
    deduction; ``depth`` is the call's topological depth in its app's DAG; ``app_seq`` the
    arrival rank of its app (for app-level FIFO); ``max_requests`` the call's dispatch hint
    (Parrot's ``requests_num_upperbound``); ``fill_breaks`` the prompt positions (tokens)
    where a fill job of Parrot's engine ends (its constant prefix is a job of its own).

    What the model stamps: ``rtt`` (the call's network round trip), ``sent`` (by the client),
    ``arrived`` (at the manager), ``dispatched`` (to ``engine``), ``returned`` (output back at
    the client; for Parrot, complete on the server) and ``seq``, its engine sequence; ``error``
    is why the call was rejected (it can never run on an engine of the cluster: see
    :mod:`parrotsim.sim.model.admission`), empty for a call that ran.
    """

    uid: int
    app_id: str
    app_seq: int
    call: str
    prompt_len: int
    output_len: int
    app_kind: str = ""
    max_requests: int | None = None
    prefix_keys: tuple[str, ...] = ()
    prefix_lens: tuple[int, ...] = ()
    shared_prefix: str | None = None
    shared_tokens: int = 0
    objective: Objective | None = None
    task_group: str | None = None
    depth: int = 0
    fill_breaks: tuple[int, ...] = ()
    rtt: float = 0.0
    sent: float = -1.0
    arrived: float = -1.0
    dispatched: float = -1.0
    engine: int = -1
    returned: float = -1.0
    seq: Sequence | None = None
    error: str = ""

    @property
    def tokens(self) -> int:
        """Tokens the call will hold on an engine: prompt plus output."""
        return self.prompt_len + self.output_len
